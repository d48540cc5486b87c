"""The checked op and stream calls the provider suites share: every byte returned is scanned for
the canary key and every result and event is validated against its generated schema."""

from __future__ import annotations

import threading
from typing import Any

import orjson
from helpers import assert_no_canary, validator

from aimux_ops.boundary.dispatch import call_json, stream_free, stream_json, stream_next_json
from aimux_ops.streams import cqueue
from aimux_ops.streams import registry as stream_registry
from aimux_ops.wire.envelope import native_chain


def run_op(op: str, p: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(result, envelope); every byte returned is scanned for the canary key."""
    result, envelope = call_json(op, orjson.dumps(p))
    assert_no_canary(result or b"", envelope or b"")
    if result is not None:  # every result is checked against its generated JSON Schema
        validator(f"ops/{op}.result.schema.json").validate(orjson.loads(result))
    return (orjson.loads(result) if result else None, orjson.loads(envelope) if envelope else None)


def fail_op(op: str, p: dict[str, Any]) -> dict[str, Any]:
    """The envelope of a call that must fail."""
    result, env = run_op(op, p)
    assert result is None and env is not None, result
    return env


def chain_names(env: dict[str, Any]) -> list[str]:
    """The error names (or ``type`` of a non-error link) along an envelope's native chain."""
    return [n["error"]["name"] if "kind" in n else str(n.get("type")) for n in native_chain(env)]


def open_stream(p: dict[str, Any]) -> tuple[int | None, dict[str, Any] | None]:
    """(handle, envelope) of ``stream_text``; the envelope is scanned for the canary key."""
    handle, env = stream_json("stream_text", orjson.dumps(p))
    assert_no_canary(env or b"")
    return handle, (orjson.loads(env) if env else None)


def wait_blocked_reader(handle: int) -> None:
    """Return once a reader waits in ``stream_next_json(handle)`` (the stream counts the readers
    blocked on it, under the lock a cancel takes): a test then cancels a read that really waits,
    never one that has not begun. The bound (at least 60 s) only ends a broken run."""
    stream = stream_registry._streams[handle]
    q = getattr(stream, "_q", None)  # a C queue: its blocked readers are counted there
    for _ in range(6000):
        if stream._readers or (q is not None and cqueue.lib._aimux_cq_readers(q)):
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"no reader blocked on stream {handle}")


def drain(handle: int) -> list[dict[str, Any]]:
    """Every event of a stream (each scanned and schema-checked), then the handle freed."""
    events: list[dict[str, Any]] = []
    try:
        while True:
            event, env = stream_next_json(handle)
            assert env is None, env
            if event is None:
                return events
            assert_no_canary(event)
            decoded = orjson.loads(event)
            validator("ops/stream_text.event.schema.json").validate(decoded)
            events.append(decoded)
    finally:
        stream_free(handle)
