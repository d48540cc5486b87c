"""The Python API takes every queued event of a stream in one step (``dispatch.stream_next_objects``)
and holds that batch while its caller iterates: what a caller sees next must still be what one
``pull`` per event would have given — after a cancel the end, after a reap the reaper's error, in
a forked child the stale handle's 203, and events taken from a held batch count as reads for the
reaper. The producer hands over one batch per network read and still stops exactly at the
high-water mark (``test_stream_loop``); here: the batches themselves."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from fault_server import FaultServer
from helpers import provider_params as params

import aimux_ops
from aimux_ops.boundary import dispatch
from aimux_ops.http.transport import iter_sse, iter_sse_batches
from aimux_ops.ops.registry import EventBatch, StreamContext, get_op
from aimux_ops.streams import registry as stream_registry


def _open(server: FaultServer, n: int = 5000) -> tuple[Iterator[dict[str, Any]], Any]:
    """A Python API stream whose first event was taken (its consumer holds a batch now)."""
    it = aimux_ops.stream("stream_text", params(server, f"mode=chunks;n={n}"))
    first = next(it)
    assert first["type"] == "text-delta"
    handle = it.gi_frame.f_locals["handle"]  # type: ignore[attr-defined]
    stream = stream_registry._streams[handle]
    assert stream._held is not None and len(stream._held[0]) > 1  # more than one was taken
    return it, stream


def test_a_cancel_ends_the_stream_at_once_though_a_batch_is_held(server: FaultServer) -> None:
    it, stream = _open(server)
    dispatch.stream_cancel(stream.handle)
    assert list(it) == []  # the end, none of the held events


def test_a_reap_gives_the_reapers_error_next_though_a_batch_is_held(server: FaultServer) -> None:
    it, stream = _open(server)
    stream.idle_since -= 1000.0
    # the consumer took an event from its batch since the hand-off: a read, so not idle
    assert stream.reap(1) is False
    assert next(it)["type"] == "text-delta"
    stream.idle_since -= 1000.0
    assert stream.reap(1) is False  # another event taken meanwhile
    stream.idle_since -= 1000.0
    assert stream.reap(1) is True  # nothing taken since the last look: idle
    rest = list(it)
    assert [e["type"] for e in rest] == ["error"]
    error = rest[0]["error"]
    assert error["code"] == 12 and error["error"]["timeoutMs"] == 1


def test_a_forked_child_gets_203_next_though_a_batch_is_held(server: FaultServer) -> None:
    it, _ = _open(server)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running pytest's teardown
        try:
            try:
                event: Any = next(it)
                out: dict[str, Any] = {"event": event["type"]}
            except aimux_ops.AimuxError as exc:
                out = {"code": exc.code}
        except BaseException as exc:
            out = {"error": repr(exc)}
        os.write(w, orjson.dumps(out))
        os._exit(0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    report = orjson.loads(os.read(r, 4096))
    os.close(r)
    assert status == 0 and report == {"code": 203}
    # the parent's stream and its held batch are untouched by the child
    rest = list(it)
    assert len(rest) == 5000 and rest[-1]["type"] == "finish"


def test_every_event_arrives_once_in_order_through_the_batches(server: FaultServer) -> None:
    events = list(aimux_ops.stream("stream_text", params(server, "mode=chunks;n=5000")))
    assert len(events) == 5001 and events[-1]["type"] == "finish"
    texts = [e["text"] for e in events[:-1]]
    direct = get_op("stream_text")
    assert direct is not None
    p = direct.params.model_validate(params(server, "mode=chunks;n=5000"))
    one_by_one = list(direct.handler(p, StreamContext()))  # no batches unless asked for
    assert not any(isinstance(e, EventBatch) for e in one_by_one)
    assert [e["text"] for e in one_by_one[:-1]] == texts
    batched = list(direct.handler(p, StreamContext(batches=True)))
    assert all(type(b) is EventBatch and b for b in batched)
    assert [e for b in batched for e in b] == one_by_one
    assert len(batched) < len(one_by_one)  # several events per read


@pytest.mark.parametrize(
    "raw",
    [
        b"data: a\n\ndata: b\n\ndata: c\n\n",
        b"data: a\n\ndata: \n\ndata: c\n\n",
        b"data: a\n\n\n\ndata: b\n\n",
        b"data: a\ndata: b\n\ndata: c\n\n",
        b"event: x\ndata: a\n\ndata: b\n\n",
        b"event:  y \ndata: a\n\nevent: y\ndata: b\n\nevent: \ndata: c\n\n",
        b"event: x\ndata: a\ndata: b\n\nevent: x\nid: 1\ndata: c\n\n",
        b": ping\n\ndata: a\n\n",
        b"data:a\n\ndata: b\n\n",
        b"data: a\r\n\r\ndata: b\r\rdata: c\n\n",
        b"data: a\n\ndata: tail",
    ],
)
def test_sse_batches_are_the_events_one_by_one(raw: bytes) -> None:
    """Every split of the bytes into reads gives the same events, batched or not."""
    for cut in range(len(raw) + 1):
        chunks = [raw[:cut], raw[cut:]]
        one = list(iter_sse(iter(chunks)))
        flat = [
            (None if names is None else names[i], data)
            for names, datas in iter_sse_batches(iter(chunks))
            for i, data in enumerate(datas)
        ]
        assert flat == one
        assert one == list(iter_sse(iter([raw])))


def test_a_stream_read_to_its_terminal_event_leaves_its_connection_to_the_next(
    server: FaultServer,
) -> None:
    """The reader stops at the provider's terminal event ([DONE]); the body's end (the chunked
    body's last chunk) is read before the connection goes back to the pool: 32 streams in a row
    reuse one connection of the stream client."""
    from aimux_ops.http import transport

    for _ in range(32):
        handle, env = dispatch.stream_json(
            "stream_text", orjson.dumps(params(server, "mode=chunks;n=3"))
        )
        assert handle is not None and env is None
        events = []
        while (event := dispatch.stream_next_json(handle)[0]) is not None:
            events.append(orjson.loads(event))
        dispatch.stream_free(handle)
        assert [e["type"] for e in events] == ["text-delta"] * 3 + ["finish"]
    pool = transport.default_transport().pools(stream=True)[("http", "127.0.0.1", server.port)]
    pooled = pool.connections()
    assert len(pooled) == 1, pooled
    assert pool.idle() == pooled
