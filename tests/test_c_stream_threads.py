"""Event-driven streams (``aimux_stream_start``) read by a reader thread of their own
(``streams.stream.Stream``, kind "read ahead"): at most ``AIMUX_STREAM_READER_THREADS`` at once, one
more is a clear error (never a wait); a thread that cannot start is the same error; a cancel during the open ends reads at once, tells
the host and ends the open; the open's failure reaches ``aimux_poll_ready``; the reaper closes
a stream nobody polls; the setting is read from the environment. (The events themselves, byte for byte
against the Python queue, the high-water mark, a cancel and a fork: ``test_c_stream_queue.py``.)"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import textwrap
import threading
from typing import Any

import orjson
import pytest
import test_c_stream_queue
from fault_server import FaultServer
from helpers import ROOT
from helpers import provider_params as params
from test_c_stream_queue import CError, Queue, wait_until

from aimux_ops import guest
from aimux_ops.boundary import dispatch
from aimux_ops.streams import cqueue, readers
from aimux_ops.streams import registry as stream_registry

pytestmark = pytest.mark.timeout(120)

lib = test_c_stream_queue.lib  # the library through ctypes, one per process (a shared fixture)
_empty_ready_list = test_c_stream_queue._empty_ready_list  # (autouse there: here too)


def limit(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """At most ``n`` reader threads in this test (as ``AIMUX_STREAM_READER_THREADS=n``)."""
    monkeypatch.setattr(guest, "_limits", guest.limits().replace(stream_reader_threads=n))


def poll_until(lib: Queue, h: int, what: Any) -> list[Any]:
    """``aimux_poll_ready`` entries of ``h`` (woken by the events pipe) until ``what(entry)``:
    every entry of ``h`` seen, the last one the one that matched."""
    fd = lib.events_fd()
    seen: list[Any] = []
    for _ in range(600):  # the bound only ends a broken run
        select.select([fd], [], [], 0.1)
        try:
            os.read(fd, 4096)
        except BlockingIOError:
            pass
        for entry in lib.poll_ready(1024):
            if entry[0] == h:
                seen.append(entry)
                if what(entry):
                    return seen
    raise AssertionError(f"never happened; seen {seen}")


def run_host(server: FaultServer, spec: str, body: str, env: dict[str, str]) -> Any:
    """A fresh Python host of the library (ctypes; ``lib``, its events ``fd``, ``dispatch``,
    and ``p``: stream_text params with the fault ``spec``) that runs ``body`` and prints one
    JSON line (``out``); returns it parsed. The host ends with ``os._exit(0)``: these tests are
    not about a Python host's exit (``test_python_host_exit.py`` is)."""
    script = (
        textwrap.dedent(f"""
        import os, select, sys, threading, orjson
        sys.path[:0] = [{str(ROOT / "tests")!r}, {str(ROOT / "bench")!r}, {str(ROOT)!r}]
        from test_c_stream_queue import Queue
        from aimux_ops.boundary import dispatch
        from aimux_ops.streams import cqueue, readers
        from aimux_ops.streams import registry as stream_registry
        from cabi import CError
        lib = Queue()
        fd = lib.events_fd()
        p = orjson.dumps({{"model": {{"provider": "openai", "modelId": "gpt-4o-mini",
            "baseURL": {server.base_url!r}, "apiKey": "sk-host",
            "headers": {{"x-fault": {spec!r}}}}}, "prompt": "hi", "maxRetries": 0}})

        def until_listed_end(h):  # aimux_poll_ready entries of h until one ends it (60 s bound)
            entries = []
            for _ in range(600):
                if select.select([fd], [], [], 0.1)[0]:
                    os.read(fd, 4096)
                entries += [e for e in lib.poll_ready(1024) if e[0] == h]
                if entries and entries[-1][1] == 1:
                    break
            return entries
        """)
        + textwrap.dedent(body)
        + textwrap.dedent("""
        print(orjson.dumps(out).decode(), flush=True)
        os._exit(0)
        """)
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        timeout=110,
        env={"PATH": "/usr/bin:/bin", **env},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return orjson.loads(proc.stdout.splitlines()[-1])


def test_a_stream_over_the_reader_threads_limit_is_a_clear_error(
    lib: Queue, server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every event-driven stream has its reader thread; one more than the setting allows is a
    clear error naming the setting (nothing is sent), never a wait or a slower path."""
    limit(monkeypatch, 2)

    def p(i: int) -> bytes:
        spec = "mode=stall;after=1;stall_ms=60000"
        return orjson.dumps(params(server, spec, scenario=f"rt-limit-{i}"))

    hs = [lib.start(b"stream_text", p(i)) for i in range(2)]
    try:
        before = set(stream_registry._streams)
        with pytest.raises(CError) as info:
            lib.start(b"stream_text", p(9))
        assert info.value.code == 11
        assert "AIMUX_STREAM_READER_THREADS is 2" in info.value.message
        assert set(stream_registry._streams) == before  # no handle was made
        assert server.count("rt-limit-9") == 0  # nothing was sent
        kinds = [stream_registry._streams[h].kind for h in hs]
        assert kinds == ["read ahead", "read ahead"]
        assert stream_registry._threads == 2
        for h in hs:  # each delivers
            batch, ended = lib.batch(h, 10, blocking=True)
            assert [e["text"] for e in orjson.loads(batch or b"[]")] == ["Hel"] and not ended
        first = stream_registry._streams[hs[0]]
        assert first.kind == "read ahead" and first._pump_thread is not None
        assert first._pump_thread.name == "aimux-stream-reader" and first._pump_thread.is_alive()
        lib.lib.aimux_stream_free(hs[0])  # its thread ends (the cancel shuts its socket down)
        wait_until(lambda: stream_registry._threads == 1)
        assert not first._pump_thread.is_alive()
        hs.append(lib.start(b"stream_text", p(3)))  # a thread is free again
        assert stream_registry._streams[hs[-1]].kind == "read ahead"
        assert lib.batch(hs[-1], 10, blocking=True)[0] is not None  # (up to the server's stall)
    finally:
        for h in hs:
            lib.lib.aimux_stream_free(h)
    wait_until(lambda: stream_registry._threads == 0)
    gone = [server.wait_for("gone", f"rt-limit-{i}", 1) for i in (0, 1, 3)]
    assert gone == [1] * 3, (gone, [server.count(f"rt-limit-{i}") for i in (0, 1, 3)])


def test_a_reader_thread_that_cannot_start_is_a_clear_error(
    lib: Queue, server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = threading.Thread.start
    readers.retire()  # (no parked thread takes the stream: one is started)

    def start(self: threading.Thread) -> None:
        if self.name == "aimux-stream-reader":
            raise RuntimeError("can't start new thread")  # what CPython raises at the limit
        real(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    before = set(stream_registry._streams)
    p = orjson.dumps(params(server, "mode=chunks;n=50", scenario="rt-no-thread"))
    with pytest.raises(CError) as info:
        lib.start(b"stream_text", p)
    assert info.value.code == 11 and "no thread could be started" in info.value.message
    assert set(stream_registry._streams) == before  # the attempt's handle is gone
    assert stream_registry._threads == 0  # and its slot is free
    assert server.count("rt-no-thread") == 0  # nothing was sent
    monkeypatch.setattr(threading.Thread, "start", real)
    h = lib.start(b"stream_text", p)  # a thread to be had again: the stream runs
    types = []
    ended = False
    while not ended:
        batch, ended = lib.batch(h, 1024, blocking=True)
        types += [e["type"] for e in orjson.loads(batch or b"[]")]
    lib.lib.aimux_stream_free(h)
    assert types == ["text-delta"] * 50 + ["finish"]


def test_a_cancel_during_the_open_ends_reads_at_once_and_tells_the_host(
    lib: Queue, server: FaultServer
) -> None:
    """The reader thread waits for the response headers (held by the server): a cancel ends
    the stream's reads and lists it (the host hears the end, no failure), and shuts the
    request's connection down, so the thread's open ends without the headers
    (``test_stream_cancel_send.py`` shows the server sees the client go)."""
    p = orjson.dumps(params(server, "mode=ok;hold=rt-open-cancel", scenario="rt-open-cancel"))
    h = lib.start(b"stream_text", p)
    stream = stream_registry._streams[h]
    assert stream.kind == "read ahead" and stream._pump_thread is not None
    try:
        assert server.wait_for("held", "rt-open-cancel", 1) == 1  # the open waits for headers
        dispatch.ready_handles(1 << 30)  # (nothing of this stream is listed yet)
        lib.lib.aimux_stream_cancel(h)
        assert poll_until(lib, h, lambda e: e[1] == 1) == [[h, 1, None, None]]  # no failure
        assert lib.batch(h, 10, blocking=True) == (None, True)
        stream._pump_thread.join(60)  # the open ends: nothing is read
        assert not stream._pump_thread.is_alive()
    finally:
        server.release("rt-open-cancel")
    assert lib.batch(h, 10, blocking=False) == (None, True)
    lib.lib.aimux_stream_free(h)
    wait_until(lambda: stream_registry._threads == 0)


def test_the_open_failure_reaches_poll_ready_once(lib: Queue, server: FaultServer) -> None:
    h = lib.start(b"stream_text", orjson.dumps(params(server, "mode=status;status=400")))
    assert stream_registry._streams[h].kind == "read ahead"
    seen = poll_until(lib, h, lambda e: e[1] == 1)
    handle, ended, events, failure = seen[-1]
    assert (handle, ended, events) == (h, 1, None) and len(seen) == 1
    assert failure["code"] == 11 and failure["error"]["statusCode"] == 400
    assert lib.batch(h, 10, blocking=False) == (None, True)  # once: then the end
    lib.lib.aimux_stream_free(h)


def test_a_stream_nobody_polls_is_reaped_and_the_host_told(server: FaultServer) -> None:
    """Its reader thread read it to the end, nobody polled it: the idle reaper closes it (its
    queued events go) and lists it, so the host's next poll gets the reaper's error."""
    body = """
        h = lib.start(b"stream_text", p)
        s = stream_registry._streams[h]
        s._enter()  # a reader until the reader thread is done: the reaper waits for that
        s._pump_thread.join(60)  # it read the stream to its end: ~300 events wait unpolled
        dispatch.ready_handles(1 << 30)  # the host "missed" every wake-up so far
        s._leave()
        queued = cqueue.lib._aimux_cq_count(s._q)
        entries = until_listed_end(h)
        types = [e["type"] for entry in entries for e in (entry[2] or [])]
        out = {"type": s.kind, "queued": queued > 100, "types": types,
               "cancelled": s.ctx.cancelled.is_set()}
        """
    spec = "mode=ok;parts=300;drip_ms=1;text=" + "x" * 300
    # 3 s: the reaper must not close the stream between its start and ``_enter`` (a loaded
    # machine may not run this process for a while)
    assert run_host(server, spec, body, {"AIMUX_STREAM_IDLE_TIMEOUT_MS": "3000"}) == {
        "type": "read ahead",
        "queued": True,
        "types": ["error"],
        "cancelled": True,
    }


@pytest.mark.parametrize("setting", [None, "0", "1"])
def test_the_reader_threads_setting_is_read_from_the_environment(
    server: FaultServer, setting: str | None
) -> None:
    """Unset: a reader thread for each (the default allows thousands); 0: none (each start is
    the limit's error); 1: one reader thread, the second start the limit's error."""
    body = """
        hs, kinds = [], []
        for _ in range(2):  # (the first waits at the mark)
            try:
                hs.append(lib.start(b"stream_text", p))
                kinds.append(stream_registry._streams[hs[-1]].kind)
            except CError as e:
                kinds.append(e.code)
        counts = []
        for h in hs:
            n, ended = 0, False
            while not ended:
                batch, ended = lib.batch(h, 1024, blocking=True)
                n += len(orjson.loads(batch)) if batch else 0
            counts.append(n)
        names = [t.name for t in threading.enumerate()]
        out = {"kinds": kinds, "counts": counts, "loop": "aimux-streams" in names}
        """
    env = {} if setting is None else {"AIMUX_STREAM_READER_THREADS": setting}
    thread = "read ahead"
    kinds = {None: [thread, thread], "0": [11, 11], "1": [thread, 11]}[setting]
    assert run_host(server, "mode=chunks;n=5000", body, env) == {
        "kinds": kinds,
        "counts": [5001] * kinds.count(thread),
        "loop": False,
    }


def test_a_python_poll_that_leaves_events_lists_the_stream_again(
    lib: Queue, server: FaultServer
) -> None:
    """A poll from Python of the stream's C queue (``dispatch.stream_poll_json``, what
    ``aimux_poll_ready`` asks of Python) that leaves events behind lists the stream again (the
    C queue's RELIST wake-up), as a C poll does."""
    h = lib.start(b"stream_text", orjson.dumps(params(server, "mode=chunks;n=50")))
    stream = stream_registry._streams[h]
    assert stream.kind == "read ahead" and stream._pump_thread is not None
    stream._pump_thread.join(60)  # every event is in the C queue: no push lists it any more
    assert cqueue.lib._aimux_cq_count(stream._q) == 51
    dispatch.ready_handles(1 << 30)
    batch, ended, env = dispatch.stream_poll_json(h, 1)
    assert env is None and not ended and len(orjson.loads(batch or b"[]")) == 1
    assert h in dispatch.ready_handles(1 << 30)
    lib.lib.aimux_stream_free(h)


def test_the_reaper_closes_a_stream_nobody_polls_while_its_open_waits(
    server: FaultServer,
) -> None:
    """The reader thread is not a reader: a stream whose open waits for the response headers
    (held by the server) and that nobody polls is closed by the idle reaper, and listed: the
    host's poll gets the reaper's terminal error event."""
    body = """
        h = lib.start(b"stream_text", p)
        kind = stream_registry._streams[h].kind
        entries = until_listed_end(h)
        out = {"kind": kind, "entries": [[e[1], [x["type"] for x in e[2] or []],
               e[2][0]["error"]["code"] if e[2] else None, e[3]] for e in entries]}
        """
    env = {"AIMUX_STREAM_IDLE_TIMEOUT_MS": "500"}
    got = run_host(server, "mode=ok;hold=rt-never;hold_ms=30000", body, env)
    assert got == {"kind": "read ahead", "entries": [[1, ["error"], 12, None]]}
