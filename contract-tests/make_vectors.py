"""Writes contract-tests/vectors/<key>.json: real envelopes projected by the core (real socket,
decoder and file-system exceptions where a chain needs one) plus hand-written ones for what only a
newer core could send (unknown kinds, codes and members) and for what every decoder must refuse.
The expected ``chain`` is a structural walk of the JSON (DESIGN.md's native-chain rule) and
``root`` the envelope's own ``retryable`` / ``retryAfterMs``, both independent of any decoder; a
``rejected`` vector names the code (202) every decoder refuses it with. Files are named by their
stable key, never by position, so adding a vector renames nothing.

    .venv/bin/python contract-tests/make_vectors.py      # then review and commit the diff
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import orjson

from aimux_ops import errors as E
from aimux_ops.boundary.dispatch import call_json
from aimux_ops.wire.envelope import native_chain, project

OUT = Path(__file__).parent / "vectors"


#: DESIGN.md "Numbers on the wire": a code is read as a whole number from 0 to 2**31-1, a
#: retryAfterMs as one from 0 to this (the longest Go time.Duration in whole milliseconds).
CODE_MAX = 2**31 - 1
RETRY_AFTER_MAX_MS = 9_223_372_036_854


def whole(value: Any) -> int | None:
    """A JSON number's value when it is a whole number (3 and 3.0 alike), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def neutral_chain(envelope: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for i, node in enumerate(native_chain(envelope)):
        if isinstance(node.get("kind"), str):
            err = node.get("error") if isinstance(node.get("error"), dict) else {}
            name = err.get("name") if isinstance(err.get("name"), str) else None
            code = whole(node.get("code"))
            if code is None or not 0 <= code <= CODE_MAX:
                code = 0
            if i == 0 and code < 1:  # a root without a valid code: its known name supplies it
                code = {c.error_name: c.code for c in E.catalogue() if c.kind == node["kind"]}[name]
            out.append(
                {"kind": node["kind"], "code": code, "name": name, "message": node["message"]}
            )
        else:
            typ = node.get("type") if isinstance(node.get("type"), str) else None
            out.append({"kind": "source", "code": 0, "name": typ, "message": node["message"]})
    return out


def raised(exc: BaseException, cause: BaseException | None = None) -> BaseException:
    """``exc`` as if raised ``from cause`` (so __cause__ is set the normal way)."""
    try:
        if cause is None:
            raise exc
        raise exc from cause
    except BaseException as caught:  # noqa: BLE001
        return caught


def connect_refused() -> BaseException:
    try:
        httpx.post("http://127.0.0.1:1/v1/chat/completions", json={}, timeout=2)
    except httpx.HTTPError as exc:
        return exc
    raise RuntimeError("port 1 answered")


def api_connect_error() -> E.APICallError:
    err = raised(
        E.APICallError("Cannot connect to API: " + str(connect_refused()), is_retryable=True),
        connect_refused(),
    )
    assert isinstance(err, E.APICallError)
    return err


def json_decode_error(text: str) -> BaseException:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return exc
    raise RuntimeError("parsed")


def schema_error(value: Any, schema: dict[str, Any]) -> BaseException:
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        return exc
    raise RuntimeError("valid")


def os_error(path: str) -> BaseException:
    try:
        open(path, "rb")
    except OSError as exc:
        return exc
    raise RuntimeError("opened")


def env(exc: BaseException) -> dict[str, Any]:
    return orjson.loads(project(exc))  # type: ignore[no-any-return]


def vectors() -> dict[str, tuple[str, dict[str, Any]]]:
    v: dict[str, tuple[str, dict[str, Any]]] = {}

    attempts = [api_connect_error() for _ in range(3)]
    v["transport-retry-connection-refused"] = (
        "RetryError (maxRetriesExceeded) over three refused connections; the chain goes through "
        "the last attempt down to the OS error",
        env(E.RetryError(reason="maxRetriesExceeded", errors=attempts)),
    )
    v["transport-connection-refused"] = (
        "APICallError for a refused connection: httpx → httpcore → OS error, no URL anywhere",
        env(api_connect_error()),
    )
    v["api-call-429-retry-after"] = (
        "APICallError 429 with OpenAI's JSON error body, redacted headers and retryAfterMs",
        env(
            E.APICallError(
                "Rate limit reached for requests",
                status_code=429,
                is_retryable=True,
                response_headers={
                    "content-type": "application/json",
                    "retry-after-ms": "250",
                    "x-request-id": "req_123",
                    "set-cookie": "session=abc",
                },
                response_body='{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}',
                data={
                    "error": {
                        "message": "Rate limit reached for requests",
                        "type": "requests",
                        "code": "rate_limit_exceeded",
                    }
                },
            )
        ),
    )
    v["api-call-invalid-json-200"] = (
        "2xx with invalid JSON: APICallError 200 → JSONParseError → the decoder's error",
        env(
            raised(
                E.APICallError("Invalid JSON response", status_code=200, is_retryable=False),
                raised(
                    E.JSONParseError(
                        'JSON parsing failed: Text: {"id": . Error message: unexpected character',
                        text='{"id": ',
                    ),
                    json_decode_error('{"id": '),
                ),
            )
        ),
    )
    v["api-call-wrong-shape-type-validation"] = (
        "2xx with a wrong shape: APICallError 200 → TypeValidationError → jsonschema's error",
        env(
            raised(
                E.APICallError("Invalid response shape", status_code=200, is_retryable=False),
                raised(
                    E.TypeValidationError(
                        'Type validation failed: Value: {"choices":7}.', value={"choices": 7}
                    ),
                    schema_error(
                        {"choices": 7},
                        {"type": "object", "properties": {"choices": {"type": "array"}}},
                    ),
                ),
            )
        ),
    )
    v["tool-execution-host-chain"] = (
        "A host tool failed at framework level: ToolExecutionError (22) whose cause is the "
        "host's own chain, down to the file system's error",
        env(
            raised(
                E.ToolExecutionError(
                    "Error executing tool read_file: cannot read the notes",
                    tool_name="read_file",
                    tool_call_id="call_1",
                    input={"path": "notes/missing.txt"},
                ),
                raised(RuntimeError("cannot read the notes"), os_error("/nonexistent/aimux/notes")),
            )
        ),
    )
    v["nested-no-object-generated"] = (
        "A nested aimux error: NoObjectGeneratedError → JSONParseError → the decoder's error",
        env(
            raised(
                E.NoObjectGeneratedError(
                    "No object generated: could not parse the response.",
                    text="not json",
                    finish_reason="stop",
                ),
                raised(
                    E.JSONParseError("JSON parsing failed", text="not json"),
                    json_decode_error("not json"),
                ),
            )
        ),
    )
    v["no-cause-load-api-key"] = (
        "An error with no cause",
        env(
            E.LoadAPIKeyError(
                "OpenAI API key is missing. Pass it using the 'apiKey' parameter or the OPENAI_API_KEY environment variable."
            )
        ),
    )
    v["retry-error-not-retryable"] = (
        "RetryError (errorNotRetryable): a 429 then a 400; the last attempt is the cause",
        env(
            E.RetryError(
                reason="errorNotRetryable",
                errors=[
                    E.APICallError("Too Many Requests", status_code=429, is_retryable=True),
                    E.APICallError("Bad Request", status_code=400, is_retryable=False),
                ],
            )
        ),
    )
    v["retry-empty-errors"] = (
        "A RetryError with no attempts: the chain is the root alone",
        env(E.RetryError("no attempts", errors=[])),
    )
    v["nested-retry-in-cause"] = (
        "A RetryError inside a chain: its last attempt continues the chain",
        env(
            raised(
                E.OtherError("the agent step failed"),
                E.RetryError(
                    errors=[
                        E.APICallError("Internal Server Error", status_code=500, is_retryable=True),
                        api_connect_error(),
                    ]
                ),
            )
        ),
    )

    def deep(n: int) -> BaseException:
        exc: BaseException = ValueError("level 0")
        for i in range(1, n):
            exc = raised(RuntimeError(f"level {i}"), exc)
        return raised(E.OtherError("deep chain"), exc)

    v["max-depth-16"] = ("A chain exactly 16 nodes deep: nothing cut", env(deep(15)))
    v["over-limit-depth"] = (
        "A 40-deep chain: cut at 16 nodes, marked 'cause' on the last",
        env(deep(39)),
    )
    v["over-limit-message"] = (
        "A 4 KiB message: cut to 1 KiB and marked",
        env(E.OtherError("x" * 4096)),
    )
    a = RuntimeError("a")
    b = RuntimeError("b")
    a.__cause__ = b
    b.__cause__ = a
    v["cycle-cut"] = ("A cycle a → b → a: cut and marked", env(raised(E.OtherError("cyclic"), a)))
    v["unicode-message"] = (
        "Non-ASCII messages survive byte for byte",
        env(
            raised(
                E.OtherError("模型调用失败 — échec 🚫"),
                ValueError("原因: Verbindung fehlgeschlagen"),
            )
        ),
    )
    v["recording-open-file-os-error"] = (
        "A recording error with the OS error as its cause",
        env(
            raised(
                E.RecordingOpenFileError(
                    "cannot open recording file", path="/nonexistent/demo.jsonl"
                ),
                os_error("/nonexistent/demo.jsonl"),
            )
        ),
    )
    _, e301 = call_json("aimux.version", b'{"unexpected": 1, "other": [1]}')
    v["protocol-invalid-params"] = (
        "301 from the real dispatcher: the cause lists every violation",
        orjson.loads(e301 or b"{}"),
    )
    _, e202 = call_json("aimux.version", b'{"a": ')
    v["binding-invalid-wire-json"] = (
        "202 from the real dispatcher with the decoder's error",
        orjson.loads(e202 or b"{}"),
    )
    _, e300 = call_json("no.such.op", b"{}")
    v["protocol-unknown-op"] = ("300 from the real dispatcher", orjson.loads(e300 or b"{}"))

    # One vector per catalogued variant, each caused by a plain source error.
    for cls in E.catalogue():
        key = f"variant-{cls.kind}-{cls.code}-{cls.__name__}"
        if cls is E.RetryError:
            exc: BaseException = E.RetryError(
                errors=[E.APICallError("Service Unavailable", status_code=503, is_retryable=True)]
            )
        else:
            exc = raised(
                cls(f"{cls.__name__} for the contract vectors"), ValueError("underlying failure")
            )
        v[key] = (f"Variant {cls.error_name} ({cls.kind} {cls.code})", env(exc))

    # What only a newer core could send.
    v["unknown-code"] = (
        "An aimux code and name this version does not know: still decodes (generic, raw kept)",
        {
            "kind": "aimux",
            "code": 77,
            "message": "a future failure",
            "error": {"name": "AI_FutureError", "futureField": [1, 2]},
            "cause": {"message": "socket closed", "type": "OSError"},
            "retryable": False,
        },
    )
    v["unknown-kind"] = (
        "A kind this version does not know",
        {
            "kind": "telemetry",
            "code": 901,
            "message": "exporter failed",
            "error": {"name": "ExporterError"},
            "cause": {
                "kind": "telemetry",
                "code": 902,
                "message": "queue full",
                "error": {"name": "QueueFullError"},
            },
            "retryable": True,
            "retryAfterMs": 5,
        },
    )
    v["unknown-extra-members"] = (
        "Unknown members at every level are ignored by decoders (and kept in the raw JSON)",
        {
            "kind": "aimux",
            "code": 11,
            "message": "Bad Gateway",
            "error": {
                "name": "AI_APICallError",
                "statusCode": 502,
                "isRetryable": True,
                "providerRequestId": "r-1",
            },
            "cause": {
                "message": "upstream reset",
                "type": "ConnectionResetError",
                "errno": 104,
                "cause": {
                    "message": "[Errno 104] Connection reset by peer",
                    "x-trace": {"span": 1},
                },
            },
            "retryable": True,
            "x-future-root": {"a": 1},
        },
    )
    v["source-without-type"] = (
        "A source node without 'type': name is null",
        {
            "kind": "aimux",
            "code": 1,
            "message": "wrapped",
            "error": {"name": "AI_OtherError"},
            "cause": {"message": "something outside"},
            "retryable": False,
        },
    )
    v["root-fields-as-given"] = (
        "The root's retryable / retryAfterMs are reported as given, never recomputed from the "
        "payload (here they disagree with isRetryable and an HTTP-date retry-after long past)",
        {
            "kind": "aimux",
            "code": 11,
            "message": "Service Unavailable",
            "error": {
                "name": "AI_APICallError",
                "statusCode": 503,
                "isRetryable": False,
                "responseHeaders": {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"},
            },
            "retryable": True,
            "retryAfterMs": 1500,
        },
    )
    v["root-retry-after-zero"] = (
        "retryAfterMs 0 is a hint (retry now), not an absent one",
        {
            "kind": "aimux",
            "code": 11,
            "message": "Too Many Requests",
            "error": {
                "name": "AI_APICallError",
                "statusCode": 429,
                "isRetryable": True,
                "responseHeaders": {"retry-after-ms": "0"},
            },
            "retryable": True,
            "retryAfterMs": 0,
        },
    )
    v["root-not-retryable-despite-payload"] = (
        "retryable false at the root wins over a retryable last attempt",
        {
            "kind": "aimux",
            "code": 14,
            "message": "Failed after 1 attempts. Last error: Service Unavailable",
            "error": {
                "name": "AI_RetryError",
                "reason": "maxRetriesExceeded",
                "errors": [
                    {
                        "kind": "aimux",
                        "code": 11,
                        "message": "Service Unavailable",
                        "error": {
                            "name": "AI_APICallError",
                            "statusCode": 503,
                            "isRetryable": True,
                            "responseHeaders": {"retry-after-ms": "40"},
                        },
                    }
                ],
            },
            "retryable": False,
        },
    )
    v["escaped-and-duplicate-keys"] = (
        "Escaped keys mean what they spell and the last of duplicate keys wins (as every JSON parser "
        "of the bindings reads them)",
        '{"\\u006bind":"aimux","code":1,"message":"first","message":"m","error":'
        '{"name":"AI_Old","n\\u0061me":"AI_OtherError"},"retryable":false,'
        '"cause":{"type":"A","message":"s","type":"OSError"}}',
    )
    v["root-code-from-known-name"] = (
        "A root whose code is missing: its known (kind, error.name) supplies it (never a root with code 0)",
        {
            "kind": "aimux",
            "message": "Bad Request",
            "error": {"name": "AI_APICallError", "statusCode": 400},
            "retryable": False,
        },
    )
    v["root-code-not-an-integer"] = (
        "A root whose code is not a JSON integer (a string here): its known name supplies it",
        {
            "kind": "recording",
            "code": "103",
            "message": "corrupt",
            "error": {"name": "RecordingCorruptError"},
            "retryable": False,
        },
    )
    api_root = {
        "kind": "aimux",
        "code": 11,
        "message": "Too Many Requests",
        "error": {"name": "AI_APICallError", "statusCode": 429},
        "retryable": True,
    }

    def with_cause_code(code: Any) -> dict[str, Any]:
        cause = {"kind": "aimux", "code": code, "message": "inner", "error": {"name": "AI_Newer"}}
        return {**api_root, "cause": cause}

    # DESIGN.md "Numbers on the wire": every decoder reads numbers by value, in the same ranges.
    v["number-cause-code-beyond-int32"] = (
        "A cause's code of 2**31 reads as 0 (aimux_error_code is an int32_t)",
        with_cause_code(2**31),
    )
    v["number-cause-code-beyond-53-bits"] = (
        "A cause's code of 2**60 + 1 reads as 0",
        with_cause_code(2**60 + 1),
    )
    v["number-cause-code-negative"] = ("A cause's negative code reads as 0", with_cause_code(-5))
    v["number-cause-code-whole-float"] = (
        "A cause's code written 7.0 is the whole number 7 (JSON does not tell 7 from 7.0)",
        with_cause_code(7.0),
    )
    v["number-cause-code-exponent"] = (
        "A cause's code written 7e0 is the whole number 7",
        '{"kind":"aimux","code":11,"message":"Too Many Requests","error":{"name":"AI_APICallError",'
        '"statusCode":429},"retryable":true,"cause":{"kind":"aimux","code":7e0,"message":"inner",'
        '"error":{"name":"AI_Newer"}}}',
    )
    v["number-cause-code-fraction"] = ("A cause's code 7.5 reads as 0", with_cause_code(7.5))
    v["number-root-code-whole-float"] = (
        "A root code written 11.0 is the code 11",
        {**api_root, "code": 11.0},
    )
    v["number-retry-after-whole-float"] = (
        "retryAfterMs written 1500.0 is 1500",
        {**api_root, "retryAfterMs": 1500.0},
    )
    v["number-retry-after-exponent"] = (
        "retryAfterMs written 1.5e3 is 1500",
        '{"kind":"aimux","code":11,"message":"Too Many Requests","error":{"name":"AI_APICallError",'
        '"statusCode":429},"retryable":true,"retryAfterMs":1.5e3}',
    )
    v["number-retry-after-fraction"] = (
        "retryAfterMs 1500.5 is no hint (absent)",
        {**api_root, "retryAfterMs": 1500.5},
    )
    v["number-retry-after-max"] = (
        "retryAfterMs of 9223372036854 (the longest Go time.Duration in ms) is kept",
        {**api_root, "retryAfterMs": RETRY_AFTER_MAX_MS},
    )
    v["number-retry-after-beyond-max"] = (
        "retryAfterMs of 9223372036855 is no hint (absent): not every binding can hold it",
        {**api_root, "retryAfterMs": RETRY_AFTER_MAX_MS + 1},
    )
    v["number-retry-after-beyond-64-bits"] = (
        "retryAfterMs of 2**64 is no hint (absent)",
        '{"kind":"aimux","code":11,"message":"Too Many Requests","error":{"name":"AI_APICallError",'
        '"statusCode":429},"retryable":true,"retryAfterMs":18446744073709551616}',
    )
    v["aimux-node-without-name"] = (
        "An aimux node whose error has no name: name is null, decoded by code",
        {
            "kind": "aimux",
            "code": 11,
            "message": "Not Found",
            "error": {"statusCode": 404, "isRetryable": False},
            "retryable": False,
        },
    )
    return v


def rejects() -> dict[str, tuple[str, Any]]:
    """Envelopes every decoder refuses with 202 (never a root with code 0)."""
    api = {"name": "AI_APICallError"}
    return {
        "reject-root-code-beyond-32-bits": (
            "A root code beyond 32 bits (2**32 + 11): 202, never code 0 or 11",
            {"kind": "aimux", "code": 2**32 + 11, "message": "m", "error": api, "retryable": False},
        ),
        "reject-root-code-beyond-int32": (
            "A root code of 2**31 (aimux_error_code is an int32_t): 202",
            {"kind": "aimux", "code": 2**31, "message": "m", "error": {}, "retryable": False},
        ),
        "reject-root-code-whole-float-beyond-int32": (
            "A root code written 2147483648.0 is 2**31: 202",
            {
                "kind": "aimux",
                "code": 2147483648.0,
                "message": "m",
                "error": api,
                "retryable": False,
            },
        ),
        "reject-root-code-zero": (
            "A root code 0 without a known name: 202",
            {"kind": "aimux", "code": 0, "message": "m", "error": {}, "retryable": False},
        ),
        "reject-root-without-kind": (
            "A source node is not an envelope: 202",
            {"message": "socket closed", "type": "OSError"},
        ),
        "reject-not-an-object": ("A JSON array is not an envelope: 202", [1, 2]),
    }


LENIENT = {
    "number-cause-code-beyond-int32",
    "number-cause-code-beyond-53-bits",
    "number-cause-code-negative",
    "number-cause-code-whole-float",
    "number-cause-code-exponent",
    "number-cause-code-fraction",
    "number-root-code-whole-float",
    "number-retry-after-whole-float",
    "number-retry-after-exponent",
    "number-retry-after-fraction",
    "number-retry-after-beyond-max",
    "number-retry-after-beyond-64-bits",
    "aimux-node-without-name",
    "escaped-and-duplicate-keys",
    "root-code-from-known-name",
    "root-code-not-an-integer",
}


def root_of(envelope: dict[str, Any]) -> dict[str, Any]:
    """The root fields every decoder reports: as given (DESIGN.md "Contract vectors")."""
    after = whole(envelope.get("retryAfterMs"))
    return {
        "retryable": envelope.get("retryable") is True,
        "retryAfterMs": after if after is not None and 0 <= after <= RETRY_AFTER_MAX_MS else None,
    }


def main() -> int:
    OUT.mkdir(exist_ok=True)
    for old in OUT.glob("*.json"):
        old.unlink()
    schema = json.loads((Path(__file__).parent / "vector.schema.json").read_text())
    n = 0
    for name, (description, envelope) in sorted(vectors().items()):
        doc: dict[str, Any] = {"description": description}
        if name in LENIENT:
            doc["lenient"] = True
        if isinstance(envelope, str):  # written as text: what a JSON object cannot express
            doc["envelopeText"] = envelope
            envelope = orjson.loads(envelope)
        doc.update(envelope=envelope, chain=neutral_chain(envelope), root=root_of(envelope))
        jsonschema.validate(doc, schema)
        (OUT / f"{name}.json").write_bytes(
            orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
        )
        n += 1
    for name, (description, envelope) in sorted(rejects().items()):
        doc = {"description": description, "lenient": True, "envelope": envelope, "rejected": 202}
        jsonschema.validate(doc, schema)
        (OUT / f"{name}.json").write_bytes(
            orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
        )
        n += 1
    print(f"wrote {n} vectors to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
