"""The protocol domain (codes 300–399): the op name, its params and its mode."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from ._base import AimuxError

if TYPE_CHECKING:
    from ._models import Violation

__all__ = ["InvalidParamsError", "ProtocolError", "UnknownOpError", "Violation", "WrongModeError"]


class ProtocolError(AimuxError):
    """Base of the protocol domain."""

    kind = "protocol"


class UnknownOpError(ProtocolError, code=300):
    """No op has this name."""

    op: str | None = None
    available_ops: list[str] | None = None


class InvalidParamsError(ProtocolError, code=301):
    """The params failed validation; ``violations`` lists every one."""

    op: str | None = None
    violations: list[Violation] | None = None


class WrongModeError(ProtocolError, code=302):
    """A stream op called through ``aimux_call``, or the reverse."""

    op: str | None = None
    expected: Literal["call", "stream"] | None = None


#: names this module binds on first use (pydantic models: ``_base`` resolves them before it reads
#: the annotations naming them)
LAZY_NAMES = ("Violation",)


def __getattr__(name: str) -> Any:
    """``Violation`` (a pydantic model), imported on its first read."""
    if name == "Violation":
        from ._models import Violation

        globals()["Violation"] = Violation
        return Violation
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
