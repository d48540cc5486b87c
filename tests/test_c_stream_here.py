"""Streams opened with ``aimux_stream`` are read on the thread of their C reader
(``streams.stream.Stream``, kind "queued"; DESIGN.md "Streams"): the op runs on the thread
that blocks in ``aimux_stream_next`` / ``next_batch``, a read
hands over every HTTP chunk one network read brought, a poll that finds nothing gives the
stream a reader thread of its own, and no other thread of the core is started for them."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import test_c_stream_queue
from fault_server import FaultServer
from helpers import ROOT
from helpers import provider_params as params
from pydantic import BaseModel, ConfigDict
from test_c_stream_queue import CError, Queue

from aimux_ops.ops import registry
from aimux_ops.streams import registry as stream_registry

pytestmark = pytest.mark.timeout(120)

lib = test_c_stream_queue.lib  # the library through ctypes, one per process (a shared fixture)


def read_texts(lib: Queue, h: int, n: int) -> list[str]:
    """Blocking batch reads until ``n`` text deltas came: their texts."""
    texts: list[str] = []
    while len(texts) < n:
        batch, _ = lib.batch(h, 1024, blocking=True)
        assert batch is not None
        texts += [e["text"] for e in orjson.loads(batch)]
    return texts


@pytest.fixture()
def where_op() -> Iterator[list[int]]:
    """``test.where``: 5 reads of 3 events, each noting the thread that ran it."""
    threads: list[int] = []

    class WhereParams(BaseModel):
        model_config = ConfigDict(extra="forbid")

    def handler(params: WhereParams, ctx: registry.StreamContext) -> Iterator[Any]:
        for r in range(5):
            threads.append(threading.get_ident())
            yield registry.EventBatch({"type": "text-delta", "text": f"{r}.{i}"} for i in range(3))
        threads.append(threading.get_ident())

    registry.register_op("test.where", mode="stream", params=WhereParams)(handler)
    yield threads
    registry.unregister_op("test.where")


def test_the_op_runs_on_the_thread_that_reads_the_stream(lib: Queue, where_op: list[int]) -> None:
    got: list[Any] = []

    def reader() -> None:
        h = lib.open_stream(b"test.where", b"{}")
        got.append(stream_registry._streams[h].kind)
        while (ev := lib.next_event(h)) is not None:
            got.append(orjson.loads(ev)["text"])
        lib.lib.aimux_stream_free(h)

    t = threading.Thread(target=reader)
    t.start()
    t.join(60)
    assert got[0] == "queued"
    assert got[1:] == [f"{r}.{i}" for r in range(5) for i in range(3)]
    assert where_op == [t.ident] * 6  # every read, and the op's end, on the reader's thread


def test_a_read_hands_over_every_chunk_one_network_read_brought(
    lib: Queue, server: FaultServer
) -> None:
    """The fault server sends one HTTP chunk per event. All 600 were sent before the first
    read, so reads bring many chunks at a time: a batch holds them all, not one event."""
    spec = "mode=stall;parts=600;after=600;stall_ms=60000;text=" + "b" * 600
    h = lib.open_stream(b"stream_text", orjson.dumps(params(server, spec, scenario="here-600")))
    try:
        assert server.wait_for("stall", "here-600", 1) == 1
        sizes = []
        while sum(sizes) < 600:
            batch, ended = lib.batch(h, 1024, blocking=True)
            assert batch is not None and not ended
            sizes.append(len(orjson.loads(batch)))
        assert sum(sizes) == 600
        assert max(sizes) > 1, sizes
    finally:
        lib.lib.aimux_stream_free(h)


def test_a_read_never_waits_for_the_next_chunk_once_it_has_one(
    lib: Queue, server: FaultServer
) -> None:
    """Three events, then the server stalls (600 s): a read returns what came, at once, though
    the last chunk's CRLF is still unparsed in the connection's buffer."""
    spec = "mode=stall;after=3;stall_ms=600000;text=abcdefghi;parts=9"
    h = lib.open_stream(b"stream_text", orjson.dumps(params(server, spec, scenario="here-3")))
    try:
        assert read_texts(lib, h, 3) == ["a", "b", "c"]
    finally:
        lib.lib.aimux_stream_free(h)
    assert server.wait_for("gone", "here-3", 1) == 1  # the free closed the stalled connection


def test_no_reader_thread_for_streams_read_by_their_caller(server: FaultServer) -> None:
    """A process that only opens streams with aimux_stream and reads them blocking starts no
    reader thread (only the reaper)."""
    script = textwrap.dedent(f"""
        import sys, threading, orjson
        sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(ROOT / "bench")!r})
        from cabi import Lib
        lib = Lib()
        p = orjson.dumps({{"model": {{"provider": "openai", "modelId": "gpt-4o-mini",
            "baseURL": {server.base_url!r}, "apiKey": "sk-here",
            "headers": {{"x-fault": "mode=chunks;n=300"}}}}, "prompt": "hi", "maxRetries": 0}})
        counts = [lib.count_stream(b"stream_text", p) for _ in range(3)]
        names = sorted(t.name for t in threading.enumerate())
        print(orjson.dumps({{"counts": counts, "loop": "aimux-stream-reader" in names}}).decode())
        """)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        timeout=110,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    assert orjson.loads(proc.stdout.splitlines()[-1]) == {"counts": [301] * 3, "loop": False}


def _sse_chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


def _openai_event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "choices": [choice]}
    return b"data: " + orjson.dumps(body) + b"\n\n"


class SplitServer:
    """One chunked OpenAI stream per connection on 127.0.0.1, its bytes written in the given
    parts; a ``threading.Event`` among them holds the rest until the test sets it (the test sets
    it once it saw what came before, so a read that waits for the held bytes never returns)."""

    def __init__(self, parts: list[bytes | threading.Event]) -> None:
        self.parts = parts
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            while len(body) < length:
                body += conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
            )
            for part in self.parts:
                if isinstance(part, threading.Event):
                    part.wait(60)
                else:
                    conn.sendall(part)
            try:
                conn.recv(1)  # until the client goes
            except OSError:
                pass

    def close(self) -> None:
        self.sock.close()


def _tail() -> bytes:
    return _sse_chunk(_openai_event({}, "stop")) + _sse_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"


def _held_at(split: str) -> tuple[list[bytes | threading.Event], threading.Event, str]:
    """The stream A, B, C, finish; the server holds its bytes at ``split``: (parts, the hold, the
    last text-delta a reader must get while it holds)."""
    a, b, c = (_sse_chunk(_openai_event({"content": t})) for t in "ABC")
    gate = threading.Event()
    if split == "size line alone":  # B's chunk with C's size line, C's data later
        cut = c.index(b"\r\n") + 2
        return [a, b + c[:cut], gate, c[cut:] + _tail()], gate, "B"
    if split == "half a size line":
        return [a, b + c[:1], gate, c[1:] + _tail()], gate, "B"
    # the last chunk's size line, its CRLF later: every event is in before the hold
    tail = _tail()
    return [a, b, c + tail[:-2], gate, tail[-2:]], gate, "finish"


@pytest.mark.parametrize("split", ["size line alone", "half a size line", "last chunk"])
def test_a_read_hands_over_what_came_while_the_next_chunk_is_only_begun(
    lib: Queue, split: str
) -> None:
    """A network read that brought a whole event and the start of the next chunk (its size
    line, part of it, or the body's last chunk without its CRLF) hands the event over at once:
    it never waits for the rest of that chunk."""
    parts, gate, last = _held_at(split)
    srv = SplitServer(parts)
    p = {
        "model": {"provider": "openai", "modelId": "m", "baseURL": srv.base_url, "apiKey": "k"},
        "prompt": "hi",
        "maxRetries": 0,
    }
    seen: list[Any] = []
    before = threading.Event()

    def read() -> None:
        h = lib.open_stream(b"stream_text", orjson.dumps(p))
        try:
            while (ev := lib.next_event(h)) is not None:
                e = orjson.loads(ev)
                seen.append(e.get("text", e["type"]))
                if seen[-1] == last:
                    before.set()
        finally:
            lib.lib.aimux_stream_free(h)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        held = before.wait(30)  # the bound only ends a broken run
        assert held, f"{last!r} was not handed over while the server held the rest: {seen}"
        assert seen[: seen.index(last) + 1] == ["A", "B", "C", "finish"][: seen.index(last) + 1]
    finally:
        gate.set()
        reader.join(60)
        srv.close()
    assert seen == ["A", "B", "C", "finish"]


def test_a_poll_after_a_blocking_read_takes_only_what_is_there(
    lib: Queue, server: FaultServer
) -> None:
    """The bindings read blocking and "touch" with a one-event poll while they hand out a batch:
    such a poll never starts a reader thread (the blocking reads read the stream)."""
    spec = "mode=stall;after=2;stall_ms=600000;text=abcdef;parts=3"
    h = lib.open_stream(b"stream_text", orjson.dumps(params(server, spec, scenario="touch")))
    try:
        assert read_texts(lib, h, 2) == ["ab", "cd"]
        assert lib.batch(h, 1, blocking=False) == (None, False)  # nothing there, nothing read
        assert stream_registry._streams[h]._pump_thread is None
    finally:
        lib.lib.aimux_stream_free(h)
    assert server.wait_for("gone", "touch", 1) == 1


@pytest.fixture()
def unserializable_op() -> Iterator[None]:
    """``test.unserializable``: six reads of one delta, read ``bad`` (2 unless given) holding a
    set (which neither orjson nor ``_dump`` serializes: a 205 event), then the finish (``bad``
    6: a seventh delta with the set, in the finish's read)."""

    class BadParams(BaseModel):
        model_config = ConfigDict(extra="forbid")
        bad: int = 2

    def handler(params: BadParams, ctx: registry.StreamContext) -> Iterator[Any]:
        for r in range(6):
            bad = {"x": {1, 2}} if r == params.bad else {}
            yield registry.EventBatch([{"type": "text-delta", "text": str(r), **bad}])
        tail = [{"type": "text-delta", "text": "6", "x": {1, 2}}] if params.bad == 6 else []
        yield registry.EventBatch([*tail, {"type": "finish", "finishReason": "stop"}])

    registry.register_op("test.unserializable", mode="stream", params=BadParams)(handler)
    yield
    registry.unregister_op("test.unserializable")


def _poll_all(lib: Queue, h: int, blocking: bool = False) -> list[str]:
    out: list[str] = []
    for _ in range(6000):  # the bound only ends a broken run
        try:
            batch, ended = lib.batch(h, 64, blocking=blocking)
        except CError as e:
            out.append(f"error {e.code}")
            continue
        out += [e.get("text", e["type"]) for e in orjson.loads(batch)] if batch else []
        if ended:
            return out
        threading.Event().wait(0.01)
    raise AssertionError(f"never ended: {out}")


@pytest.mark.parametrize("bad", [0, 2, 6])
def test_a_poll_only_reader_reads_to_the_end_through_the_fallback(
    lib: Queue, unserializable_op: None, bad: int
) -> None:
    """An event only the per-event path can serialize sends the stream to its fallback (Python
    answers), in the open's read (0), later (2) or in the finish's read (6): a host that only
    polls still gets every event, from a reader thread (``aimux_stream_start``, a polled
    ``aimux_stream``); and so does one that reads blocking."""
    p = orjson.dumps({"bad": bad})
    want = ["0", "1", "2", "3", "4", "5", "finish"]
    if bad == 6:
        want.insert(6, "error 205")
    else:
        want[bad] = "error 205"
    for opened, blocking in (
        (lib.start, False),
        (lib.open_stream, False),
        (lib.start, True),
        (lib.open_stream, True),
    ):
        h = opened(b"test.unserializable", p)
        assert _poll_all(lib, h, blocking) == want, (opened, blocking)
        lib.lib.aimux_stream_free(h)


def test_a_ready_list_host_gets_every_event_through_the_fallback(
    lib: Queue, unserializable_op: None
) -> None:
    """A host that reads only when the events pipe wakes it (``aimux_poll_ready``, as Node
    does): once a C batch empties the C queue of a stream whose later events wait in Python (the
    fallback), the stream is listed again, so every event and the end reach it."""
    fd = lib.events_fd()
    h = lib.start(b"test.unserializable", orjson.dumps({"bad": 2}))
    out: list[str] = []
    over = False
    for _ in range(600):  # the bound only ends a broken run (60 s)
        if select.select([fd], [], [], 0.1)[0]:
            os.read(fd, 4096)
        for handle, ended, events, failure in lib.poll_ready(64):
            if handle != h:
                continue
            out += [f"error {failure['code']}"] if failure else []
            out += [e.get("text", e["type"]) for e in events or []]
            over = over or (ended == 1 and failure is None)
        if over:
            break
    lib.lib.aimux_stream_free(h)
    assert out == ["0", "1", "error 205", "3", "4", "5", "finish"]
    assert over


def test_the_end_comes_with_the_finish_and_to_a_poll_after_it(
    lib: Queue, server: FaultServer
) -> None:
    """The op's end is known with its ``finish``: a batch read gets it with
    that batch, and a host that read blocking up to the finish and then polls gets the end."""
    p = orjson.dumps(params(server, "mode=ok;text=abcdef;parts=3"))
    h = lib.open_stream(b"stream_text", p)
    types: list[str] = []
    while not types or types[-1] != "finish":
        batch, ended = lib.batch(h, 1024, blocking=True)
        assert batch is not None
        types += [e["type"] for e in orjson.loads(batch)]
    assert ended  # with the finish's batch
    lib.lib.aimux_stream_free(h)
    h = lib.open_stream(b"stream_text", p)
    while (ev := lib.next_event(h)) is not None and orjson.loads(ev)["type"] != "finish":
        pass
    assert ev is not None  # the finish, read blocking; then polls
    assert lib.batch(h, 8, blocking=False) == (None, True)
    lib.lib.aimux_stream_free(h)


def test_a_stream_its_reader_thread_read_to_the_end_is_reaped_when_nobody_reads(
    server: FaultServer,
) -> None:
    """Left unread after a poll gave it its reader thread, which read it to its end: the idle
    reaper closes it (its queued events go), as it closes any stream."""
    spec = "mode=ok;parts=300;drip_ms=1;text=" + "x" * 300
    script = textwrap.dedent(f"""
        import sys, threading, orjson
        sys.path[:0] = [{str(ROOT / "tests")!r}, {str(ROOT / "bench")!r}, {str(ROOT)!r}]
        from test_c_stream_queue import Queue
        from aimux_ops.streams import cqueue
        from aimux_ops.streams import registry as stream_registry
        lib = Queue()
        p = orjson.dumps({{"model": {{"provider": "openai", "modelId": "gpt-4o-mini",
            "baseURL": {server.base_url!r}, "apiKey": "sk-reap",
            "headers": {{"x-fault": {spec!r}}}}}, "prompt": "hi", "maxRetries": 0}})
        h = lib.open_stream(b"stream_text", p)
        s = stream_registry._streams[h]
        s._enter()  # a reader until the reader thread is done: the reaper waits for that
        while s._pump_thread is None:  # the open's read, then a poll that finds nothing
            assert lib.batch(h, 1, blocking=False)[1] is False
        s._pump_thread.join(60)  # it read the stream to its end: ~300 events wait unread
        s._leave()
        queued = cqueue.lib._aimux_cq_count(s._q)
        for _ in range(6000):  # until the reaper closed it (the bound ends a broken run)
            if s.ctx.cancelled.is_set():
                break
            threading.Event().wait(0.01)
        events = []
        while True:
            batch, ended = lib.batch(h, 1024, blocking=True)
            events += [e["type"] for e in orjson.loads(batch)] if batch else []
            if ended:
                break
        print(orjson.dumps({{"ended": s._ended, "queued": queued > 100, "events": events}}).decode())
        """)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        timeout=110,
        # 3 s: the reaper must not close the stream between its open and ``_enter`` (a loaded
        # machine may not run this process for a while)
        env={"PATH": "/usr/bin:/bin", "AIMUX_STREAM_IDLE_TIMEOUT_MS": "3000"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    assert orjson.loads(proc.stdout.splitlines()[-1]) == {
        "ended": True,
        "queued": True,
        "events": ["error"],
    }
