"""Hostile and odd inputs (issue 32, items 2, 4 and 6): a long retry loop keeps only the attempts
it reports, every caller-controlled size is capped with an answer naming the field, framing and
hop-by-hop headers are refused (never sent), an empty or relative ``baseURL`` is refused (never
the default origin). Real calls through ``call_json`` / ``stream_json`` against a local HTTP
server or a closed port."""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest
from helpers import assert_valid_envelope, closed_port

from aimux_ops.boundary.dispatch import call_json, stream_free, stream_json, stream_next_json
from aimux_ops.errors import APICallError
from aimux_ops.errors.aimux import KEPT_ATTEMPTS
from aimux_ops.ops.limits import MAX_JSON_DEPTH, MAX_RETRIES, MAX_TIMER_MS, TRANSPORT_HEADERS


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[list[tuple[str, str]]] = []
        #: request number → how many APICallError objects were alive while it was served
        self.checkpoints: dict[int, int] = {}
        self.count_at: set[int] = set()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the headers and the body: no delayed-ACK wait between
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        self.server.requests.append(list(self.headers.items()))
        n = len(self.server.requests)
        if n in self.server.count_at:
            # the caller's thread is blocked in this attempt: what it keeps of the earlier ones
            gc.collect()
            self.server.checkpoints[n] = sum(
                1 for o in gc.get_objects() if isinstance(o, APICallError)
            )
        body = b'{"error": {"message": "overloaded", "type": "server_error"}}'
        self.send_response(500)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server()
    thread = threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def _params(base_url: str, **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": {"provider": "openai", "modelId": "m", "apiKey": "sk-k", "baseURL": base_url},
        "prompt": "hi",
        "maxRetries": 0,
    }
    model = extra.pop("model", None)
    if model:
        params["model"].update(model)
    params.update(extra)
    return params


def _fails(op: str, params: dict[str, Any]) -> dict[str, Any]:
    raw = json.dumps(params).encode()  # (orjson dumps at most 255 levels)
    if op == "stream_text":
        handle, err = stream_json(op, raw)
        if err is None:
            assert handle is not None
            try:
                event, err = stream_next_json(handle)
                assert event is not None
                decoded = orjson.loads(event)
                assert decoded["type"] == "error", decoded
                return dict(decoded["error"])
            finally:
                stream_free(handle)
    else:
        result, err = call_json(op, raw)
        assert result is None
    assert err is not None
    return assert_valid_envelope(err)


# -- bounded memory of a long retry loop -----------------------------------------------------


def test_a_long_retry_loop_keeps_only_the_attempts_it_reports(server: _Server) -> None:
    server.count_at = {200, MAX_RETRIES}
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    params = _params(url, maxRetries=MAX_RETRIES, retry={"initialDelayMs": 0})
    env = _fails("generate_text", params)
    assert len(server.requests) == MAX_RETRIES + 1
    assert env["code"] == 14
    assert env["message"].startswith(f"Failed after {MAX_RETRIES + 1} attempts.")
    assert len(env["error"]["errors"]) == KEPT_ATTEMPTS
    assert "error.errors" in env["truncated"]
    # while the loop ran: the first attempt and the latest ones, never every one
    assert server.checkpoints[200] <= KEPT_ATTEMPTS + 1, server.checkpoints
    assert server.checkpoints[MAX_RETRIES] <= KEPT_ATTEMPTS + 1, server.checkpoints


def test_a_short_retry_loop_reports_every_attempt(server: _Server) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    env = _fails("generate_text", _params(url, maxRetries=4, retry={"initialDelayMs": 0}))
    assert env["message"].startswith("Failed after 5 attempts.")
    assert len(env["error"]["errors"]) == 5
    assert "error.errors" not in env.get("truncated", [])


def test_max_retries_above_the_bound_is_refused_naming_the_field() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = _fails("generate_text", _params(url, maxRetries=MAX_RETRIES + 1))
    assert env["code"] == 301
    assert [v["path"] for v in env["error"]["violations"]] == ["maxRetries"]


# -- caps on what a caller controls ----------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("timeoutMs", MAX_TIMER_MS + 1, "timeoutMs"),
        ("timeoutMs", 9223372036855, "timeoutMs"),
        ("retry", {"initialDelayMs": 1e308}, "retry.initialDelayMs"),
        ("retry", {"backoffFactor": 1e308}, "retry.backoffFactor"),
    ],
)
def test_out_of_range_numbers_are_invalid_params(field: str, value: Any, path: str) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = _fails("generate_text", _params(url, **{field: value}))
    assert env["code"] == 301, env["message"]
    assert [v["path"] for v in env["error"]["violations"]] == [path]


def test_the_longest_timeout_and_delay_work() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    params = _params(url, timeoutMs=MAX_TIMER_MS, maxRetries=1)
    params["retry"] = {"initialDelayMs": MAX_TIMER_MS, "backoffFactor": 1000}
    params["timeoutMs"] = 1  # the wait is cut at the deadline: a timeout, not an overflow
    env = _fails("generate_text", params)
    assert env["code"] in (11, 12), env["message"]
    env = _fails("generate_text", _params(url, timeoutMs=MAX_TIMER_MS))
    assert env["code"] == 11, env["message"]


def _nested_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    while levels > 2:
        schema = {"type": "object", "properties": {"a": schema}}
        levels -= 2
    return schema


@pytest.mark.parametrize("op", ["generate_text", "stream_text"])
def test_a_tool_schema_nested_300_deep_is_invalid_params(op: str) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = _fails(op, _params(url, tools={"t": {"inputSchema": _nested_schema(600)}}))
    assert env["code"] == 301, env["message"]
    assert [v["path"] for v in env["error"]["violations"]] == ["tools.t.inputSchema"]


def test_a_tool_schema_at_the_depth_cap_works() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    schema = _nested_schema(MAX_JSON_DEPTH)
    env = _fails("generate_text", _params(url, tools={"t": {"inputSchema": schema}}))
    assert env["code"] == 11, env["message"]  # checked, built, sent: the port is closed


@pytest.mark.parametrize(
    ("extra", "path"),
    [
        ({"schema": {"type": "object"}, "prompt": "hi"}, None),
        ({"schema": _nested_schema(300)}, "schema"),
    ],
)
def test_generate_object_schema_depth(extra: dict[str, Any], path: str | None) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = _fails("generate_object", _params(url, **extra))
    if path is None:
        assert env["code"] == 11, env["message"]
    else:
        assert env["code"] == 301, env["message"]
        assert [v["path"] for v in env["error"]["violations"]] == [path]


def test_deep_content_parts_and_tool_inputs_are_invalid_params() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    deep: Any = {}
    for _ in range(300):
        deep = {"a": deep}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "x", "x": deep}]},
        {
            "role": "assistant",
            "toolCalls": [{"toolCallId": "c", "toolName": "t", "input": deep}],
        },
    ]
    params = _params(url, messages=messages)
    del params["prompt"]
    env = _fails("generate_text", params)
    assert env["code"] == 301, env["message"]
    assert sorted(v["path"] for v in env["error"]["violations"]) == [
        "messages[0].content",
        "messages[1].toolCalls[0].input",
    ]


def test_a_non_string_dollar_schema_is_an_invalid_argument() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = _fails("generate_object", _params(url, schema={"$schema": [1]}))
    assert env["code"] == 5, env["message"]
    assert env["error"]["argument"] == "schema"


# -- what the transport owns -----------------------------------------------------------------


@pytest.mark.parametrize("op", ["generate_text", "stream_text"])
@pytest.mark.parametrize("where", ["headers", "model.headers"])
@pytest.mark.parametrize("name", [*sorted(TRANSPORT_HEADERS), "Content-Length", "HOST"])
def test_framing_and_hop_by_hop_headers_are_refused_never_sent(
    server: _Server, op: str, where: str, name: str
) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    headers = {name: "0"}
    params = _params(url, model={"headers": headers}) if where == "model.headers" else None
    params = params or _params(url, headers=headers)
    env = _fails(op, params)
    assert env["code"] == 5, env["message"]
    assert env["error"]["argument"] == where
    assert repr(name) in env["message"]
    assert server.requests == []


def test_a_cl_te_pair_is_refused_never_sent(server: _Server) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    headers = {"Content-Length": "0", "Transfer-Encoding": "chunked"}
    env = _fails("stream_text", _params(url, headers=headers))
    assert env["code"] == 5 and env["error"]["argument"] == "headers"
    assert server.requests == []
    # an ordinary caller header still goes out
    _fails("generate_text", _params(url, headers={"X-Tenant": "t1"}))
    assert ("X-Tenant", "t1") in [(k.title(), v) for k, v in server.requests[0]]


@pytest.mark.parametrize(
    ("headers", "what"),
    [
        ({"X-A": "a\r\nX-Injected: 1"}, "control character"),
        ({"X-A": "a\nb"}, "control character"),
        ({"X-A": "a\x00"}, "control character"),
        ({"X-A": "snow ☃"}, "outside ASCII"),
        ({"X-A": "caf\u00e9"}, "outside ASCII"),
        ({"X A": "a"}, "not an HTTP token"),
        ({"": "a"}, "not an HTTP token"),
        ({"X-A": "v" * 8193}, "longer than"),
        ({f"X-{i}": "v" for i in range(65)}, "at most 64"),
    ],
)
def test_headers_that_cannot_be_sent_are_invalid_arguments(
    server: _Server, headers: dict[str, str], what: str
) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    env = _fails("generate_text", _params(url, headers=headers))
    assert env["code"] == 5, env["message"]
    assert env["error"]["argument"] == "headers"
    assert what in env["message"]
    assert "X-Injected" not in env["message"] and "☃" not in env["message"]  # no value quoted
    assert server.requests == []


@pytest.mark.parametrize(
    "base_url",
    ["", "/v1", "v1", "api.openai.com/v1", "ftp://127.0.0.1/v1", "http://", "http:///v1", " "],
)
@pytest.mark.parametrize("op", ["generate_text", "stream_text"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_empty_or_relative_base_url_is_refused(base_url: str, op: str, provider: str) -> None:
    env = _fails(op, _params(base_url, model={"provider": provider}))
    assert env["code"] == 5, env["message"]
    assert env["error"]["argument"] == "model.baseURL"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(
    "key",
    ["sk-abcd\r\nX-Injected: tail-of-the-key", "sk-abcd\ntail", "sk-\x00tail", "sk-caf\u00e9"],
)
def test_an_api_key_that_cannot_be_a_header_is_refused_unquoted(
    server: _Server, provider: str, key: str
) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    env = _fails("generate_text", _params(url, model={"provider": provider, "apiKey": key}))
    assert env["code"] == 5, env["message"]
    assert env["error"]["argument"] == "model.apiKey"
    text = orjson.dumps(env).decode()
    assert "tail" not in text and "abcd" not in text and "position" not in text
    assert server.requests == []


def test_an_api_key_from_the_environment_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIMUX_TEST_BAD_KEY", "sk-abcd\r\ntail")
    params = _params(f"http://127.0.0.1:{closed_port()}/v1")
    del params["model"]["apiKey"]
    params["model"]["apiKeyEnv"] = "AIMUX_TEST_BAD_KEY"
    env = _fails("generate_text", params)
    assert (env["code"], env["error"]["argument"]) == (5, "model.apiKeyEnv")
    assert "tail" not in orjson.dumps(env).decode()


def test_a_base_url_secret_is_not_quoted_when_refused() -> None:
    env = _fails("generate_text", _params("ftp://user:sk-secret-0123456789@127.0.0.1/v1"))
    assert env["code"] == 5
    assert "sk-secret" not in orjson.dumps(env).decode()


def test_error_calls_leave_no_attempt_behind() -> None:
    """Across many failed calls (each a short retry loop) no attempt outlives its call."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    raw = json.dumps(_params(url, maxRetries=1, retry={"initialDelayMs": 0})).encode()

    def alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, APICallError))

    for _ in range(50):
        call_json("generate_text", raw)
    before = alive()
    for _ in range(5_000):  # 10,000 failed attempts (the bench makes 20,000 calls)
        _, err = call_json("generate_text", raw)
        assert err is not None and b'"code":14' in err
    assert alive() <= before + 2


def test_a_timeout_after_a_long_loop_keeps_the_first_and_latest_attempts() -> None:
    from aimux_ops.errors import TimeoutError as AITimeoutError
    from aimux_ops.http.retry import retry_with_exponential_backoff
    from aimux_ops.wire.envelope import project

    made: list[APICallError] = []

    def attempt() -> None:
        if len(made) == 100:
            raise AITimeoutError("The call timed out.", timeout_ms=5)
        made.append(APICallError(f"attempt {len(made) + 1}", is_retryable=True))
        raise made[-1]

    with pytest.raises(AITimeoutError) as info:
        retry_with_exponential_backoff(attempt, max_retries=MAX_RETRIES, initial_delay_ms=0)
    err = info.value
    assert [e.message for e in err.errors] == ["attempt 1"] + [
        f"attempt {i}" for i in range(86, 101)
    ]
    assert err.attempts_dropped == 100 - KEPT_ATTEMPTS
    assert err.__cause__ is made[-1]
    env = orjson.loads(project(err))
    assert len(env["error"]["errors"]) == KEPT_ATTEMPTS and "error.errors" in env["truncated"]
