"""The protocol domain (codes 300–399): the op name, its params and its mode."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from ._base import AimuxError, ErrorPayload

__all__ = ["InvalidParamsError", "ProtocolError", "UnknownOpError", "Violation", "WrongModeError"]


class ProtocolError(AimuxError):
    """Base of the protocol domain."""

    kind = "protocol"


class _UnknownOpPayload(ErrorPayload):
    op: str | None = None
    available_ops: list[str] | None = None


class UnknownOpError(ProtocolError):
    """No op has this name."""

    code = 300
    constant = "UNKNOWN_OP"
    error_name = "UnknownOpError"
    Payload = _UnknownOpPayload


class Violation(BaseModel):
    """One params violation: where (a JSON path like ``model.modelId``) and why."""

    path: str
    reason: str


class _InvalidParamsPayload(ErrorPayload):
    op: str | None = None
    violations: list[Violation] | None = None


class InvalidParamsError(ProtocolError):
    """The params failed validation; ``violations`` lists every one."""

    code = 301
    constant = "INVALID_PARAMS"
    error_name = "InvalidParamsError"
    Payload = _InvalidParamsPayload


class _WrongModePayload(ErrorPayload):
    op: str | None = None
    expected: Literal["call", "stream"] | None = None


class WrongModeError(ProtocolError):
    """A stream op called through ``aimux_call``, or the reverse."""

    code = 302
    constant = "WRONG_MODE"
    error_name = "WrongModeError"
    Payload = _WrongModePayload
