"""Writes the call-level shared fixtures (UniFFI-style): ``contract-tests/calls/cases.json`` and
the recording its replayed failure needs, ``contract-tests/calls/failure.jsonl``.

Each case is ``(api, op, params) → expected outcome`` (``calls.schema.json``): an error's
``kind`` / ``code`` / ``name``, a result (a subset every binding matches: objects member by
member, arrays and scalars exactly), or a stream's events (one subset per event, in order).
Every binding runs every case through its own public API in its own test suite; strings in
``params`` may hold ``@REPO@``, the checkout's absolute path. The failure recording is made
against the project's fault server (a real HTTP server on 127.0.0.1), then every case is run
through the Python API as a check before anything is written.

    .venv/bin/python contract-tests/make_calls.py      # then review and commit the diff
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import jsonschema
import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

from fault_server import FaultServer  # noqa: E402

import aimux_ops  # noqa: E402

OUT = HERE / "calls"
FAILURE = OUT / "failure.jsonl"
DEMO = "@REPO@/recordings/demo.jsonl"
FAILURE_REF = "@REPO@/contract-tests/calls/failure.jsonl"


def replay(
    path: str, prompt: str = "Say hello in one word.", model: str = "gpt-4o-mini"
) -> dict[str, Any]:
    return {
        "model": {"provider": "openai", "modelId": model, "baseURL": "http://127.0.0.1:1/v1"},
        "prompt": prompt,
        "maxRetries": 0,
        "recording": {"mode": "replay", "path": path},
    }


FAULT_MODEL = "fault:mode=status;status=400;message=Unsupported parameter: temperature"


def error(kind: str, code: int, name: str) -> dict[str, Any]:
    return {"error": {"kind": kind, "code": code, "name": name}}


def cases() -> list[dict[str, Any]]:
    demo_ok = {**replay(DEMO), "maxRetries": 2}
    return [
        {
            "key": "unknown-op",
            "description": "An op the core does not have: 300",
            "api": "call",
            "op": "no.such.op",
            "params": {},
            "expect": error("protocol", 300, "UnknownOpError"),
        },
        {
            "key": "nul-in-op",
            "description": "An op name with a NUL byte (a C string would end there): 300, "
            "never the truncated op aimux.version",
            "api": "call",
            "op": "aimux.version\u0000x",
            "params": {},
            "expect": error("protocol", 300, "UnknownOpError"),
        },
        {
            "key": "nul-in-op-stream",
            "description": "The same through the stream API: 300, never stream_text",
            "api": "stream",
            "op": "stream_text\u0000",
            "params": demo_ok,
            "expect": error("protocol", 300, "UnknownOpError"),
        },
        {
            "key": "nul-in-params-text",
            "description": "Raw params JSON text with a NUL byte: 202, never the "
            "truncated text {} (bindings whose API takes JSON text)",
            "api": "call",
            "op": "aimux.version",
            "paramsText": '{}\u0000{"junk": 1}',
            "expect": error("binding", 202, "InvalidWireJSONError"),
        },
        {
            "key": "params-text-not-json",
            "description": "Raw params text that is not JSON: 202",
            "api": "call",
            "op": "aimux.version",
            "paramsText": '{"a": ',
            "expect": error("binding", 202, "InvalidWireJSONError"),
        },
        {
            "key": "invalid-params",
            "description": "Params the op's schema refuses: 301",
            "api": "call",
            "op": "aimux.version",
            "params": {"unexpected": 1},
            "expect": error("protocol", 301, "InvalidParamsError"),
        },
        {
            "key": "invalid-params-generate",
            "description": "generate_text without a model: 301",
            "api": "call",
            "op": "generate_text",
            "params": {"prompt": "hi"},
            "expect": error("protocol", 301, "InvalidParamsError"),
        },
        {
            "key": "wrong-mode-call",
            "description": "A stream op through the call API: 302",
            "api": "call",
            "op": "stream_text",
            "params": demo_ok,
            "expect": error("protocol", 302, "WrongModeError"),
        },
        {
            "key": "wrong-mode-stream",
            "description": "A call op through the stream API: 302",
            "api": "stream",
            "op": "generate_text",
            "params": demo_ok,
            "expect": error("protocol", 302, "WrongModeError"),
        },
        {
            "key": "version",
            "description": "aimux.version answers the ABI version",
            "api": "call",
            "op": "aimux.version",
            "params": {},
            "expect": {"result": {"abiVersion": 1}},
        },
        {
            "key": "replay-success",
            "description": "generate_text replayed from recordings/demo.jsonl",
            "api": "call",
            "op": "generate_text",
            "params": demo_ok,
            "expect": {
                "result": {
                    "text": "Hello!",
                    "finishReason": "stop",
                    "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
                    "toolCalls": [],
                    "response": {"id": "chatcmpl-demo-1", "modelId": "gpt-4o-mini"},
                }
            },
        },
        {
            "key": "replay-success-stream",
            "description": "stream_text replayed from recordings/demo.jsonl",
            "api": "stream",
            "op": "stream_text",
            "params": demo_ok,
            "expect": {
                "events": [
                    {"type": "text-delta", "text": "Hel"},
                    {"type": "text-delta", "text": "lo!"},
                    {"type": "finish", "finishReason": "stop"},
                ]
            },
        },
        {
            "key": "replay-failure",
            "description": "A recorded 400 replayed: the provider's APICallError",
            "api": "call",
            "op": "generate_text",
            "params": replay(FAILURE_REF, model=FAULT_MODEL),
            "expect": error("aimux", 11, "AI_APICallError"),
        },
        {
            "key": "replay-no-match",
            "description": "A call the recording has no exchange for: 102",
            "api": "call",
            "op": "generate_text",
            "params": replay(DEMO, prompt="not in the recording"),
            "expect": error("recording", 102, "RecordingNoMatchError"),
        },
        {
            "key": "replay-missing-file",
            "description": "A recording that does not exist: 101",
            "api": "call",
            "op": "generate_text",
            "params": replay("@REPO@/contract-tests/calls/no-such.jsonl"),
            "expect": error("recording", 101, "RecordingOpenFileError"),
        },
    ]


def record_failure() -> None:
    server = FaultServer().start()
    tmp = FAILURE.with_suffix(".jsonl.tmp")
    try:
        if tmp.exists():
            tmp.unlink()
        params = {
            "model": {
                "provider": "openai",
                "modelId": FAULT_MODEL,
                "baseURL": server.base_url,
                "apiKey": "sk-contract-recording-not-a-key",
            },
            "prompt": "Say hello in one word.",
            "maxRetries": 0,
            "recording": {"mode": "record", "path": str(tmp)},
        }
        try:
            aimux_ops.call("generate_text", params)
        except aimux_ops.AimuxError as exc:
            assert exc.code == 11, exc
        else:
            raise AssertionError("the fault server answered 200")
        os.replace(tmp, FAILURE)
    finally:
        server.stop()
        if tmp.exists():
            tmp.unlink()


def resolve(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value).decode().replace("@REPO@", str(ROOT)))


def subset(want: Any, got: Any) -> bool:
    """``want`` ⊆ ``got``: objects member by member, arrays and scalars exactly (the rule every
    binding's runner implements)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(
            k in got and subset(v, got[k]) for k, v in want.items()
        )
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(want) == len(got)
            and all(subset(a, b) for a, b in zip(want, got, strict=True))
        )
    return type(want) is type(got) and want == got


def run_python(case: dict[str, Any]) -> Any:
    """What the Python binding reports for a case: {"error": {...}}, {"result": ...} or {"events": [...]}."""
    from aimux_ops.dispatch import call_json
    from aimux_ops.envelope import decode_error

    try:
        if "paramsText" in case:  # the in-process aimux_call: JSON text in
            res, env = call_json(case["op"], case["paramsText"].encode())
            if env is not None:
                raise decode_error(env)
            return {"result": orjson.loads(res or b"null")}
        params = resolve(case["params"])
        if case["api"] == "call":
            return {"result": aimux_ops.call(case["op"], params)}
        return {"events": list(aimux_ops.stream(case["op"], params))}
    except aimux_ops.AimuxError as exc:
        return {"error": {"kind": exc.kind, "code": exc.code, "name": exc.error_name}}


def main() -> int:
    OUT.mkdir(exist_ok=True)
    record_failure()
    schema = json.loads((HERE / "calls.schema.json").read_text())
    doc = {"cases": cases()}
    jsonschema.validate(doc, schema)
    for case in doc["cases"]:
        got = run_python(case)
        assert subset(case["expect"], got), (case["key"], got)
    (OUT / "cases.json").write_bytes(
        orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    )
    print(f"wrote {len(doc['cases'])} call cases and {FAILURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
