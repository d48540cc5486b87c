"""The handle registry of open streams, its idle reaper, and the reader threads' count.

Handles count up from 1 and are never reused; a stale, freed or unknown handle is an
``InvalidHandleError`` (203). ``open_here`` opens a stream read by its reader (the Python API,
``aimux_stream``): it returns once the first event is in, and a failure before it (where
retries happen) fails the open. ``start`` opens an event-driven stream on a reader thread (a
parked one of ``readers``' pool, else a new one) and returns at once; at most
``AIMUX_STREAM_READER_THREADS`` run at a time, and one more is a clear error (never a wait,
never a slower path). ``cancel`` may be called from any thread; ``free`` cancels, forgets
the handle and takes it off the ready list.

A stream nobody has read for ``AIMUX_STREAM_IDLE_TIMEOUT_MS`` is closed by one reaper thread,
started with the first stream (and again in a forked child). In a forked child the registry
starts empty (every handle of the parent is 203 there; handles keep counting) and no reader
thread of the parent counts. A Python host's exit (``stop_at_exit``) cancels the streams still
read by reader threads and lets those threads end for a bounded time.

This module receives what it runs: the caller (``dispatch``) resolves the op, validates its
params and hands over the op's events and its ``StreamContext``.
"""

from __future__ import annotations

import atexit
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..guest import limits, on_fork_child
from ..ops.registry import StreamContext
from . import cqueue
from .ready import ready_list
from .ready import reset_after_fork as _reset_ready
from .stream import Stream

__all__ = ["cancel", "free", "lookup", "open_here", "start", "stop_at_exit"]

Events = Callable[[], Iterator[Any]]

#: every open stream, by handle
_streams: dict[int, Stream] = {}
_streams_lock = threading.Lock()
_handles = itertools.count(1)

#: the reaper thread of this process (None until the first stream; reset in a forked child)
_reaper: threading.Thread | None = None
#: a forked child's inherited streams, kept reachable so that nothing of theirs runs there
_abandoned: list[dict[int, Stream]] = []

#: reader threads of event-driven streams running now, and the lock that counts them
_threads = 0
_threads_lock = threading.Lock()


def _reap_loop(idle_ms: int) -> None:
    period = min(max(idle_ms / 4000.0, 0.05), 5.0)
    me = threading.current_thread()
    while _reaper is me:
        time.sleep(period)
        for stream in list(_streams.values()):
            stream.reap(idle_ms)


def _start_reaper() -> None:
    global _reaper
    idle_ms = limits().stream_idle_timeout_ms
    if _reaper is not None or idle_ms <= 0:
        return
    with _streams_lock:
        if _reaper is None:
            _reaper = threading.Thread(
                target=_reap_loop, args=(idle_ms,), name="aimux-stream-reaper", daemon=True
            )
            _reaper.start()


def _register(make: Callable[[int], Stream]) -> Stream:
    with _streams_lock:
        handle = next(_handles)
        stream = _streams[handle] = make(handle)
    _start_reaper()
    return stream


def open_here(ctx: StreamContext, events: Events, queued: bool) -> int:
    """A stream read by its reader: its handle once its first event is in; raises the op's
    failure before it. ``queued``: read through the C ABI (``aimux_stream``), its events in a C
    queue when libaimux runs the core."""
    stream = _register(lambda handle: Stream(handle, ctx, queued=queued))
    try:
        stream.open(events)
    except BaseException:
        free(stream.handle)
        raise
    return stream.handle


def _reader_limit_error(n: int, why: str) -> BaseException:
    from ..errors import APICallError

    return APICallError(
        f"Cannot start the stream: {why} (AIMUX_STREAM_READER_THREADS is {n}); the request "
        f"was not sent",
        is_retryable=True,
    )


def _take_slot() -> None:
    global _threads
    n = limits().stream_reader_threads
    with _threads_lock:
        if _threads >= n:
            raise _reader_limit_error(n, f"every one of the {n} reader threads is busy")
        _threads += 1


def _release_slot() -> None:
    global _threads
    with _threads_lock:
        _threads -= 1


def start(ctx: StreamContext, events: Events) -> int:
    """An event-driven stream on a reader thread of its own: its handle at once (the open's
    failure is what its first read answers). Raises a clear error when every reader thread the
    setting allows is busy, or when no thread could be started; nothing ran then."""
    _take_slot()
    stream: Stream | None = None
    try:
        stream = _register(
            lambda handle: Stream(handle, ctx, queued=True, ahead=True, on_stopped=_release_slot)
        )
        stream.start(events)
    except BaseException as exc:
        _release_slot()
        if stream is not None:
            free(stream.handle)
        if isinstance(exc, RuntimeError):  # the host's own thread limit
            raise _reader_limit_error(
                limits().stream_reader_threads, "no thread could be started"
            ) from exc
        raise
    return stream.handle


def lookup(handle: int) -> Stream:
    """The open stream of ``handle``; ``InvalidHandleError`` (203) when there is none."""
    stream = _streams.get(handle)  # a single dict read is atomic: no lock on the hot path
    if stream is None:
        from ..errors import InvalidHandleError

        raise InvalidHandleError(
            f"stream handle {handle} is unknown, stale or freed", handle=handle
        )
    return stream


def get(handle: int) -> Stream | None:
    """The open stream of ``handle``, or None."""
    return _streams.get(handle)


def cancel(handle: int) -> None:
    """Cancel a stream from any thread (wakes a blocked read, which reports the end)."""
    with _streams_lock:
        stream = _streams.get(handle)
    if stream is not None:
        stream.ctx.cancel()


def free(handle: int) -> None:
    """Cancel and forget a stream: its handle is stale from now on, and it leaves the ready
    list (a host that reads with ``aimux_stream_next_batch`` never calls ``aimux_ready``)."""
    with _streams_lock:
        stream = _streams.pop(handle, None)
    if stream is None:
        return
    stream.freed = True
    stream.close()
    if cqueue.lib is not None:
        cqueue.lib._aimux_cq_unregister(handle)  # (a C queue's handle leaves the list there)
    ready_list().forget(handle)


@on_fork_child
def _reset_after_fork() -> None:
    """In a forked child: no stream of the parent (their handles are 203 here), fresh locks, no
    reaper and no reader thread yet. Handles keep counting up: no parent handle is reused."""
    global _streams, _streams_lock, _reaper, _threads, _threads_lock
    _abandoned.append(_streams)
    for stream in _streams.values():
        stream._drop_held()  # a consumer's next event here is the 203 of its handle
    _streams = {}
    _streams_lock = threading.Lock()
    _reaper = None
    _threads = 0
    _threads_lock = threading.Lock()
    _reset_ready()


#: how long a Python host's exit lets the reader threads end
_EXIT_WAIT_S = 1.0


def stop_at_exit() -> None:
    """A Python host's exit (an ``atexit`` hook: it runs before the interpreter finalizes, and
    never in a C host, whose embedded interpreter is never finalized): the streams still read
    by reader threads are cancelled (their readers get the end, as after a cancel) and their
    threads get at most ``_EXIT_WAIT_S`` to end; a thread still blocked then (its request
    still connecting) has its C queue marked stopped, so nothing waits for it. Streams that had
    ended keep their unread events."""
    readers = [(s, s._pump_thread) for s in list(_streams.values()) if s._pump_thread]
    for stream, _thread in readers:
        if not stream._ended:
            stream.ctx.cancel()
    deadline = time.monotonic() + _EXIT_WAIT_S
    for stream, thread in readers:
        if not thread.runs_here():
            thread.join(max(deadline - time.monotonic(), 0.0))
        q = stream._q
        if thread.is_alive() and cqueue.lib is not None and q is not None:
            cqueue.lib._aimux_cq_flag(q, cqueue.Q_STOPPED)


atexit.register(stop_at_exit)
