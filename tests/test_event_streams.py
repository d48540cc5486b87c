"""Event-driven streams in a plain Python process (no libaimux: their events stay in Python):
the event-driven API (start / ready / poll and the notification pipe) drains many streams from
one thread, a slow consumer bounds what a reader thread reads ahead, cancel ends a retry
backoff, a forked child gets its own pipe with the parent's handles stale, and every surface
(read by its reader, event-driven) reads the same bytes for every fault."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fault_server import FaultServer
from helpers import provider_params as params

from aimux_ops.boundary import dispatch
from aimux_ops.boundary.dispatch import (
    events_fd,
    poll_ready_json,
    ready_handles,
    stream_cancel,
    stream_free,
    stream_json,
    stream_next_json,
    stream_poll_json,
    stream_start_json,
)
from aimux_ops.streams import cqueue
from aimux_ops.streams import registry as stream_registry
from aimux_ops.streams import stream as engine

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def trickle() -> Iterator[int]:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests" / "trickle_server.py"),
            "--events",
            "10",
            "--interval-ms",
            "20",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline().decode()
    assert line.startswith("port "), line
    yield int(line.split()[1])
    proc.stdin.close()
    proc.kill()
    proc.wait()


def trickle_params(port: int, **extra: Any) -> bytes:
    p = {
        "model": {
            "provider": "openai",
            "modelId": "m",
            "baseURL": f"http://127.0.0.1:{port}/v1",
            "apiKey": "sk-loop",
        },
        "prompt": "hi",
        "maxRetries": 0,
        "timeoutMs": 60_000,
    }
    p.update(extra)
    return orjson.dumps(p)


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def wait_ready(fd: int) -> None:
    r, _, _ = select.select([fd], [], [], 30)
    assert r, "no notification within 30 s"
    try:
        while os.read(fd, 256):
            pass
    except BlockingIOError:
        pass


@pytest.fixture(autouse=True)
def _no_stale_handles() -> None:
    """Earlier tests' event-driven streams are freed, but a reader thread's last act lists its
    stream (aimux.h: a listed handle may have been freed since): wait until no reader thread
    runs and empty the ready list, so these tests see only their own handles."""
    for _ in range(6000):
        if stream_registry._threads == 0:
            break
        threading.Event().wait(0.01)
    ready_handles(1 << 30)


def test_many_streams_on_one_thread_through_the_pipe(trickle: int) -> None:
    fd = events_fd()
    before = threads()  # pytest's, the servers' and the core's own threads so far
    handles = []
    for _ in range(200):
        h, env = stream_start_json("stream_text", trickle_params(trickle))
        assert env is None and h is not None
        handles.append(h)
    events: dict[int, list[dict[str, Any]]] = {h: [] for h in handles}
    ended: set[int] = set()
    peak = threads()
    rounds = 0
    while len(ended) < len(handles):
        rounds += 1
        assert rounds < 10_000
        wait_ready(fd)
        peak = max(peak, threads())
        while True:
            ready = ready_handles(64)
            for h in ready:
                if h in ended:
                    continue  # listed again by its last wake-up, freed since: ignored
                while True:
                    batch, over, env = stream_poll_json(h, 8)
                    assert env is None, env
                    if batch is not None:
                        got = orjson.loads(batch)
                        assert 1 <= len(got) <= 8
                        events[h].extend(got)
                    if over:
                        ended.add(h)
                        stream_free(h)
                        break
                    if batch is None:
                        break
            if len(ready) < 64:
                break
    want = [{"type": "text-delta", "text": f"e{i} "} for i in range(10)]
    for h in handles:
        assert events[h][:-1] == want
        assert events[h][-1]["type"] == "finish" and events[h][-1]["finishReason"] == "stop"
    # a reader thread per stream while it runs, none once they are over
    assert peak > before
    for _ in range(6000):
        if stream_registry._threads == 0:
            break
        threading.Event().wait(0.01)
    assert stream_registry._threads == 0


def test_poll_ready_answers_every_listed_stream_in_one_call(trickle: int) -> None:
    fd = events_fd()
    hs = [stream_start_json("stream_text", trickle_params(trickle))[0] for _ in range(20)]
    bad, env = stream_start_json("stream_text", trickle_params(trickle, prompt="refuse"))
    assert env is None and bad is not None
    got: dict[int, list[Any]] = {}
    failures: dict[int, dict[str, Any]] = {}
    over: set[int] = set()
    while len(over) < 21:
        wait_ready(fd)
        text = poll_ready_json(4)
        if text is None:
            continue
        for handle, ended, batch, failure in orjson.loads(text):
            assert batch is None or 1 <= len(batch) <= 4
            got.setdefault(handle, []).extend(batch or [])
            if failure is not None:
                failures[handle] = failure
            if ended:
                over.add(handle)
    assert set(failures) == {bad} and failures[bad]["code"] == 11
    assert failures[bad]["error"]["statusCode"] == 400
    for h in hs:
        assert h is not None and len(got[h]) == 11 and got[h][-1]["type"] == "finish"
        stream_free(h)
    stream_free(bad)
    assert stream_poll_json(bad, 1)[2] is not None  # freed: 203


def test_a_slow_consumer_bounds_what_the_reader_thread_reads_ahead(server: FaultServer) -> None:
    handle, env = stream_start_json(
        "stream_text", orjson.dumps(params(server, "mode=chunks;n=5000"))
    )
    assert env is None and handle is not None
    stream = stream_registry._streams[handle]
    assert stream.kind == "read ahead"
    # the reader thread stops (in Python: one read ahead) until the consumer takes events (the
    # bound, at least 60 s, only ends a broken run)
    for _ in range(6000):
        if stream.waits_for_room:
            break
        threading.Event().wait(0.01)

    def queued() -> int:  # (a C queue when an earlier test of this process loaded libaimux)
        q = stream._q
        return len(stream._pending) + (cqueue.lib._aimux_cq_count(q) if q is not None else 0)

    assert stream.waits_for_room and queued() == engine.HIGH_WATER
    n = 0
    while True:
        event, env = stream_next_json(handle)
        assert env is None
        if event is None:
            break
        n += 1
        assert queued() <= engine.HIGH_WATER
    stream_free(handle)
    assert n == 5001  # every delta and the finish: nothing dropped


def test_a_burst_over_the_high_water_mark_drains_through_the_pipe(server: FaultServer) -> None:
    """Event-driven consumer, batches smaller than the queue: a stream the producer paused at the
    high-water mark stays listed while events remain, so the pipe-driven drain never stalls (it
    did: a batch left 768 events queued, the handle unlisted and no byte in the pipe)."""
    handle, env = stream_start_json(
        "stream_text", orjson.dumps(params(server, "mode=chunks;n=5000"))
    )
    assert env is None and handle is not None
    fd = events_fd()
    n, ended, idle_waits = 0, False, 0
    try:
        while not ended:
            listed = ready_handles(16)
            if not listed:
                readable, _, _ = select.select([fd], [], [], 5.0)
                assert readable, f"stalled after {n} events: not listed and no byte in the pipe"
                os.read(fd, 4096)
                idle_waits += 1
                assert idle_waits < 10_000
                continue
            if handle not in listed:
                continue  # handles of earlier tests' freed streams may still be listed
            batch, ended, env = stream_poll_json(handle, 200)
            assert env is None
            if batch is not None:
                n += len(orjson.loads(batch))
    finally:
        stream_free(handle)
    assert n == 5001  # every delta and the finish


def test_cancel_ends_a_retry_backoff_on_the_reader_thread(server: FaultServer) -> None:
    # a 500 with a 50 s backoff before the retry: cancel must end the wait, not the backoff
    p = params(
        server,
        "mode=status;status=500",
        scenario="loop-backoff",
        maxRetries=2,
        retry={"initialDelayMs": 50_000, "backoffFactor": 1},
    )
    handle, env = stream_start_json("stream_text", orjson.dumps(p))
    assert env is None and handle is not None
    # the first attempt reached the server (it fails: the stream then waits out its backoff)
    assert server.wait_for("request", "loop-backoff") == 1
    stream_cancel(handle)
    done = threading.Event()

    def blocked_next() -> None:
        assert stream_next_json(handle) == (None, None)
        done.set()

    t = threading.Thread(target=blocked_next)
    t.start()
    t.join(30)
    assert done.is_set(), "a cancelled stream's reader woke"
    stream = stream_registry._streams[handle]
    thread = stream._pump_thread  # type: ignore[attr-defined]
    thread.join(30)
    assert not thread.is_alive()  # the reader thread finished: the backoff did not run out
    stream_free(handle)


def test_a_forked_child_gets_its_own_pipe(trickle: int) -> None:
    h, env = stream_json("stream_text", trickle_params(trickle))
    assert env is None and h is not None
    parent_fd = events_fd()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running pytest's teardown
        try:
            _, stale = stream_next_json(h)
            child_fd = events_fd()
            h2, env2 = stream_json("stream_text", trickle_params(trickle))
            n = 0
            while h2 is not None and stream_next_json(h2)[0] is not None:
                n += 1
            out = {
                "stale": orjson.loads(stale)["code"] if stale else None,
                "new_fd": child_fd != parent_fd or None,
                "events": n,
                "open": env2 is None,
            }
        except BaseException as exc:
            out = {"error": repr(exc)}
        os.write(w, orjson.dumps(out))
        os._exit(0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    report = orjson.loads(os.read(r, 4096))
    os.close(r)
    assert status == 0
    assert report == {"stale": 203, "new_fd": True, "events": 11, "open": True}
    # the parent's stream is untouched by the child
    n = 0
    while stream_next_json(h)[0] is not None:
        n += 1
    stream_free(h)
    assert n == 11


def test_a_host_interrupt_passes_through_the_event_driven_functions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A KeyboardInterrupt is the host's (as in call_json): never projected into an envelope
    (which would be a 208); the shim turns it into an abort and hands it back to the host."""

    def interrupted(*_args: object, **_kwargs: object) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(dispatch, "_stream_op", interrupted)
    with pytest.raises(KeyboardInterrupt):
        stream_start_json("stream_text", b"{}")
    monkeypatch.setattr(stream_registry, "lookup", interrupted)
    with pytest.raises(KeyboardInterrupt):
        stream_poll_json(1, 1)
    with pytest.raises(KeyboardInterrupt):
        dispatch.stream_next_batch_json(1, 1)


def _read_all(open_: Any, body: bytes) -> tuple[list[bytes], bytes | None]:
    """What a reader sees of a stream: every event, then the failure that ended it (the open's,
    which an event-driven stream reports with its first read, or the last read's)."""
    h, failure = open_(b"stream_text", body)
    events: list[bytes] = []
    if h is not None:
        while True:
            ev, failure = stream_next_json(h)
            if ev is None:
                break
            events.append(_undated(ev))
        stream_free(h)
    return events, failure and _undated(failure)


def _undated(answer: bytes) -> bytes:
    """``answer`` without the value of a response's Date header (the second it was sent)."""
    return re.sub(rb'"date":"[^"]*"', b'"date":"-"', answer)


@pytest.mark.parametrize(
    ("case", "fault", "base", "root"),
    [
        ("deadline before the headers", "mode=delay;delay_ms=60000", None, "TimeoutError"),
        ("connection refused", "mode=ok", "http://127.0.0.1:1/v1", "ConnectionRefusedError"),
        ("connection reset", "mode=reset", None, "ConnectionResetError"),
    ],
)
def test_a_network_failure_is_the_same_envelope_on_every_surface(
    server: FaultServer, case: str, fault: str, base: str | None, root: str
) -> None:
    """One I/O stack: a call and every stream surface answer one network failure with the same
    envelope, byte for byte."""
    # the deadline ends only the delayed answer, past its request (2 s: on a loaded machine too);
    # the reset and the refusal come first
    p = params(server, fault, maxRetries=0, timeoutMs=2000 if "deadline" in case else 20000)
    if base is not None:
        p["model"]["baseURL"] = base
    body = orjson.dumps(p)
    _, call = dispatch.call_json(b"generate_text", body)
    answers = {"call": ([], call)}
    for name, open_ in (("by its reader", stream_json), ("event-driven", stream_start_json)):
        answers[name] = _read_all(open_, body)  # no event: the open fails
    assert call is not None and f'"type":"{root}"}}'.encode() in call, (case, call)
    assert answers == dict.fromkeys(answers, ([], call)), case
    assert b"cancel scope" not in call and b"127.0.0.1" not in call and b"anyio" not in call


@pytest.mark.parametrize(
    ("fault", "scheme", "timeout_ms"),
    [
        ("mode=ok;text=abcdef;parts=3", "http", 20000),
        ("mode=drop", "http", 20000),
        ("mode=reset", "http", 20000),
        ("mode=ok", "https", 20000),  # TLS to a plain-HTTP server: the handshake fails
        ("mode=status;status=500", "http", 20000),
        ("mode=cut;after=1", "http", 20000),
        ("mode=nodone;after=2", "http", 20000),
        ("mode=errframe;after=1", "http", 20000),
        ("mode=badchunk;after=1", "http", 20000),
    ],
)
def test_every_fault_reads_the_same_on_every_stream_surface(
    server: FaultServer, fault: str, scheme: str, timeout_ms: int
) -> None:
    """A stream read by its reader and an event-driven one run the same op: a reader sees the
    same bytes on each, for every fault. (Not a deadline mid-body: whether the watchdog or the
    socket's timeout ends the read first is a race, and the two give different chains.)"""
    p = params(server, fault, maxRetries=0, timeoutMs=timeout_ms)
    p["model"]["baseURL"] = p["model"]["baseURL"].replace("http:", scheme + ":", 1)
    body = orjson.dumps(p)
    seen = {
        name: _read_all(open_, body)
        for name, open_ in (("by its reader", stream_json), ("event-driven", stream_start_json))
    }
    events, failure = seen["by its reader"]
    assert events or failure is not None, "the stream neither failed nor delivered"
    assert failure is None or orjson.loads(failure)["code"] < 200, failure  # the op's, not ours
    assert seen == dict.fromkeys(seen, (events, failure))
    assert not any(b"cancel scope" in e or b"127.0.0.1" in e for e in [*events, failure or b""])


def test_a_freed_event_driven_stream_leaves_the_ready_list(server: FaultServer) -> None:
    """Read with ``stream_next_batch_json`` alone (no ``ready_handles``): each freed stream
    leaves the ready list, which is empty once every stream is freed."""
    from aimux_ops.streams.ready import ready_list

    p = orjson.dumps(params(server, "mode=chunks;n=3"))
    ready_handles(1 << 30)
    for _ in range(50):
        h, env = stream_start_json("stream_text", p)
        assert env is None and h is not None
        while not dispatch.stream_next_batch_json(h, 64)[1]:
            pass
        stream_free(h)
    for _ in range(6000):  # every reader thread's last act is done (the bound: a broken run)
        if stream_registry._threads == 0:
            break
        threading.Event().wait(0.01)
    assert len(ready_list()) == 0
    assert ready_handles(1 << 30) == []
