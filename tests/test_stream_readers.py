"""The reader threads' pool (``streams.readers``): an event-driven stream's run goes to a
parked thread (no thread start per stream), a parked thread exits after its idle timeout or
when the pool is over ``AIMUX_STREAM_READER_THREADS``, a thread that cannot start is still the
limit's clear error, and a forked child starts with an empty pool of its own."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import orjson
import pytest
from fault_server import FaultServer
from helpers import provider_params as params
from test_c_stream_queue import wait_until

from aimux_ops import guest
from aimux_ops.boundary.dispatch import stream_free, stream_next_json, stream_start_json
from aimux_ops.streams import readers
from aimux_ops.streams import registry as stream_registry

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def _empty_pool() -> Iterator[None]:
    """Each test starts and ends with no parked thread (none of another test's)."""
    readers.retire()
    yield
    readers.retire()


def read_all(server: FaultServer, n: int = 3, parks: bool = True) -> readers.Reader:
    """One event-driven stream read to its end and freed: its reader, once its run is over
    (and, ``parks``, its thread parked)."""
    h, env = stream_start_json("stream_text", orjson.dumps(params(server, f"mode=chunks;n={n}")))
    assert env is None and h is not None
    reader = stream_registry._streams[h]._pump_thread
    assert reader is not None
    types = []
    while (event := stream_next_json(h)[0]) is not None:
        types.append(orjson.loads(event)["type"])
    stream_free(h)
    assert types == ["text-delta"] * n + ["finish"]
    reader.join(60)
    assert not reader.is_alive()
    if parks:
        wait_until(lambda: readers.idle_threads() == 1)
    return reader


def test_a_stream_runs_on_the_thread_the_last_one_parked(server: FaultServer) -> None:
    first = read_all(server)
    second = read_all(server)
    assert first.thread is not None and second.thread is first.thread
    assert first.thread.name == "aimux-stream-reader" and first.thread.is_alive()  # parked


def test_a_parked_thread_exits_after_its_idle_timeout(
    server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readers, "IDLE_S", 0.05)
    thread = read_all(server, parks=False).thread  # (it may have left already)
    assert thread is not None
    thread.join(60)
    assert not thread.is_alive() and readers.idle_threads() == 0


def test_no_thread_parks_over_the_reader_threads_setting(
    server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread = read_all(server).thread  # (parked: one thread of a limit of 4096)
    assert thread is not None
    monkeypatch.setattr(guest, "_limits", guest.limits().replace(stream_reader_threads=0))
    readers.run(readers.Reader(lambda: None))  # it takes the parked one, which then exits
    thread.join(60)
    assert not thread.is_alive() and readers.idle_threads() == 0


def test_a_thread_that_cannot_start_is_the_limits_error(
    server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def start(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")  # what CPython raises at the limit

    monkeypatch.setattr(threading.Thread, "start", start)
    h, env = stream_start_json("stream_text", orjson.dumps(params(server, "mode=chunks;n=3")))
    assert h is None and env is not None
    assert "no thread could be started" in orjson.loads(env)["message"]
    monkeypatch.undo()
    read_all(server)  # the slot and the pool's count are back: a stream runs


def test_a_forked_child_starts_with_an_empty_pool(server: FaultServer) -> None:
    """The parent's parked thread does not exist in the child: a stream there gets a thread of
    its own (handed to the parent's parked one, it would never run)."""
    parent = read_all(server).thread
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running pytest's teardown
        signal.alarm(60)  # (a stream that never runs ends the child)
        try:
            idle = readers.idle_threads()
            p = orjson.dumps(params(server, "mode=chunks;n=2"))
            h, _env = stream_start_json("stream_text", p)
            n = 0
            while h is not None and stream_next_json(h)[0] is not None:
                n += 1
            reader = stream_registry._streams[h]._pump_thread if h else None
            out = {
                "idle": idle,
                "events": n,
                "new": reader is not None and reader.thread is not parent,
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
    assert report == {"idle": 0, "events": 3, "new": True}
