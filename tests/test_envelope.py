"""The projection: shape, causes, bounds, scrubbing, retryability (CONTRACT §1)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from helpers import assert_valid_envelope, load_vectors

from aimux_ops import errors as E
from aimux_ops.http import ConnectError, transport
from aimux_ops.wire.envelope import chain_links, decode_error, project, to_envelope
from aimux_ops.wire.redact import remember_secret


def raised(exc: BaseException, cause: BaseException | None = None) -> BaseException:
    try:
        if cause is None:
            raise exc
        raise exc from cause
    except BaseException as caught:
        return caught


def refused() -> BaseException:
    """The core's own client's failure to connect (a URL with userinfo and a key in its query)."""
    request = transport.HTTPRequest(
        "GET", "http://user:pw@127.0.0.1:1/v1/models?api_key=zzz", {}, b""
    )
    with pytest.raises(E.APICallError) as info:
        transport.HttpTransport().send(request, transport.Deadline(2000))
    cause = info.value.__cause__
    assert isinstance(cause, ConnectError)
    return cause


def test_transport_chain_reaches_the_os_error_without_any_url() -> None:
    exc = raised(
        E.APICallError("Cannot connect to API: " + str(refused()), is_retryable=True), refused()
    )
    data = project(exc)
    env = assert_valid_envelope(data)
    types = []
    node = env
    while "cause" in node:
        node = node["cause"]
        types.append(node.get("type"))
    assert types == ["aimux_ops.http.ConnectError", "ConnectionRefusedError"]
    assert "Connection refused" in node["message"]
    assert b"127.0.0.1" not in data and b"http://" not in data
    assert env["retryable"] is True and "retryAfterMs" not in env
    assert "statusCode" not in env["error"], "never fabricated"


def test_member_order_and_root_only_fields() -> None:
    env = orjson.loads(project(raised(E.JSONParseError("bad", text="{"), ValueError("x"))))
    assert list(env) == ["kind", "code", "message", "error", "cause", "retryable"]
    assert env["error"] == {"name": "AI_JSONParseError", "text": "{"}
    assert env["cause"] == {"message": "x", "type": "ValueError"}


def test_retry_after_from_headers_only() -> None:
    err = E.APICallError(
        "slow down", status_code=429, is_retryable=True, response_headers={"Retry-After": "3"}
    )
    assert orjson.loads(project(err))["retryAfterMs"] == 3000
    err = E.APICallError(
        "slow down",
        status_code=429,
        is_retryable=True,
        response_headers={"retry-after-ms": "150", "retry-after": "9"},
    )
    assert orjson.loads(project(err))["retryAfterMs"] == 150
    # a number in the message is not a hint
    err = E.APICallError("retry after 5 seconds", status_code=429, is_retryable=True)
    assert "retryAfterMs" not in orjson.loads(project(err))


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("9223372036854", 9223372036854),  # the longest Go time.Duration in ms: kept
        ("9223372036855", None),  # one more: no binding could hold it, so no hint is written
        ("1e20", None),  # beyond 64 bits: it used to make the whole envelope the last resort
    ],
)
def test_retry_after_beyond_what_every_binding_holds_is_not_written(
    header: str, expected: int | None
) -> None:
    err = E.APICallError(
        "slow down", status_code=429, is_retryable=True, response_headers={"retry-after-ms": header}
    )
    env = orjson.loads(project(err))
    assert env["error"]["name"] == "AI_APICallError" and env["error"]["statusCode"] == 429
    assert env.get("retryAfterMs") == expected
    assert_valid_envelope(env)


def test_retry_error_has_no_cause_and_lists_attempts() -> None:
    attempts = [
        E.APICallError("a", status_code=500, is_retryable=True),
        E.APICallError(
            "b", status_code=503, is_retryable=True, response_headers={"retry-after-ms": "20"}
        ),
    ]
    env = assert_valid_envelope(project(E.RetryError(errors=attempts)))
    assert "cause" not in env
    assert [a["message"] for a in env["error"]["errors"]] == ["a", "b"]
    assert env["retryable"] is True and env["retryAfterMs"] == 20
    assert env["message"] == "Failed after 2 attempts. Last error: b"
    root, links = chain_links(project(E.RetryError(errors=attempts)))
    assert root == (True, 20)
    assert [(n.code, n.status_code, n.kind, n.name, n.message) for n in links] == [
        (14, 503, b"aimux", b"AI_RetryError", env["message"].encode()),
        (11, 503, b"aimux", b"AI_APICallError", b"b"),
    ]


def test_retry_error_carries_its_last_attempts_status_code() -> None:
    """What the user caught answers the status (CONTRACT §4.1): the last attempt's, in Python,
    on the wire and decoded; a last attempt without one (a refused connection) gives none."""
    attempts = [E.APICallError("a", status_code=500), E.APICallError("b", status_code=429)]
    err = E.RetryError(errors=attempts)
    assert err.status_code == 429
    env = assert_valid_envelope(project(err))
    assert env["error"]["statusCode"] == 429
    assert decode_error(env).status_code == 429
    refused = E.RetryError(errors=[attempts[0], E.APICallError("Cannot connect")])
    env = assert_valid_envelope(project(refused))
    assert refused.status_code is None and "statusCode" not in env["error"]
    assert [n.status_code for n in chain_links(project(refused))[1]] == [0, 0]
    given = E.RetryError(errors=attempts, status_code=418)  # given explicitly: kept as given
    assert to_envelope(given)["error"]["statusCode"] == 418


def test_non_aimux_exception_becomes_internal_with_its_chain() -> None:
    env = assert_valid_envelope(project(raised(KeyError("k"), OSError(5, "I/O error"))))
    assert (env["kind"], env["code"], env["error"]["name"]) == ("binding", 208, "InternalError")
    assert env["cause"]["type"] == "KeyError"
    assert env["cause"]["cause"] == {"message": "[Errno 5] I/O error", "type": "OSError"}


def test_context_is_followed_unless_suppressed() -> None:
    try:
        try:
            raise ValueError("inner")
        except ValueError:
            raise RuntimeError("outer")  # noqa: B904 - implicit context on purpose
    except RuntimeError as exc:
        implicit = exc
    env = orjson.loads(project(raised(E.OtherError("x"), implicit)))
    assert env["cause"]["cause"]["message"] == "inner"
    try:
        try:
            raise ValueError("inner")
        except ValueError:
            raise RuntimeError("outer") from None
    except RuntimeError as exc:
        suppressed = exc
    env = orjson.loads(project(raised(E.OtherError("x"), suppressed)))
    assert "cause" not in env["cause"]


def test_bounds_are_marked() -> None:
    env = assert_valid_envelope(
        project(
            E.APICallError(
                "m" * 5000,
                status_code=500,
                is_retryable=True,
                response_body="b" * 40000,
                data={"k": "v" * 40000},
            )
        )
    )
    assert len(env["message"].encode()) <= 1024 and env["message"].endswith("…[truncated]")
    assert len(env["error"]["responseBody"].encode()) <= 16384
    assert isinstance(env["error"]["data"], str) and env["error"]["data"].endswith("…[truncated]")
    assert set(env["truncated"]) == {"message", "error.responseBody", "error.data"}


def test_depth_and_cycles_are_cut_and_marked() -> None:
    exc: BaseException = ValueError("0")
    for i in range(1, 100):
        exc = raised(RuntimeError(str(i)), exc)
    env = assert_valid_envelope(project(raised(E.OtherError("deep"), exc)))
    node, n = env, 1
    while "cause" in node:
        node, n = node["cause"], n + 1
    assert n == 16 and node["truncated"] == ["cause"]
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__cause__, b.__cause__ = b, a
    env = assert_valid_envelope(project(raised(E.OtherError("cyc"), a)))
    assert env["cause"]["cause"]["truncated"] == ["cause"]


def test_envelope_never_exceeds_one_mib() -> None:
    def fat(i: int) -> E.APICallError:
        inner: BaseException = ValueError("v" * 2000)
        for j in range(20):
            inner = raised(RuntimeError(f"{i}.{j} " + "w" * 2000), inner)
        return raised(
            E.APICallError(
                "x" * 2000,
                status_code=500,
                is_retryable=True,
                response_body="r" * 20000,
                data=["d" * 20000],
            ),
            inner,
        )  # type: ignore[return-value]

    data = project(E.RetryError(errors=[fat(i) for i in range(40)]))
    env = assert_valid_envelope(data)
    assert len(data) <= 1024 * 1024
    assert "envelope" in env["truncated"] or "error.errors" in env["truncated"]


def test_secrets_are_scrubbed_everywhere() -> None:
    key = "sk-live-0123456789abcdefSECRET"
    remember_secret(key)
    err = raised(
        E.APICallError(
            f"Incorrect API key provided: {key}. See https://platform.example/keys?token=abc",
            status_code=401,
            is_retryable=False,
            response_headers={
                "authorization": f"Bearer {key}",
                "x-api-key": key,
                "set-cookie": "s=1",
                "x-request-id": "r1",
            },
            response_body=f'{{"error": {{"message": "bad key {key}"}}}}',
            data={"error": {"message": f"bad key {key}", "api_key": "whatever"}},
        ),
        ValueError(f"Authorization: Bearer {key}"),
    )
    data = project(err)
    assert key.encode() not in data
    env = orjson.loads(data)
    assert "https://" not in env["message"] and "[url]" in env["message"]
    assert env["error"]["responseHeaders"]["authorization"] == "[REDACTED]"
    assert env["error"]["responseHeaders"]["set-cookie"] == "[REDACTED]"
    assert env["error"]["responseHeaders"]["x-request-id"] == "r1"
    assert env["error"]["data"]["error"]["api_key"] == "[REDACTED]"


def test_lone_surrogates_and_non_string_args() -> None:
    env = assert_valid_envelope(
        project(raised(E.OtherError("a\ud800b"), ValueError(12, None, {"x": 1})))
    )
    assert env["message"] == "a?b"
    assert env["cause"]["message"] == "(12, None, {'x': 1})"


class _BrokenStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str for you")


def test_unprintable_exception() -> None:
    env = assert_valid_envelope(project(raised(E.OtherError("x"), _BrokenStr())))
    assert env["cause"]["message"] == "<unprintable _BrokenStr>"


def test_cut_typed_fields_keep_their_type() -> None:
    headers = {f"x-h{i}": "h" * 1000 for i in range(60)}
    env = assert_valid_envelope(
        project(
            E.APICallError(
                "big headers", status_code=500, is_retryable=True, response_headers=headers
            )
        )
    )
    kept = env["error"]["responseHeaders"]
    assert isinstance(kept, dict) and 0 < len(kept) < 60
    assert "error.responseHeaders" in env["truncated"]


def test_invalid_params_with_thousands_of_violations_stays_an_array() -> None:
    from aimux_ops.boundary.dispatch import call_json

    bad = {"model": {"provider": "openai", "modelId": "m"}, "messages": [{"role": 7}] * 3000}
    _, envelope = call_json("generate_text", orjson.dumps(bad))
    env = assert_valid_envelope(envelope or b"")
    assert env["code"] == 301
    assert isinstance(env["error"]["violations"], list) and len(env["error"]["violations"]) > 10
    assert "error.violations" in env["truncated"]


def test_messages_never_carry_nul() -> None:
    env = assert_valid_envelope(
        project(raised(E.OtherError("before\x00after"), ValueError("a\x00b")))
    )
    assert env["message"] == "before\ufffdafter" and env["cause"]["message"] == "a\ufffdb"


def test_a_remembered_projection_is_not_projected_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """project(remember=True) (the recorder's) keeps the bytes: the dispatch boundary's project
    of the same exception answers them without projecting; a changed cause projects again."""
    from aimux_ops.wire import envelope

    exc = E.APICallError("Cannot connect to API", is_retryable=True)
    exc.__cause__ = ConnectionRefusedError(111, "Connection refused")
    plain = E.APICallError("Cannot connect to API", is_retryable=True)
    first = envelope.to_envelope(exc, remember=True)
    calls: list[BaseException] = []
    real = envelope._project
    monkeypatch.setattr(envelope, "_project", lambda e: calls.append(e) or real(e))
    assert orjson.loads(envelope.project(exc)) == first and calls == []
    envelope.project(plain)
    envelope.project(plain)
    assert calls == [plain, plain], "without remember every project projects"
    exc.__cause__ = OSError("another cause")
    again = orjson.loads(envelope.project(exc))
    assert calls[-1] is exc and again["cause"]["message"] == "another cause"


@pytest.mark.parametrize(("key", "doc"), load_vectors(), ids=[k for k, _ in load_vectors()])
def test_both_python_decoders_read_every_vector_alike(key: str, doc: dict[str, Any]) -> None:
    """``decode_error`` and ``chain_links`` (what the C accessors answer) read numbers the same
    way (DESIGN.md "Numbers on the wire"): the codes and root fields every vector expects."""
    text = doc.get("envelopeText") or orjson.dumps(doc["envelope"]).decode()
    if "rejected" in doc:
        with pytest.raises(E.InvalidWireJSONError):
            decode_error(text)
        with pytest.raises(E.InvalidWireJSONError):
            chain_links(text.encode())
        return
    fields, links = chain_links(text.encode())
    assert [link.code for link in links] == [entry["code"] for entry in doc["chain"]]
    assert fields == (doc["root"]["retryable"], doc["root"]["retryAfterMs"])
    err = decode_error(text)
    assert (err.retryable, err.retry_after_ms) == fields
