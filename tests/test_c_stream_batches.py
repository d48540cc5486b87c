"""Stream events taken in batches for the C ABI (``stream_poll_json`` and
``stream_next_batch_json``: ``aimux_stream_poll`` / ``aimux_stream_next_batch``): a batch is byte
for byte the events ``stream_next_json`` gives, joined into one JSON array, whatever the events
are (dicts, bytes, pydantic models, or one that cannot be serialized); the blocking variant waits
for a batch, reports the end and wakes on a cancel from another thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from helpers import assert_valid_envelope
from op_calls import wait_blocked_reader
from pydantic import BaseModel, ConfigDict

from aimux_ops import errors as E
from aimux_ops.boundary.dispatch import (
    ready_handles,
    stream_cancel,
    stream_free,
    stream_json,
    stream_next_batch_json,
    stream_next_json,
    stream_poll_json,
    stream_start_json,
)
from aimux_ops.ops import registry
from aimux_ops.streams import registry as stream_registry


class BatchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int = 3
    mixed: bool = False  # events of every shape an op may yield
    bad_at: int | None = None  # this event cannot be serialized
    fail_at: int | None = None  # the op fails here (a terminal error event)
    block: bool = False  # after the first event, wait until cancelled


class Shaped(BaseModel):
    type: str
    n: int
    note: str | None = None


@pytest.fixture()
def batch_op() -> Iterator[threading.Event]:
    """A stream op registered for the test; its events are yielded without a suspension in
    between, so once ``stream_json`` returns (the op ended or blocked) all of them are queued."""
    woke = threading.Event()

    def handler(params: BatchParams, ctx: registry.StreamContext) -> Iterator[Any]:
        for i in range(params.count):
            if params.fail_at == i:
                raise E.APICallError("stream cut", status_code=200, is_retryable=False)
            if params.bad_at == i:
                yield {"type": "text-delta", "text": object()}
            elif params.mixed and i % 3 == 1:
                yield Shaped(type="text-delta", n=i)
            elif params.mixed and i % 3 == 2:
                yield orjson.dumps({"type": "text-delta", "text": f"raw {i}", "nested": [i, {}]})
            else:
                yield {"type": "text-delta", "text": f"é{i}\u2028", "n": i, "deep": {"a": [1.5]}}
            if params.block and i == 0:
                if ctx.cancelled.wait(60):  # the bound only ends a broken run
                    woke.set()
                return
        yield {"type": "finish", "finishReason": "stop"}

    registry.register_op("test.batch", mode="stream", params=BatchParams)(handler)
    yield woke
    registry.unregister_op("test.batch")
    # the event-driven streams of the test were freed, but their handles may still be listed:
    # leave the process's ready list empty for the tests that read it
    ready_handles(1 << 30)


def one_by_one(params: bytes) -> list[bytes]:
    handle, err = stream_json("test.batch", params)
    assert err is None and handle is not None
    events = []
    while True:
        event, err = stream_next_json(handle)
        assert err is None
        if event is None:
            break
        events.append(event)
    stream_free(handle)
    return events


def read_ahead(handle: int) -> None:
    """Until the stream's reader thread has read its op to the end (every event is queued)."""
    stream = stream_registry._streams[handle]
    while not stream._ended:
        threading.Event().wait(0.01)
    # the op's end is marked before its last read (a failure's error event) is queued, under the
    # run lock the reader holds until it is: taking the lock waits for that push
    with stream._run:
        pass


def split(batch: bytes) -> list[bytes]:
    """The events of a batch, re-serialized one by one (orjson's output is canonical)."""
    return [orjson.dumps(e) for e in orjson.loads(batch)]


@pytest.mark.parametrize("mixed", [False, True])
@pytest.mark.parametrize("blocking", [False, True])
def test_batches_are_the_events_of_next(
    batch_op: threading.Event, mixed: bool, blocking: bool
) -> None:
    params = orjson.dumps({"count": 40, "mixed": mixed})
    expected = one_by_one(params)
    assert len(expected) == 41
    # read ahead by its reader thread (a stream read by its reader gets one read per batch)
    handle, err = stream_start_json("test.batch", params)
    assert err is None and handle is not None
    got: list[bytes] = []
    batches: list[bytes] = []
    ended = False
    while not ended:
        if blocking:
            batch, ended, env = stream_next_batch_json(handle, 7)
        else:
            batch, ended, env = stream_poll_json(handle, 7)
        assert env is None
        if batch is not None:
            batches.append(batch)
            got.extend(split(batch))
    assert got == [orjson.dumps(orjson.loads(e)) for e in expected]
    # and byte for byte: each batch is the events of next joined, as they were sent
    i = 0
    for batch in batches:
        k = len(orjson.loads(batch))
        assert batch == b"[" + b",".join(expected[i : i + k]) + b"]", (i, batch)
        i += k
    assert i == len(expected)
    sizes = [len(orjson.loads(b)) for b in batches]
    assert max(sizes) == 7 and sum(sizes) == 41
    assert stream_next_batch_json(handle, 7) == (None, True, None)
    stream_free(handle)


def test_one_batch_is_the_joined_events_byte_for_byte(batch_op: threading.Event) -> None:
    params = orjson.dumps({"count": 12, "mixed": True})
    expected = one_by_one(params)
    handle, err = stream_start_json("test.batch", params)
    assert err is None and handle is not None
    read_ahead(handle)
    batch, ended, env = stream_next_batch_json(handle, 1000)
    assert env is None and ended is True
    assert batch == b"[" + b",".join(expected) + b"]"
    stream_free(handle)


def test_unserializable_event_is_205_and_the_rest_follows(batch_op: threading.Event) -> None:
    """A batch holding an event that cannot be serialized is a 205 (the events taken with it
    before the bad one are lost with it, as when events were taken and dumped one at a time;
    with libaimux loaded the ones before it may come first, from the C queue); the events
    after it follow."""
    for take in (stream_poll_json, stream_next_batch_json):
        handle, err = stream_start_json("test.batch", orjson.dumps({"count": 6, "bad_at": 2}))
        assert err is None and handle is not None
        read_ahead(handle)
        before: list[int] = []
        while True:
            batch, ended, env = take(handle, 100)
            if env is not None:
                break
            assert batch is not None and not ended
            before += [e["n"] for e in orjson.loads(batch)]
        assert before in ([], [0, 1]) and ended is True
        envelope = assert_valid_envelope(env)
        assert envelope["code"] == 205 and envelope["cause"]["type"] == "TypeError"
        batch, ended, env = take(handle, 100)
        assert env is None and ended is True and batch is not None
        assert [e["type"] for e in orjson.loads(batch)] == ["text-delta"] * 3 + ["finish"]
        assert [e["n"] for e in orjson.loads(batch)[:3]] == [3, 4, 5]
        stream_free(handle)


def test_failure_mid_stream_is_the_last_event_of_a_batch(batch_op: threading.Event) -> None:
    handle, err = stream_start_json("test.batch", orjson.dumps({"count": 5, "fail_at": 3}))
    assert err is None and handle is not None
    read_ahead(handle)
    batch, ended, env = stream_next_batch_json(handle, 100)
    assert env is None and ended is True and batch is not None
    events = orjson.loads(batch)
    assert [e["type"] for e in events] == ["text-delta"] * 3 + ["error"]
    assert events[-1]["error"]["code"] == 11
    stream_free(handle)


def test_next_batch_waits_and_a_cancel_wakes_it(batch_op: threading.Event) -> None:
    handle, err = stream_start_json("test.batch", orjson.dumps({"count": 5, "block": True}))
    assert err is None and handle is not None
    batch, ended, env = stream_next_batch_json(handle, 100)  # waits for the first event
    assert env is None and not ended and batch is not None
    assert [e["n"] for e in orjson.loads(batch)] == [0]
    out: list[Any] = []
    reader = threading.Thread(target=lambda: out.append(stream_next_batch_json(handle, 100)))
    reader.start()
    wait_blocked_reader(handle)  # nothing more comes: it waits
    assert reader.is_alive()
    stream_cancel(handle)
    reader.join(30)
    assert not reader.is_alive()
    assert out == [(None, True, None)]
    assert batch_op.is_set()  # the op's cleanup ran before the end was reported
    stream_free(handle)


def test_next_batch_errors(batch_op: threading.Event) -> None:
    batch, ended, env = stream_next_batch_json(10**9, 4)
    assert batch is None and ended is True and env is not None
    assert assert_valid_envelope(env)["code"] == 203
    # an event-driven stream whose open fails: the failure once, then the end
    handle, err = stream_start_json("test.batch", orjson.dumps({"count": 2, "fail_at": 0}))
    assert err is None and handle is not None
    batch, ended, env = stream_next_batch_json(handle, 4)
    assert batch is None and ended is True and env is not None
    assert assert_valid_envelope(env)["code"] == 11
    assert stream_next_batch_json(handle, 4) == (None, True, None)
    stream_free(handle)
    assert assert_valid_envelope(stream_next_batch_json(handle, 4)[2] or b"")["code"] == 203
