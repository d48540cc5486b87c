"""The runtime of the typed Python API (``api._generated`` is generated over it): the result
objects' base (``Obj``), the ``NOT_GIVEN`` marker, and the typed streams, sync (``TextStream``)
and asyncio (``AsyncTextStream``).

Results and events keep the JSON as received: every field the model declares is an attribute
(snake_case), a field this version does not know stays readable (``obj["newField"]``,
``obj.raw``), and ``"field" in obj`` tells a field left out from one sent as null.

The asyncio API (``aimux_ops.aio``) runs on the one stream engine: no second I/O stack and no
thread per call. A stream's blocking steps (its open, each network read) and a call op run on
one small process-wide pool (``AIMUX_AIO_THREADS``, default 16) and are awaited; a cancel of the
awaiting task cancels the stream at once from the loop's thread (the engine's cancel: the
blocked read wakes, the retry wait ends) and every ``execute`` still running (an ``async`` one
is a task of the loop, cancelled; a sync one runs on the loop's default executor and its answer
is dropped). A call op has no cancel: a cancelled ``await`` returns at once, the call runs to
its end on the pool. A pool thread is held by a network read and by a loop waiting for its
tools' answers (the core waits inside the read): more streams than threads take turns, and a
tool that itself awaits an aio call needs a free one (raise ``AIMUX_AIO_THREADS`` for deep
nesting).
"""

from __future__ import annotations

import inspect
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import orjson

from .._lazy import LazyModule
from ..guest import on_fork_child
from .tools import (
    HOST_TOOL_OPS,
    Execute,
    ResultBuilder,
    ToolResult,
    _Host,
    answering,
    native_error,
    run_to_result,
    with_tools,
)

if TYPE_CHECKING:
    import asyncio

    from ..errors import AimuxError
else:
    asyncio = LazyModule("asyncio", globals(), "asyncio")  # the sync API never loads it

__all__ = [
    "NOT_GIVEN",
    "AsyncExecute",
    "AsyncTextStream",
    "NotGiven",
    "Obj",
    "TextStream",
    "EventClasses",
    "UnknownEvent",
    "async_run_call",
    "given",
    "run_call",
    "wrap",
    "wrap_list",
]

T = TypeVar("T")
ObjT = TypeVar("ObjT", bound="Obj")
#: a stream's event type (``api._generated.StreamEvent``)
EventT = TypeVar("EventT")

#: tool name -> the function that runs it, sync or ``async`` (the asyncio API)
AsyncExecute = Mapping[str, Callable[[Any], Any]]


class NotGiven:
    """A keyword argument left out: the field is not sent (``None`` sends null)."""

    _instance: NotGiven | None = None

    def __new__(cls) -> NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()


def given(extra: Mapping[str, Any] | None, pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The params of a typed call: the fields given (wire keys), then ``extra`` as it is."""
    params = {key: value for key, value in pairs if value is not NOT_GIVEN}
    if extra:
        params.update(extra)
    return params


class Obj:
    """A result, an event or a part of one: attribute access over the JSON as received."""

    __slots__ = ("_error", "_raw")

    def __init__(self, raw: Mapping[str, Any], error: BaseException | None = None) -> None:
        self._raw: Mapping[str, Any] = raw
        self._error = error

    @property
    def raw(self) -> Mapping[str, Any]:
        """The JSON object as received, unknown fields included."""
        return self._raw

    def to_dict(self) -> dict[str, Any]:
        return dict(self._raw)

    def __getitem__(self, key: str) -> Any:
        return self._raw[key]

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def get(self, key: str, default: Any = None) -> Any:
        return self._raw.get(key, default)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Obj) and type(other) is type(self) and other._raw == self._raw

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self._raw)!r})"

    def _decoded(self) -> AimuxError:
        """The ``error`` envelope as the native exception (decoded once)."""
        if self._error is None:
            from ..wire.envelope import decode_error

            self._error = decode_error(self._raw["error"])
        return self._error  # type: ignore[return-value]


class UnknownEvent(Obj):
    """An event of a type this version does not know (a newer core's): kept as it came."""

    __slots__ = ()

    @property
    def type(self) -> str:
        return str(self._raw.get("type"))


def wrap(cls: type[ObjT], value: Any) -> ObjT | None:
    return None if value is None else cls(value)


def wrap_list(cls: type[ObjT], value: Any) -> list[ObjT] | None:
    return None if value is None else [cls(item) for item in value]


#: event type -> its class (``api._generated.EVENT_CLASSES``, which every stream is given)
EventClasses = Mapping[str, type[Obj]]


def _event(classes: EventClasses, raw: dict[str, Any], error: BaseException | None = None) -> Any:
    # the class of the event's type: an instance of the stream's event union
    return classes.get(str(raw.get("type")), UnknownEvent)(raw, error)


# -- sync ------------------------------------------------------------------------------------


def run_call(op: str, params: dict[str, Any], execute: Execute | None = None) -> dict[str, Any]:
    from .calls import call

    result: dict[str, Any] = call(op, params, execute=execute)
    return result


class TextStream(Generic[EventT]):
    """The typed events of a stream op, in order; a failure before the first event raises,
    a later one is an ``ErrorEvent`` whose ``error`` is the decoded exception (the last event).
    ``close()`` (or leaving a ``with`` block) cancels the stream."""

    def __init__(
        self,
        op: str,
        params: dict[str, Any],
        execute: Execute | None = None,
        classes: EventClasses | None = None,
    ) -> None:
        from ..boundary.dispatch import stream_free, stream_json, stream_next_objects
        from ._io import events, params_json
        from .calls import PY_API

        if execute:
            params = with_tools(params, execute)
        handle, envelope = stream_json(op, params_json(params), api=PY_API)
        if envelope is not None:
            from ..wire.envelope import decode_error

            raise decode_error(envelope)
        assert handle is not None
        self._classes: EventClasses = classes or {}
        taken = events(handle, stream_next_objects, stream_free)
        self._host = _Host(handle, execute) if execute else None
        self._events: Iterator[dict[str, Any]] = (
            answering(handle, taken, execute, self._host) if execute else taken
        )

    def __iter__(self) -> TextStream[EventT]:
        return self

    def __next__(self) -> EventT:
        raw = next(self._events)
        error = (
            self._host.native(raw["error"]) if raw.get("type") == "error" and self._host else None
        )
        event: EventT = _event(self._classes, raw, error)
        return event

    def close(self) -> None:
        close = getattr(self._events, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> TextStream[EventT]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- asyncio ---------------------------------------------------------------------------------

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


@on_fork_child
def _no_pool_after_fork() -> None:
    """In a forked child: no pool (the parent's threads are not in it) and a fresh lock."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


def _the_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                size = int(os.environ.get("AIMUX_AIO_THREADS", "16") or 16)
                _pool = ThreadPoolExecutor(max(1, size), thread_name_prefix="aimux-aio")
    return _pool


def _forget_pool() -> None:
    global _pool
    _pool = None  # a forked child's threads are not there: a new pool on first use


os.register_at_fork(after_in_child=_forget_pool)


async def _offload(
    fn: Callable[[], T],
    on_cancel: Callable[[], None] | None = None,
    on_lost: Callable[[T], None] | None = None,
) -> T:
    """``fn()`` on the pool, awaited; a cancel runs ``on_cancel`` at once (the engine's cancel
    wakes ``fn``) and gives what ``fn`` still returns to ``on_lost`` (a handle to free)."""
    future: Future[T] = _the_pool().submit(fn)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        if on_cancel is not None:
            on_cancel()
        if on_lost is not None:
            lost = on_lost

            def done(f: Future[T]) -> None:
                if not f.cancelled() and f.exception() is None:
                    lost(f.result())

            future.add_done_callback(done)
        raise


async def async_run_call(
    op: str, params: dict[str, Any], execute: AsyncExecute | None = None
) -> dict[str, Any]:
    """A call op on the asyncio API. With ``execute``, ``generate_text`` runs as
    ``stream_text`` (the loop; a cancel reaches its network read and its tools) and its result
    is put together as the sync API's (``tools.ResultBuilder``). Without, the call op itself
    runs on the pool (the same request and result as the sync call): a cancel returns at once,
    the call runs to its end there (bounded by ``timeoutMs``; a call op has no cancel)."""
    if execute:
        if op not in HOST_TOOL_OPS:
            return run_to_result(op, params, execute)  # raises the clear error of a call op
        builder = ResultBuilder()
        stream: AsyncTextStream[Obj] = AsyncTextStream("stream_text", params, execute)
        async with stream:
            async for event in stream:
                builder.add(event.to_dict())
                if event.raw.get("type") == "error":
                    raise event._decoded()
        return builder.result()
    from .calls import call

    result: dict[str, Any] = await _offload(lambda: call(op, params))
    return result


class _AsyncHost:
    """One async stream's running tools: each call a task of the loop; answered from it."""

    def __init__(self, execute: AsyncExecute) -> None:
        self.execute = execute
        self.handle = 0
        self.raised: dict[str, BaseException] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    def start(self, event: dict[str, Any]) -> None:
        fn = self.execute.get(event.get("toolName", ""))
        if fn is None or event.get("invalid"):
            return
        task = asyncio.get_running_loop().create_task(
            self._run(event["toolCallId"], fn, event.get("input"))
        )
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _run(self, call_id: str, fn: Callable[[Any], Any], value: Any) -> None:
        from ..boundary.dispatch import stream_tool_result_json

        try:
            if inspect.iscoroutinefunction(fn):
                got = await fn(value)
            else:  # not the stream pool: a sync tool must never wait behind the reads
                got = await asyncio.get_running_loop().run_in_executor(None, fn, value)
            if inspect.isawaitable(got):
                got = await got
            answer = got.answer() if isinstance(got, ToolResult) else {"output": got}
            text = orjson.dumps(answer)
        except asyncio.CancelledError:
            raise  # the stream was cancelled: nobody takes an answer
        except BaseException as exc:  # noqa: BLE001 - the framework layer: the caller gets it
            from ..wire.causes import capture

            self.raised[call_id] = exc
            text = orjson.dumps({"failure": capture(exc)})
        stream_tool_result_json(self.handle, call_id, text)

    def cancel(self) -> None:
        for task in list(self.tasks):
            task.cancel()

    def native(self, envelope: dict[str, Any]) -> BaseException:
        return native_error(envelope, self.raised)


class AsyncTextStream(Generic[EventT]):
    """The typed events of a stream op on the asyncio API (``async for``); a failure before
    the first event raises from the first ``__anext__``. Leaving ``async with``, ``aclose()``
    or a cancel of the awaiting task cancels the stream and the tools still running."""

    def __init__(
        self,
        op: str,
        params: dict[str, Any],
        execute: AsyncExecute | None = None,
        classes: EventClasses | None = None,
    ) -> None:
        self._op = op
        self._classes: EventClasses = classes or {}
        self._params = with_tools(params, execute) if execute else params
        self._host = _AsyncHost(execute) if execute else None
        self._handle: int | None = None
        self._batch: deque[dict[str, Any]] = deque()
        self._done = False

    async def _open(self) -> int:
        from ..boundary.dispatch import stream_free, stream_json
        from ._io import params_json
        from .calls import PY_API

        text = params_json(self._params)
        cancels: list[Callable[[], None]] = []

        def open_() -> tuple[int | None, bytes | None]:
            return stream_json(self._op, text, api=PY_API, on_open=cancels.append)

        def cancel() -> None:
            for c in cancels:
                c()

        def lost(reply: tuple[int | None, bytes | None]) -> None:
            if reply[0] is not None:
                stream_free(reply[0])

        handle, envelope = await _offload(open_, cancel, lost)
        if envelope is not None:
            from ..wire.envelope import decode_error

            self._done = True
            raise decode_error(envelope)
        assert handle is not None
        self._handle = handle
        if self._host is not None:
            self._host.handle = handle
        return handle

    async def _fill(self) -> None:
        from ..boundary.dispatch import stream_next_objects

        handle = self._handle if self._handle is not None else await self._open()

        def take() -> tuple[list[Any] | None, bytes | None]:
            batch, envelope = stream_next_objects(handle)
            return (None if batch is None else list(batch)), envelope

        batch, envelope = await _offload(take, self._cancel)
        if envelope is not None:
            from ..wire.envelope import decode_error

            await self.aclose()
            raise decode_error(envelope)
        if batch is None:
            self._done = True
            return
        for event in batch:
            self._batch.append(event if type(event) is dict else orjson.loads(event))

    def __aiter__(self) -> AsyncTextStream[EventT]:
        return self

    async def __anext__(self) -> EventT:
        while not self._batch:
            if self._done:
                await self.aclose()
                raise StopAsyncIteration
            await self._fill()
        raw = self._batch.popleft()
        kind = raw.get("type")
        if kind == "tool-call" and self._host is not None:
            self._host.start(raw)
        error = None
        if kind == "error":
            self._done = True
            self._batch.clear()
            if self._host is not None:
                error = self._host.native(raw["error"])
        event: EventT = _event(self._classes, raw, error)
        return event

    def _cancel(self) -> None:
        """A cancel from the loop's thread: the stream (its read wakes) and its tools."""
        if self._host is not None:
            self._host.cancel()
        if self._handle is not None:
            from ..boundary.dispatch import stream_free

            stream_free(self._handle)
            self._handle = None
        self._done = True

    async def aclose(self) -> None:
        self._cancel()

    def __del__(self) -> None:
        # a stream dropped unfinished (no ``async with``): freed now, not by the idle reaper
        if self._handle is not None:
            from ..boundary.dispatch import stream_free

            stream_free(self._handle)  # never raises

    async def __aenter__(self) -> AsyncTextStream[EventT]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
