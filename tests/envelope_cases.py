"""A broad set of exceptions for the envelope golden test (``test_envelope_golden.py``).

Every catalogued error class with representative payloads, secrets to scrub, long messages and
payloads to clip, deep and cyclic chains, RetryError / TimeoutError attempts, non-ASCII, NUL and
lone surrogates, source exceptions (httpx → httpcore → ConnectionRefusedError), decoded errors
projected again, payload values that are not plain JSON, envelopes over 1 MiB. The golden file
(``golden/envelopes.jsonl``) holds, per case, the envelope bytes and the shim's ``chain_links``
as the implementation gave them when it was written: a faster projection must give the same.

Regenerate (only when the envelope is meant to change): ``.venv/bin/python
tests/envelope_cases.py --write``.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import hashlib
import itertools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpcore
import httpx
import orjson

from aimux_ops import errors as E
from aimux_ops.wire.envelope import chain_links, decode_error, project
from aimux_ops.wire.redact import remember_secret

GOLDEN = Path(__file__).parent / "golden" / "envelopes.jsonl"

#: Remembered before any case is built (unique values no other test uses).
SECRETS = ("golden-secret-Zq8w1Xv", "gsk_live_4f9a2b7c1d", "p4ss-w0rd-golden-77")
SK = "sk-golden0123456789abcdef"
KEY = "key-golden0123456789abcdef0123"


class Colour(enum.Enum):
    RED = "red"


class Opaque:
    def __repr__(self) -> str:
        return f"Opaque(token={SECRETS[0]})"


class BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")


class NotStr(Exception):
    def __str__(self) -> str:
        return 42  # type: ignore[return-value]


def chained(*links: BaseException) -> BaseException:
    """``links[0]`` with ``__cause__`` = ``links[1]`` and so on."""
    for outer, inner in itertools.pairwise(links):
        outer.__cause__ = inner
    return links[0]


def transport_failure() -> BaseException:
    """httpx.ConnectError ← (args[0]) httpcore.ConnectError ← (args[0]) ConnectionRefusedError,
    wrapped like the provider does."""
    refused = ConnectionRefusedError(111, "Connection refused")
    core = httpcore.ConnectError(refused)
    outer = httpx.ConnectError(str(core))
    outer.__cause__ = None
    outer.__suppress_context__ = True
    outer.args = (core,)
    api = E.APICallError(
        f"Cannot connect to API: {refused}", is_retryable=True, response_headers=None
    )
    api.__cause__ = outer
    return api


def deep(n: int, aimux_every: int = 2) -> BaseException:
    inner: BaseException = ConnectionRefusedError(111, "Connection refused")
    for level in range(n - 1, 0, -1):
        outer: BaseException
        if level % aimux_every == 0:
            outer = E.TypeValidationError(
                f"Type validation failed at layer {level}", value={"level": level}
            )
        else:
            outer = OSError(f"layer {level}: the connection failed")
        outer.__cause__ = inner
        inner = outer
    return chained(E.APICallError("root", status_code=502, is_retryable=True), inner)


def representative() -> dict[str, dict[str, Any]]:
    """Payload fields for every catalogued class that declares any."""
    return {
        "JSONParseError": {"text": '{"a": 1'},
        "InvalidResponseDataError": {"data": {"choices": [], "id": "x", "n": 1.5, "ok": None}},
        "TypeValidationError": {
            "value": {"choices": "none", "nested": {"deep": [1, 2, {"k": "v"}]}}
        },
        "InvalidArgumentError": {"argument": "temperature"},
        "UnsupportedFunctionalityError": {"functionality": "image parts"},
        "NoSuchModelError": {"model_id": "gpt-x", "model_type": "languageModel"},
        "NoSuchProviderError": {
            "provider_id": "acme",
            "available_providers": ["openai", "anthropic"],
            "model_id": "m",
            "model_type": "languageModel",
        },
        "APICallError": {
            "status_code": 429,
            "is_retryable": True,
            "response_headers": {"retry-after": "2", "x-request-id": "req_1"},
            "response_body": '{"error":{"message":"slow down"}}',
            "data": {"error": {"message": "slow down", "type": "rate_limit"}},
        },
        "TimeoutError": {"timeout_ms": 5000, "status_code": 200},
        "RetryError": {"reason": "errorNotRetryable"},
        "NoSuchToolError": {"tool_name": "weather", "available_tools": ["search", "calc"]},
        "InvalidToolInputError": {"tool_name": "calc", "tool_input": "{not json"},
        "NoObjectGeneratedError": {
            "text": "nope",
            "finish_reason": "stop",
            "usage": {"inputTokens": 3, "outputTokens": 5},
        },
        "RecordingOpenFileError": {"path": "/tmp/rec.jsonl"},
        "RecordingNoMatchError": {"method": "POST", "path": "/v1/chat/completions"},
        "RecordingCorruptError": {"path": "/tmp/rec.jsonl", "line": 7},
        "RecordingUnsupportedSchemaError": {"path": "/tmp/r", "line": 1, "schema_version": 9},
        "RecordingWriteError": {"path": "/tmp/rec.jsonl"},
        "InvalidUTF8Error": {"argument": "op"},
        "InvalidWireJSONError": {"argument": "params_json"},
        "InvalidHandleError": {"handle": 12345},
        "NullArgumentError": {"argument": "op"},
        "UnknownOpError": {"op": "no.such.op", "available_ops": ["aimux.version", "generate_text"]},
        "InvalidParamsError": {
            "op": "generate_text",
            "violations": [E.Violation(path="model", reason="Field required")],
        },
        "WrongModeError": {"op": "stream_text", "expected": "stream"},
    }


def cases() -> Iterator[tuple[str, Callable[[], BaseException]]]:
    reps = representative()
    for cls in E.catalogue():
        yield f"{cls.__name__}/bare", cls
        if cls.__name__ in reps:
            fields = reps[cls.__name__]
            yield f"{cls.__name__}/payload", lambda c=cls, f=fields: c("with payload", **f)
        yield (
            f"{cls.__name__}/secret-message",
            lambda c=cls: c(f"failed with {SECRETS[0]} at https://u:p@h.example/x?api_key=1"),
        )

    long_text = "x" * 5000
    yield "long-message", lambda: E.OtherError("m" * 3000)
    yield "long-message-secret-on-cut", lambda: E.OtherError("a" * 1020 + SECRETS[1] + "b" * 10)
    yield "long-message-non-ascii", lambda: E.OtherError("é" * 900 + "日本語" * 100)
    yield "message-nul", lambda: E.OtherError("a\x00b")
    yield "message-surrogate", lambda: E.OtherError("bad \udc80 surrogate")
    yield "message-emoji", lambda: E.OtherError("🔥 failed: naïve café")
    yield "message-empty", lambda: E.OtherError("")
    yield "message-bearer", lambda: E.OtherError("header was Authorization: Bearer abc.def-ghi")
    yield "message-BEARER-case", lambda: E.OtherError("BeArEr zzzzzz123 rejected")
    yield "message-sk-key", lambda: E.OtherError(f"key {SK} and {KEY} rejected")
    yield "message-secret-inside-sk", lambda: E.OtherError(f"sk-abc{SECRETS[0]}def")
    yield "message-bearer-secret", lambda: E.OtherError(f"Bearer {SECRETS[2]}")
    yield "message-many-urls", lambda: E.OtherError("see http://a.b/c, ftp://x.y and ws://q:1/p")
    yield "message-exact-limit", lambda: E.OtherError("z" * 1024)
    yield "message-over-limit-by-one", lambda: E.OtherError("z" * 1025)
    yield "message-url-long", lambda: E.OtherError("https://example.com/" + "p" * 2000)
    yield "payload-long-string", lambda: E.JSONParseError("bad", text=long_text * 4)
    yield (
        "payload-long-string-non-ascii",
        lambda: E.JSONParseError("bad", text="ü" * 10000),
    )
    yield (
        "payload-secret-strings",
        lambda: E.APICallError(
            "x",
            response_body=f"token {SECRETS[1]} and {SK}",
            response_headers={"authorization": "Bearer abc", "x-api-key": SECRETS[0], "ok": "1"},
            data={"apiKey": "zzz", "password": "hunter2", "nested": {"secret": "s", "list": [SK]}},
        ),
    )
    yield (
        "payload-data-big-dict",
        lambda: E.InvalidResponseDataError(data={f"k{i}": "v" * 100 for i in range(400)}),
    )
    yield (
        "payload-data-big-list",
        lambda: E.InvalidResponseDataError(data=[{"i": i, "s": "w" * 50} for i in range(600)]),
    )
    yield (
        "payload-value-huge-string-list",
        lambda: E.TypeValidationError(value=["y" * 9000, "z" * 9000, "q"]),
    )
    yield (
        "payload-available-ops-huge",
        lambda: E.UnknownOpError(
            "unknown op 'x'", op="x", available_ops=[f"op.{i:05d}" * 4 for i in range(2000)]
        ),
    )
    yield (
        "payload-headers-huge",
        lambda: E.APICallError("x", response_headers={f"h{i}": "v" * 200 for i in range(200)}),
    )
    yield (
        "payload-usage-big",
        lambda: E.NoObjectGeneratedError(usage={f"u{i}": i for i in range(3000)}),
    )
    yield (
        "payload-data-non-json",
        lambda: E.InvalidResponseDataError(
            data={
                "when": datetime.datetime(2026, 1, 2, 3, 4, 5),
                "amount": decimal.Decimal("1.50"),
                "raw": b"bytes\xff",
                "tuple": (1, 2),
                "set": {3},
                "colour": Colour.RED,
                "nan": float("nan"),
                "inf": float("inf"),
                1: "int key",
            }
        ),
    )
    yield "payload-data-opaque", lambda: E.InvalidResponseDataError(data=Opaque())
    yield "payload-value-tuple", lambda: E.TypeValidationError(value=("a", SK))
    yield "payload-value-float", lambda: E.TypeValidationError(value=1.25)
    yield "payload-value-nan", lambda: E.TypeValidationError(value=float("nan"))
    yield "payload-value-bool", lambda: E.TypeValidationError(value=False)
    yield (
        "payload-value-none-in-dict",
        lambda: E.TypeValidationError(value={"a": None, "b": [None]}),
    )
    yield "payload-value-str-subclass", lambda: E.TypeValidationError(value=Colour.RED)
    yield "payload-value-non-ascii-str", lambda: E.TypeValidationError(value="naïve 日本 \udc80")
    yield "payload-value-nul-str", lambda: E.TypeValidationError(value="a\x00b")
    yield "payload-data-int-big", lambda: E.InvalidResponseDataError(data=2**70)
    yield "payload-coerced", lambda: E.APICallError("c", status_code="503", is_retryable=1)  # type: ignore[arg-type]
    yield "payload-camel-kwargs", lambda: E.APICallError("c", statusCode=500, isRetryable=True)
    yield (
        "payload-violation-dicts",
        lambda: E.InvalidParamsError(
            op="o",
            violations=[{"path": "a.b", "reason": f"bad {SK}"}],  # type: ignore[list-item]
        ),
    )
    yield (
        "payload-tuple-list",
        lambda: E.NoSuchToolError(
            tool_name="t",
            available_tools=("a", "b"),  # type: ignore[arg-type]
        ),
    )
    yield "payload-invalid-status", lambda: E.APICallError("c", status_code="abc")  # type: ignore[arg-type]
    yield "payload-invalid-reason", lambda: E.RetryError(reason="bogus")  # type: ignore[arg-type]
    yield "payload-invalid-headers", lambda: E.APICallError("c", response_headers={"a": 1})  # type: ignore[dict-item]
    yield "payload-invalid-list", lambda: E.UnknownOpError(available_ops="abc")  # type: ignore[arg-type]
    yield "payload-float-int", lambda: E.APICallError("c", status_code=500.0)  # type: ignore[arg-type]
    yield "payload-bool-int", lambda: E.RecordingCorruptError(line=True)
    yield "payload-int-bool", lambda: E.APICallError("c", is_retryable=0)  # type: ignore[arg-type]
    yield "payload-str-bool", lambda: E.APICallError("c", is_retryable="yes")  # type: ignore[arg-type]
    yield "payload-set-after", lambda: _set_after()
    yield "payload-set-after-weird", lambda: _set_after_weird()
    yield "payload-extra-member", lambda: E.APICallError("x", somethingNew={"a": 1})  # type: ignore[call-arg]
    yield (
        "retry-after-header",
        lambda: E.APICallError("x", is_retryable=True, response_headers={"Retry-After-Ms": "1500"}),
    )
    yield (
        "retry-after-seconds",
        lambda: E.APICallError("x", is_retryable=True, response_headers={"retry-after": "3"}),
    )

    yield "transport", transport_failure
    yield "deep-4", lambda: deep(4)
    yield "deep-16", lambda: deep(16)
    yield "deep-40", lambda: deep(40, aimux_every=3)
    yield "cycle", _cycle
    yield "context-not-cause", _context
    yield "suppressed-context", _suppressed
    yield "source-bad-str", lambda: chained(E.OtherError("x"), BadStr())
    yield "source-not-str", lambda: chained(E.OtherError("x"), NotStr())
    yield (
        "source-secret",
        lambda: chained(E.APICallError("x"), ValueError(f"bad key {SECRETS[0]} at http://h/p")),
    )
    yield (
        "source-SourceError",
        lambda: chained(E.OtherError("x"), E.SourceError("decoded", type="pkg.Thing")),
    )
    yield "source-SourceError-no-type", lambda: chained(E.OtherError("x"), E.SourceError("d"))
    yield "non-aimux-root", lambda: ValueError("plain failure")
    yield "non-aimux-root-keyboard", lambda: KeyboardInterrupt()
    yield "non-aimux-root-chain", lambda: chained(RuntimeError("a"), OSError(2, "No such file"))
    yield (
        "retry-3x4",
        lambda: E.RetryError("Failed after 3 attempts.", errors=[deep(4) for _ in range(3)]),
    )
    yield (
        "retry-default-message",
        lambda: E.RetryError(errors=[E.APICallError("busy", status_code=503, is_retryable=True)]),
    )
    yield (
        "retry-not-retryable",
        lambda: E.RetryError(
            reason="errorNotRetryable", errors=[E.APICallError("bad", status_code=400)]
        ),
    )
    yield (
        "retry-many",
        lambda: E.RetryError(
            errors=[E.APICallError(f"attempt {i}", status_code=500 + i) for i in range(40)]
        ),
    )
    yield "retry-empty", lambda: E.RetryError(errors=[])
    yield (
        "retry-non-aimux-attempt",
        lambda: E.RetryError(errors=[ValueError("plain"), E.OtherError("x")]),
    )
    yield (
        "retry-nested",
        lambda: E.RetryError(
            errors=[E.RetryError(errors=[E.APICallError("inner", is_retryable=True)])]
        ),
    )
    yield "retry-with-cause", _retry_with_cause
    yield (
        "timeout-attempts",
        lambda: E.TimeoutError(
            "deadline",
            timeout_ms=100,
            errors=[E.APICallError("a", is_retryable=True), ValueError("v")],
        ),
    )
    yield (
        "huge-envelope",
        lambda: chained(
            *[E.JSONParseError("m" * 1000, text="t" * 16000) for _ in range(16)],
            *[E.InvalidResponseDataError(data=["d" * 16000]) for _ in range(60)],
        ),
    )
    yield (
        "huge-retry",
        lambda: E.RetryError(
            errors=[
                chained(*[E.JSONParseError("m" * 1000, text="t" * 16000) for _ in range(16)])
                for _ in range(16)
            ]
        ),
    )
    yield "decoded-roundtrip", lambda: decode_error(project(deep(6)))
    yield (
        "decoded-unknown",
        lambda: decode_error(
            b'{"kind":"aimux","code":77,"message":"new","error":{"name":"AI_FutureError","x":[1]},'
            b'"retryable":true,"retryAfterMs":10,"cause":{"message":"s","type":"t"}}'
        ),
    )
    yield (
        "decoded-extra",
        lambda: decode_error(
            b'{"kind":"aimux","code":11,"message":"m","error":{"name":"AI_APICallError",'
            b'"statusCode":500,"newField":{"a":[1,2]},"isRetryable":true},"retryable":false}'
        ),
    )
    yield (
        "decoded-invalid-payload",
        lambda: decode_error(
            b'{"kind":"aimux","code":11,"message":"m","error":{"name":"AI_APICallError",'
            b'"statusCode":"not a number"},"retryable":false}'
        ),
    )
    yield (
        "decoded-retry",
        lambda: decode_error(
            project(E.RetryError(errors=[E.APICallError("a", is_retryable=True)]))
        ),
    )


def _set_after() -> BaseException:
    err = E.APICallError("x", status_code=500)
    err.status_code = 503
    err.response_body = f"body {SECRETS[1]}"
    return err


def _set_after_weird() -> BaseException:
    err = E.APICallError("x")
    err.status_code = "five hundred"  # type: ignore[assignment]
    err.response_headers = {"a": 1}  # type: ignore[assignment,dict-item]
    err.data = (1, 2)
    return err


def _cycle() -> BaseException:
    a = E.OtherError("a")
    b = ValueError("b")
    a.__cause__ = b
    b.__cause__ = a
    return a


def _context() -> BaseException:
    try:
        try:
            raise KeyError("inner")
        except KeyError:
            raise E.OtherError("outer") from None
    except E.OtherError as exc:
        exc.__suppress_context__ = False
        return exc


def _suppressed() -> BaseException:
    try:
        try:
            raise KeyError("inner")
        except KeyError:
            raise ValueError("outer") from None
    except ValueError as exc:
        return chained(E.OtherError("root"), exc)


def _retry_with_cause() -> BaseException:
    err = E.RetryError(errors=[E.APICallError("a")])
    err.__cause__ = ValueError("ignored on the wire")
    return err


def _text(raw: bytes) -> str:
    """Short texts as they are; long ones (the huge cases) by length and digest."""
    if len(raw) <= 4096:
        return raw.decode("utf-8")
    return f"{len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()}"


def outcome(build: Callable[[], BaseException]) -> dict[str, Any]:
    """What one case gives: the envelope and the shim's links, or the construction error."""
    try:
        exc = build()
    except Exception as caught:
        return {"raises": type(caught).__name__}
    env = project(exc)
    walk = chain_links(env)  # right after the projection: from its nodes
    assert chain_links(bytes(bytearray(env))) == walk  # from the bytes alone: the same
    (retryable, after), links = walk
    return {
        "envelope": _text(env),
        "root": [retryable, after],
        "links": [
            [
                link.code,
                link.kind.decode(),
                None if link.name is None else link.name.decode(),
                _text(link.message),
                _text(link.json),
            ]
            for link in links
        ],
    }


def remember() -> None:
    for secret in SECRETS:
        remember_secret(secret)


def generate() -> list[dict[str, Any]]:
    remember()
    return [{"case": name, **outcome(build)} for name, build in cases()]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: envelope_cases.py --write")
    GOLDEN.parent.mkdir(exist_ok=True)
    sys.path.insert(0, str(Path(__file__).parent))
    import envelope_cases  # the classes defined here under their importable module name

    rows = envelope_cases.generate()
    GOLDEN.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    print(f"wrote {len(rows)} cases to {GOLDEN}")
