"""The dispatch boundary: op name + params JSON in, result JSON or envelope JSON out.

These are the entry points the shared library calls (DESIGN.md); none of them raises, except
``KeyboardInterrupt`` (a Python host's own SIGINT, which is not the call's error). Every
failure — wire (201/202/204), protocol (300/301/302), an op's own error, or an unexpected
exception (208) — is projected here, once, by ``envelope.project``.

Streams live in a handle registry: handles count up from 1 and are never reused; a stale, freed or
unknown handle answers 203. ``stream_json`` runs the op until its first event (so a failure before
the first event — where retries happen — fails the open); later failures become one terminal
``error`` event. ``stream_cancel`` may be called from any thread: it wakes a blocked
``stream_next_json``, which then reports the end.

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

import itertools
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from . import ops as _ops  # noqa: F401 - declares every op (each module loads on first use)
from ._version import ABI_VERSION, __version__
from .guest import limits, on_fork_child
from .ops.registry import OpSpec, StreamContext, all_ops, get_op

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "call_json",
    "open_stream",
    "stream_cancel",
    "stream_free",
    "stream_json",
    "stream_next_json",
    "stream_next_object",
]

Reply = tuple[bytes | None, bytes | None]


def project(exc: BaseException) -> bytes:
    """``envelope.project``, imported on the first failure."""
    from .envelope import project as _project

    return _project(exc)


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

        from .errors import InvalidParamsError, SourceError, Violation

        if not isinstance(exc, ValidationError):
            raise
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


def _op_names() -> list[str]:
    return sorted(s.name for s in all_ops())


def _resolve(op: str | bytes | None, mode: str) -> OpSpec:
    name = op if type(op) is str else _op_name(op)
    spec = get_op(name)
    if spec is not None and spec.mode == mode:
        return spec
    from .errors import UnknownOpError, WrongModeError

    if spec is None:
        raise UnknownOpError(f"unknown op {name[:200]!r}", op=name[:200], available_ops=_op_names())
    if spec.mode != mode:
        raise WrongModeError(
            f"op {name!r} is a {spec.mode} op; use aimux_{spec.mode}",
            op=name,
            expected=spec.mode,
        )
    return spec


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


def call_json(op: str | bytes | None, params_json: bytes | str | None) -> Reply:
    """Run a call op: ``(result JSON, None)`` or ``(None, envelope JSON)``. Never raises."""
    try:
        if params_json is not None and len(params_json) <= _PURE_KEY_MAX:
            cached = _pure_results.get((op, params_json))  # type: ignore[arg-type]
            if cached is not None:
                return cached, None
        spec = _resolve(op, "call")
        params = _validate(spec, params_json)
        result = _dump(spec.handler(params))
        if spec.pure and op is not None and params_json is not None:
            if len(params_json) <= _PURE_KEY_MAX and len(_pure_results) < 1024:
                _pure_results[(op, params_json)] = result
        return result, None
    except KeyboardInterrupt:
        raise  # the host's, not the call's (see _Stream.pull)
    except BaseException as exc:  # noqa: BLE001 - the boundary: everything is projected
        return None, project(exc)


# -- streams ------------------------------------------------------------------------------------


class _Stream:
    """One open stream: the op's event iterator, pulled by ``next`` under a lock."""

    def __init__(self, handle: int, events: Iterator[Any], ctx: StreamContext) -> None:
        self.handle = handle
        self._events = events
        self.ctx = ctx
        self._lock = threading.Lock()
        self._pending: Any = None
        self._done = False
        #: monotonic time of the last read's end (or of the open); None while a read runs
        self.idle_since: float | None = time.monotonic()
        #: the terminal event of a stream the reaper closed
        self._reaped: bytes | None = None

    def prime(self) -> None:
        """Pull the first event; an exception here fails the open."""
        try:
            self._pending = next(self._events)
        except StopIteration:
            self._done = True

    def pull(self) -> Any:
        """The next event as the op produced it (a JSON-ready dict, or bytes), the terminal
        ``error`` event as bytes, or None at the end (and after a cancel)."""
        with self._lock:
            self.idle_since = None
            try:
                return self._pull_locked()
            finally:
                self.idle_since = time.monotonic()

    def _pull_locked(self) -> Any:
        if self._reaped is not None:
            event, self._reaped = self._reaped, None
            return event
        if self._pending is not None:
            event, self._pending = self._pending, None
            return event
        if self._done or self.ctx.cancelled.is_set():
            self._done = True
            return None
        try:
            return next(self._events)
        except StopIteration:
            self._done = True
            return None
        except KeyboardInterrupt:
            # Only a Python host sharing the interpreter and handling SIGINT gets here: the
            # interrupt is the host's (never a 208); the shim reports the call as aborted (13)
            # and hands the interrupt back (DESIGN.md "Signals").
            self._done = True
            raise
        except BaseException as exc:  # noqa: BLE001 - becomes the terminal error event
            self._done = True
            if self.ctx.cancelled.is_set():
                return None
            return b'{"type":"error","error":' + project(exc) + b"}"

    def reap(self, idle_ms: int) -> bool:
        """Close the stream if nobody reads it (called by the reaper); True when closed."""
        if not self._lock.acquire(blocking=False):
            return False  # a read is running: not idle
        try:
            since = self.idle_since
            if self._done or since is None or (time.monotonic() - since) * 1000 < idle_ms:
                return False
            self._done = True
            self._pending = None
            from .errors import TimeoutError as AITimeoutError

            err = AITimeoutError(
                f"The stream was closed by the core after {idle_ms} ms without a read "
                f"(AIMUX_STREAM_IDLE_TIMEOUT_MS).",
                timeout_ms=idle_ms,
            )
            self._reaped = b'{"type":"error","error":' + project(err) + b"}"
            self.ctx.cancel()
            close = getattr(self._events, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:  # noqa: BLE001 - best effort
                    pass
            return True
        finally:
            self._lock.release()

    def next(self) -> bytes | None:
        event = self.pull()
        return None if event is None else _dump(event)

    def close(self) -> None:
        self.ctx.cancel()
        close = getattr(self._events, "close", None)
        if close is not None and self._lock.acquire(blocking=False):
            try:
                close()
            except Exception:  # noqa: BLE001 - best effort
                pass
            finally:
                self._lock.release()


_streams: dict[int, _Stream] = {}
_streams_lock = threading.Lock()
_handles = itertools.count(1)

#: the reaper thread of this process (None until the first stream; reset in a forked child)
_reaper: threading.Thread | None = None
#: a forked child's inherited streams, kept reachable so that nothing of theirs runs there
_abandoned: list[dict[int, _Stream]] = []


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


@on_fork_child
def _reset_after_fork() -> None:
    """In a forked child: no stream of the parent (their handles are 203 here), fresh lock, no
    reaper yet. Handles keep counting up, so no parent handle is ever reused."""
    global _streams, _streams_lock, _reaper
    _abandoned.append(_streams)
    _streams = {}
    _streams_lock = threading.Lock()
    _reaper = None


def open_stream(op: str | bytes | None, params_json: bytes | str | None) -> int:
    """Open a stream op and return its handle; raises the op's ``AimuxError`` on failure."""
    spec = _resolve(op, "stream")
    params = _validate(spec, params_json)
    ctx = StreamContext()
    with _streams_lock:
        handle = next(_handles)
    stream = _Stream(handle, iter(spec.handler(params, ctx)), ctx)
    stream.prime()
    stream.idle_since = time.monotonic()
    with _streams_lock:
        _streams[handle] = stream
    _start_reaper()
    return handle


def stream_json(
    op: str | bytes | None, params_json: bytes | str | None
) -> tuple[int | None, bytes | None]:
    """Open a stream op: ``(handle, None)`` or ``(None, envelope JSON)``. Never raises."""
    try:
        return open_stream(op, params_json), None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001
        return None, project(exc)


def _lookup(handle: int) -> _Stream:
    stream = _streams.get(handle)  # a single dict read is atomic: no lock on the hot path
    if stream is None:
        from .errors import InvalidHandleError

        raise InvalidHandleError(
            f"stream handle {handle} is unknown, stale or freed", handle=handle
        )
    return stream


def stream_next_json(handle: int) -> Reply:
    """The next event: ``(event, None)``; ``(None, None)`` at the end; ``(None, envelope)`` for
    an invalid handle. Never raises."""
    try:
        return _lookup(handle).next(), None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001
        return None, project(exc)


def stream_next_object(handle: int) -> tuple[Any, bytes | None]:
    """``stream_next_json`` for in-process callers (the Python binding): the event as the op
    produced it — a dict not yet serialized, or bytes — so it is not dumped and parsed again."""
    try:
        return _lookup(handle).pull(), None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001
        return None, project(exc)


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
