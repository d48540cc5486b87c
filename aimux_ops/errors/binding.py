"""The binding domain (codes 200–299): failures at the FFI boundary and inside the core itself."""

from __future__ import annotations

from ._base import AimuxError, ErrorPayload

__all__ = [
    "BindingError",
    "InternalError",
    "InvalidHandleError",
    "InvalidUtf8Error",
    "InvalidWireJsonError",
    "NullArgumentError",
    "ResultSerializationError",
    "RuntimeInitError",
]


class BindingError(AimuxError):
    """Base of the binding domain."""

    kind = "binding"


class _ArgumentPayload(ErrorPayload):
    argument: str | None = None


class InvalidUtf8Error(BindingError):
    """An argument is not valid UTF-8."""

    code = 201
    constant = "INVALID_UTF8"
    error_name = "InvalidUtf8Error"
    Payload = _ArgumentPayload


class InvalidWireJsonError(BindingError):
    """An argument is not valid JSON."""

    code = 202
    constant = "INVALID_WIRE_JSON"
    error_name = "InvalidWireJsonError"
    Payload = _ArgumentPayload


class _HandlePayload(ErrorPayload):
    handle: int | None = None


class InvalidHandleError(BindingError):
    """A stream handle is unknown, stale or already freed."""

    code = 203
    constant = "INVALID_HANDLE"
    error_name = "InvalidHandleError"
    Payload = _HandlePayload


class NullArgumentError(BindingError):
    """A required pointer argument is NULL."""

    code = 204
    constant = "NULL_ARGUMENT"
    error_name = "NullArgumentError"
    Payload = _ArgumentPayload


class ResultSerializationError(BindingError):
    """The op's result could not be serialized to JSON."""

    code = 205
    constant = "RESULT_SERIALIZATION"
    error_name = "ResultSerializationError"


class RuntimeInitError(BindingError):
    """The embedded runtime could not start; the message says why."""

    code = 207
    constant = "RUNTIME_INIT"
    error_name = "RuntimeInitError"


class InternalError(BindingError):
    """An unexpected exception inside the core; its chain is the cause."""

    code = 208
    constant = "INTERNAL"
    error_name = "InternalError"
