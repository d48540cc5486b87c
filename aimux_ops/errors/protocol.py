"""The protocol domain (codes 300–399): the op name, its params and its mode."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from ._base import AimuxError

__all__ = ["InvalidParamsError", "ProtocolError", "UnknownOpError", "Violation", "WrongModeError"]


class ProtocolError(AimuxError):
    """Base of the protocol domain."""

    kind = "protocol"


class UnknownOpError(ProtocolError, code=300):
    """No op has this name."""

    op: str | None = None
    available_ops: list[str] | None = None


class Violation(BaseModel):
    """One params violation: where (a JSON path like ``model.modelId``) and why."""

    path: str
    reason: str


class InvalidParamsError(ProtocolError, code=301):
    """The params failed validation; ``violations`` lists every one."""

    op: str | None = None
    violations: list[Violation] | None = None


class WrongModeError(ProtocolError, code=302):
    """A stream op called through ``aimux_call``, or the reverse."""

    op: str | None = None
    expected: Literal["call", "stream"] | None = None
