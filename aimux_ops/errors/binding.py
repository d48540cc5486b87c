"""The binding domain (codes 200–299): failures at the FFI boundary and inside the core itself."""

from __future__ import annotations

from ._base import AimuxError

__all__ = [
    "BindingError",
    "InternalError",
    "InvalidHandleError",
    "InvalidUTF8Error",
    "InvalidUtf8Error",
    "InvalidWireJSONError",
    "InvalidWireJsonError",
    "NullArgumentError",
    "ResultSerializationError",
    "RuntimeInitError",
]


class BindingError(AimuxError):
    """Base of the binding domain."""

    kind = "binding"


class InvalidUTF8Error(BindingError, code=201):
    """An argument is not valid UTF-8."""

    argument: str | None = None


class InvalidWireJSONError(BindingError, code=202):
    """An argument is not valid JSON."""

    argument: str | None = None


class InvalidHandleError(BindingError, code=203):
    """A stream handle is unknown, stale or already freed."""

    handle: int | None = None


class NullArgumentError(BindingError, code=204):
    """A required pointer argument is NULL."""

    argument: str | None = None


class ResultSerializationError(BindingError, code=205):
    """The op's result could not be serialized to JSON."""


class RuntimeInitError(BindingError, code=207):
    """The embedded runtime could not start; the message says why."""


class InternalError(BindingError, code=208):
    """An unexpected exception inside the core; its chain is the cause."""


#: The names before the acronym normalisation (CHANGELOG.md), kept as aliases of the same classes:
#: ``except InvalidUtf8Error`` still catches. The wire names are the new ones.
InvalidUtf8Error = InvalidUTF8Error
InvalidWireJsonError = InvalidWireJSONError
