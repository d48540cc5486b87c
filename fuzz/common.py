"""Shared by the atheris harnesses: input shaping (no network beyond a closed loopback port, no
file written outside a scratch directory) and the invariants every answer must satisfy.

The invariants (issue 8): no crash, no hang, and every input is answered with a result or an
envelope that validates against schema/ (``tests/helpers.assert_valid_envelope``: the envelope
schema, each payload's own schema, the byte and depth bounds).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers import assert_valid_envelope, validator  # noqa: E402

OPS = ["generate_text", "stream_text", "generate_object", "aimux.version", "aimux.manifest"]
SCRATCH = Path(tempfile.mkdtemp(prefix="aimux-fuzz-"))
DEMO = str(ROOT / "recordings" / "demo.jsonl")
#: a closed port on loopback: a live call fails at once with "Connection refused"
CLOSED = "http://127.0.0.1:1/v1"


def shape_params(raw: bytes) -> bytes:
    """Keep fuzzed params off the network and the file system: a JSON object's model goes to a
    closed loopback port, retries off and a short timeout; a recording is replayed from the shipped
    file or recorded into the scratch directory. Anything that is not a JSON object is passed
    through untouched (the boundary must answer it)."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw
    if not isinstance(doc, dict):
        return raw
    model = doc.get("model")
    if isinstance(model, dict) and "baseURL" in model:
        model["baseURL"] = CLOSED
    if "model" in doc:
        doc["maxRetries"] = 0
        doc["timeoutMs"] = 2000
    rec = doc.get("recording")
    if isinstance(rec, dict):
        if rec.get("mode") == "record":
            rec["path"] = str(SCRATCH / "record.jsonl")
        else:
            rec["path"] = DEMO
    return orjson.dumps(doc)


def check_envelope(env: Any) -> dict[str, Any]:
    if not isinstance(env, bytes):
        raise AssertionError(f"envelope is {type(env).__name__}, not bytes")
    return assert_valid_envelope(env)


def check_reprojected(env: bytes) -> dict[str, Any]:
    """An envelope re-projected from a *decoded* one: the envelope schema and the byte / depth
    bounds. Payload fields are checked against this version's payload schemas only for errors the
    core makes itself: a decoded payload may carry values a newer core sends (a new ``reason``),
    which forward compatibility keeps as they are."""
    if not isinstance(env, bytes):
        raise AssertionError(f"envelope is {type(env).__name__}, not bytes")
    if len(env) > 1024 * 1024:
        raise AssertionError(f"envelope is {len(env)} bytes")
    doc = orjson.loads(env)
    validator("envelope.schema.json").validate(doc)
    node: Any = doc
    depth = 0
    while isinstance(node, dict):
        depth += 1
        if len(node["message"].encode()) > 1024:
            raise AssertionError("message over 1 KiB")
        node = node.get("cause")
    if depth > 16:
        raise AssertionError(f"chain {depth} deep")
    return doc  # type: ignore[no-any-return]


def check_reply(op: str, result: Any, env: Any) -> None:
    """``call_json``: exactly one of result / envelope; the result is JSON of the op's result
    schema, the envelope validates."""
    if (result is None) == (env is None):
        raise AssertionError(f"call_json answered result={result!r} envelope={env!r}")
    if env is not None:
        check_envelope(env)
        return
    if not isinstance(result, bytes):
        raise AssertionError(f"result is {type(result).__name__}")
    doc = orjson.loads(result)
    schema = ROOT / "schema" / "ops" / f"{op}.result.schema.json"
    if schema.exists():
        validator(f"ops/{op}.result.schema.json").validate(doc)


def check_event(event: bytes) -> None:
    doc = orjson.loads(event)
    validator("ops/stream_text.event.schema.json").validate(doc)
    if doc.get("type") == "error":
        assert_valid_envelope(doc["error"])


def cleanup() -> None:
    for p in SCRATCH.glob("*"):
        try:
            os.unlink(p)
        except OSError:
            pass


def drain_stream(op: str | bytes, params: bytes, max_events: int) -> int | None:
    """Open a stream through the dispatcher, check every answer (a handle or a valid envelope,
    then valid events, never an envelope on a live handle) and free it. Returns the freed
    handle, or None when the open failed."""
    from aimux_ops.boundary import dispatch

    handle, env = dispatch.stream_json(op, params)
    if (handle is None) == (env is None):
        raise AssertionError(f"stream_json answered {handle!r}, {env!r}")
    if env is not None:
        check_envelope(env)
        return None
    assert handle is not None
    try:
        for _ in range(max_events):
            event, env = dispatch.stream_next_json(handle)
            if env is not None:
                raise AssertionError(f"stream_next_json on a live handle: {env[:300]!r}")
            if event is None:
                break
            check_event(event)
    finally:
        dispatch.stream_free(handle)
    return handle
