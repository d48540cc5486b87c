"""The stream engine: one way to run a stream for every surface, over the core's own HTTP client.

A stream's op is a sync generator (``ops.registry``'s handler); each step is one network read
(its events: an ``EventBatch``). Nothing runs on an event loop. There is one ``Stream`` class;
two strategies, chosen when it opens, say how it runs (its docstring has them):

- who reads: **its reader** (the Python API, ``aimux_ops.stream``, and the blocking C API,
  ``aimux_stream``: the consumer's thread runs the next network read when it needs events, with
  no hand-off between threads), or **a reader thread of the core** (the event-driven C API,
  ``aimux_stream_start``: one thread per stream, parked for the next one when it is over
  (``readers``' pool), which ``registry`` bounds by ``AIMUX_STREAM_READER_THREADS`` with a
  clear error when reached; it reads ahead up to the high-water mark, so a poll never
  blocks, and the ready list, ``ready``, tells the host when to look);
- where events go: a Python deque of the op's own objects (an in-process consumer takes them
  without a dump), or, when libaimux runs the core (``cqueue.lib``) and the stream was opened
  through the C ABI, the stream's C queue (each read's events serialized once, taken by the C
  ABI without the interpreter lock; Python answers only what the queue cannot: the failed
  open, events only the per-event path can serialize).

Every stream answers the same consumer calls (``take``, ``pull``, ``next``, ``next_batch``,
``poll``, ``reap``, ``close``), so everything the registry guarantees holds for each:
``cancel`` / ``free`` from any thread (the op's cancel hook shuts the socket down: a blocked
read wakes; the op's cleanup runs on the reading thread, or on the cancelling one when nobody
reads), the idle reaper (never during a read), a forked child's 203, a held batch emptied by a
cancel, a reap or a fork. A failure before the first event fails the open (retries happen
there); a later one is one terminal ``error`` event with the same envelope.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from operator import length_hint
from typing import Any

import orjson

from ..ops.registry import EventBatch, StreamContext
from . import cqueue, readers
from .ready import ready_list

__all__ = ["HIGH_WATER", "LOW_WATER", "OpenFailed", "Stream", "dump", "dump_batch"]

#: A reader thread with this many events not yet taken waits until they drop to LOW_WATER: a
#: slow consumer bounds the memory a fast provider can fill.
HIGH_WATER = 1024
LOW_WATER = 256


def _project(exc: BaseException) -> bytes:
    """``envelope.project``, imported on the first failure."""
    from ..wire.envelope import project

    return project(exc)


class OpenFailed(Exception):
    """The open of an event-driven stream failed: reported by its first poll / next."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__("the stream could not be opened")
        self.cause = cause


def dump(value: Any) -> bytes:
    """An event (or a call's result) as JSON: bytes as they are, a dict or a model dumped."""
    if type(value) is bytes:  # an op may hand over an event already serialized
        return value
    try:
        if type(value) is not dict:
            from pydantic import BaseModel

            if isinstance(value, BaseModel):
                value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
        return orjson.dumps(value)
    except Exception as exc:
        from ..errors import ResultSerializationError

        raise ResultSerializationError("the result could not be serialized to JSON") from exc


def dump_batch(items: list[Any], queue: deque[Any]) -> bytes:
    """``items`` (events taken from ``queue``) as one JSON array: byte for byte the events'
    ``dump``s joined by commas. One ``orjson.dumps`` of the list when every event is a dict or
    already bytes; otherwise (or when that fails) event by event, and a failure then puts the
    events after the failing one back in front of ``queue`` and raises (as taking and dumping
    them one at a time did)."""
    try:
        # orjson refuses bytes and pydantic models, the only events ``dump`` treats apart
        return orjson.dumps(items)
    except Exception:  # noqa: BLE001 - the paths below
        pass
    fragment = orjson.Fragment
    try:
        return orjson.dumps(
            [
                e if type(e) is dict else fragment(e) if type(e) is bytes else _NOT_FAST
                for e in items
            ]
        )
    except Exception:  # noqa: BLE001 - the exact path below says what failed
        pass
    parts: list[bytes] = []
    for i, event in enumerate(items):
        try:
            parts.append(dump(event))
        except BaseException:
            queue.extendleft(reversed(items[i + 1 :]))
            raise
    return b"[" + b",".join(parts) + b"]"


#: Not serializable by orjson: sends ``dump_batch`` to the event-by-event path.
_NOT_FAST = object()


def reaped_event(stream: Any, idle_ms: int) -> bytes | None:
    """The reaper's look at one stream (its lock held): None while it is in use or was read less
    than ``idle_ms`` ago, else the terminal ``error`` event its reader gets (a timeout naming the
    setting). Events taken from a held batch since the last look count as reads."""
    if stream._done or stream._readers or stream._reaped is not None:
        return None
    held = stream._held
    if held is not None:
        left = length_hint(held[1])
        if left != stream._held_left:
            stream._held_left = left
            stream.idle_since = time.monotonic()
    if (time.monotonic() - stream.idle_since) * 1000 < idle_ms:
        return None
    return reap_timeout_event(idle_ms)


def hold_batch(stream: Any, events: list[Any]) -> Iterator[Any]:
    """An iterator over ``events``, held by ``stream`` as ``reaped_event`` reads it (``_held``,
    ``_held_left``): a cancel, a reap or a fork empties the list. A cancel that came meanwhile
    empties it at once, as if it came after the hand-off."""
    it = iter(events)
    stream._held = (events, it)
    stream._held_left = len(events)
    if stream.ctx.cancelled.is_set():
        events.clear()
    return it


def reap_timeout_event(idle_ms: int) -> bytes:
    """The terminal ``error`` event of a stream the reaper closed after ``idle_ms``."""
    from ..errors import TimeoutError as AITimeoutError

    err = AITimeoutError(
        f"The stream was closed by the core after {idle_ms} ms without a read "
        f"(AIMUX_STREAM_IDLE_TIMEOUT_MS).",
        timeout_ms=idle_ms,
    )
    return b'{"type":"error","error":' + _project(err) + b"}"


def _cq_take(
    stream: Any, q: Any, max_events: int, blocking: bool
) -> tuple[int, bytes | None, bool]:
    """``cqueue.take`` of ``stream``'s C queue ``q``; its wake-ups go to ``stream.wake``."""
    st, data, ended, wake = cqueue.take(q, max_events, blocking)
    if wake:
        stream.wake(wake)
    return st, data, ended


def _is_finish(event: Any) -> bool:
    """The op's last event by the contract (``finish``); an ``error`` event ends it too, but
    that one comes with the op already over."""
    return type(event) is dict and event.get("type") == "finish"


class Stream:
    """One open stream, for every surface. Two strategies, chosen at the open, say how it runs:

    - **who reads** (``ahead``): its reader (the consumer's thread runs the next network read
      when it needs events: the Python API, ``aimux_stream``; a stream of ``aimux_stream`` only
      ever polled gets a reader thread at its first empty poll), or a reader thread of the core
      from the open on (``aimux_stream_start``: a poll never blocks, the ready list tells the
      host when to look, the open's failure is what the first read answers);
    - **where events go** (``queued``): the op's own objects in a Python deque (``_pending``),
      or, when libaimux runs the core, the stream's C queue (``_q``: each read's events
      serialized once, taken by the C ABI without the interpreter lock; Python answers what the
      queue cannot, the fallback: events only the per-event path serializes, a failed open).
    """

    def __init__(
        self,
        handle: int,
        ctx: StreamContext,
        *,
        queued: bool = False,
        ahead: bool = False,
        on_stopped: Callable[[], None] | None = None,
    ) -> None:
        self.handle = handle
        self.ctx = ctx
        self._it: Iterator[Any] | None = None  # the op's iterator
        self._run = threading.Lock()  # held while the op runs (a read, its cleanup)
        self._state = threading.Lock()  # readers, reaped, held: the reaper vs the readers
        self._pending: deque[Any] = deque()  # events read and not handed out yet
        self._ended = False  # the op is over (ran to its end, failed or was closed)
        self._done = False  # a consumer saw the end
        #: the terminal event of a stream the reaper closed
        self._reaped: bytes | None = None
        #: monotonic time of the last read's end (or of the open); the reaper's clock
        self.idle_since = time.monotonic()
        self._readers = 0  # consumers reading right now (never idle meanwhile)
        #: the last batch ``take`` handed out and its consumer's iterator over it
        self._held: tuple[list[Any], Iterator[Any]] | None = None
        self._held_left = 0
        #: freed (``registry.free``): never listed on the ready list again
        self.freed = False
        #: read ahead by a reader thread of the core from the open on (``aimux_stream_start``)
        self._ahead = ahead
        #: the open is a consumer's read (the reaper leaves the stream alone meanwhile); not
        #: when a reader thread of the core opens it
        self._open_is_a_read = not ahead
        self._on_stopped = on_stopped  # the reader thread is over (its slot is free)
        self._open_exc: BaseException | None = None  # the open failed: the first read says so
        self._stopped = False  # the reader thread is over
        lib, ffi = cqueue.lib, cqueue.ffi
        q = lib._aimux_cq_new(handle, 1 if ahead else 0, LOW_WATER) if queued and lib else None
        self._q: Any = ffi.gc(q, lib._aimux_cq_unref) if q else None
        if q:  # the tool loop's answers wait there too (without the interpreter lock)
            ctx.answer_queue = cqueue.AnswerQueue(self._q)
        if q and not ahead:
            lib._aimux_cq_flag(q, cqueue.Q_PULL)  # empty: a blocking read asks this side
        self._fallback = not q  # no C queue: the Python queue's own path
        self._pump_thread: readers.Reader | None = None
        self._blocked = False  # a blocking read from Python came (C notes the C ABI's own)
        self._room = threading.Condition(threading.Lock())  # the reader thread waits for room
        self.waits_for_room = False  # the reader thread waits for room (tests watch it)

    @property
    def kind(self) -> str:
        """How it runs: "by its reader" (Python queue), "queued" (by its reader, C queue) or
        "read ahead" (a reader thread of the core)."""
        if self._ahead:
            return "read ahead"
        return "queued" if self._q is not None else "by its reader"

    def _py_open(self, events: Callable[[], Iterator[Any]]) -> None:
        """Run the op until its first event (or its end); raise its failure before it."""
        if self._open_is_a_read:
            self._enter()
        try:
            with self._run:
                try:
                    self._it = events()
                    first = self._read()
                except BaseException:
                    self._close_op()
                    raise
                if first:
                    self._pending.extend(first)
        finally:
            if self._open_is_a_read:
                self._leave()
        # after the op's own cancel hook (registered by its first read), so a cancel shuts its
        # socket down before the cleanup this one runs (which then never drains a body)
        self.ctx.on_cancel(self._on_cancel)

    def _read(self) -> list[Any] | None:
        """The events of the op's next network read, or None at its end."""
        it = self._it
        assert it is not None
        for item in it:
            if type(item) is EventBatch:
                if item:
                    return item
                continue
            return [item]
        self._ended = True
        self._over()
        return None

    def _close_op(self) -> None:
        """End the op: its cleanup runs now (``_run`` held)."""
        if self._ended:
            return
        self._ended = True
        close = getattr(self._it, "close", None)
        try:
            if close is not None:
                close()
        except Exception:  # noqa: BLE001 - the op's cleanup is best effort here
            pass
        finally:
            self._over()

    def _py_over(self) -> None:
        """The op is over and its cleanup ran (``_run`` held): a queued stream tells its
        C queue."""

    def _next_locked(self, ahead: bool = False) -> tuple[list[Any] | None, bool]:
        """(events, hold) from one read, or (None, False) at the end (``_run`` held). ``ahead``:
        a reader thread's read ahead into ``_pending`` (no consumer sees the end or the
        reaper's event here: they are left for the consumer's next read)."""
        reaped = self._reaped
        if reaped is not None and not ahead:
            self._reaped = None
            self._done = True
            self._close_op()
            return [reaped], False
        if self._done:
            return None, False
        if self.ctx.cancelled.is_set():
            self._done = True
            self._pending.clear()
            self._close_op()
            return None, False
        if self._pending and not ahead:  # another consumer read meanwhile
            return None, True
        if self._ended:
            self._done = not ahead
            return None, False
        try:
            batch = self._read()
        except KeyboardInterrupt:
            self._done = self._ended = True
            self._over()
            raise  # the host's, not the stream's: the stream ends
        except BaseException as exc:  # noqa: BLE001 - the terminal error event
            self._ended = True
            self._over()
            if self.ctx.cancelled.is_set():
                self._done = True
                return None, False
            return [b'{"type":"error","error":' + _project(exc) + b"}"], False
        if batch is None:
            self._done = not ahead
            return None, False
        return batch, True

    def _enter(self) -> None:
        with self._state:
            self._readers += 1

    def _leave(self) -> None:
        with self._state:
            self._readers -= 1
            self.idle_since = time.monotonic()
        self._settle()

    def _settle(self) -> None:
        """A cancelled stream's op ends as soon as nobody runs it (any thread)."""
        if self.ctx.cancelled.is_set() and not self._ended and self._run.acquire(blocking=False):
            try:
                self._close_op()
            finally:
                self._run.release()

    def _py_on_cancel(self) -> None:
        self._drop_held()
        self._settle()

    def _py_get(self, max_events: int) -> tuple[list[Any] | None, bool]:
        """Up to ``max_events`` events (pending ones first, else one read) and whether they
        may be held, or (None, False) at the end."""
        pending = self._pending
        while True:
            if pending and not self._done and not self.ctx.cancelled.is_set():
                out: list[Any] = []
                pop = pending.popleft
                try:
                    for _ in range(min(len(pending), max_events)):
                        out.append(pop())
                except IndexError:
                    pass
                if out:
                    self.idle_since = time.monotonic()
                    return out, True
            self._enter()
            try:
                with self._run:
                    got, hold = self._next_locked()
                    if got is not None and len(got) > max_events:
                        pending.extend(got[max_events:])  # (``pending`` was empty: a read)
                        got = got[:max_events]
            finally:
                self._leave()
            if got is None and hold:
                continue  # another consumer's read filled ``pending``
            return got, hold

    def _py_take(self, max_events: int) -> Iterator[Any] | None:
        """An iterator over up to ``max_events`` events, held (a
        cancel, a reap or a fork empties it), or None at the end."""
        self._held = None
        got, hold = self._get(max_events)
        if got is None:
            return None
        if not hold:
            return iter(got)  # a terminal event: never dropped by a cancel that follows
        return hold_batch(self, got)

    def _drop_held(self) -> None:
        held = self._held
        if held is not None:
            held[0].clear()

    def _py_pull(self) -> Any:
        """The next event, or None at the end."""
        self._held = None
        got, _hold = self._get(1)
        return None if not got else got[0]

    def _py_next(self) -> bytes | None:
        event = self.pull()
        return None if event is None else dump(event)

    def _py_next_batch(self, max_events: int) -> tuple[bytes | None, bool]:
        """Up to ``max_events`` events as one JSON array (blocks for one read), or (None, True)
        at the end."""
        self._held = None
        got, _hold = self._get(max_events)
        if got is None:
            return None, True
        batch = dump_batch(got, self._pending)
        # the end is known now (the op is over, nothing is left): say so with the last batch
        over = self._ended and not self._pending and self._reaped is None
        if over and not self.ctx.cancelled.is_set():
            self._done = True
        return batch, over

    def _py_poll(self, max_events: int) -> tuple[bytes | None, bool]:
        """Never blocks: the events already read (the op reads only when a consumer blocks)."""
        self.idle_since = time.monotonic()
        over = self._done or self._ended or self.ctx.cancelled.is_set()
        if over or self._reaped is not None:
            return self.next_batch(
                max_events
            )  # what is left, the end or the reaper's event: no read
        if not self._pending:
            return None, False
        return self.next_batch(max_events)

    def _py_reap(self, idle_ms: int) -> bool:
        """Close the stream if nobody read it for ``idle_ms`` (the reaper); True when closed."""
        with self._state:
            reaped = reaped_event(self, idle_ms)
            if reaped is None:
                return False
            self._reaped = reaped
            self._pending.clear()
            self._drop_held()
        self.ctx.cancel()  # outside the lock: its callbacks (the op's cleanup) run now
        return True

    def close(self) -> None:
        self.ctx.cancel()
        self._settle()

    def _q_open(self, events: Callable[[], Iterator[Any]]) -> None:
        self._py_open(events)
        with self._run:  # the first read's events were kept in ``_pending``
            first = list(self._pending)
            self._pending.clear()
            if first:
                self._push(first)
            if self._ended:
                self._end_c()

    def _push(self, events: list[Any]) -> None:
        """Serialize ``events`` once and push them to the C queue; on a failure they stay in
        ``_pending`` and the stream takes its fallback (PY set again: the pump stops)."""
        if not self._fallback:
            try:
                data = dump_batch(events, deque())
            except Exception:  # noqa: BLE001 - the per-event path (Stream's) reports it
                pass
            else:
                pushed = cqueue.lib._aimux_cq_push(self._q, data, len(data), len(events))
                if pushed != cqueue.SIZE_MAX:
                    return
            with self._room:  # (against _start_pump's clear)
                self._fallback = True
                if self._q is not None:
                    cqueue.lib._aimux_cq_flag(self._q, cqueue.Q_PY)
        self._pending.extend(events)

    def _q_end_c(self) -> None:
        """The op is over and every event it made is pushed: C answers the end itself."""
        if not self._fallback:
            cqueue.lib._aimux_cq_flag(self._q, cqueue.Q_END)
            cqueue.lib._aimux_cq_unflag(self._q, cqueue.Q_PULL)

    def _over(self) -> None:
        # a C read that heard a cancel returns once the op's cleanup ran
        if self._q is not None:
            cqueue.lib._aimux_cq_flag(self._q, cqueue.Q_STOPPED)

    def _fill(self) -> None:
        """One network read on this thread, its events pushed (or the end told to C)."""
        self._enter()
        try:
            with self._run:
                if self._pump_thread is not None or cqueue.lib._aimux_cq_count(self._q):
                    return  # the pump reads now, or another reader's read came first
                got = self._read_batch()
                if got:
                    self._push(got)
                if got is None or self._ended:
                    self._end_c()
        finally:
            self._leave()

    def _read_batch(self, ahead: bool = False) -> list[Any] | None:
        """``_next_locked``'s events, or None at the end (``_run`` held). After a ``finish``
        the op's end is taken at once (its cleanup reads no more than the body's end): the end
        then comes with the last batch, and a host that polls after its ``finish`` gets it."""
        got, _hold = self._next_locked(ahead)
        if got and not self._fallback and not self._ended and _is_finish(got[-1]):
            more, _hold = self._next_locked(ahead)
            if more:  # (an op that goes on after its finish: its next read, as read)
                got = got + more
            elif self._ended and not self.ctx.cancelled.is_set():
                # only looked ahead: no consumer saw the end yet (the events go on to C, or,
                # should their push fail, to ``_pending``, which a consumer still reads)
                self._done = False
        return got

    def _start_pump(self) -> None:
        with self._room:
            if self._pump_thread is not None:
                return
            self._pump_thread = reader = readers.Reader(self._pump)
            if not self._fallback:
                cqueue.lib._aimux_cq_unflag(self._q, cqueue.Q_PULL)  # C reads now wait
        readers.run(reader)

    def _pump(self) -> None:
        """Read ahead: each read's events pushed while they fit under the high-water mark, else
        up to it, then wait until a read brings the queue down to the low-water mark (in the
        fallback the queue is ``_pending``). Not a reader: the reaper's clock is the
        consumer's."""
        carry: list[Any] = []
        try:
            while not self.ctx.cancelled.is_set():
                with self._run:
                    # (in Python's queue, the fallback: up to the high-water mark too)
                    room = not self._pending or (self._fallback and len(self._pending) < HIGH_WATER)
                    if not carry and room:
                        got = self._read_batch(ahead=True)
                        if got is None:
                            self._end_c()
                            return
                        carry = got
                    carry = self._push_room(carry)
                    if self._ended and not carry:
                        self._end_c()
                        return
                self._wait_room()
        finally:
            self._settle()  # a cancel that found the op running: it ends now

    def _q_push_room(self, events: list[Any]) -> list[Any]:
        """Push what fits under the high-water mark (``_run`` held); the rest is returned."""
        if self._fallback:
            room = HIGH_WATER - len(self._pending)
            if len(events) < room:
                self._pending.extend(events)
                return []
            if room > 0:
                self._pending.extend(events[:room])
                return events[room:]
            return events
        room = HIGH_WATER - cqueue.lib._aimux_cq_count(self._q)
        if len(events) < room:
            self._push(events)
            return []
        if room > 0:
            self._push(events[:room])
            return events[room:]
        return events

    def _wait_room(self) -> None:
        """Until a read made room (down to the low-water mark), or a cancel."""
        lib, q, high = cqueue.lib, self._q, HIGH_WATER
        cancelled = self.ctx.cancelled
        if self._fallback and len(self._pending) < high:
            return  # (the Python queue below the mark: read on)
        with self._room:
            while not cancelled.is_set() and (
                len(self._pending) > LOW_WATER
                if self._fallback
                else lib._aimux_cq_want_room(q, high)
            ):
                self.waits_for_room = True
                self._room.wait()
            self.waits_for_room = False

    def _get(self, max_events: int) -> tuple[list[Any] | None, bool]:
        got = self._py_get(max_events)
        if self._fallback and self._pump_thread is not None and len(self._pending) <= LOW_WATER:
            with self._room:  # the pump reads the next one
                self._room.notify_all()
        return got

    def _q_wake(self, what: int) -> None:
        """A C read brought the queue down to the low-water mark (``dispatch.stream_wake``)."""
        if what & cqueue.W_ROOM:
            with self._room:
                self._room.notify_all()

    def _on_cancel(self) -> None:
        self._cancel_c()
        self._py_on_cancel()

    def _q_cancel_c(self) -> None:
        """The C side of a cancel: C reads end at once, a pump waiting for room goes on."""
        if self._q is not None:
            cqueue.lib._aimux_cq_flag(self._q, cqueue.Q_CANCEL)
        with self._room:
            self._room.notify_all()

    def _q_answer(self, max_events: int, blocking: bool) -> tuple[int, bytes | None, bool] | None:
        """The C queue's answer (``cqueue.take``), reading on this thread while it is
        empty; None: the Python queue's methods answer (the fallback)."""
        if self._q is None:
            return None
        if blocking and not self._blocked:
            self._blocked = True
            cqueue.lib._aimux_cq_flag(self._q, cqueue.Q_BLOCKED)
        while True:
            st, data, ended = _cq_take(self, self._q, max_events, False)
            if st == cqueue.T_EMPTY and blocking:  # the pump reads: wait for it in C
                st, data, ended = _cq_take(self, self._q, max_events, True)
            if st != cqueue.T_PY:
                return st, data, ended
            if self._fallback:
                # Python answers; a stream only ever polled still gets its reader thread
                if not blocking and not self._ended and self._pump_thread is None:
                    flags = cqueue.lib._aimux_cq_flags(self._q)
                    if not flags & cqueue.Q_BLOCKED:
                        self._start_pump()
                return None
            if blocking or self._ended:
                self._fill()  # (at the end: no read)
            else:  # a poll never reads; no blocking read came (C answers EMPTY after one)
                self._start_pump()

    def _saw_end(self) -> None:
        """Python answered the end (the fallback): C answers it from now on, and the reaper
        leaves the stream alone (``_aimux_cq_reap`` refuses a stream whose end was seen)."""
        if self._q is not None:
            cqueue.lib._aimux_cq_flag(self._q, cqueue.Q_DONE)

    def _q_one(self, fallback: Callable[[], Any]) -> Any:
        """One event (blocking), or None at the end; ``fallback``: Stream's answer."""
        got = self._answer(0, True)
        if got is None:
            event = fallback()
            if event is None:
                self._saw_end()
            return event
        return got[1] if got[0] == cqueue.T_DATA else None

    def _q_batch(
        self, max_events: int, blocking: bool, fallback: Callable[[int], tuple[bytes | None, bool]]
    ) -> tuple[bytes | None, bool]:
        """A JSON array of events and whether the stream is over (``next_batch``, ``poll``);
        ``fallback``: Stream's answer."""
        got = self._answer(max_events, blocking)
        if got is None:
            batch, over = fallback(max_events)
            if over:
                self._saw_end()
            return batch, over
        st, data, ended = got
        if st == cqueue.T_DATA:
            return data, ended
        return None, st == cqueue.T_END  # (a blocking read answers data or the end)

    def next(self) -> bytes | None:
        event: bytes | None = self._one(self._py_next)
        return event

    def pull(self) -> Any:
        return self._one(self._py_pull)

    def take(self, max_events: int) -> Iterator[Any] | None:
        """An iterator over up to ``max_events`` events, or None at the end: a batch of the
        op's own objects from the Python queue (held: a cancel, a reap or a fork empties it),
        or one event from a C queue."""
        if self._q is None:
            return self._py_take(max_events)
        event = self.pull()
        return None if event is None else iter((event,))

    def next_batch(self, max_events: int) -> tuple[bytes | None, bool]:
        return self._batch(max_events, True, self._py_next_batch)

    def poll(self, max_events: int) -> tuple[bytes | None, bool]:
        return self._batch(max_events, False, self._py_poll)

    def reap(self, idle_ms: int) -> bool:
        """``Stream.reap`` with a C queue: the C queue's last read counts, and the reaper's
        event is put there (its next read), atomically with the check that nobody reads."""
        if self._q is None:
            return self._py_reap(idle_ms)
        lib = cqueue.lib
        with self._state:
            if self._readers:  # (the C queue refuses a stream whose end a consumer saw)
                return False
            deadline = time.monotonic() - idle_ms / 1000
            if self.idle_since > deadline or lib._aimux_cq_last_read(self._q) > deadline:
                return False
            event = reap_timeout_event(idle_ms)
            if not lib._aimux_cq_reap(self._q, deadline, event, len(event)):
                return False
            self._pending.clear()
            self._drop_held()
        self.ctx.cancel()  # outside the lock: its callbacks (the op's cleanup) run now
        return True

    def _alive(self) -> bool:
        return not self.freed

    def _list(self) -> None:
        """The host has something to poll (not once the stream was freed: nobody polls); only
        an event-driven stream is listed."""
        if not self._ahead:
            return
        ready_list().mark(self.handle, self._alive)

    def start(self, events: Callable[[], Iterator[Any]]) -> None:
        """Start the reader thread's run (``readers``: a parked thread, else a new one);
        raises ``RuntimeError`` when no thread could be started (nothing ran)."""
        reader = readers.Reader(lambda: self._lead(events))
        with self._room:
            self._pump_thread = reader
        readers.run(reader)
        # (before the host has the handle) the C side of a cancel at once: C reads end, the
        # host hears it; the op's cleanup follows its own socket shutdown (``open`` registers
        # ``_on_cancel`` after the op's hook)
        self.ctx.on_cancel(self._cancel_c)

    def _lead(self, events: Callable[[], Iterator[Any]]) -> None:
        """The reader thread: the open, then ``_pump`` to the end; the slot is free after."""
        try:
            if self.ctx.cancelled.is_set():
                return  # cancelled before it ran: nothing was opened
            try:
                self.open(events)
            except BaseException as exc:  # noqa: BLE001 - the open's failure: a read reports it
                if not self.ctx.cancelled.is_set():
                    self._open_exc = exc
                with self._room:
                    self._fallback = True  # C asks this side, which answers the failure
                    if self._q is not None:
                        cqueue.lib._aimux_cq_flag(self._q, cqueue.Q_PY)
                return
            self._pump()
        finally:
            if self._q is not None:  # the op never ran, or its cleanup ran: C may answer
                cqueue.lib._aimux_cq_flag(self._q, cqueue.Q_STOPPED)
            with self._room:
                self._stopped = True
                self._room.notify_all()
            self._list()
            if self._on_stopped is not None:
                self._on_stopped()

    def open(self, events: Callable[[], Iterator[Any]]) -> None:
        if not self._ahead:
            return self._q_open(events)
        self._q_open(events)  # its first events pushed (and the end told, with them)
        if self._q is None:  # a blocking read may wait for them already (``_wait_for_reader``)
            with self._room:
                self._room.notify_all()
        if not self._ended:
            self._list()

    def _push_room(self, events: list[Any]) -> list[Any]:
        if not self._ahead:
            return self._q_push_room(events)
        rest = self._q_push_room(events)
        if self._q is None:
            with self._room:  # a blocking read waits for the reader (``_wait_for_reader``)
                self._room.notify_all()
        # listed now, unless the op's end follows at once: ``_end_c`` lists it with the end, so
        # a host's poll finds the last batch with its end
        if rest or not self._ended:
            self._list()
        return rest

    def _end_c(self) -> None:
        if not self._ahead:
            return self._q_end_c()
        self._q_end_c()
        self._list()

    def _cancel_c(self) -> None:
        if not self._ahead:
            return self._q_cancel_c()
        self._q_cancel_c()  # and the host hears it
        self._list()

    def wake(self, what: int) -> None:
        if not self._ahead:
            return self._q_wake(what)
        self._q_wake(what)
        if what & cqueue.W_RELIST:  # a batch left events behind: list the stream again
            self._list()

    def _wait_for_reader(self) -> None:
        """Without a C queue (a plain Python process) a blocking read of a stream read ahead
        waits for the reader thread's events or its end: it never reads itself. A cancel's end
        is heard once the reader's run is over (the op's cleanup ran), as with a C queue."""
        if self._q is not None or not self._ahead:
            return
        self._enter()  # a blocked reader (the reaper never closes the stream meanwhile)
        try:
            with self._room:
                while not (
                    self._pending
                    or self._stopped
                    or self._reaped is not None
                    or self._open_exc is not None
                ):
                    self._room.wait()
        finally:
            self._leave()

    def _open_failed(self) -> None:
        """Raise the open's failure once (``OpenFailed``)."""
        if self._open_exc is None:
            return
        with self._state:
            exc, self._open_exc = self._open_exc, None
            if exc is None:
                return
            self._done = True
        self._saw_end()
        raise OpenFailed(exc)

    def _answer(self, max_events: int, blocking: bool) -> tuple[int, bytes | None, bool] | None:
        if not self._ahead:
            return self._q_answer(max_events, blocking)
        got = self._q_answer(max_events, blocking)
        if got is None:  # Python answers: an open that failed while a read waited says so
            self._open_failed()
        return got

    def _one(self, fallback: Callable[[], Any]) -> Any:
        if not self._ahead:
            return self._q_one(fallback)
        self._wait_for_reader()
        self._open_failed()
        return self._q_one(fallback)

    def _batch(
        self, max_events: int, blocking: bool, fallback: Callable[[int], tuple[bytes | None, bool]]
    ) -> tuple[bytes | None, bool]:
        if not self._ahead:
            return self._q_batch(max_events, blocking, fallback)
        if blocking:
            self._wait_for_reader()
        self._open_failed()
        try:
            return self._q_batch(max_events, blocking, fallback)
        finally:
            if self._fallback and self._pending:  # Python answered (or failed) and left events
                self._list()
