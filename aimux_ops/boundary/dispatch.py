"""The dispatch boundary: op name + params JSON in, result JSON or envelope JSON out.

These are the entry points the shared library calls (DESIGN.md); none of them raises, except
``KeyboardInterrupt`` (a Python host's own SIGINT, which is not the call's error). Every
failure — wire (201/202/204), protocol (300/301/302), an op's own error, or an unexpected
exception (208) — is projected here, once, by ``envelope.project``.

The stream entry points are a thin boundary over the stream engine (``streams``): here an op's
name and params are resolved and validated and every failure is projected; the engine runs the
stream (``streams.stream`` says how each surface reads it; ``streams.registry`` holds the
handles, the reaper and the reader threads' limit). ``stream_json`` waits until the first event
(a failure before it — where retries happen — fails the open); later failures become one
terminal ``error`` event. ``stream_start_json`` returns at once; its stream is drained without
blocking by ``stream_poll_json`` when ``ready_handles`` lists it, the pipe of ``events_fd``
telling the host when to look. ``stream_next_batch_json`` blocks like ``stream_next_json`` but
takes every event ready (up to a maximum) as one JSON array. ``stream_cancel`` may be called
from any thread: it wakes a blocked read, which then reports the end.

Cold start: importing this module loads no pydantic model, no error class, no provider and no
HTTP client; the errors, the projection and each op's module load the first time they are needed,
and ``aimux.version``'s answer is precomputed (the result its op would serialize). A provider op's
params on a common shape are checked by ``ops.precheck`` (its table generated from the models),
every other input by pydantic, so a successful replay never loads pydantic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import orjson

from .. import ops as _ops  # noqa: F401 - declares every op (each module loads on first use)
from .._version import VERSION_ANSWER
from ..guest import fork_waits_inside, on_fork_child
from ..ops import registry
from ..ops.precheck import precheck
from ..ops.registry import Deferred, OpSpec, StreamContext, all_ops, get_op
from ..streams import cqueue
from ..streams import registry as _registry
from ..streams.ready import adopt_native, ready_list
from ..streams.stream import OpenFailed
from ..streams.stream import dump as _dump

if TYPE_CHECKING:
    from types import ModuleType


__all__ = [
    "call_json",
    "events_fd",
    "open_stream",
    "poll_entry_json",
    "poll_ready_json",
    "ready_handles",
    "stream_cancel",
    "stream_free",
    "stream_response_headers",
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
    from ..wire.envelope import project as loaded

    globals()["project"] = loaded
    return loaded(exc)


def _op_name(op: str | bytes | None) -> str:
    if isinstance(op, bytes):
        try:
            return op.decode("utf-8")
        except UnicodeDecodeError as exc:
            from ..errors import InvalidUTF8Error

            raise InvalidUTF8Error("op is not valid UTF-8", argument="op") from exc
    from ..errors import NullArgumentError, UnknownOpError

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


@fork_waits_inside  # pydantic_core's ValidationError.errors(), called directly
def _validation_errors(exc: Any) -> list[Any]:
    return list(exc.errors())


def _validate(spec: OpSpec, params_json: bytes | str | None) -> Any:
    if params_json is None:
        from ..errors import NullArgumentError

        raise NullArgumentError("params_json is NULL", argument="params_json")
    try:
        data = orjson.loads(params_json)
    except orjson.JSONDecodeError as exc:
        from ..errors import InvalidUTF8Error, InvalidWireJSONError

        if isinstance(params_json, bytes):
            try:
                params_json.decode("utf-8")
            except UnicodeDecodeError as utf8_exc:
                raise InvalidUTF8Error(
                    "params_json is not valid UTF-8", argument="params_json"
                ) from utf8_exc
        raise InvalidWireJSONError("params_json is not valid JSON", argument="params_json") from exc
    declared = spec.declared_params
    if type(declared) is Deferred and declared.module == _MODELS:
        checked = precheck(declared.name, data)  # a common shape: no pydantic (cold start)
        if checked is not None:
            return checked
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
            Violation(path=_violation_path(tuple(e["loc"])), reason=e["msg"])
            for e in _validation_errors(exc)
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
#: the module of the params models the pre-check's table is generated from
_MODELS = "aimux_ops.ops.models"


def _load_errors() -> ModuleType:
    """``aimux_ops.errors``, imported on the first failure (then kept)."""
    global _errors
    from .. import errors

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


#: How a caller runs an op of each mode, named in a wrong mode's message: the C ABI's names by
#: default; a binding that calls in-process passes its own (the Python API: ``api.calls``).
C_API = {"call": "aimux_call", "stream": "aimux_stream"}


def _resolve(op: str | bytes | None, mode: str, api: dict[str, str] = C_API) -> OpSpec:
    """The op ``op`` names; raises the error its call fails with (unknown op, wrong mode,
    whose message names ``api``'s way to run it)."""
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
        f"op {name!r} is a {spec.mode} op; use {api.get(spec.mode, spec.mode)}",
        op=name,
        expected=spec.mode,
    )


#: Results of pure ops (``aimux.version``, ``aimux.manifest``) by (op, params bytes): the
#: hottest calls across the C ABI answer without validation or serialization.
_pure_results: dict[tuple[str | bytes, bytes | str], bytes] = {}
_PURE_KEY_MAX = 256
# aimux.version with the empty object, precomputed: the answer ops/meta.py's handler gives (a
# test checks they agree), without importing the op's models on the first call.
_VERSION = VERSION_ANSWER
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


def call_json(
    op: str | bytes | None, params_json: bytes | str | None, api: dict[str, str] = C_API
) -> Reply:
    """Run a call op: ``(result JSON, None)`` or ``(None, envelope JSON)``. Never raises.
    ``api``: the caller's names for running each mode (a wrong mode's message)."""
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
        spec = _resolve(op, "call", api)
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


# -- streams: the boundary of the engine (``streams``) -------------------------------------------


def _stream_op(
    op: str | bytes | None, params_json: bytes | str | None, api: dict[str, str] = C_API
) -> tuple[StreamContext, Callable[[], Iterator[Any]]]:
    """The op's context and events (not started); raises what the op's name and params raise,
    before anything is registered."""
    spec = _resolve(op, "stream", api)
    params = _validate(spec, params_json)
    ctx = StreamContext(batches=True)
    return ctx, lambda: iter(spec.handler(params, ctx))


def open_stream(op: str | bytes | None, params_json: bytes | str | None) -> int:
    """Open a stream op read by its reader (the Python API): its handle once its first event is
    in; raises the op's ``AimuxError`` on failure (a failure before the first event fails the
    open)."""
    ctx, events = _stream_op(op, params_json)
    return _registry.open_here(ctx, events, queued=False)


def stream_json(
    op: str | bytes | None,
    params_json: bytes | str | None,
    native: bool = False,
    api: dict[str, str] = C_API,
    on_open: Callable[[Callable[[], None]], None] | None = None,
) -> tuple[int | None, bytes | None]:
    """Open a stream op: ``(handle, None)`` or ``(None, envelope JSON)``. Never raises (but a
    host's ``KeyboardInterrupt``). ``native`` (``aimux_stream``): read through the C ABI, its
    events in a C queue when libaimux runs this core. ``api``: as in ``call_json``.
    ``on_open``: given the stream's cancel before the open starts (the open waits for the first
    event, retries included: the asyncio API cancels it from its loop's thread)."""
    try:
        ctx, events = _stream_op(op, params_json, api)
        if on_open is not None:
            on_open(ctx.cancel)
        return _registry.open_here(ctx, events, queued=native), None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001
        return None, project(exc)


def stream_start_json(
    op: str | bytes | None, params_json: bytes | str | None, native: bool = False
) -> tuple[int | None, bytes | None]:
    """Start a stream op on a reader thread without waiting (``aimux_stream_start``):
    ``(handle, None)``, or ``(None, envelope)`` for a failure found before any I/O (op, params,
    every reader thread busy). A failure of the open itself is reported by the stream's first
    ``stream_poll_json`` / ``stream_next_json``; the handle is listed by ``ready_handles``
    whenever it has something to poll. Never raises."""
    try:
        ctx, events = _stream_op(op, params_json)
        return _registry.start(ctx, events), None
    except KeyboardInterrupt:
        raise  # the host's, not the stream's (as in call_json)
    except BaseException as exc:  # noqa: BLE001
        return None, project(exc)


def _batch_reply(
    read: Callable[[], tuple[bytes | None, bool]],
) -> tuple[bytes | None, bool, bytes | None]:
    """``read()``'s batch with its failures projected: ``(batch, ended, envelope or None)``."""
    try:
        batch, ended = read()
        return batch, ended, None
    except OpenFailed as exc:
        return None, True, project(exc.cause)
    except KeyboardInterrupt:
        raise  # the host's, not the stream's (as in call_json)
    except BaseException as exc:  # noqa: BLE001
        return None, True, project(exc)


def stream_poll_json(handle: int, max_events: int) -> tuple[bytes | None, bool, bytes | None]:
    """Never blocks: ``(JSON array of events or None, ended, None)``, or ``(None, True,
    envelope)`` for an invalid handle or a failed open. Never raises."""
    return _batch_reply(lambda: _registry.lookup(handle).poll(max(1, max_events)))


def stream_next_batch_json(handle: int, max_events: int) -> tuple[bytes | None, bool, bytes | None]:
    """``stream_poll_json`` that waits for a batch (``aimux_stream_next_batch``): ``(JSON array
    of events, ended, None)``, ``(None, True, None)`` at the end, or ``(None, True, envelope)``
    for an invalid handle or a failed open. Never raises."""
    return _batch_reply(lambda: _registry.lookup(handle).next_batch(max(1, max_events)))


def ready_handles(capacity: int) -> list[int]:
    """Up to ``capacity`` handles of event-driven streams with something to poll."""
    return ready_list().take(capacity)


def poll_ready_json(max_events: int) -> bytes | None:
    """``ready_handles`` and ``stream_poll_json`` of each in one step (``aimux_poll_ready``): a
    JSON array of ``[handle, ended, events or null, open-failure envelope or null]``, one entry
    per listed stream that still exists, or None when none is listed. Never raises."""
    entries = [e for h in ready_list().take(1 << 30) if (e := poll_entry_json(h, max_events))]
    if not entries:
        return None
    return b"[" + b",".join(entries) + b"]"


def poll_entry_json(handle: int, max_events: int) -> bytes | None:
    """One entry of ``poll_ready_json``, or None when the stream was freed since it was listed
    (``aimux_poll_ready`` asks this for a stream its C queue cannot answer). Never raises."""
    stream = _registry.get(handle)
    if stream is None:
        return None
    batch, ended, env = _batch_reply(lambda: stream.poll(max(1, max_events)))
    return b"[%d,%d,%s,%s]" % (handle, 1 if ended else 0, batch or b"null", env or b"null")


def stream_wake(handle: int, what: int) -> None:
    """A C read of ``handle``'s C queue needs this side (``_aimux_cq_take``'s wake-ups: let a
    reader thread waiting for room go on, list the stream again). Never raises."""
    wake = getattr(_registry.get(handle), "wake", None)  # a stream with a C queue
    if wake is not None:
        wake(what)


def events_fd() -> int:
    """The read end of the process's notification pipe (``aimux_events_fd``)."""
    return ready_list().rfd


def _next_reply(read: Callable[[], Any]) -> tuple[Any, bytes | None]:
    try:
        return read(), None
    except OpenFailed as exc:
        return None, project(exc.cause)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001
        return None, project(exc)


def stream_next_json(handle: int) -> Reply:
    """The next event: ``(event, None)``; ``(None, None)`` at the end; ``(None, envelope)`` for
    an invalid handle (or the failed open of an event-driven stream). Never raises."""
    reply: Reply = _next_reply(lambda: _registry.lookup(handle).next())
    return reply


def stream_next_object(handle: int) -> tuple[Any, bytes | None]:
    """``stream_next_json`` for in-process callers (the Python binding): the event as the op
    produced it — a dict not yet serialized, or bytes — so it is not dumped and parsed again."""
    return _next_reply(lambda: _registry.lookup(handle).pull())


def stream_next_objects(handle: int, max_events: int = 256) -> tuple[Any, bytes | None]:
    """``stream_next_object`` for a batch (the Python binding): ``(iterator over up to
    ``max_events`` events, None)``, ``(None, None)`` at the end, ``(None, envelope)``."""
    return _next_reply(lambda: _registry.lookup(handle).take(max_events))


def stream_tool_result_json(
    handle: int, tool_call_id: str | bytes | None, answer_json: bytes | str | None
) -> bytes | None:
    """The host's answer to one of a stream's host tool calls (``aimux_stream_tool_result``,
    any thread): None when taken, else the envelope — 203 for a stream that is unknown, freed or
    ended, 301 for a call the stream does not wait for or an answer that is not one (the call
    still waits for its answer), 201 / 202 / 204 for text that cannot be read. Never raises."""
    try:
        from ..ops.answers import parse_answer

        if tool_call_id is None or answer_json is None:
            from ..errors import NullArgumentError

            which = "tool_call_id" if tool_call_id is None else "answer_json"
            raise NullArgumentError(f"{which} is NULL", argument=which)
        stream = _registry.lookup(handle)
        if isinstance(tool_call_id, bytes):
            try:
                tool_call_id = tool_call_id.decode("utf-8")
            except UnicodeDecodeError as exc:
                from ..errors import InvalidUTF8Error

                raise InvalidUTF8Error(
                    "tool_call_id is not valid UTF-8", argument="tool_call_id"
                ) from exc
        answer = parse_answer(answer_json)
        answers = stream.ctx.answers
        if answers is None:  # a stream without host tools: nothing to answer
            from ..ops.answers import refused

            raise refused("tool_call_id", f"no such pending call: {tool_call_id[:200]!r}")
        answers.put(tool_call_id, answer)
        return None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the boundary: everything is projected
        return project(exc)


def stream_cancel(handle: int) -> None:
    """Cancel a stream from any thread (wakes a blocked ``stream_next_json``)."""
    _registry.cancel(handle)


def stream_response_headers(handle: int) -> dict[str, str] | None:
    """The stream's latest model response's headers (redacted), once they are in (the gateway
    reads them after the first batch); None before, or for a stale handle."""
    try:
        stream = _registry.lookup(handle)
    except Exception:  # noqa: BLE001 - a stale handle (``InvalidHandleError``): nothing to read
        return None
    return stream.ctx.response_headers


def stream_free(handle: int) -> None:
    """Cancel and forget a stream; its handle is stale from now on."""
    _registry.free(handle)


def use_native_queues(ffi: Any, lib: Any) -> None:
    """Called once by libaimux's init code: streams opened through the C ABI get a C queue,
    the ready list is kept in C (for ``aimux_ready`` / ``aimux_poll_ready``), and a forked child
    forgets the parent's queues and listed handles."""
    cqueue.use(ffi, lib)
    on_fork_child(lib._aimux_cq_after_fork)
    lib._aimux_rl_enable()
    adopt_native()  # a ready list a Python host made before moves to C
