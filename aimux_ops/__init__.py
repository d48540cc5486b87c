"""aimux-ops: the cross-language core of an AI SDK, and its Python binding.

``call(op, params)`` and ``stream(op, params)`` run an op in-process through the same dispatch
boundary the shared library uses, and raise the native exception ``decode_error`` rebuilds from
the envelope (one projection: what a Python caller catches is what every other language decodes).
Every name loads on first use (``__getattr__``): importing the package (as the shared library
does, for its first ``aimux.version``) imports no JSON library, no ``typing`` and no model.
"""

from __future__ import annotations

from ._version import __version__

TYPE_CHECKING = False  # typing's own flag, without importing typing (cold start)
if TYPE_CHECKING:
    from typing import Any

    from .api.calls import call, stream
    from .api.tools import ToolResult
    from .errors import AimuxError, SourceError
    from .wire.envelope import decode_error

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
    if name in ("call", "stream"):
        from .api import calls

        return getattr(calls, name)
    if name in ("AimuxError", "SourceError"):
        from . import errors

        return getattr(errors, name)
    if name == "ToolResult":
        from .api.tools import ToolResult

        return ToolResult
    if name == "decode_error":
        from .wire.envelope import decode_error

        return decode_error
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
