"""Streams opened with ``aimux_stream`` are read on the thread of their C reader
(``caller_stream.NativeCallerStream``; DESIGN.md "Streams read on the caller's thread: the C
ABI"): the op runs on the thread that blocks in ``aimux_stream_next`` / ``next_batch``, a read
hands over every HTTP chunk one network read brought, a poll that finds nothing gives the
stream a reader thread of its own, and no stream loop thread is started for them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from fault_server import FaultServer
from helpers import ROOT
from helpers import provider_params as params
from pydantic import BaseModel, ConfigDict
from test_c_stream_queue import Queue

from aimux_ops import dispatch, transport
from aimux_ops.caller_stream import NativeCallerStream
from aimux_ops.ops import registry

pytestmark = pytest.mark.timeout(120)

_lib: Queue | None = None


@pytest.fixture()
def lib() -> Queue:
    global _lib
    if _lib is None:
        _lib = Queue()
    return _lib


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
        got.append(type(dispatch._streams[h]))
        while (ev := lib.next_event(h)) is not None:
            got.append(orjson.loads(ev)["text"])
        lib.lib.aimux_stream_free(h)

    t = threading.Thread(target=reader)
    t.start()
    t.join(60)
    assert got[0] is NativeCallerStream
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
        texts: list[str] = []
        while len(texts) < 3:
            batch, _ = lib.batch(h, 1024, blocking=True)
            assert batch is not None
            texts += [e["text"] for e in orjson.loads(batch)]
        assert texts == ["a", "b", "c"]
    finally:
        lib.lib.aimux_stream_free(h)
    assert server.wait_for("gone", "here-3", 1) == 1  # the free closed the stalled connection


def test_the_connection_buffer_is_found_on_a_real_response(server: FaultServer) -> None:
    """``transport._unread_bytes`` walks httpx's and httpcore's private stream objects to h11's
    receive buffer; without it every chunk is a read of its own (a silent slowdown): pin it."""
    import httpx

    body = {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    with httpx.Client() as client:
        url = server.base_url + "/chat/completions"
        with client.stream("POST", url, json=body, headers={"x-fault": "mode=chunks;n=3"}) as r:
            size = transport._unread_bytes(r)
            assert size is not None and isinstance(size(), int)
            assert b"[DONE]" in r.read()


def test_no_stream_loop_thread_for_streams_read_by_their_caller(server: FaultServer) -> None:
    """A process that only opens streams with aimux_stream never starts the stream loop; one
    aimux_stream_start does."""
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
        print(orjson.dumps({{"counts": counts, "loop": "aimux-streams" in names}}).decode())
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
