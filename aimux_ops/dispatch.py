"""The dispatch boundary: op name + params JSON in, result JSON or envelope JSON out.

These are the entry points the shared library calls (DESIGN.md); none of them raises, except
``KeyboardInterrupt`` (a Python host's own SIGINT, which is not the call's error). Every
failure — wire (201/202/204), protocol (300/301/302), an op's own error, or an unexpected
exception (208) — is projected here, once, by ``envelope.project``.

Streams live in a handle registry: handles count up from 1 and are never reused; a stale, freed or
unknown handle answers 203. Every stream's op runs on the stream loop (``aio``: one thread for all
streams) and fills a per-stream queue; the Python API's streams (``caller_stream.CallerStream``, in
the same registry) run on the thread that reads them instead. ``stream_json`` waits until the first
event (so a failure before the first event — where retries happen — fails the open); later failures
become one terminal ``error`` event. ``stream_start_json`` returns at once; its stream is drained
without blocking by ``stream_poll_json`` (a batch per call) when ``ready_handles`` lists it, the
pipe of ``events_fd`` telling the host when to look. ``stream_next_batch_json`` blocks like
``stream_next_json`` but takes every event ready (up to a maximum) as one JSON array: a C consumer
crosses into Python once per batch, not once per event. ``stream_cancel`` may be called from any
thread: it wakes a blocked ``stream_next_json``, which then reports the end.

Cold start: importing this module loads no pydantic model, no error class, no provider and no
httpx; the errors, the projection and each op's module load the first time they are needed, and
``aimux.version``'s answer is precomputed (the result its op would serialize).

Process-bound state (``guest``): in a forked child the registry starts empty (every handle of
the parent is 203 there; handles keep counting, so none is reused) and a stream nobody has read
for ``AIMUX_STREAM_IDLE_TIMEOUT_MS`` is closed by one reaper thread, started with the first
stream (and again in a child), so a handle a binding dropped without freeing does not hold its
connection until a garbage collector runs.
"""

from __future__ import annotations

import atexit
import itertools
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from operator import length_hint
from typing import TYPE_CHECKING, Any

import orjson

from . import ops as _ops  # noqa: F401 - declares every op (each module loads on first use)
from ._version import ABI_VERSION, __version__
from .guest import limits, on_fork_child
from .ops import registry
from .ops.registry import EventBatch, OpSpec, StreamContext, all_ops, get_op

if TYPE_CHECKING:
    import asyncio
    import concurrent.futures
    from types import ModuleType

    from pydantic import BaseModel

    from . import aio
    from .caller_stream import CallerStream
else:
    from ._lazy import LazyModule

    # asyncio, greenlet and the stream loop load on the first stream: a call op never pays
    aio = LazyModule("aimux_ops.aio", globals(), "aio")

__all__ = [
    "call_json",
    "events_fd",
    "open_stream",
    "poll_entry_json",
    "poll_ready_json",
    "ready_handles",
    "stream_cancel",
    "stream_free",
    "stream_json",
    "stream_next_batch_json",
    "stream_next_json",
    "stream_next_object",
    "stream_next_objects",
    "stream_poll_json",
    "stream_start_json",
    "stream_tool_result_json",
    "stream_wake",
    "use_native_queues",
]

Reply = tuple[bytes | None, bytes | None]


def project(exc: BaseException) -> bytes:
    """``envelope.project``, imported on the first failure; it then takes this function's place
    (every later failure calls it directly: no import statement, no extra frame)."""
    from .envelope import project as loaded

    globals()["project"] = loaded
    return loaded(exc)


def _op_name(op: str | bytes | None) -> str:
    if isinstance(op, bytes):
        try:
            return op.decode("utf-8")
        except UnicodeDecodeError as exc:
            from .errors import InvalidUTF8Error

            raise InvalidUTF8Error("op is not valid UTF-8", argument="op") from exc
    from .errors import NullArgumentError, UnknownOpError

    if op is None:
        raise NullArgumentError("op is NULL", argument="op")
    if not isinstance(op, str):
        raise UnknownOpError(f"op must be a string, not {type(op).__name__}")
    return op


def _violation_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(root)"


def _validate(spec: OpSpec, params_json: bytes | str | None) -> BaseModel:
    if params_json is None:
        from .errors import NullArgumentError

        raise NullArgumentError("params_json is NULL", argument="params_json")
    try:
        data = orjson.loads(params_json)
    except orjson.JSONDecodeError as exc:
        from .errors import InvalidUTF8Error, InvalidWireJSONError

        if isinstance(params_json, bytes):
            try:
                params_json.decode("utf-8")
            except UnicodeDecodeError as utf8_exc:
                raise InvalidUTF8Error(
                    "params_json is not valid UTF-8", argument="params_json"
                ) from utf8_exc
        raise InvalidWireJSONError("params_json is not valid JSON", argument="params_json") from exc
    try:
        return spec.params.model_validate(data)
    except Exception as exc:
        from pydantic import ValidationError

        if not isinstance(exc, ValidationError):
            raise
        errors = _errors or _load_errors()
        InvalidParamsError, SourceError, Violation = (
            errors.InvalidParamsError,
            errors.SourceError,
            errors.Violation,
        )
        violations = [
            Violation(path=_violation_path(tuple(e["loc"])), reason=e["msg"]) for e in exc.errors()
        ]
        summary = "; ".join(f"{v.path}: {v.reason}" for v in violations[:5])
        more = f" (and {len(violations) - 5} more)" if len(violations) > 5 else ""
        # The cause lists every violation by path and reason; pydantic's own text is not used
        # because it quotes the offending input values (which may be secrets).
        detail = SourceError(
            f"{len(violations)} validation error(s) for {spec.name} params: "
            + "; ".join(f"{v.path}: {v.reason}" for v in violations),
            type="pydantic_core.ValidationError",
        )
        raise InvalidParamsError(
            f"invalid params for {spec.name}: {summary}{more}",
            op=spec.name,
            violations=violations,
        ) from detail


_errors: ModuleType | None = None


def _load_errors() -> ModuleType:
    """``aimux_ops.errors``, imported on the first failure (then kept)."""
    global _errors
    from . import errors

    _errors = errors
    return errors


#: The sorted op names (an unknown op's ``availableOps``; an error built from them copies the
#: list) and the registry's ``generation()`` they were sorted at (read before sorting: a list
#: sorted while a change was under way is never taken for the names after it).
_names: tuple[int, list[str]] = (-1, [])


def _op_names() -> list[str]:
    global _names
    held = _names
    generation = registry.generation()
    if held[0] == generation:
        return held[1]
    names = sorted(s.name for s in all_ops())  # all_ops imports every declared op module
    _names = (generation, names)
    return names


_ops_get = registry._OPS.get  # the registry's dicts: changed in place, never replaced
_lazy = registry._LAZY


def _resolve(op: str | bytes | None, mode: str) -> OpSpec:
    """The op ``op`` names; raises the error its call fails with (unknown op, wrong mode)."""
    if type(op) is str:
        name = op
    elif type(op) is bytes and op.isascii():  # a C caller's op: always decodes (no frame)
        name = op.decode("ascii")
    else:
        name = _op_name(op)
    spec = _ops_get(name)
    if spec is None and name in _lazy:
        spec = get_op(name)  # imports the op's module
    if spec is not None and spec.mode == mode:
        return spec
    errors = _errors or _load_errors()
    if spec is None:
        shown = name[:200]
        raise errors.UnknownOpError(f"unknown op {shown!r}", op=shown, available_ops=_op_names())
    raise errors.WrongModeError(
        f"op {name!r} is a {spec.mode} op; use aimux_{spec.mode}", op=name, expected=spec.mode
    )


def _dump(value: Any) -> bytes:
    if type(value) is bytes:  # an op may hand over an event already serialized
        return value
    try:
        if type(value) is not dict:
            from pydantic import BaseModel

            if isinstance(value, BaseModel):
                value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
        return orjson.dumps(value)
    except Exception as exc:
        from .errors import ResultSerializationError

        raise ResultSerializationError("the result could not be serialized to JSON") from exc


def _dump_batch(items: list[Any], queue: deque[Any]) -> bytes:
    """``items`` (events taken from ``queue``) as one JSON array: byte for byte the events'
    ``_dump``s joined by commas. One ``orjson.dumps`` of the list when every event is a dict or
    already bytes; otherwise (or when that fails) event by event, and a failure then puts the
    events after the failing one back in front of ``queue`` and raises (as taking and dumping
    them one at a time did)."""
    try:
        # the list as it is: when orjson takes it, each event is what ``_dump`` makes of it
        # (orjson refuses bytes and pydantic models, the only events ``_dump`` treats apart),
        # without a pass over the events first (a stream's hot path: one call per network read)
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
            parts.append(_dump(event))
        except BaseException:
            queue.extendleft(reversed(items[i + 1 :]))
            raise
    return b"[" + b",".join(parts) + b"]"


#: Not serializable by orjson: sends ``_dump_batch`` to the event-by-event path.
_NOT_FAST = object()


#: Results of pure ops (``aimux.version``, ``aimux.manifest``) by (op, params bytes): the
#: hottest calls across the C ABI answer without validation or serialization.
_pure_results: dict[tuple[str | bytes, bytes | str], bytes] = {}
_PURE_KEY_MAX = 256
# aimux.version with the empty object, precomputed: the answer ops/meta.py's handler gives (a
# test checks they agree), without importing the op's models on the first call.
_VERSION = orjson.dumps({"name": "aimux-ops", "version": __version__, "abiVersion": ABI_VERSION})
for _key in (b"aimux.version", "aimux.version"):
    for _params in (b"{}", "{}"):
        _pure_results[(_key, _params)] = _VERSION
#: The spec each cached op name's results came from (the precomputed answer: none).
_pure_specs: dict[str, OpSpec] = {}
#: The registry's ``generation()`` the cached results were last checked at.
_pure_generation = registry.generation()


def _forget_stale_pure_results() -> None:
    """After a change of the op names: the cached results of an op that is gone, or that was
    registered anew since, are dropped."""
    global _pure_generation
    _pure_generation = registry.generation()  # read first: a change meanwhile checks again
    for key in list(_pure_results):
        op = key[0]
        name = op.decode("utf-8", "replace") if isinstance(op, bytes) else op
        current = registry._OPS.get(name)
        cached_from = _pure_specs.get(name)
        if (current is None and name not in registry._LAZY) or (
            cached_from is not None and current is not cached_from
        ):
            _pure_results.pop(key, None)


_generation = registry.generation


def call_json(op: str | bytes | None, params_json: bytes | str | None) -> Reply:
    """Run a call op: ``(result JSON, None)`` or ``(None, envelope JSON)``. Never raises."""
    try:
        if params_json is not None and len(params_json) <= _PURE_KEY_MAX:
            cached = _pure_results.get((op, params_json))  # type: ignore[arg-type]
            if cached is not None:
                if _pure_generation == _generation():
                    return cached, None
                _forget_stale_pure_results()  # the op names changed since: checked again
                cached = _pure_results.get((op, params_json))  # type: ignore[arg-type]
                if cached is not None:
                    return cached, None
        spec = _resolve(op, "call")
        params = _validate(spec, params_json)
        result = _dump(spec.handler(params))
        if spec.pure and op is not None and params_json is not None:
            if len(params_json) <= _PURE_KEY_MAX and len(_pure_results) < 1024:
                if _pure_generation != _generation():
                    _forget_stale_pure_results()
                _pure_specs[spec.name] = spec
                _pure_results[(op, params_json)] = result
        return result, None
    except KeyboardInterrupt:
        raise  # the host's, not the call's (see _Stream.pull)
    except BaseException as exc:  # noqa: BLE001 - the boundary: everything is projected
        return None, project(exc)


# -- streams ------------------------------------------------------------------------------------


class _OpenFailed(Exception):
    """The open of an event-driven stream failed: reported by its first poll / next."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__("the stream could not be opened")
        self.cause = cause


#: A producer with this many events not yet taken waits (on the loop) until they drop to
#: _LOW_WATER: a slow consumer bounds the memory a fast provider can fill.
_HIGH_WATER = 1024
_LOW_WATER = 256


def reaped_event(stream: Any, idle_ms: int) -> bytes | None:
    """The reaper's look at one stream (its lock held): None while it is in use or was read less
    than ``idle_ms`` ago, else the terminal ``error`` event its reader gets (a timeout naming the
    setting). A stream's ``_done``, ``_readers``, ``_reaped``, ``_held`` (an in-process
    consumer's batch: events taken from it since the last look are reads) and ``idle_since`` are
    what it reads; shared by ``_Stream`` and ``caller_stream.CallerStream``."""
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
    empties it at once, as if it came after the hand-off. Shared by ``_Stream.take`` and
    ``caller_stream.CallerStream.take``."""
    it = iter(events)
    stream._held = (events, it)
    stream._held_left = len(events)
    if stream.ctx.cancelled.is_set():
        events.clear()
    return it


def reap_timeout_event(idle_ms: int) -> bytes:
    """The terminal ``error`` event of a stream the reaper closed after ``idle_ms``."""
    from .errors import TimeoutError as AITimeoutError

    err = AITimeoutError(
        f"The stream was closed by the core after {idle_ms} ms without a read "
        f"(AIMUX_STREAM_IDLE_TIMEOUT_MS).",
        timeout_ms=idle_ms,
    )
    return b'{"type":"error","error":' + project(err) + b"}"


class _Stream:
    """One open stream. Its op runs on the stream loop (``aio``), pushing events into a queue;
    consumers take them from any thread: blocking (``pull``) or not (``poll``)."""

    def __init__(self, handle: int, ctx: StreamContext, notify: bool) -> None:
        self.handle = handle
        self.ctx = ctx
        self._events: deque[Any] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._opened = False  # the first event arrived, or the op ended without one
        self._open_exc: BaseException | None = None  # the op failed before its first event
        self._ended = False  # the producer is done (everything it made is queued)
        self._done = False  # a consumer saw the end
        self._notifier = aio.notifier() if notify else None
        self._future: concurrent.futures.Future[None] | None = None
        self._space: asyncio.Future[None] | None = None  # the producer waits for room
        self._stopped_flag = False  # the producer's task is over (ran to its end or cancelled)
        self._greenlet: Any = None  # the producer's greenlet once it runs
        self._interrupt_pending = False
        #: monotonic time of the last read's end (or of the open); the reaper's clock
        self.idle_since = time.monotonic()
        self._readers = 0  # consumers blocked in pull right now (never idle meanwhile)
        #: the terminal event of a stream the reaper closed
        self._reaped: bytes | None = None
        #: the last batch ``take`` handed out and its consumer's iterator over it
        self._held: tuple[list[Any], Iterator[Any]] | None = None
        self._held_left = 0  # events left in it when the reaper last looked

    # -- the producer (a greenlet on the loop thread) --------------------------------------

    def start(self, events: Callable[[], Iterator[Any]]) -> None:
        self._future = aio.spawn(lambda: self._produce(events))
        self._future.add_done_callback(self._stopped)
        self.ctx.on_cancel(self._on_cancel)

    def _stopped(self, _future: object) -> None:
        # also when the producer was cancelled before it ever ran
        with self._cond:
            self._stopped_flag = True
            self._cond.notify_all()

    def _produce(self, events: Callable[[], Iterator[Any]]) -> None:
        cancelled = self.ctx.cancelled
        self._greenlet = g = aio.current()
        if cancelled.is_set():
            return  # cancelled before it ran: nothing was opened
        if self._interrupt_pending:
            aio.interrupt(g)
        # Events are appended without a lock (deque appends are atomic) and consumers are woken
        # once per suspension of this greenlet (aio.await_only calls on_suspend): one wake-up for
        # every event parsed from one network read, not one per event.
        g.on_suspend = self._flush
        queue = self._events
        produced = False
        try:
            for item in events():
                if type(item) is EventBatch:
                    # the events of one network read: one extend while they fit under the
                    # high-water mark, else one by one (the producer stops exactly at it)
                    if len(queue) + len(item) < _HIGH_WATER:
                        if item:
                            queue.extend(item)
                            produced = True
                        continue
                    for event in item:
                        queue.append(event)
                        produced = True
                        if len(queue) >= _HIGH_WATER and not cancelled.is_set():
                            self._wait_room()
                    continue
                queue.append(item)
                produced = True
                if len(queue) >= _HIGH_WATER and not cancelled.is_set():
                    self._wait_room()
        except BaseException as exc:  # noqa: BLE001 - becomes the open failure or an event
            if not cancelled.is_set():
                if produced:
                    queue.append(b'{"type":"error","error":' + project(exc) + b"}")
                else:
                    self._open_exc = exc
        finally:
            g.on_suspend = None
            with self._cond:
                self._ended = True
                self._opened = True
                self._cond.notify_all()
            if self._notifier is not None:
                self._notifier.mark(self.handle)

    def _flush(self) -> None:
        """Wake the consumers of what was appended since the last suspension (loop thread)."""
        if not self._events:
            return
        with self._cond:
            self._opened = True
            self._cond.notify_all()
        if self._notifier is not None:
            self._notifier.mark(self.handle)

    def _wait_room(self) -> None:
        import asyncio

        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._cond:
            if len(self._events) < _HIGH_WATER:
                return
            self._space = fut
        aio.wait(fut)  # False: cancelled (the loop then sees it)

    def _took(self) -> None:
        """After a consumer took events (lock held): let a waiting producer go on."""
        fut = self._space
        if fut is not None and len(self._events) <= _LOW_WATER:
            self._space = None
            fut.get_loop().call_soon_threadsafe(aio.set_none, fut)

    def _on_cancel(self) -> None:
        # ends a retry backoff or a wait for room (the op's own cancel hook shuts its socket)
        self._drop_held()
        if self._greenlet is None:
            self._interrupt_pending = True
        aio.interrupt(self._greenlet)
        with self._cond:
            self._cond.notify_all()
        if self._notifier is not None:
            self._notifier.mark(self.handle)

    # -- consumers (any thread) ---------------------------------------------------------------

    def wait_open(self) -> None:
        """Block until the first event (or the end); raise the op's failure before it."""
        with self._cond:
            while not self._opened and not self.ctx.cancelled.is_set():
                self._cond.wait()
            exc, self._open_exc = self._open_exc, None
        if exc is not None:
            raise exc

    def _take_locked(self) -> tuple[Any, bool]:
        """(event, False), (None, True) at the end, or (None, False) when nothing is there yet.
        Raises ``_OpenFailed`` once for an open that failed."""
        if self._reaped is not None:
            event, self._reaped = self._reaped, None
            self._done = True
            return event, False
        if self._done:
            return None, True
        if self.ctx.cancelled.is_set():
            self._done = True
            self._events.clear()
            return None, True
        if self._events:
            event = self._events.popleft()
            self._took()
            return event, False
        if self._open_exc is not None:
            exc, self._open_exc = self._open_exc, None
            self._done = True
            raise _OpenFailed(exc)
        if self._ended:
            self._done = True
            return None, True
        return None, False

    def pull(self) -> Any:
        """The next event as the op produced it (a JSON-ready dict, or bytes), the terminal
        ``error`` event as bytes, or None at the end (and after a cancel). Blocks until one."""
        if self._events and not self._done and not self.ctx.cancelled.is_set():
            try:  # the hot path: no lock (a deque's popleft is atomic)
                event = self._events.popleft()
            except IndexError:
                pass
            else:
                if self._space is not None:
                    with self._cond:
                        self._took()
                self.idle_since = time.monotonic()
                return event
        with self._cond:
            return self._wait_locked(self._take_locked)[0]

    def _wait_locked(self, take: Callable[[], tuple[Any, bool]]) -> tuple[Any, bool]:
        """A blocking read (lock held): ``take()`` until it gives something or the end, counted
        as a reader meanwhile (never idle for the reaper)."""
        self._readers += 1
        try:
            while True:
                got, ended = take()
                if got is not None or ended:
                    break
                self._cond.wait()
        finally:
            self._readers -= 1
            self.idle_since = time.monotonic()
        if got is None and self.ctx.cancelled.is_set():
            # a cancelled op has finished its cleanup (a recording says "cancelled") by the
            # time a blocked reader hears the end, as when it ran on the reader's thread
            while not self._stopped_flag:
                self._cond.wait()
        return got, ended

    def take(self, max_events: int) -> Iterator[Any] | None:
        """``pull`` for an in-process consumer: an iterator over up to ``max_events`` queued
        events (at least one: blocks until one), or None at the end. The stream keeps a batch
        taken from the queue: a cancel, a reap or a fork empties it, so the consumer's next
        event is what its next ``pull`` would have answered (the end, the reaper's error, a
        stale handle), and the reaper counts each event the consumer takes from it as a read.
        When the queue is empty this is ``pull`` (it blocks), one event."""
        queue = self._events
        if queue and not self._done and not self.ctx.cancelled.is_set():
            out: list[Any] = []
            pop = queue.popleft
            try:  # no lock: a deque's popleft is atomic (the producer only appends)
                for _ in range(min(len(queue), max_events)):
                    out.append(pop())
            except IndexError:
                pass
            if self._space is not None:
                with self._cond:
                    self._took()
            self.idle_since = time.monotonic()
            if not out:
                return self.take(max_events)
            return hold_batch(self, out)
        # one event, answered by ``pull`` itself (after a cancel or a reap too): nothing held
        self._held = None
        event = self.pull()
        return None if event is None else iter((event,))

    def _drop_held(self) -> None:
        """Empty the batch an in-process consumer holds (any thread)."""
        held = self._held
        if held is not None:
            held[0].clear()

    def next(self) -> bytes | None:
        event = self.pull()
        return None if event is None else _dump(event)

    def poll(self, max_events: int) -> tuple[bytes | None, bool]:
        """Never blocks: (a JSON array of up to ``max_events`` events or None, ended)."""
        self.idle_since = time.monotonic()
        with self._cond:
            batch, ended = self._batch_locked(max_events)
        self._relist()
        return batch, ended

    def next_batch(self, max_events: int) -> tuple[bytes | None, bool]:
        """``poll`` that blocks until there is a batch or the end (``aimux_stream_next_batch``):
        (a JSON array of 1..``max_events`` events, ended) or (None, True) at the end (and after
        a cancel, once the op has finished its cleanup, as ``pull``)."""
        with self._cond:
            batch, ended = self._wait_locked(lambda: self._batch_locked(max_events))
        self._relist()
        return batch, ended

    def _relist(self) -> None:
        if self._events and self._notifier is not None:
            # The ready list lost this handle when it was taken; a batch that left events behind
            # must list it again, or a producer paused at the high-water mark (no new flush)
            # would never be polled again.
            self._notifier.mark(self.handle)

    def _batch_locked(self, max_events: int) -> tuple[bytes | None, bool]:
        """Up to ``max_events`` events taken and serialized as one JSON array (lock held)."""
        queue = self._events
        ended = False
        items: list[Any] = []
        if queue and self._reaped is None and not self._done and not self.ctx.cancelled.is_set():
            # the common case in one step: what _take_locked does per event, for the run of
            # queued events (the producer appends on the right; a lock-free pull of another
            # thread may pop meanwhile: the run then ends early)
            pop = queue.popleft
            append = items.append
            try:
                for _ in range(min(max_events, len(queue))):
                    append(pop())
            except IndexError:
                pass
        if items:
            self._took()
            batch: bytes | None = _dump_batch(items, queue)
        else:
            out: list[bytes] = []
            while len(out) < max_events:
                event, ended = self._take_locked()
                if event is None:
                    break
                out.append(_dump(event))
            batch = b"[" + b",".join(out) + b"]" if out else None
        if not ended and not queue and self._ended and self._open_exc is None:
            self._done = ended = True  # the end is known now: say so with the last batch
        return batch, ended

    def reap(self, idle_ms: int) -> bool:
        """Close the stream if nobody read it for ``idle_ms`` (the reaper); True when closed.
        Its reader then gets one terminal ``error`` event (a timeout naming the setting)."""
        with self._cond:
            reaped = reaped_event(self, idle_ms)
            if reaped is None:
                return False
            self._reaped = reaped
            self._events.clear()
            self._drop_held()
        self.ctx.cancel()  # outside the lock: its callbacks take it
        return True

    def close(self) -> None:
        self.ctx.cancel()


#: The C queue functions of libaimux (its cffi ``ffi`` and ``lib``), set by the library's init
#: code (``use_native_queues``): a stream opened through the C ABI then hands serialized batches
#: to a C queue its C consumers read without the interpreter lock. None in a plain Python process.
_native: Any = None
_native_ffi: Any = None

# _NativeStream's flags for _aimux_cq_flag (native/src/aimux_queue.c)
_Q_END, _Q_PY, _Q_CANCEL, _Q_STOPPED = 1, 2, 4, 8
# caller_stream.NativeCallerStream's: the end seen (Python answered it); read on the reader's
# thread; a blocking read came
_Q_DONE, _Q_PULL, _Q_BLOCKED = 16, 64, 128
# _aimux_cq_take's answers and wake-ups
_T_DATA, _T_END, _T_EMPTY, _T_PY, _T_OOM = 0, 1, 2, 3, 4
_W_ROOM, _W_RELIST = 1, 2


def use_native_queues(ffi: Any, lib: Any) -> None:
    """Called once by libaimux's init code: streams opened with ``native=True`` (the C ABI's)
    get a C queue (``_NativeStream``), the ready list is kept in C too (``aio.Notifier``), and
    a forked child forgets the parent's queues and listed handles."""
    global _native, _native_ffi
    _native_ffi, _native = ffi, lib
    on_fork_child(lib._aimux_cq_after_fork)
    lib._aimux_rl_enable()  # and the ready list (aio.Notifier), for aimux_ready / poll_ready
    if "aimux_ops.aio" in sys.modules and aio._notifier is not None:
        aio._notifier.adopt_native(ffi, lib)  # a Python host streamed before it loaded us


class _NativeStream(_Stream):
    """A stream opened through the C ABI (docs/DESIGN.md "Streams: a C queue per stream").

    The producer serializes each batch of events once, on the loop thread, and pushes the bytes
    to the stream's C queue; the C ABI's reads take them there without the interpreter lock and
    call into Python only when that queue is empty and the stream needs this side (the failed
    open of an event-driven stream, or events that only the per-event path could serialize, which
    then stay in the Python queue: the stream's "fallback"). The end, a cancel, the reaper's
    event and the high-water mark follow the Python queue's rules, in C. The consumer methods
    below serve Python callers of the same stream: the C queue first, then ``_Stream``'s own."""

    def __init__(self, handle: int, ctx: StreamContext, notify: bool) -> None:
        super().__init__(handle, ctx, notify)
        q = _native._aimux_cq_new(handle, 1 if notify else 0, _LOW_WATER)
        self._q = _native_ffi.gc(q, _native._aimux_cq_unref) if q else None
        self._fallback = q == _native_ffi.NULL  # no C queue (out of memory): Python's alone
        self._pushed = False  # pushed since the last flush
        self._count = 0  # the C queue's length after the last push (at least what it holds)
        self._py_readers = 0

    @property
    def _readers(self) -> int:
        """Consumers blocked in a read now: in the C queue or in ``_Stream._wait_locked``."""
        c = _native._aimux_cq_readers(self._q) if self._q is not None else 0
        _seen.c = c
        return self._py_readers + c

    @_readers.setter
    def _readers(self, value: int) -> None:
        # only ``_wait_locked``'s ``+= 1`` / ``-= 1`` (getter then setter, on one thread): keep
        # the Python count apart from the C count that getter added
        self._py_readers = value - getattr(_seen, "c", 0)
        _seen.c = 0

    # -- the producer -------------------------------------------------------------------------

    def _queued(self) -> int:
        n = len(self._events)
        return n if self._fallback else n + _native._aimux_cq_count(self._q)

    def _put(self, events: list[Any]) -> None:
        """Serialize ``events`` once and push them to the C queue (loop thread); events only the
        per-event path can serialize (or a failure) switch the stream to its Python queue."""
        if not self._fallback:
            try:
                data = _dump_batch(events, deque())
            except Exception:  # noqa: BLE001 - the consumer's per-event path reports it
                pass
            else:
                count = _native._aimux_cq_push(self._q, data, len(data), len(events))
                if count != _SIZE_MAX:
                    self._count = count
                    self._pushed = True
                    return
            self._fallback = True
            _native._aimux_cq_flag(self._q, _Q_PY)
        self._events.extend(events)

    def _produce(self, events: Callable[[], Iterator[Any]]) -> None:
        cancelled = self.ctx.cancelled
        self._greenlet = g = aio.current()
        if cancelled.is_set():
            return  # cancelled before it ran: nothing was opened
        if self._interrupt_pending:
            aio.interrupt(g)
        g.on_suspend = self._flush  # consumers are woken per push; the ready list per suspension
        put = self._put
        produced = False
        try:
            for item in events():
                batch = item if type(item) is EventBatch else [item]
                # the events of one network read: pushed at once while they fit under the
                # high-water mark, else up to it, then the producer waits for room (exactly as
                # _Stream._produce)
                while batch:
                    produced = True
                    if self._count + len(batch) < _HIGH_WATER and not self._fallback:
                        put(batch)
                        break
                    room = _HIGH_WATER - self._queued()
                    if len(batch) < room:
                        put(batch)
                        break
                    if room > 0:
                        put(batch[:room])
                        batch = batch[room:]
                    if cancelled.is_set():
                        if batch:
                            put(batch)
                        break
                    self._wait_room()
        except BaseException as exc:  # noqa: BLE001 - becomes the open failure or an event
            if not cancelled.is_set():
                if produced:
                    put([b'{"type":"error","error":' + project(exc) + b"}"])
                else:
                    self._open_exc = exc
        finally:
            g.on_suspend = None
            with self._cond:
                self._ended = True
                self._opened = True
                self._cond.notify_all()
            if self._q is not None:
                fallback = self._fallback or self._open_exc is not None
                _native._aimux_cq_flag(self._q, _Q_PY if fallback else _Q_END)
            if self._notifier is not None:
                self._notifier.mark(self.handle)

    def _flush(self) -> None:
        if self._fallback:
            super()._flush()
        if not self._pushed:
            return
        self._pushed = False
        if not self._opened:
            with self._cond:
                self._opened = True
                self._cond.notify_all()
        if self._notifier is not None:
            self._notifier.mark(self.handle)

    def _wait_room(self) -> None:
        import asyncio

        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._cond:
            if self._fallback and self._q is None:
                if len(self._events) < _HIGH_WATER:
                    return
            elif not _native._aimux_cq_want_room(self._q, _HIGH_WATER - len(self._events)):
                return
            self._space = fut
        aio.wait(fut)  # False: cancelled (the loop then sees it)

    def _took(self) -> None:
        fut = self._space
        if fut is not None and self._queued() <= _LOW_WATER:
            self._space = None
            fut.get_loop().call_soon_threadsafe(aio.set_none, fut)

    def _stopped(self, _future: object) -> None:
        super()._stopped(_future)
        if self._q is not None:
            _native._aimux_cq_flag(self._q, _Q_STOPPED)

    def _on_cancel(self) -> None:
        if self._q is not None:
            _native._aimux_cq_flag(self._q, _Q_CANCEL)  # the C reads end at once
        super()._on_cancel()

    def wake(self, what: int) -> None:
        """A C read reported ``_aimux_cq_take``'s wake-ups (any thread, no lock held)."""
        if what & _W_ROOM:
            with self._cond:
                self._took()
        if what & _W_RELIST and self._notifier is not None:
            self._notifier.mark(self.handle)

    def reap(self, idle_ms: int) -> bool:
        if self._q is None:
            return super().reap(idle_ms)
        with self._cond:
            if self._done or self._readers or self._reaped is not None:
                return False
            deadline = time.monotonic() - idle_ms / 1000
            if self.idle_since > deadline or _native._aimux_cq_last_read(self._q) > deadline:
                return False
            event = reap_timeout_event(idle_ms)
            if not _native._aimux_cq_reap(self._q, deadline, event, len(event)):
                return False
            self._reaped = event
            self._events.clear()
        self.ctx.cancel()  # outside the lock: its callbacks take it
        return True

    # -- consumers from Python (the C ABI reads the C queue itself) ------------------------------

    def _take_native(self, max_events: int, blocking: bool) -> tuple[int, bytes | None, bool]:
        """``_aimux_cq_take``: (answer, event or batch, ended); ``_T_PY`` without a C queue."""
        if self._q is None:
            return _T_PY, None, False
        return cq_take(self, self._q, max_events, blocking)

    def pull(self) -> Any:
        st, data, _ = self._take_native(0, True)
        if st == _T_PY:
            return super().pull()
        return data  # an event (bytes, as an op may hand over), or None at the end

    def take(self, max_events: int) -> Iterator[Any] | None:
        event = self.pull()
        return None if event is None else iter((event,))

    def poll(self, max_events: int) -> tuple[bytes | None, bool]:
        st, data, ended = self._take_native(max_events, False)
        if st == _T_PY:
            return super().poll(max_events)
        return data, ended

    def next_batch(self, max_events: int) -> tuple[bytes | None, bool]:
        st, data, ended = self._take_native(max_events, True)
        if st == _T_PY:
            return super().next_batch(max_events)
        return data, ended

    def _relist(self) -> None:
        if self._notifier is not None and (self._events or (self._q and self._queued())):
            self._notifier.mark(self.handle)


def cq_take(stream: Any, q: Any, max_events: int, blocking: bool) -> tuple[int, bytes | None, bool]:
    """``_aimux_cq_take`` of ``stream``'s C queue ``q``: (answer, event or batch, ended); its
    wake-ups go to ``stream.wake``. Shared by ``_NativeStream`` and
    ``caller_stream.NativeCallerStream``."""
    ffi, lib = _native_ffi, _native
    out = ffi.new("char **")
    ended = ffi.new("int32_t *")
    wake = ffi.new("int *")
    st = lib._aimux_cq_take(q, max_events, 1 if blocking else 0, out, ended, wake)
    data = None
    if out[0] != ffi.NULL:
        data = ffi.string(out[0])
        lib._aimux_cq_free_string(out[0])
    if wake[0]:
        stream.wake(wake[0])
    if st == _T_OOM or (st == _T_DATA and data is None):
        raise MemoryError("cannot take the stream's events")
    return st, data, bool(ended[0])


#: the C readers ``_NativeStream._readers``'s getter added, per thread (for its setter)
_seen = threading.local()

#: _aimux_cq_push's answer when it could not take the events (out of memory)
_SIZE_MAX = 2**64 - 1


#: every open stream: on the stream loop (``_Stream``), or read on its caller's thread
#: (``caller_stream.CallerStream``, the Python API's)
_streams: dict[int, _Stream | CallerStream] = {}
_streams_lock = threading.Lock()
_handles = itertools.count(1)

#: the reaper thread of this process (None until the first stream; reset in a forked child)
_reaper: threading.Thread | None = None
#: a forked child's inherited streams, kept reachable so that nothing of theirs runs there
_abandoned: list[dict[int, _Stream | CallerStream]] = []


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


def _start(
    op: str | bytes | None, params_json: bytes | str | None, notify: bool, native: bool = False
) -> _Stream:
    spec = _resolve(op, "stream")
    params = _validate(spec, params_json)
    ctx = StreamContext()
    kind = _NativeStream if native and _native is not None else _Stream
    with _streams_lock:
        handle = next(_handles)
        stream = kind(handle, ctx, notify)
        _streams[handle] = stream
    ctx.batches = True  # the producer takes an op's EventBatch as its events
    stream.start(lambda: iter(spec.handler(params, ctx)))
    _start_reaper()
    return stream


def open_stream(op: str | bytes | None, params_json: bytes | str | None) -> int:
    """Open a stream op on the stream loop and return its handle once its first event is in;
    raises the op's ``AimuxError`` on failure (a failure before the first event fails the
    open). The C ABI's blocking open reads on its caller's thread instead (``stream_json``)."""
    stream = _start(op, params_json, notify=False)
    try:
        stream.wait_open()
    except BaseException:
        stream_free(stream.handle)
        raise
    return stream.handle


def stream_json(
    op: str | bytes | None, params_json: bytes | str | None, native: bool = False
) -> tuple[int | None, bytes | None]:
    """Open a stream op: ``(handle, None)`` or ``(None, envelope JSON)``. Never raises.
    ``native`` (``aimux_stream``): the stream is read on its C reader's thread
    (``caller_stream.NativeCallerStream``), through a C queue when libaimux runs this core."""
    try:
        if native:
            from .caller_stream import open_here

            return open_here(op, params_json, native=True), None
        return open_stream(op, params_json), None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001
        return None, project(exc)


def stream_start_json(
    op: str | bytes | None, params_json: bytes | str | None, native: bool = False
) -> tuple[int | None, bytes | None]:
    """Start a stream op without waiting (``aimux_stream_start``): ``(handle, None)``, or
    ``(None, envelope)`` for a failure found before any I/O (op, params). A failure of the open
    itself is reported by the stream's first ``stream_poll_json`` / ``stream_next_json``; the
    handle is listed by ``ready_handles`` whenever it has something to poll. Never raises."""
    try:
        if native and _native is not None:
            from .caller_stream import start_on_thread

            handle = start_on_thread(op, params_json)
            if handle is not None:
                return handle, None
        return _start(op, params_json, notify=True, native=native).handle, None
    except KeyboardInterrupt:
        raise  # the host's, not the stream's (as in call_json)
    except BaseException as exc:  # noqa: BLE001
        return None, project(exc)


def stream_poll_json(handle: int, max_events: int) -> tuple[bytes | None, bool, bytes | None]:
    """Never blocks: ``(JSON array of events or None, ended, None)``, or ``(None, True,
    envelope)`` for an invalid handle or a failed open. Never raises."""
    try:
        stream = _lookup(handle)
    except KeyboardInterrupt:
        raise  # the host's, not the stream's (as in call_json)
    except BaseException as exc:  # noqa: BLE001
        return None, True, project(exc)
    return _poll(stream, max_events)


def stream_next_batch_json(handle: int, max_events: int) -> tuple[bytes | None, bool, bytes | None]:
    """``stream_poll_json`` that waits for a batch (``aimux_stream_next_batch``): ``(JSON array
    of events, ended, None)``, ``(None, True, None)`` at the end, or ``(None, True, envelope)``
    for an invalid handle or a failed open. Never raises."""
    try:
        batch, ended = _lookup(handle).next_batch(max(1, max_events))
        return batch, ended, None
    except _OpenFailed as exc:
        return None, True, project(exc.cause)
    except KeyboardInterrupt:
        raise  # the host's, not the stream's (as in call_json)
    except BaseException as exc:  # noqa: BLE001
        return None, True, project(exc)


def _poll(
    stream: _Stream | CallerStream, max_events: int
) -> tuple[bytes | None, bool, bytes | None]:
    """``stream.poll`` with its failures projected: ``(batch, ended, envelope or None)``."""
    try:
        batch, ended = stream.poll(max(1, max_events))
        return batch, ended, None
    except _OpenFailed as exc:
        return None, True, project(exc.cause)
    except KeyboardInterrupt:
        raise  # the host's, not the stream's (as in call_json)
    except BaseException as exc:  # noqa: BLE001
        return None, True, project(exc)


def ready_handles(capacity: int) -> list[int]:
    """Up to ``capacity`` handles of event-driven streams with something to poll."""
    return aio.notifier().take(capacity)


def poll_ready_json(max_events: int) -> bytes | None:
    """``ready_handles`` and ``stream_poll_json`` of each in one step (``aimux_poll_ready``): a
    JSON array of ``[handle, ended, events or null, open-failure envelope or null]``, one entry
    per listed stream that still exists, or None when none is listed. Never raises."""
    entries = [e for h in aio.notifier().take(1 << 30) if (e := poll_entry_json(h, max_events))]
    if not entries:
        return None
    return b"[" + b",".join(entries) + b"]"


def poll_entry_json(handle: int, max_events: int) -> bytes | None:
    """One entry of ``poll_ready_json``, or None when the stream was freed since it was listed
    (``aimux_poll_ready`` asks this for a stream its C queue cannot answer). Never raises."""
    stream = _streams.get(handle)
    if stream is None:
        return None
    batch, ended, env = _poll(stream, max_events)
    return b"[%d,%d,%s,%s]" % (handle, 1 if ended else 0, batch or b"null", env or b"null")


def stream_wake(handle: int, what: int) -> None:
    """A C read of ``handle``'s C queue needs this side (``_aimux_cq_take``'s wake-ups: let a
    producer waiting for room go on, list the stream again). Never raises."""
    stream = _streams.get(handle)
    wake = getattr(stream, "wake", None)  # a stream with a C queue
    if wake is not None:
        wake(what)


def events_fd() -> int:
    """The read end of the process's notification pipe (``aimux_events_fd``)."""
    return aio.notifier().rfd


@on_fork_child
def reset_after_fork() -> None:
    """In a forked child: no stream of the parent (their handles are 203 here), fresh lock, no
    reaper yet, and a new stream loop and pipe on first use (``aio.reset_after_fork``). Handles
    keep counting up, so no parent handle is ever reused."""
    global _streams, _streams_lock, _reaper
    _abandoned.append(_streams)
    for stream in _streams.values():
        stream._drop_held()  # a consumer's next event here is the 203 of its handle
    _streams = {}
    _streams_lock = threading.Lock()
    _reaper = None
    if "aimux_ops.aio" in sys.modules:  # else there is no loop or pipe to reset
        aio.reset_after_fork()


def _lookup(handle: int) -> _Stream | CallerStream:
    stream = _streams.get(handle)  # a single dict read is atomic: no lock on the hot path
    if stream is None:
        from .errors import InvalidHandleError

        raise InvalidHandleError(
            f"stream handle {handle} is unknown, stale or freed", handle=handle
        )
    return stream


def stream_next_json(handle: int) -> Reply:
    """The next event: ``(event, None)``; ``(None, None)`` at the end; ``(None, envelope)`` for
    an invalid handle (or the failed open of an event-driven stream). Never raises."""
    try:
        return _lookup(handle).next(), None
    except _OpenFailed as exc:
        return None, project(exc.cause)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001
        return None, project(exc)


def stream_next_object(handle: int) -> tuple[Any, bytes | None]:
    """``stream_next_json`` for in-process callers (the Python binding): the event as the op
    produced it — a dict not yet serialized, or bytes — so it is not dumped and parsed again."""
    try:
        return _lookup(handle).pull(), None
    except _OpenFailed as exc:
        return None, project(exc.cause)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001
        return None, project(exc)


def stream_next_objects(handle: int, max_events: int = 256) -> tuple[Any, bytes | None]:
    """``stream_next_object`` for a batch (the Python binding): ``(iterator over up to
    ``max_events`` events, None)``, ``(None, None)`` at the end, ``(None, envelope)``."""
    try:
        return _lookup(handle).take(max_events), None
    except _OpenFailed as exc:
        return None, project(exc.cause)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001
        return None, project(exc)


def stream_tool_result_json(
    handle: int, tool_call_id: str | bytes | None, answer_json: bytes | str | None
) -> bytes | None:
    """The host's answer to one of a stream's host tool calls (``aimux_stream_tool_result``,
    any thread): None when taken, else the envelope — 203 for a stream that is unknown, freed or
    ended, 301 for a call the stream does not wait for or an answer that is not one (the call
    still waits for its answer), 201 / 202 / 204 for text that cannot be read. Never raises."""
    try:
        from .ops.answers import parse_answer

        if tool_call_id is None or answer_json is None:
            from .errors import NullArgumentError

            which = "tool_call_id" if tool_call_id is None else "answer_json"
            raise NullArgumentError(f"{which} is NULL", argument=which)
        stream = _lookup(handle)
        if isinstance(tool_call_id, bytes):
            try:
                tool_call_id = tool_call_id.decode("utf-8")
            except UnicodeDecodeError as exc:
                from .errors import InvalidUTF8Error

                raise InvalidUTF8Error(
                    "tool_call_id is not valid UTF-8", argument="tool_call_id"
                ) from exc
        answer = parse_answer(answer_json)
        answers = stream.ctx.answers
        if answers is None:  # a stream without host tools: nothing to answer
            from .ops.answers import refused

            raise refused("tool_call_id", f"no such pending call: {tool_call_id[:200]!r}")
        answers.put(tool_call_id, answer)
        return None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the boundary: everything is projected
        return project(exc)


def stream_cancel(handle: int) -> None:
    """Cancel a stream from any thread (wakes a blocked ``stream_next_json``)."""
    with _streams_lock:
        stream = _streams.get(handle)
    if stream is not None:
        stream.ctx.cancel()


def stream_free(handle: int) -> None:
    """Cancel and forget a stream; its handle is stale from now on."""
    with _streams_lock:
        stream = _streams.pop(handle, None)
    if stream is not None:
        stream.close()
        if _native is not None and hasattr(stream, "_q"):  # a stream with a C queue
            _native._aimux_cq_unregister(handle)


#: how long a Python host's exit lets the loop's streams end before the loop stops
_EXIT_WAIT_S = 1.0


def stop_loop_at_exit() -> None:
    """A Python host's exit (an ``atexit`` hook: it runs before the interpreter finalizes, and
    never in a C host, whose embedded interpreter is never finalized). The stream loop's daemon
    thread must not resume a stream greenlet while the interpreter tears down its threads and
    modules (a SIGSEGV in greenlet, DESIGN.md "The host's exit" → "A Python host's exit"), so:
    the streams still producing, on the loop and on reader threads of the core, are cancelled
    (their readers get the end, as after ``aimux_stream_cancel``), the loop gets at most
    ``_EXIT_WAIT_S`` for its tasks to end, then stops, and its thread is joined; the reader
    threads get what is left of the same bound. A stream whose producer was left suspended (on
    the loop) or still blocked (on its reader thread) is marked stopped: nothing waits for it.
    Streams that had ended keep their unread events.
    Nothing happens in a process whose streams never used the loop or a reader thread."""
    streams = list(_streams.values())
    readers: list[Any] = [s for s in streams if getattr(s, "_pump_thread", None) is not None]
    for stream in streams:  # the producers still running: on the loop, on reader threads
        if (isinstance(stream, _Stream) or stream in readers) and not stream._ended:
            stream.ctx.cancel()
    deadline = time.monotonic() + _EXIT_WAIT_S
    if "aimux_ops.aio" in sys.modules:
        aio.stop(_EXIT_WAIT_S)
        for left in list(_streams.values()):
            if isinstance(left, _Stream) and not left._stopped_flag:
                # left suspended (e.g. a request still connecting, which a cancel does not
                # interrupt): its producer never runs again, so its readers get the end now
                # rather than after the op's cleanup (which a cancel's reader waits for)
                left.ctx.cancel()
                left._stopped(None)
    for stream in readers:
        thread = stream._pump_thread
        if thread is not threading.current_thread():
            thread.join(max(deadline - time.monotonic(), 0.0))
        if thread.is_alive() and _native is not None and stream._q is not None:
            # still blocked (its request still connecting): its readers get the end now
            _native._aimux_cq_flag(stream._q, _Q_STOPPED)


atexit.register(stop_loop_at_exit)
