"""The op-level suite every provider passes: the same scenarios through ``generate_text``,
``stream_text`` and ``generate_object`` against the fault server in each provider's wire format
(``openai``: Chat Completions; ``anthropic``: the Messages API), asserting the provider-neutral
outcome — results, events, error classes, statuses, retryability, attempt counts, tool-call
validation, timeouts, cancellation, recording and replay, and the canary key in every byte.
What differs between the providers is only what their wire formats make differ (ids, the error
type a mid-stream error frame carries), listed in ``WIRE``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fault_server import ANTHROPIC_MSG_ID, ANTHROPIC_REQUEST_ID, FaultServer
from helpers import (
    ANTHROPIC_HELLO_METADATA,
    CANARY,
    assert_no_canary,
    closed_port,
    provider_params,
)
from op_calls import chain_names as names
from op_calls import drain, open_stream, wait_blocked_reader
from op_calls import fail_op as fail
from op_calls import run_op as run

from aimux_ops.boundary.dispatch import stream_cancel, stream_free, stream_next_json
from aimux_ops.wire.envelope import native_chain

#: what each provider's wire format makes differ
WIRE: dict[str, dict[str, Any]] = {
    "openai": {
        "model": "gpt-4o-mini",
        "id": "chatcmpl-demo-1",
        "path": "/v1/chat/completions",
        "env": "OPENAI_API_KEY",
        "errframe": (200, True),
        "diagnostic": None,
    },
    "anthropic": {
        "model": "claude-3-haiku-20240307",
        "id": ANTHROPIC_MSG_ID,
        "path": "/v1/messages",
        "env": "ANTHROPIC_API_KEY",
        # an overloaded_error frame stands for 529, retryable (as the AI SDK infers)
        "errframe": (529, True),
        "diagnostic": ("request-id", ANTHROPIC_REQUEST_ID),
    },
}
WEATHER = {
    "weather": {
        "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }
    }
}
OBJECT_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


@pytest.fixture(params=sorted(WIRE))
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def params(
    server: FaultServer,
    provider: str,
    fault: str | None = None,
    *,
    scenario: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    p = provider_params(
        server, fault, scenario=f"{provider}-{scenario}" if scenario else None, **extra
    )
    p["model"]["provider"] = provider
    p["model"]["modelId"] = WIRE[provider]["model"]
    return p


def count(server: FaultServer, provider: str, scenario: str) -> int:
    return server.count(f"{provider}-{scenario}")


def ok(op: str, p: dict[str, Any]) -> dict[str, Any]:
    result, env = run(op, p)
    assert env is None and result is not None, env
    return result


def events_of(p: dict[str, Any]) -> list[dict[str, Any]]:
    handle, env = open_stream(p)
    assert env is None and handle is not None, env
    return drain(handle)


def terminal_error(events: list[dict[str, Any]]) -> dict[str, Any]:
    kinds = [e["type"] for e in events]
    assert kinds.count("error") == 1 and kinds[-1] == "error" and "finish" not in kinds, events
    return events[-1]["error"]  # type: ignore[no-any-return]


# -- results -------------------------------------------------------------------------------------


def test_generate_text_result(server: FaultServer, provider: str) -> None:
    result = ok(
        "generate_text",
        params(server, provider, system="Be brief.", maxOutputTokens=20, temperature=0.5),
    )
    metadata = result.pop("providerMetadata", None)
    assert "json" in result["response"].pop("headers")["content-type"]
    assert result == {
        "text": "Hello!",
        "content": [{"type": "text", "text": "Hello!"}],
        "finishReason": "stop",
        "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
        "toolCalls": [],
        "response": {"id": WIRE[provider]["id"], "modelId": WIRE[provider]["model"]},
    }
    # Anthropic's raw usage and stop sequence (the AI SDK's providerMetadata); none for OpenAI
    if provider == "anthropic":
        assert metadata["anthropic"]["usage"]["input_tokens"] == 12
        assert metadata["anthropic"]["stopSequence"] is None
    else:
        assert metadata is None
    assert server.paths[-1] == WIRE[provider]["path"]
    assert "Be brief." in orjson.dumps(server.bodies[-1]).decode()


@pytest.mark.parametrize(
    ("stop", "finish"),
    [("max_tokens", "length"), ("refusal", "content-filter"), ("stop_sequence", "stop")],
)
def test_anthropic_stop_reasons(server: FaultServer, stop: str, finish: str) -> None:
    result = ok("generate_text", params(server, "anthropic", f"mode=ok;stop={stop}"))
    assert result["finishReason"] == finish
    events = events_of(params(server, "anthropic", f"mode=ok;stop={stop}"))
    assert events[-1]["finishReason"] == finish


def test_conversation_with_tool_history(server: FaultServer, provider: str) -> None:
    p = params(server, provider)
    del p["prompt"]
    p["messages"] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "toolCalls": [{"toolCallId": "c1", "toolName": "weather", "input": {"city": "Oslo"}}],
        },
        {"role": "tool", "toolCallId": "c1", "content": "sunny"},
    ]
    assert ok("generate_text", p)["text"] == "Hello!"
    sent = orjson.dumps(server.bodies[-1]).decode()
    assert "Oslo" in sent and "sunny" in sent and "c1" in sent and "Be brief." in sent


def test_api_key_from_env_and_missing_key(
    server: FaultServer, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIMUX_TEST_KEY", CANARY)
    p = params(server, provider)
    del p["model"]["apiKey"]
    p["model"]["apiKeyEnv"] = "AIMUX_TEST_KEY"
    assert ok("generate_text", p)["text"] == "Hello!"
    monkeypatch.delenv(WIRE[provider]["env"], raising=False)
    del p["model"]["apiKeyEnv"]
    env = fail("generate_text", p)
    assert (env["code"], env["error"]["name"]) == (18, "AI_LoadAPIKeyError")
    assert WIRE[provider]["env"] in env["message"]


# -- failures and retry ----------------------------------------------------------------------------


def test_connection_refused(server: FaultServer, provider: str) -> None:
    p = params(server, provider, maxRetries=0)
    p["model"]["baseURL"] = f"http://127.0.0.1:{closed_port()}/v1"
    env = fail("generate_text", p)
    assert env["error"]["name"] == "AI_APICallError" and env["error"]["isRetryable"] is True
    assert "statusCode" not in env["error"]
    assert "Connection refused" in " ".join(n["message"] for n in native_chain(env))


def test_5xx_retried_to_max(server: FaultServer, provider: str) -> None:
    env = fail(
        "generate_text",
        params(server, provider, "mode=status;status=500", scenario="500", maxRetries=2),
    )
    assert env["error"]["name"] == "AI_RetryError"
    assert env["error"]["reason"] == "maxRetriesExceeded"
    assert count(server, provider, "500") == 3
    last = env["error"]["errors"][-1]["error"]
    assert last["statusCode"] == 500 and last["isRetryable"] is True
    assert last["responseBody"] and last["data"]  # the provider's own error body, parsed
    if WIRE[provider]["diagnostic"] is not None:
        header, value = WIRE[provider]["diagnostic"]
        assert last["responseHeaders"][header] == value


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_4xx_not_retried_and_unwrapped(server: FaultServer, provider: str, status: int) -> None:
    env = fail(
        "generate_text",
        params(
            server, provider, f"mode=status;status={status}", scenario=f"s{status}", maxRetries=2
        ),
    )
    assert env["error"]["name"] == "AI_APICallError"
    assert (env["error"]["statusCode"], env["error"]["isRetryable"]) == (status, False)
    assert env["message"] == f"Injected fault with status {status}"
    assert count(server, provider, f"s{status}") == 1


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503, 529])
def test_retryable_statuses_then_success(server: FaultServer, provider: str, status: int) -> None:
    result = ok(
        "generate_text",
        params(
            server,
            provider,
            f"mode=status;status={status};times=1",
            scenario=f"r{status}",
            maxRetries=1,
        ),
    )
    assert result["text"] == "Hello!" and count(server, provider, f"r{status}") == 2


def test_retry_after_is_the_root_hint(server: FaultServer, provider: str) -> None:
    env = fail(
        "generate_text",
        params(server, provider, "mode=status;status=529;retry_after=0", maxRetries=0),
    )
    assert env["retryAfterMs"] == 0 and env["retryable"] is True


def test_error_not_retryable_after_a_retry(server: FaultServer, provider: str) -> None:
    env = fail(
        "generate_text",
        params(server, provider, "statuses=500,400", scenario="500-400", maxRetries=3),
    )
    assert env["error"]["name"] == "AI_RetryError"
    assert env["error"]["reason"] == "errorNotRetryable"
    assert count(server, provider, "500-400") == 2


def test_non_json_error_body(server: FaultServer, provider: str) -> None:
    env = fail(
        "generate_text", params(server, provider, "mode=status;status=502;body=text", maxRetries=0)
    )
    assert env["message"] == "Bad Gateway" and "<h1>" in env["error"]["responseBody"]


@pytest.mark.parametrize(
    ("mode", "cause"), [("badjson", "AI_JSONParseError"), ("shape", "AI_TypeValidationError")]
)
def test_unusable_2xx(server: FaultServer, provider: str, mode: str, cause: str) -> None:
    env = fail("generate_text", params(server, provider, f"mode={mode}", maxRetries=0))
    assert env["message"] == "Invalid JSON response" and env["error"]["statusCode"] == 200
    assert names(env)[:2] == ["AI_APICallError", cause]


def test_echoed_key_never_leaves(server: FaultServer, provider: str) -> None:
    env = fail("generate_text", params(server, provider, "mode=echo", maxRetries=0))
    assert env["error"]["statusCode"] == 401 and "[REDACTED]" in orjson.dumps(env).decode()


def test_timeout_is_code_12_and_not_retried(server: FaultServer, provider: str) -> None:
    env = fail(
        "generate_text",
        params(
            server,
            provider,
            "mode=stall;stall_ms=60000",  # only the client's timeout can end it early
            scenario="stall",
            timeoutMs=2000,  # the request reaches the server first, on a loaded machine too
            maxRetries=2,
        ),
    )
    assert (env["code"], env["error"]["timeoutMs"]) == (12, 2000)
    assert count(server, provider, "stall") == 1


# -- tools and objects -----------------------------------------------------------------------------


def test_tool_call(server: FaultServer, provider: str) -> None:
    result = ok("generate_text", params(server, provider, "mode=tool", tools=WEATHER))
    assert result["finishReason"] == "tool-calls"
    [call] = result["toolCalls"]
    assert (call["toolName"], call["input"], call.get("invalid")) == (
        "weather",
        {"city": "Paris"},
        None,
    )


@pytest.mark.parametrize(
    ("fault", "chain"),
    [
        ('mode=tool;args={"city":42}', ["AI_InvalidToolInputError", "AI_TypeValidationError"]),
        ("mode=tool;tool=launch", ["AI_NoSuchToolError"]),
    ],
)
def test_invalid_tool_calls(
    server: FaultServer, provider: str, fault: str, chain: list[str]
) -> None:
    result = ok("generate_text", params(server, provider, fault, tools=WEATHER))
    [call] = result["toolCalls"]
    assert call["invalid"] is True and names(call["error"])[: len(chain)] == chain
    events = events_of(params(server, provider, fault, tools=WEATHER))
    [event] = [e for e in events if e["type"] == "tool-call"]
    assert event["invalid"] is True and names(event["error"])[: len(chain)] == chain


def test_streamed_tool_input_not_json(server: FaultServer, provider: str) -> None:
    events = events_of(params(server, provider, "mode=tool;args=badjson", tools=WEATHER))
    call = events[0]
    assert call["type"] == "tool-call" and call["invalid"] is True
    assert names(call["error"])[:2] == ["AI_InvalidToolInputError", "AI_JSONParseError"]
    assert events[-1]["type"] == "finish"


def test_generate_object(server: FaultServer, provider: str) -> None:
    result = ok("generate_object", params(server, provider, "mode=object", schema=OBJECT_SCHEMA))
    assert result["object"] == {"name": "Ada", "age": 36} and result["finishReason"] == "stop"


@pytest.mark.parametrize(
    ("json", "cause"),
    [('{"name":"Ada"}', "AI_TypeValidationError"), ("[1, 2", "AI_JSONParseError")],
)
def test_generate_object_failures(
    server: FaultServer, provider: str, json: str, cause: str
) -> None:
    if provider == "anthropic" and cause == "AI_JSONParseError":
        # the JSON tool's input is always JSON on the Messages API: a text answer stands in
        p = params(server, provider, f"mode=ok;text={json}", schema=OBJECT_SCHEMA)
    else:
        p = params(server, provider, f"mode=object;json={json}", schema=OBJECT_SCHEMA)
    env = fail("generate_object", p)
    assert names(env)[:2] == ["AI_NoObjectGeneratedError", cause]


# -- streams ---------------------------------------------------------------------------------------


def test_happy_stream(server: FaultServer, provider: str) -> None:
    finish: dict[str, Any] = {
        "type": "finish",
        "finishReason": "stop",
        "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
        "response": {"id": WIRE[provider]["id"], "modelId": WIRE[provider]["model"]},
    }
    if provider == "anthropic":
        finish["providerMetadata"] = ANTHROPIC_HELLO_METADATA
    events = events_of(params(server, provider))
    assert "event-stream" in events[-1]["response"].pop("headers")["content-type"]
    assert events == [
        {"type": "text-delta", "text": "Hel"},
        {"type": "text-delta", "text": "lo!"},
        finish,
    ]
    assert server.bodies[-1]["stream"] is True


def test_streamed_tool_call(server: FaultServer, provider: str) -> None:
    events = events_of(params(server, provider, "mode=tool", tools=WEATHER))
    assert events[0]["toolName"] == "weather" and events[0]["input"] == {"city": "Paris"}
    assert events[-1]["finishReason"] == "tool-calls"


def test_error_frame_mid_stream(server: FaultServer, provider: str) -> None:
    events = events_of(
        params(server, provider, "mode=errframe;message=Overloaded", scenario="ef", maxRetries=2)
    )
    assert events[0] == {"type": "text-delta", "text": "Hel"}
    env = terminal_error(events)
    assert env["error"]["name"] == "AI_APICallError" and env["message"] == "Overloaded"
    assert (env["error"]["statusCode"], env["error"]["isRetryable"]) == WIRE[provider]["errframe"]
    assert env["error"]["data"]["error"]["type"]  # the frame's type is kept
    assert count(server, provider, "ef") == 1  # after the first event: never retried


def test_error_frame_of_a_client_error_type(server: FaultServer, provider: str) -> None:
    env = terminal_error(
        events_of(params(server, provider, "mode=errframe;etype=invalid_request_error"))
    )
    assert env["error"]["isRetryable"] is False and env["retryable"] is False


@pytest.mark.parametrize(
    ("mode", "cause"), [("badchunk", "AI_JSONParseError"), ("badshape", "AI_TypeValidationError")]
)
def test_bad_event(server: FaultServer, provider: str, mode: str, cause: str) -> None:
    env = terminal_error(events_of(params(server, provider, f"mode={mode}")))
    assert env["error"]["statusCode"] == 200 and env["error"]["isRetryable"] is False
    assert names(env)[:2] == ["AI_APICallError", cause]


def test_cut_connection(server: FaultServer, provider: str) -> None:
    events = events_of(params(server, provider, "mode=cut", scenario="cut", maxRetries=2))
    env = terminal_error(events)
    assert env["error"]["statusCode"] == 200 and env["error"]["isRetryable"] is True
    assert names(env)[1].startswith("aimux_ops.http.")
    assert count(server, provider, "cut") == 1


def test_end_before_the_terminal_event(server: FaultServer, provider: str) -> None:
    env = terminal_error(events_of(params(server, provider, "mode=nodone")))
    assert env["error"]["statusCode"] == 200
    assert "terminal event" in env["message"]


def test_failure_before_first_event_is_retried(server: FaultServer, provider: str) -> None:
    events = events_of(
        params(server, provider, "mode=status;status=529;times=2", scenario="open", maxRetries=2)
    )
    assert events[-1]["type"] == "finish" and count(server, provider, "open") == 3


def test_open_fails_unwrapped_when_not_retryable(server: FaultServer, provider: str) -> None:
    handle, env = open_stream(
        params(server, provider, "mode=status;status=401", scenario="o401", maxRetries=2)
    )
    assert handle is None and env is not None and env["error"]["statusCode"] == 401
    assert count(server, provider, "o401") == 1


def test_stall_mid_stream_is_a_timeout_event(server: FaultServer, provider: str) -> None:
    env = terminal_error(
        # 2 s: the status line arrives first, on a loaded machine too
        events_of(params(server, provider, "mode=stall;stall_ms=60000", timeoutMs=2000))
    )
    assert (env["code"], env["error"]["statusCode"]) == (12, 200)


def test_cancel_wakes_a_blocked_read(server: FaultServer, provider: str) -> None:
    # the server stalls a minute: only the cancel can end the blocked read early
    handle, env = open_stream(params(server, provider, "mode=stall;stall_ms=60000"))
    assert handle is not None and env is None
    first, _ = stream_next_json(handle)
    assert first is not None and orjson.loads(first)["type"] == "text-delta"
    # the cancel comes once this read waits on the stalled stream
    canceller = threading.Thread(
        target=lambda: (wait_blocked_reader(handle), stream_cancel(handle))
    )
    canceller.start()
    assert stream_next_json(handle) == (None, None)
    canceller.join()
    stream_free(handle)


def test_five_thousand_events(server: FaultServer, provider: str) -> None:
    events = events_of(params(server, provider, "mode=chunks;n=5000"))
    deltas = [e for e in events if e["type"] == "text-delta"]
    assert len(deltas) == 5000 and deltas[-1]["text"] == "w4999 "
    assert events[-1]["type"] == "finish"


# -- recording -------------------------------------------------------------------------------------


def _replay(p: dict[str, Any]) -> dict[str, Any]:
    """The same call in replay mode: no key, a closed port (any network use would fail)."""
    q: dict[str, Any] = orjson.loads(orjson.dumps(p))
    q["model"].pop("apiKey", None)
    q["model"]["baseURL"] = f"http://127.0.0.1:{closed_port()}/v1"
    q["recording"]["mode"] = "replay"
    return q


@pytest.fixture
def recording(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "calls.jsonl"
    yield path
    if path.exists():
        data = path.read_bytes()
        assert_no_canary(data)
        assert b"Bearer" not in data


@pytest.mark.parametrize(
    ("op", "fault", "extra"),
    [
        ("generate_text", "mode=ok", {}),
        ("generate_text", "mode=tool", {"tools": WEATHER}),
        ("generate_object", "mode=object", {"schema": OBJECT_SCHEMA}),
        ("generate_text", "mode=status;status=529;times=1", {"maxRetries": 1}),
        ("generate_text", "mode=status;status=400", {}),
    ],
)
def test_call_record_then_replay(
    server: FaultServer, provider: str, recording: Path, op: str, fault: str, extra: dict[str, Any]
) -> None:
    p = params(
        server, provider, fault, recording={"mode": "record", "path": str(recording)}, **extra
    )
    first = run(op, p)
    again = run(op, _replay(p))
    assert again == first
    record = orjson.loads(recording.read_bytes().splitlines()[0])
    assert record["exchanges"][0]["request"]["path"] == WIRE[provider]["path"]


@pytest.mark.parametrize("fault", ["mode=ok", "mode=tool", "mode=errframe", "mode=nodone"])
def test_stream_record_then_replay(
    server: FaultServer, provider: str, recording: Path, fault: str
) -> None:
    p = params(
        server, provider, fault, tools=WEATHER, recording={"mode": "record", "path": str(recording)}
    )
    first = events_of(p)
    again = events_of(_replay(p))
    assert again == first and first[-1]["type"] in ("finish", "error")


def test_the_ops_reach_providers_only_through_the_interface() -> None:
    """No module of ``aimux_ops/ops/`` imports a provider's wire module: only
    ``aimux_ops.providers`` (the lookup) and ``aimux_ops.providers.base`` (the interface)."""
    import ast

    import aimux_ops.ops

    ops_dir = Path(aimux_ops.ops.__file__).parent
    seen: set[str] = set()
    for path in sorted(ops_dir.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and "providers" in node.module:
                seen.add(node.module)
                for alias in node.names:
                    assert alias.name not in WIRE, (path.name, alias.name)
                assert node.module.split(".")[-1] in ("providers", "base"), (path.name, node.module)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert "providers." not in alias.name or alias.name.endswith(".base"), (
                        path.name,
                        alias.name,
                    )
    assert seen, "the ops import the provider interface somewhere"


def test_error_frame_before_the_first_event_is_retried(server: FaultServer, provider: str) -> None:
    """A retryable error frame before any event fails the attempt (streams retry until the
    first event): every attempt is made, then the open fails."""
    handle, env = open_stream(
        params(server, provider, "mode=errframe;after=0", scenario="ef0", maxRetries=2)
    )
    assert handle is None and env is not None
    assert (env["error"]["name"], env["error"]["reason"]) == ("AI_RetryError", "maxRetriesExceeded")
    assert count(server, provider, "ef0") == 3


def test_anthropic_blocks_the_ops_do_not_report(server: FaultServer) -> None:
    """A thinking block (with its signature) and a server tool's blocks (its streamed input
    included) before the text: the thinking is the reasoning (its signature kept), the server
    tool's call and result are reported as run by the provider, its results as sources, in a
    result and in a stream."""
    result = ok("generate_text", params(server, "anthropic", "mode=blocks"))
    assert (result["text"], result["finishReason"]) == ("Hello!", "stop")
    assert result["toolCalls"] == [
        {
            "toolCallId": "srvtoolu_01",
            "toolName": "web_search",
            "input": {"query": "hello"},
            "providerExecuted": True,
        }
    ]
    assert [p["type"] for p in result["content"]] == [
        "reasoning", "tool-call", "tool-result", "source", "text"
    ]  # fmt: skip
    assert result["toolResults"][0]["providerExecuted"] is True
    assert result["sources"][0]["sourceType"] == "url"
    assert result["reasoningText"] == "The user greets me."
    assert "signature" in result["reasoning"][0]["providerMetadata"]["anthropic"]
    events = events_of(params(server, "anthropic", "mode=blocks"))
    assert [e["type"] for e in events] == [
        "reasoning-delta", "reasoning-delta", "tool-call", "tool-result", "source",
        "text-delta", "text-delta", "finish",
    ]  # fmt: skip
    assert events[-1]["finishReason"] == "stop"
