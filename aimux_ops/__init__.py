"""aimux-ops: the cross-language core of an AI SDK, and its Python binding.

``call(op, params)`` and ``stream(op, params)`` run an op in-process through the same dispatch
boundary the shared library uses, and raise the native exception ``decode_error`` rebuilds from
the envelope (one projection: what a Python caller catches is what every other language decodes).
The errors and ``decode_error`` load on first use (``__getattr__``): importing the package (as the
shared library does) costs no pydantic model.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from ._version import __version__

if TYPE_CHECKING:
    from .api.tools import Execute, ToolResult
    from .envelope import decode_error
    from .errors import AimuxError, SourceError

__all__ = [
    "AimuxError",
    "SourceError",
    "ToolResult",
    "__version__",
    "call",
    "decode_error",
    "stream",
]


def __getattr__(name: str) -> Any:
    if name in ("AimuxError", "SourceError"):
        from . import errors

        return getattr(errors, name)
    if name == "ToolResult":
        from .api.tools import ToolResult

        return ToolResult
    if name == "decode_error":
        from .envelope import decode_error

        return decode_error
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _params_json(params: Any) -> bytes:
    """``params`` as JSON; what cannot be JSON is a 202 raised through the one projection."""
    try:
        return orjson.dumps({} if params is None else params)
    except (TypeError, orjson.JSONEncodeError) as exc:
        from .envelope import decode_error, project
        from .errors import InvalidWireJSONError

        wrapper = InvalidWireJSONError("params cannot be encoded as JSON", argument="params")
        wrapper.__cause__ = exc
        raise decode_error(project(wrapper))  # noqa: B904 - its __cause__ is the decoded chain


def call(op: str, params: Any = None, *, execute: Execute | None = None) -> Any:
    """Run a call op and return its result; raise the decoded ``AimuxError`` on failure.
    ``execute`` maps tool names to the functions that run them (CONTRACT §2.2): the op then runs
    as the multi-step loop (``generate_text`` through ``stream_text``) and returns the final
    result with its ``steps`` (``aimux_ops.tools``)."""
    if execute:
        from .api.tools import run_to_result

        return run_to_result(op, params, execute)
    from .dispatch import call_json

    result, envelope = call_json(op, _params_json(params))
    if envelope is not None:
        from .envelope import decode_error

        raise decode_error(envelope)
    assert result is not None
    return orjson.loads(result)


def stream(
    op: str, params: Any = None, *, execute: Execute | None = None
) -> Iterator[dict[str, Any]]:
    """Run a stream op. A failure before the first event raises; a later one is yielded as an
    ``error`` event, after which the iteration ends. Closing the iterator cancels the stream.
    The op runs on the thread that iterates (``streams.stream.Stream``: no hand-off).
    ``execute``: the host's tools (``api.tools``): each ``tool-call`` event of one is run (a
    step's calls concurrently) and answered; the events are yielded as they come."""
    if execute:
        from .api.tools import with_tools

        params = with_tools(params, execute)
    from .dispatch import stream_free, stream_json, stream_next_objects

    handle, envelope = stream_json(op, _params_json(params))
    if envelope is not None:
        from .envelope import decode_error

        raise decode_error(envelope)
    assert handle is not None
    events = _events(handle, stream_next_objects, stream_free)
    if execute:
        from .api.tools import answering

        return answering(handle, events, execute)
    return events


def _events(handle: int, take: Any, free: Any) -> Iterator[dict[str, Any]]:
    # every event queued is taken in one step (``dispatch.stream_next_objects``); a cancel, a
    # reap or a fork empties the batch held here, so what comes next is what the next read
    # would have answered
    try:
        while True:
            batch, envelope = take(handle)
            if envelope is not None:
                from .envelope import decode_error

                raise decode_error(envelope)
            if batch is None:
                return
            for event in batch:
                # the op's own dict when it made one (no dump-and-parse); bytes are parsed once
                decoded: dict[str, Any] = event if type(event) is dict else orjson.loads(event)
                yield decoded
                if decoded.get("type") == "error":
                    return
    finally:
        free(handle)
