"""The C queue of a stream opened through the C ABI (docs/DESIGN.md "Streams: a C queue per
stream"): the library runs in this process's interpreter (ctypes), so a test reads the C ABI
and sees the stream's Python object and its C queue. What the queue must keep: the high-water
mark stops the reader; a cancel ends reads at once although the queue holds events; every read
(``aimux_stream_next``, ``aimux_stream_next_batch``, ``aimux_stream_poll``,
``aimux_poll_ready``) gives byte for byte the events the Python queue gives; a forked child sees
none of the parent's queued events (its handles are 203) and streams of its own."""

from __future__ import annotations

import ctypes
import os
import select
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fault_server import FaultServer
from helpers import ROOT, assert_valid_envelope
from helpers import provider_params as params
from op_calls import wait_blocked_reader
from pydantic import BaseModel, ConfigDict

from aimux_ops.boundary import dispatch
from aimux_ops.ops import registry
from aimux_ops.streams import cqueue, ready
from aimux_ops.streams import registry as stream_registry
from aimux_ops.streams import stream as engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from cabi import CError, Lib

pytestmark = pytest.mark.timeout(120)

P = ctypes.c_void_p
ENDED = 1


class Queue(Lib):
    """``bench/cabi.Lib`` with the batch and event-driven reads."""

    def __init__(self) -> None:
        super().__init__()
        lib = self.lib
        for name in ("aimux_stream_next_batch", "aimux_stream_poll"):
            fn = getattr(lib, name)
            fn.restype = P
            fn.argtypes = [
                ctypes.c_uint64,
                ctypes.c_size_t,
                ctypes.POINTER(P),
                ctypes.POINTER(ctypes.c_int32),
            ]
        lib.aimux_stream_start.restype = P
        lib.aimux_stream_start.argtypes = [
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.POINTER(ctypes.c_uint64),
        ]
        lib.aimux_poll_ready.restype = P
        lib.aimux_poll_ready.argtypes = [ctypes.c_size_t, ctypes.POINTER(P)]
        lib.aimux_events_fd.restype = P
        lib.aimux_events_fd.argtypes = [ctypes.POINTER(ctypes.c_int)]

    def _check(self, err: int | None) -> None:
        if err:
            raise self.take_error(err)

    def batch(self, handle: int, max_events: int, blocking: bool) -> tuple[bytes | None, bool]:
        out, ended = P(), ctypes.c_int32(-1)
        fn = self.lib.aimux_stream_next_batch if blocking else self.lib.aimux_stream_poll
        self._check(fn(handle, max_events, ctypes.byref(out), ctypes.byref(ended)))
        return self.take_string(out.value), ended.value == ENDED

    def start(self, op: bytes, params: bytes) -> int:
        h = ctypes.c_uint64(0)
        self._check(self.lib.aimux_stream_start(op, params, ctypes.byref(h)))
        return h.value

    def poll_ready(self, max_events: int) -> list[Any]:
        out = P()
        self._check(self.lib.aimux_poll_ready(max_events, ctypes.byref(out)))
        text = self.take_string(out.value)
        return orjson.loads(text) if text else []

    def events_fd(self) -> int:
        fd = ctypes.c_int(-1)
        self._check(self.lib.aimux_events_fd(ctypes.byref(fd)))
        return fd.value


_lib: Queue | None = None


@pytest.fixture()
def lib() -> Queue:
    global _lib
    if _lib is None:
        _lib = Queue()
    return _lib


@pytest.fixture(autouse=True)
def _empty_ready_list() -> Iterator[None]:
    """The event-driven streams of a test are freed, but their handles may still be listed:
    leave the process's ready list empty for the tests that read it (as test_c_stream_batches)."""
    yield
    wait_until(lambda: stream_registry._threads == 0)  # no reader thread lists a stream now
    dispatch.ready_handles(1 << 30)


def c_queued(handle: int) -> int:
    """Events in the stream's C queue (the C ABI opened it: it has one)."""
    stream = stream_registry._streams[handle]
    assert stream.kind in ("queued", "read ahead")
    assert stream._q is not None
    return int(cqueue.lib._aimux_cq_count(stream._q))


def wait_until(what: Any) -> None:
    """Until ``what()`` (the bound, 60 s, only ends a broken run)."""
    for _ in range(6000):
        if what():
            return
        threading.Event().wait(0.01)
    raise AssertionError("never happened")


#: how a test opens its stream: ``aimux_stream_start`` on a reader thread of its own ("start"),
#: or ``aimux_stream`` then only polled ("polled")
HOWS = ["start", "polled"]


def open_full(lib: Queue, server: FaultServer, how: str, monkeypatch: Any) -> tuple[int, int]:
    """A 5,000-delta stream whose producer filled the C queue up to the high-water mark and
    waits there: (handle, events taken before). ``how``: "start" (``aimux_stream_start``: the
    stream's reader thread) or "polled" (``aimux_stream``, then polls until one finds nothing:
    the stream's reader thread)."""
    p = orjson.dumps(params(server, "mode=chunks;n=5000"))
    taken = 0
    if how == "start":
        handle = lib.start(b"stream_text", p)
        stream = stream_registry._streams[handle]
        assert stream.kind == "read ahead"
        wait_until(lambda: stream.waits_for_room and c_queued(handle) >= engine.HIGH_WATER)
        assert len(stream._pending) == 0  # every event went to the C queue
    else:
        handle = lib.open_stream(b"stream_text", p)
        stream = stream_registry._streams[handle]
        assert stream.kind == "queued"
        assert stream._pump_thread is None  # read on its reader's thread until polled
        while stream._pump_thread is None:  # the open's read, then a poll that finds nothing
            batch = lib.batch(handle, 1024, blocking=False)[0]
            taken += len(orjson.loads(batch)) if batch is not None else 0
        assert taken > 0
        # (the poll that started the reader may have taken its first push: it refills)
        wait_until(lambda: stream.waits_for_room and c_queued(handle) >= engine.HIGH_WATER)
        assert len(stream._pending) == 0
    return handle, taken


@pytest.mark.parametrize("how", HOWS)
def test_a_slow_c_consumer_stops_the_reader_at_the_high_water_mark(
    lib: Queue, server: FaultServer, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # nobody reads: the producer fills the C queue up to the mark, exactly, and waits there
    handle, events = open_full(lib, server, how, monkeypatch)
    try:
        assert c_queued(handle) == engine.HIGH_WATER
        while True:
            ev = lib.next_event(handle)
            if ev is None:
                break
            events += 1
            assert c_queued(handle) <= engine.HIGH_WATER
        assert events == 5001  # every delta and the finish: the producer went on each time
    finally:
        lib.lib.aimux_stream_free(handle)


@pytest.mark.parametrize("how", HOWS)
def test_a_cancel_ends_reads_although_the_c_queue_holds_events(
    lib: Queue, server: FaultServer, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle, _ = open_full(lib, server, how, monkeypatch)
    try:
        assert c_queued(handle) == engine.HIGH_WATER
        lib.lib.aimux_stream_cancel(handle)
        assert c_queued(handle) == 0  # dropped at once, not when read
        assert lib.next_event(handle) is None
        assert lib.batch(handle, 100, blocking=True) == (None, True)
        assert lib.batch(handle, 100, blocking=False) == (None, True)
    finally:
        lib.lib.aimux_stream_free(handle)
    with pytest.raises(CError) as info:
        lib.batch(handle, 100, blocking=True)
    assert info.value.code == 203


def test_a_cancel_wakes_a_next_batch_blocked_on_the_c_queue(
    lib: Queue, server: FaultServer
) -> None:
    handle = lib.open_stream(
        b"stream_text",
        orjson.dumps(params(server, "mode=stall;after=1;stall_ms=60000", scenario="cq-cancel")),
    )
    try:
        batch, ended = lib.batch(handle, 100, blocking=True)
        assert batch is not None and not ended
        assert [e["text"] for e in orjson.loads(batch)] == ["Hel"]
        got: list[Any] = []
        reader = threading.Thread(target=lambda: got.append(lib.batch(handle, 100, True)))
        reader.start()
        wait_blocked_reader(handle)  # blocked in the C queue (it counts its readers)
        assert reader.is_alive()
        lib.lib.aimux_stream_cancel(handle)
        reader.join(60)
        assert not reader.is_alive()
        assert got == [(None, True)]
        assert server.wait_for("gone", "cq-cancel", 1) == 1  # the cancel shut the connection
    finally:
        lib.lib.aimux_stream_free(handle)


class Tricky(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: str
    text: str


@pytest.fixture()
def tricky_op() -> Iterator[None]:
    """Events whose text holds what the C side splits on (commas, brackets, quotes, escapes),
    as dicts, bytes and pydantic models, several per network read (EventBatch)."""

    class TrickyParams(BaseModel):
        model_config = ConfigDict(extra="forbid")
        reads: int = 40

    def handler(params: TrickyParams, ctx: registry.StreamContext) -> Iterator[Any]:
        texts = ["a,b", '"]}', "[{,}]", "\\", 'é\u2028"\\",', "", "x" * 300]
        n = 0
        for r in range(params.reads):
            batch = registry.EventBatch()
            for t in texts[: 1 + r % len(texts)]:
                n += 1
                if n % 5 == 1:
                    batch.append(orjson.dumps({"type": "text-delta", "text": t, "n": [n, {}]}))
                elif n % 5 == 2:
                    batch.append(Tricky(type="text-delta", text=t))
                else:
                    batch.append({"type": "text-delta", "text": t, "nested": {"a": [t, n]}})
            yield batch
        yield {"type": "finish", "finishReason": "stop"}

    registry.register_op("test.tricky", mode="stream", params=TrickyParams)(handler)
    yield
    registry.unregister_op("test.tricky")


def python_events() -> list[bytes]:
    """The events the Python queue gives (a stream not opened through the C ABI)."""
    handle, env = dispatch.stream_json("test.tricky", b"{}")
    assert env is None and handle is not None
    assert stream_registry._streams[handle].kind == "by its reader"
    out = []
    while True:
        ev, env = dispatch.stream_next_json(handle)
        assert env is None
        if ev is None:
            break
        out.append(ev)
    dispatch.stream_free(handle)
    return out


def read_batches(lib: Queue, h: int, max_events: int, blocking: bool) -> bytes:
    """Batches of at most ``max_events`` to the end, joined into one JSON array."""
    batches: list[bytes] = []
    ended = False
    while not ended:
        batch, ended = lib.batch(h, max_events, blocking=blocking)
        if batch is not None:
            assert 1 <= len(orjson.loads(batch)) <= max_events
            batches.append(batch)
        elif not blocking:
            threading.Event().wait(0.001)
    return b"".join(batches).replace(b"][", b",")


@pytest.mark.parametrize("max_events", [1, 3, 7, 1024])
def test_every_c_read_gives_the_python_queues_events_byte_for_byte(
    lib: Queue, tricky_op: None, max_events: int
) -> None:
    expected = python_events()
    assert len(expected) > 100

    # aimux_stream_next: one event per call, read on this thread (aimux_stream) and on a reader
    # thread (aimux_stream_start)
    kinds = {lib.open_stream: "queued", lib.start: "read ahead"}
    for opened, kind in kinds.items():
        h = opened(b"test.tricky", b"{}")
        assert stream_registry._streams[h].kind == kind
        one = []
        while (ev := lib.next_event(h)) is not None:
            one.append(ev)
        lib.lib.aimux_stream_free(h)
        assert one == expected
    # aimux_stream_poll of a stream from aimux_stream: its reader thread
    h = lib.open_stream(b"test.tricky", b"{}")
    polled = read_batches(lib, h, max_events, blocking=False)
    assert stream_registry._streams[h]._pump_thread is not None
    lib.lib.aimux_stream_free(h)
    assert polled == b"[" + b",".join(expected) + b"]"
    # aimux_stream_next_batch: arrays of at most max_events, the end with the last one
    h = lib.open_stream(b"test.tricky", b"{}")
    batches = read_batches(lib, h, max_events, blocking=True)
    lib.lib.aimux_stream_free(h)
    assert batches == b"[" + b",".join(expected) + b"]"
    # aimux_stream_start + aimux_poll_ready: the event-driven interface, on a reader thread
    fd = lib.events_fd()
    for start, kind in ((lib.start, "read ahead"),):
        h = start(b"test.tricky", b"{}")
        assert stream_registry._streams[h].kind == kind
        got: list[bytes] = []
        over = False
        while not over:
            select.select([fd], [], [], 60)
            try:
                os.read(fd, 4096)
            except BlockingIOError:
                pass
            for handle, ended_flag, events, failure in lib.poll_ready(max_events):
                if handle != h:
                    continue
                assert failure is None
                if events is not None:
                    assert 1 <= len(events) <= max_events
                    got.extend(orjson.dumps(e) for e in events)
                over = over or ended_flag == 1
        lib.lib.aimux_stream_free(h)
        assert got == [orjson.dumps(orjson.loads(e)) for e in expected]


def test_a_forked_child_sees_none_of_the_parents_queued_events(server: FaultServer) -> None:
    """The parent's stream read by a reader thread of its own."""
    script = textwrap.dedent(f"""
        import os, sys, ctypes, threading, orjson
        sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(ROOT / "bench")!r})
        from aimux_ops.streams import cqueue
        from aimux_ops.streams import registry as stream_registry
        from cabi import CError, Lib
        lib = Lib()
        def p(spec):
            return orjson.dumps({{"model": {{"provider": "openai", "modelId": "gpt-4o-mini",
                "baseURL": {server.base_url!r}, "apiKey": "sk-fork",
                "headers": {{"x-fault": spec}}}}, "prompt": "hi", "maxRetries": 0}})
        start = lib.lib.aimux_stream_start
        start.restype = ctypes.c_void_p
        start.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)]
        handle = ctypes.c_uint64(0)
        assert not start(b"stream_text", p("mode=chunks;n=5000"), ctypes.byref(handle))
        h = handle.value
        stream = stream_registry._streams[h]
        for _ in range(6000):  # the parent's C queue full: the producer waits for room
            if stream.waits_for_room:
                break
            threading.Event().wait(0.01)
        assert stream.kind == "read ahead"
        queued = cqueue.lib._aimux_cq_count(stream._q)
        pid = os.fork()
        if pid == 0:
            try:
                lib.next_event(h)
                code = 1  # the parent's queued events reached the child
            except CError as e:
                code = 0 if e.code == 203 else 2
            n = lib.count_stream(b"stream_text", p("mode=chunks;n=300"))  # its own stream
            os._exit(code if n == 301 else 3)
        n = 0
        while lib.next_event(h) is not None:
            n += 1
        _, status = os.waitpid(pid, 0)
        print(orjson.dumps({{"queued": queued, "parent": n,
                            "child": os.waitstatus_to_exitcode(status)}}).decode())
        """)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        timeout=110,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    out = orjson.loads(proc.stdout.splitlines()[-1])
    assert out == {"queued": engine.HIGH_WATER, "parent": 5001, "child": 0}


def test_a_failed_open_of_an_event_driven_stream_is_answered_by_python(
    lib: Queue, server: FaultServer
) -> None:
    """The C queue is empty and the stream needs the Python side: the open failure once, then
    the end, through next_batch, as before."""
    h = lib.start(b"stream_text", orjson.dumps(params(server, "mode=status;status=400")))
    assert stream_registry._streams[h].kind == "read ahead"
    with pytest.raises(CError) as info:
        lib.batch(h, 10, blocking=True)
    assert info.value.code == 11
    assert_valid_envelope(info.value.json)
    assert lib.batch(h, 10, blocking=True) == (None, True)
    lib.lib.aimux_stream_free(h)


def test_a_freed_event_driven_stream_leaves_the_ready_list(lib: Queue, server: FaultServer) -> None:
    """A host that reads its event-driven streams with ``aimux_stream_next_batch`` alone and
    never calls ``aimux_ready``: each stream it frees leaves the ready list, so the list holds
    no handle once every stream is freed (it grew by one handle per stream before)."""
    p = orjson.dumps(params(server, "mode=chunks;n=3"))
    dispatch.ready_handles(1 << 30)
    for _ in range(200):
        h = lib.start(b"stream_text", p)
        while not lib.batch(h, 64, blocking=True)[1]:
            pass
        lib.lib.aimux_stream_free(h)
    wait_until(lambda: stream_registry._threads == 0)  # every reader thread's last act is done
    assert len(ready.ready_list()) == 0
    out = (ctypes.c_uint64 * 256)()
    count = ctypes.c_size_t(99)
    ready_fn = lib.lib.aimux_ready
    ready_fn.restype = P
    ready_fn.argtypes = [
        ctypes.POINTER(ctypes.c_uint64),
        ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_size_t),
    ]
    assert not ready_fn(out, 256, ctypes.byref(count))
    assert count.value == 0  # no freed handle is listed
