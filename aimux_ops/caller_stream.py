"""Streams read on their caller's thread: the Python API's streams (``aimux_ops.stream``).

A Python caller iterating a stream blocks its own thread anyway, so its stream's op runs there:
the read (httpx's sync client, ``HttpTransport.stream_client``), the SSE split, the provider's
parse and the op, one network read per ``take``, with no stream loop, queue or hand-off between
threads (DESIGN.md "Streams read on the caller's thread"). The C ABI's streams come here too:
``aimux_stream``'s on the thread of their C reader (``NativeCallerStream``), and
``aimux_stream_start``'s on a reader thread of their own (``EventThreadStream``) while fewer than
``AIMUX_STREAM_READER_THREADS`` run; the others keep the stream loop (``dispatch._Stream``).

A ``CallerStream`` lives in the same handle registry as a loop stream and answers the same
consumer calls (``take``, ``pull``, ``next``, ``next_batch``, ``poll``, ``reap``, ``close``), so
everything the registry guarantees holds for it: ``stream_cancel`` / ``stream_free`` from any
thread (the op's cancel hook shuts the socket down: a blocked read wakes; the op's cleanup runs
on the reading thread, or on the cancelling one when nobody reads), the idle reaper (never
during a read), a forked child's 203, a held batch emptied by a cancel, a reap or a fork. A
failure before the first event fails the open (retries happen there); a later one is one
terminal ``error`` event with the same envelope.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from . import dispatch, guest
from .ops.registry import EventBatch, StreamContext

__all__ = [
    "CallerStream",
    "EventThreadStream",
    "NativeCallerStream",
    "open_here",
    "start_on_thread",
    "stream_here_json",
]


class CallerStream:
    """One stream whose op is driven by its consumers' calls, on their thread."""

    def __init__(self, handle: int, ctx: StreamContext) -> None:
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

    # -- the op (caller's thread, ``_run`` held) ---------------------------------------------

    #: the open is a consumer's read (the reaper leaves the stream alone meanwhile); not when a
    #: reader thread of the core opens it (``EventThreadStream``)
    _open_is_a_read = True

    def open(self, events: Callable[[], Iterator[Any]]) -> None:
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

    def _over(self) -> None:
        """The op is over and its cleanup ran (``_run`` held): ``NativeCallerStream`` tells its
        C queue."""

    def _next_locked(self) -> tuple[list[Any] | None, bool]:
        """(events, hold) from one read, or (None, False) at the end (``_run`` held)."""
        reaped = self._reaped
        if reaped is not None:
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
        if self._pending:  # another consumer read meanwhile
            return None, True
        if self._ended:
            self._done = True
            return None, False
        try:
            batch = self._read()
        except KeyboardInterrupt:
            self._done = self._ended = True
            self._over()
            raise  # the host's, not the stream's: the stream ends (as on the loop)
        except BaseException as exc:  # noqa: BLE001 - the terminal error event
            self._ended = True
            self._over()
            if self.ctx.cancelled.is_set():
                self._done = True
                return None, False
            return [b'{"type":"error","error":' + dispatch.project(exc) + b"}"], False
        if batch is None:
            self._done = True
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

    def _on_cancel(self) -> None:
        self._drop_held()
        self._settle()

    # -- consumers (any thread) ---------------------------------------------------------------

    def _get(self, max_events: int) -> tuple[list[Any] | None, bool]:
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

    def take(self, max_events: int) -> Iterator[Any] | None:
        """``dispatch._Stream.take``: an iterator over up to ``max_events`` events, held (a
        cancel, a reap or a fork empties it), or None at the end."""
        self._held = None
        got, hold = self._get(max_events)
        if got is None:
            return None
        if not hold:
            return iter(got)  # a terminal event: never dropped by a cancel that follows
        return dispatch.hold_batch(self, got)

    def _drop_held(self) -> None:
        held = self._held
        if held is not None:
            held[0].clear()

    def pull(self) -> Any:
        """The next event, or None at the end."""
        self._held = None
        got, _hold = self._get(1)
        return None if not got else got[0]

    def next(self) -> bytes | None:
        event = self.pull()
        return None if event is None else dispatch._dump(event)

    def next_batch(self, max_events: int) -> tuple[bytes | None, bool]:
        """Up to ``max_events`` events as one JSON array (blocks for one read), or (None, True)
        at the end."""
        self._held = None
        got, _hold = self._get(max_events)
        if got is None:
            return None, True
        return dispatch._dump_batch(got, self._pending), False

    def poll(self, max_events: int) -> tuple[bytes | None, bool]:
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

    def reap(self, idle_ms: int) -> bool:
        """``dispatch._Stream.reap``: close the stream if nobody read it for ``idle_ms``."""
        with self._state:
            reaped = dispatch.reaped_event(self, idle_ms)
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


def open_here(op: str | bytes | None, params_json: bytes | str | None, native: bool = False) -> int:
    """``dispatch.open_stream`` for a stream read on its caller's thread: its handle once the
    first event is in; raises the op's failure before it. ``native``: read through the C ABI
    (``NativeCallerStream``, when libaimux runs this core)."""
    kind = NativeCallerStream if native and dispatch._native is not None else CallerStream
    stream, events = _register(kind, op, params_json)
    try:
        stream.open(events)
    except BaseException:
        dispatch.stream_free(stream.handle)
        raise
    return stream.handle


_S = TypeVar("_S", bound=CallerStream)


def _register(
    kind: type[_S], op: str | bytes | None, params_json: bytes | str | None
) -> tuple[_S, Callable[[], Iterator[Any]]]:
    """A new ``kind`` stream of ``op`` in the handle registry, and its op's events (not started
    yet); raises what the op's name and params raise, before anything is registered."""
    spec = dispatch._resolve(op, "stream")
    params = dispatch._validate(spec, params_json)
    ctx = StreamContext(batches=True)
    with dispatch._streams_lock:
        handle = next(dispatch._handles)
        stream = kind(handle, ctx)
        dispatch._streams[handle] = stream
    dispatch._start_reaper()
    return stream, lambda: iter(spec.handler(params, ctx))


def stream_here_json(
    op: str | bytes | None, params_json: bytes | str | None
) -> tuple[int | None, bytes | None]:
    """``dispatch.stream_json`` for a stream read on its caller's thread. Never raises (but a
    host's ``KeyboardInterrupt``)."""
    try:
        return open_here(op, params_json), None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the boundary: everything is projected
        return None, dispatch.project(exc)


class NativeCallerStream(CallerStream):
    """A stream opened with ``aimux_stream`` (the C ABI's blocking open), read on the thread of
    the C reader that waits for it (DESIGN.md "Streams read on the caller's thread: the C ABI").

    Its events go through the stream's C queue as a loop stream's do (``dispatch._NativeStream``):
    each network read's events are serialized once and pushed, and the C ABI's reads take them
    without the interpreter lock. While the queue is flagged PULL, a blocking C read
    (``aimux_stream_next``, ``aimux_stream_next_batch``) that finds it empty asks this side,
    which reads the next network read on that thread and pushes it (``_fill``). A poll never
    reads: once a blocking read came, a poll of an empty queue is answered EMPTY in C (the
    bindings' "touch" polls); a poll of a stream no blocking read has read yet starts the
    stream's reader thread (``_pump``), which from then on reads ahead up to the high-water mark
    as the stream loop would, and C reads wait on the queue. A cancel, the reaper's event and
    the end are answered in C as for a loop stream. Events only the per-event path can serialize
    (or a push without memory) stay in ``_pending``, answered by ``CallerStream``'s own methods
    from then on (the fallback: PY set)."""

    def __init__(self, handle: int, ctx: StreamContext, notify: bool = False) -> None:
        super().__init__(handle, ctx)
        lib, ffi = dispatch._native, dispatch._native_ffi
        q = lib._aimux_cq_new(handle, 1 if notify else 0, dispatch._LOW_WATER)
        self._q: Any = ffi.gc(q, lib._aimux_cq_unref) if q else None
        if q:
            lib._aimux_cq_flag(q, dispatch._Q_PULL)  # empty: a blocking read asks this side
        self._fallback = not q  # no C queue (out of memory): CallerStream's own path
        self._pump_thread: threading.Thread | None = None
        self._blocked = False  # a blocking read from Python came (C notes the C ABI's own)
        self._room = threading.Condition(threading.Lock())  # the pump waits for room
        self.waits_for_room = False  # the pump waits for a read to make room (tests watch it)

    # -- the op's events into the C queue (``_run`` held) ---------------------------------------

    def open(self, events: Callable[[], Iterator[Any]]) -> None:
        super().open(events)
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
                data = dispatch._dump_batch(events, deque())
            except Exception:  # noqa: BLE001 - the per-event path (CallerStream's) reports it
                pass
            else:
                pushed = dispatch._native._aimux_cq_push(self._q, data, len(data), len(events))
                if pushed != dispatch._SIZE_MAX:
                    return
            with self._room:  # (against _start_pump's clear)
                self._fallback = True
                if self._q is not None:
                    dispatch._native._aimux_cq_flag(self._q, dispatch._Q_PY)
        self._pending.extend(events)

    def _end_c(self) -> None:
        """The op is over and every event it made is pushed: C answers the end itself."""
        if not self._fallback:
            dispatch._native._aimux_cq_flag(self._q, dispatch._Q_END)
            dispatch._native._aimux_cq_unflag(self._q, dispatch._Q_PULL)

    def _over(self) -> None:
        # a C read that heard a cancel returns once the op's cleanup ran (as on the loop)
        if self._q is not None:
            dispatch._native._aimux_cq_flag(self._q, dispatch._Q_STOPPED)

    def _fill(self) -> None:
        """One network read on this thread, its events pushed (or the end told to C)."""
        self._enter()
        try:
            with self._run:
                if self._pump_thread is not None or dispatch._native._aimux_cq_count(self._q):
                    return  # the pump reads now, or another reader's read came first
                got = self._read_batch()
                if got:
                    self._push(got)
                if got is None or self._ended:
                    self._end_c()
        finally:
            self._leave()

    def _read_batch(self) -> list[Any] | None:
        """``_next_locked``'s events, or None at the end (``_run`` held). After a ``finish``
        the op's end is taken at once, as the loop's producer takes it (its cleanup reads no
        more than the body's end): the end then comes with the last batch, and a host that
        polls after its ``finish`` gets it."""
        got, _hold = self._next_locked()
        if got and not self._fallback and not self._ended and _is_finish(got[-1]):
            more, _hold = self._next_locked()
            if more:  # (an op that goes on after its finish: its next read, as read)
                got = got + more
            elif self._ended and not self.ctx.cancelled.is_set():
                # only looked ahead: no consumer saw the end yet (the events go on to C, or,
                # should their push fail, to ``_pending``, which a consumer still reads)
                self._done = False
        return got

    # -- the producer thread of a polled stream ------------------------------------------------

    def _start_pump(self) -> None:
        with self._room:
            if self._pump_thread is not None:
                return
            self._pump_thread = thread = threading.Thread(
                target=self._pump, name="aimux-stream-reader", daemon=True
            )
            if not self._fallback:
                dispatch._native._aimux_cq_unflag(self._q, dispatch._Q_PULL)  # C reads now wait
        thread.start()

    def _pump(self) -> None:
        """Read ahead as the stream loop's producer does: each read's events pushed while they
        fit under the high-water mark, else up to it, then wait until a read brings the queue
        down to the low-water mark (in the fallback: one read ahead, in ``_pending``). Not a
        reader: the reaper's clock is the consumer's."""
        carry: list[Any] = []
        try:
            while not self.ctx.cancelled.is_set():
                with self._run:
                    if not carry and not self._pending:
                        got = self._read_batch()
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

    def _push_room(self, events: list[Any]) -> list[Any]:
        """Push what fits under the high-water mark (``_run`` held); the rest is returned."""
        if self._fallback:
            self._pending.extend(events)
            return []
        room = dispatch._HIGH_WATER - dispatch._native._aimux_cq_count(self._q)
        if len(events) < room:
            self._push(events)
            return []
        if room > 0:
            self._push(events[:room])
            return events[room:]
        return events

    def _wait_room(self) -> None:
        """Until a read made room (C: down to the low-water mark; the fallback: ``_pending``
        taken), or a cancel."""
        lib, q, high = dispatch._native, self._q, dispatch._HIGH_WATER
        cancelled = self.ctx.cancelled
        with self._room:
            while not cancelled.is_set() and (
                self._pending if self._fallback else lib._aimux_cq_want_room(q, high)
            ):
                self.waits_for_room = True
                self._room.wait()
            self.waits_for_room = False

    def _get(self, max_events: int) -> tuple[list[Any] | None, bool]:
        got = super()._get(max_events)
        if self._fallback and self._pump_thread is not None and not self._pending:
            with self._room:  # the pump reads the next one
                self._room.notify_all()
        return got

    def wake(self, what: int) -> None:
        """A C read brought the queue down to the low-water mark (``dispatch.stream_wake``)."""
        if what & dispatch._W_ROOM:
            with self._room:
                self._room.notify_all()

    def _on_cancel(self) -> None:
        self._cancel_c()
        super()._on_cancel()

    def _cancel_c(self) -> None:
        """The C side of a cancel: C reads end at once, a pump waiting for room goes on."""
        if self._q is not None:
            dispatch._native._aimux_cq_flag(self._q, dispatch._Q_CANCEL)
        with self._room:
            self._room.notify_all()

    # -- consumers (any thread) ---------------------------------------------------------------

    def _answer(self, max_events: int, blocking: bool) -> tuple[int, bytes | None, bool] | None:
        """The C queue's answer (``dispatch.cq_take``), reading on this thread while it is
        empty; None: CallerStream's own methods answer (the fallback)."""
        if self._q is None:
            return None
        if blocking and not self._blocked:
            self._blocked = True
            dispatch._native._aimux_cq_flag(self._q, dispatch._Q_BLOCKED)
        while True:
            st, data, ended = dispatch.cq_take(self, self._q, max_events, False)
            if st == dispatch._T_EMPTY and blocking:  # the pump reads: wait for it in C
                st, data, ended = dispatch.cq_take(self, self._q, max_events, True)
            if st != dispatch._T_PY:
                return st, data, ended
            if self._fallback:
                # Python answers; a stream only ever polled still gets its reader thread
                if not blocking and not self._ended and self._pump_thread is None:
                    flags = dispatch._native._aimux_cq_flags(self._q)
                    if not flags & dispatch._Q_BLOCKED:
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
            dispatch._native._aimux_cq_flag(self._q, dispatch._Q_DONE)

    def _one(self, fallback: Callable[[], Any]) -> Any:
        """One event (blocking), or None at the end; ``fallback``: CallerStream's answer."""
        got = self._answer(0, True)
        if got is None:
            event = fallback()
            if event is None:
                self._saw_end()
            return event
        return got[1] if got[0] == dispatch._T_DATA else None

    def _batch(
        self, max_events: int, blocking: bool, fallback: Callable[[int], tuple[bytes | None, bool]]
    ) -> tuple[bytes | None, bool]:
        """A JSON array of events and whether the stream is over (``next_batch``, ``poll``);
        ``fallback``: CallerStream's answer."""
        got = self._answer(max_events, blocking)
        if got is None:
            batch, over = fallback(max_events)
            if batch is None and over:
                self._saw_end()
            return batch, over
        st, data, ended = got
        if st == dispatch._T_DATA:
            return data, ended
        return None, st == dispatch._T_END  # (a blocking read answers data or the end)

    def next(self) -> bytes | None:
        event: bytes | None = self._one(super().next)
        return event

    def pull(self) -> Any:
        return self._one(super().pull)

    def take(self, max_events: int) -> Iterator[Any] | None:
        event = self.pull()
        return None if event is None else iter((event,))

    def next_batch(self, max_events: int) -> tuple[bytes | None, bool]:
        return self._batch(max_events, True, super().next_batch)

    def poll(self, max_events: int) -> tuple[bytes | None, bool]:
        return self._batch(max_events, False, super().poll)

    def reap(self, idle_ms: int) -> bool:
        """``dispatch._NativeStream.reap``: the C queue's last read counts, and the reaper's
        event is put there (its next read), atomically with the check that nobody reads."""
        if self._q is None:
            return super().reap(idle_ms)
        lib = dispatch._native
        with self._state:
            if self._readers:  # (the C queue refuses a stream whose end a consumer saw)
                return False
            deadline = time.monotonic() - idle_ms / 1000
            if self.idle_since > deadline or lib._aimux_cq_last_read(self._q) > deadline:
                return False
            event = dispatch.reap_timeout_event(idle_ms)
            if not lib._aimux_cq_reap(self._q, deadline, event, len(event)):
                return False
            self._pending.clear()
            self._drop_held()
        self.ctx.cancel()  # outside the lock: its callbacks (the op's cleanup) run now
        return True


def _is_finish(event: Any) -> bool:
    """The op's last event by the contract (``finish``); an ``error`` event ends it too, but
    that one comes with the op already over."""
    return type(event) is dict and event.get("type") == "finish"


class EventThreadStream(NativeCallerStream):
    """An event-driven stream (``aimux_stream_start``) read by a reader thread of its own, one
    of at most ``AIMUX_STREAM_READER_THREADS`` at a time (DESIGN.md "Event-driven streams on
    reader threads"); a stream started while they are all busy runs on the stream loop
    (``dispatch._NativeStream``), as every event-driven stream did before.

    The thread opens the stream (the open's failure is what the first read answers, as on the
    loop) and then reads ahead as a polled ``NativeCallerStream``'s reader does: each read's
    events serialized once into the stream's C queue, up to the high-water mark. Every push, the
    end, a cancel, a failed open and a batch that left events behind list the handle on the
    process's ready list (``aimux_events_fd``). A consumer's thread never reads: a poll answers
    what the queue holds, a blocking read waits on it."""

    _open_is_a_read = False  # the reaper may close a stream that nobody reads during its open

    def __init__(self, handle: int, ctx: StreamContext) -> None:
        super().__init__(handle, ctx, notify=True)
        from . import aio

        self._notifier = aio.notifier()
        self._open_exc: BaseException | None = None  # the open failed: the first read says so
        if self._q is not None:
            dispatch._native._aimux_cq_unflag(self._q, dispatch._Q_PULL)  # reads wait on it

    def start(self, events: Callable[[], Iterator[Any]]) -> bool:
        """Start the reader thread; False when no thread could be started (nothing ran)."""
        thread = threading.Thread(
            target=self._lead, args=(events,), name="aimux-stream-reader", daemon=True
        )
        with self._room:
            self._pump_thread = thread
        try:
            thread.start()
        except RuntimeError:  # no thread to be had (the host's limit): the caller uses the loop
            return False
        # (before the host has the handle) the C side of a cancel at once: C reads end, the
        # host hears it; the op's cleanup follows its own socket shutdown (``open`` registers
        # ``_on_cancel`` after the op's hook)
        self.ctx.on_cancel(self._cancel_c)
        return True

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
                        dispatch._native._aimux_cq_flag(self._q, dispatch._Q_PY)
                return
            self._pump()
        finally:
            if self._q is not None:  # the op never ran, or its cleanup ran: C may answer
                dispatch._native._aimux_cq_flag(self._q, dispatch._Q_STOPPED)
            if dispatch._streams.get(self.handle) is self:  # (not once freed: nobody polls)
                self._notifier.mark(self.handle)
            _release_slot()

    def open(self, events: Callable[[], Iterator[Any]]) -> None:
        super().open(events)  # its first events pushed (and the end told, with them)
        if not self._ended:
            self._notifier.mark(self.handle)

    def _push_room(self, events: list[Any]) -> list[Any]:
        rest = super()._push_room(events)
        # listed now, unless the op's end follows at once: ``_end_c`` lists it with the end, so
        # a host's poll finds the last batch with its end (as the loop's producer flags the end
        # before it lists the stream)
        if rest or not self._ended:
            self._notifier.mark(self.handle)
        return rest

    def _end_c(self) -> None:
        super()._end_c()
        self._notifier.mark(self.handle)

    def _cancel_c(self) -> None:
        super()._cancel_c()  # and the host hears it
        if dispatch._streams.get(self.handle) is self:  # (a free cancels too: nobody polls)
            self._notifier.mark(self.handle)

    def wake(self, what: int) -> None:
        super().wake(what)
        if what & dispatch._W_RELIST:  # a batch left events behind: list the stream again
            self._notifier.mark(self.handle)

    def _open_failed(self) -> None:
        """Raise the open's failure once (``dispatch._OpenFailed``, as a loop stream does)."""
        if self._open_exc is None:
            return
        with self._state:
            exc, self._open_exc = self._open_exc, None
            if exc is None:
                return
            self._done = True
        self._saw_end()
        raise dispatch._OpenFailed(exc)

    def _one(self, fallback: Callable[[], Any]) -> Any:
        self._open_failed()
        return super()._one(fallback)

    def _batch(
        self, max_events: int, blocking: bool, fallback: Callable[[int], tuple[bytes | None, bool]]
    ) -> tuple[bytes | None, bool]:
        self._open_failed()
        batch, over = super()._batch(max_events, blocking, fallback)
        if self._fallback and self._pending:  # Python answered and left events behind
            self._notifier.mark(self.handle)
        return batch, over


#: reader threads of event-driven streams running now, and the lock that counts them
_threads = 0
_threads_lock = threading.Lock()


def _take_slot() -> bool:
    global _threads
    with _threads_lock:
        if _threads >= guest.limits().stream_reader_threads:
            return False
        _threads += 1
        return True


def _release_slot() -> None:
    global _threads
    with _threads_lock:
        _threads -= 1


@guest.on_fork_child
def _no_threads_after_fork() -> None:
    """A forked child has none of its parent's reader threads."""
    global _threads, _threads_lock
    _threads = 0
    _threads_lock = threading.Lock()


def start_on_thread(op: str | bytes | None, params_json: bytes | str | None) -> int | None:
    """``aimux_stream_start`` on a reader thread of its own (``EventThreadStream``): the handle,
    or None when every reader thread is busy (or none could be started): the caller then starts
    the stream on the loop. Raises what the op's name and params raise (before any I/O)."""
    if not _take_slot():
        return None
    started = False
    try:
        stream, events = _register(EventThreadStream, op, params_json)
        started = stream.start(events)
        if not started:
            dispatch.stream_free(stream.handle)
            return None
        return stream.handle
    finally:
        if not started:
            _release_slot()
