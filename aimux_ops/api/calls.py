"""The Python API's two entry points: ``call`` and ``stream`` of any op, in-process through the
boundary the shared library uses, failures raised as the native exception ``decode_error``
rebuilds from the envelope (what a Python caller catches is what every language decodes);
``execute=`` runs the host's tools (``tools``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

from ._io import events, params_json

if TYPE_CHECKING:
    from .tools import Execute

__all__ = ["PY_API", "call", "stream"]

#: How Python runs an op of each mode: what a wrong mode's message names (``dispatch.C_API``)
PY_API = {
    "call": "aimux_ops.call (typed: aimux_ops.generate_text, aimux_ops.generate_object)",
    "stream": "aimux_ops.stream (typed: aimux_ops.stream_text)",
}


def call(op: str, params: Any = None, *, execute: Execute | None = None) -> Any:
    """Run a call op and return its result; raise the decoded ``AimuxError`` on failure.
    ``execute`` maps tool names to the functions that run them (CONTRACT §2.2): the op then runs
    as the multi-step loop (``generate_text`` through ``stream_text``) and returns the final
    result with its ``steps`` (``aimux_ops.tools``)."""
    if execute:
        from .tools import run_to_result

        return run_to_result(op, params, execute)
    from ..boundary.dispatch import call_json

    result, envelope = call_json(op, params_json(params), PY_API)
    if envelope is not None:
        from ..wire.envelope import decode_error

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
        from .tools import with_tools

        params = with_tools(params, execute)
    from ..boundary.dispatch import stream_free, stream_json, stream_next_objects

    handle, envelope = stream_json(op, params_json(params), api=PY_API)
    if envelope is not None:
        from ..wire.envelope import decode_error

        raise decode_error(envelope)
    assert handle is not None
    taken = events(handle, stream_next_objects, stream_free)
    if execute:
        from .tools import answering

        return answering(handle, taken, execute)
    return taken
