"""aimux-ops: the cross-language core of an AI SDK, and its Python binding.

``call(op, params)`` and ``stream(op, params)`` run an op in-process through the same dispatch
boundary the shared library uses, and raise the native exception ``decode_error`` rebuilds from
the envelope (one projection: what a Python caller catches is what every other language decodes).
The typed API (``generate_text``, ``stream_text``, ``generate_object``: keyword arguments, typed
results and events, generated from the op models; ``aimux_ops.aio``: its asyncio twin), the
errors and ``decode_error``: every name loads on first use (``__getattr__``): importing the
package (as the shared library does, for its first ``aimux.version``) imports no JSON library,
no ``typing``, no model and no typed class.
"""

from __future__ import annotations

from ._version import __version__

TYPE_CHECKING = False  # typing's own flag, without importing typing (cold start)
if TYPE_CHECKING:
    from typing import Any

    from . import aio
    from .api._generated import (
        ErrorEvent,
        FinishEvent,
        GenerateObjectResult,
        GenerateTextResult,
        Message,
        ModelSpec,
        StreamEvent,
        TextDeltaEvent,
        ToolCallEvent,
        ToolSpec,
        generate_object,
        generate_text,
        stream_text,
    )
    from .api.calls import call, stream
    from .api.tools import ToolResult
    from .api.typed import NOT_GIVEN, TextStream
    from .errors import AimuxError, SourceError
    from .wire.envelope import decode_error

__all__ = [
    "NOT_GIVEN",
    "AimuxError",
    "ErrorEvent",
    "FinishEvent",
    "GenerateObjectResult",
    "GenerateTextResult",
    "Message",
    "ModelSpec",
    "SourceError",
    "StreamEvent",
    "TextDeltaEvent",
    "TextStream",
    "ToolCallEvent",
    "ToolResult",
    "ToolSpec",
    "__version__",
    "aio",
    "call",
    "decode_error",
    "generate_object",
    "generate_text",
    "stream",
    "stream_text",
]

#: the typed API's names, from ``api._generated`` (loaded on the first read of one)
_TYPED = frozenset(
    (
        "ErrorEvent",
        "FinishEvent",
        "GenerateObjectResult",
        "GenerateTextResult",
        "Message",
        "ModelSpec",
        "StreamEvent",
        "TextDeltaEvent",
        "ToolCallEvent",
        "ToolSpec",
        "generate_object",
        "generate_text",
        "stream_text",
    )
)


def __getattr__(name: str) -> Any:
    if name in ("call", "stream"):
        from .api import calls

        return getattr(calls, name)
    if name in ("AimuxError", "SourceError"):
        from . import errors

        return getattr(errors, name)
    if name == "ToolResult":
        from .api.tools import ToolResult

        return ToolResult
    if name in _TYPED:
        from .api import _generated

        return getattr(_generated, name)
    if name in ("NOT_GIVEN", "TextStream"):
        from .api import typed

        return getattr(typed, name)
    if name == "aio":
        import importlib

        return importlib.import_module(".aio", __name__)
    if name == "decode_error":
        from .wire.envelope import decode_error

        return decode_error
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
