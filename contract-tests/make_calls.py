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

import make_recordings as rec  # noqa: E402
from fault_server import FaultServer  # noqa: E402

import aimux_ops  # noqa: E402

OUT = HERE / "calls"
LOOPS = OUT / "loops.json"
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


#: loop scenario → the api its cases use (ok: both)
LOOP_APIS = {
    "ok": ("call", "stream"),
    "tool-error": ("stream",),
    "tool-error-data": ("call",),
    "raise-io": ("call",),
    "to-model": ("call",),
    "unknown-tool": ("stream",),
    "parallel": ("call",),
}


def loop_cases() -> list[dict[str, Any]]:
    """The loop scenarios (``tests/make_recordings.py``'s ``LOOP_SCENARIOS``, replayed from
    ``recordings/loops.jsonl``) as cases; their expectations come from the Python binding's run,
    trimmed to what every binding reports alike."""
    out = []
    for scenario, (behaviour, *_) in rec.LOOP_SCENARIOS.items():
        for provider in rec.LOOP_MODELS:
            for api in LOOP_APIS[scenario]:
                key = f"loop-{scenario}-{provider}" + (
                    "-stream" if len(LOOP_APIS[scenario]) > 1 and api == "stream" else ""
                )
                params = rec.loop_params(
                    scenario,
                    provider,
                    "http://127.0.0.1:1",
                    {"mode": "replay", "path": rec.LOOPS_REF},
                )
                case = {
                    "key": key,
                    "description": f"The loop on {provider}: {LOOP_DESCRIPTIONS[scenario]}",
                    "api": api,
                    "op": "generate_text" if api == "call" else "stream_text",
                    "params": params,
                    "tools": {"weather": behaviour},
                    "expect": {},
                }
                got = run_python(case)
                case["expect"] = trim(scenario, got)
                out.append(case)
    return out


LOOP_DESCRIPTIONS = {
    "ok": "the tool's value goes to the model, which answers",
    "tool-error": "a tool-level error is seen by the model, which recovers",
    "tool-error-data": "a tool-level error with data is seen by the model, which recovers",
    "raise-io": "a thrown I/O error reaches the caller as AI_ToolExecutionError (22) whose "
    "chain reaches the very error thrown; the model never sees it (the recording has one call)",
    "to-model": "with toolFailures to-model a thrown error's message goes to the model instead",
    "unknown-tool": "a call of a tool that does not exist goes back to the model as a tool error",
    "parallel": "two calls of one step run concurrently; both values go to the model in call order",
}

#: the members of each event kind every binding reports alike
EVENT_KEYS = {
    "start-step": (),
    "tool-call": ("toolCallId", "toolName", "input"),
    "tool-result": ("toolCallId", "toolName", "input", "output"),
    "tool-error": ("toolCallId", "toolName", "input"),
    "text-delta": ("text",),
    "finish-step": ("finishReason",),
    "finish": ("finishReason", "usage"),
}


def trim(scenario: str, got: dict[str, Any]) -> dict[str, Any]:
    if "error" in got:
        return got
    if "events" in got:
        events = []
        for event in got["events"]:
            kind = event["type"]
            kept = {"type": kind, **{k: event[k] for k in EVENT_KEYS[kind] if k in event}}
            if kind == "tool-error" and scenario != "unknown-tool":
                kept["error"] = event["error"]  # the host's; the core's own is an envelope
            events.append(kept)
        return {"events": events}
    result = got["result"]
    steps = []
    for step in result["steps"]:
        kept = {"finishReason": step["finishReason"], "text": step["text"]}
        if scenario != "parallel":  # answers come in any order
            kept["toolResults"] = step["toolResults"]
            kept["toolErrors"] = step["toolErrors"]
        steps.append(kept)
    return {
        "result": {
            "text": result["text"],
            "finishReason": result["finishReason"],
            "usage": result["usage"],
            "steps": steps,
        }
    }


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
    from aimux_ops.boundary.dispatch import call_json
    from aimux_ops.wire.envelope import decode_error

    try:
        if "paramsText" in case:  # the in-process aimux_call: JSON text in
            res, env = call_json(case["op"], case["paramsText"].encode())
            if env is not None:
                raise decode_error(env)
            return {"result": orjson.loads(res or b"null")}
        params = resolve(case["params"])
        execute = {name: rec.loop_tool(b) for name, b in (case.get("tools") or {}).items()}
        if case["api"] == "call":
            return {"result": aimux_ops.call(case["op"], params, execute=execute or None)}
        return {"events": list(aimux_ops.stream(case["op"], params, execute=execute or None))}
    except aimux_ops.AimuxError as exc:
        if case.get("tools", {}).get("weather") == "raise-io":  # the very error raised
            assert isinstance(exc.__cause__, FileNotFoundError), exc.__cause__
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
    loops = {"cases": loop_cases()}
    jsonschema.validate(loops, schema)
    for case in loops["cases"]:  # a second run: the expectation holds, not only once
        got = run_python(case)
        assert subset(case["expect"], got), (case["key"], got)
    LOOPS.write_bytes(orjson.dumps(loops, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
    print(
        f"wrote {len(doc['cases'])} call cases, {FAILURE.relative_to(ROOT)} and "
        f"{len(loops['cases'])} loop cases ({LOOPS.relative_to(ROOT)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
