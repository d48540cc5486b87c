"""Every error aimux-ops can raise, in four domains, each with a stable code (CONTRACT §1).

The hierarchy::

    AimuxError                          root of everything that crosses the boundary
    ├── AIError                         kind "aimux" (codes 1–99), the AI SDK's classes
    │   ├── OtherError                  1   AI_OtherError
    │   ├── JSONParseError              2   AI_JSONParseError           text
    │   ├── InvalidResponseDataError    3   AI_InvalidResponseDataError data
    │   ├── TypeValidationError         3   AI_TypeValidationError      value
    │   ├── InvalidArgumentError        5   AI_InvalidArgumentError     argument
    │   ├── InvalidPromptError          6   AI_InvalidPromptError
    │   ├── UnsupportedFunctionalityError 8 AI_UnsupportedFunctionalityError functionality
    │   ├── NoSuchModelError            9   AI_NoSuchModelError         modelId, modelType
    │   ├── NoSuchProviderError         10  AI_NoSuchProviderError      providerId, availableProviders,
    │   │                                                               modelId, modelType
    │   ├── APICallError                11  AI_APICallError             statusCode, isRetryable,
    │   │                                                               responseHeaders, responseBody, data
    │   ├── TimeoutError                12  AI_TimeoutError             timeoutMs, statusCode
    │   ├── AbortedError                13  AI_AbortedError
    │   ├── RetryError                  14  AI_RetryError               reason, errors (last = cause),
    │   │                                                               statusCode (the last's)
    │   ├── NoSuchToolError             15  AI_NoSuchToolError          toolName, availableTools
    │   ├── InvalidToolInputError       16  AI_InvalidToolInputError    toolName, toolInput
    │   ├── ToolCallRepairError         17  AI_ToolCallRepairError
    │   ├── LoadAPIKeyError             18  AI_LoadAPIKeyError
    │   ├── NoOutputGeneratedError      20  AI_NoOutputGeneratedError
    │   ├── NoObjectGeneratedError      21  AI_NoObjectGeneratedError   text, finishReason, usage
    │   └── ToolExecutionError          22  AI_ToolExecutionError       toolName, toolCallId, input
    ├── RecordingError                  kind "recording" (100–199)
    │   ├── RecordingOpenFileError      101 path
    │   ├── RecordingNoMatchError       102 method, path
    │   ├── RecordingCorruptError       103 path, line
    │   ├── RecordingUnsupportedSchemaError 104 path, line, schemaVersion
    │   └── RecordingWriteError         105 path
    ├── BindingError                    kind "binding" (200–299)
    │   ├── InvalidUTF8Error            201 argument
    │   ├── InvalidWireJSONError        202 argument
    │   ├── InvalidHandleError          203 handle
    │   ├── NullArgumentError           204 argument
    │   ├── ResultSerializationError    205
    │   ├── RuntimeInitError            207
    │   └── InternalError               208 (any unexpected exception; its chain is the cause)
    ├── ProtocolError                   kind "protocol" (300–399)
    │   ├── UnknownOpError              300 op, availableOps
    │   ├── InvalidParamsError          301 op, violations [{path, reason}]
    │   └── WrongModeError              302 op, expected
    └── UnknownError                    a decoded node whose kind or code this version does not know

    SourceError                         a decoded snapshot of an external exception (message, type)

Code 4 is retired. Payload fields are attributes (``err.status_code``; ``err.payload`` is the same
data as a model). This tree is checked against ``catalogue()`` by ``tests/test_catalogue.py``. Causes are ordinary Python exception chaining: ``raise APICallError(...) from
exc``. The projection (``aimux_ops.wire.envelope``) turns the chain into cause nodes; the decoder
(``aimux_ops.decode_error``) rebuilds it as ``__cause__`` links.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import AimuxError, SourceError, catalogue, constant_of, lookup
from .aimux import (
    AbortedError,
    AIError,
    APICallError,
    InvalidArgumentError,
    InvalidPromptError,
    InvalidResponseDataError,
    InvalidToolInputError,
    JSONParseError,
    LoadAPIKeyError,
    NoObjectGeneratedError,
    NoOutputGeneratedError,
    NoSuchModelError,
    NoSuchProviderError,
    NoSuchToolError,
    OtherError,
    RetryError,
    RetryReason,
    TimeoutError,  # noqa: A004 - the aimux variant, like asyncio.TimeoutError
    ToolCallRepairError,
    ToolExecutionError,
    TypeValidationError,
    UnsupportedFunctionalityError,
)
from .binding import (
    BindingError,
    InternalError,
    InvalidHandleError,
    InvalidUTF8Error,
    InvalidUtf8Error,
    InvalidWireJSONError,
    InvalidWireJsonError,
    NullArgumentError,
    ResultSerializationError,
    RuntimeInitError,
)
from .protocol import InvalidParamsError, ProtocolError, UnknownOpError, WrongModeError
from .recording import (
    RecordingCorruptError,
    RecordingError,
    RecordingNoMatchError,
    RecordingOpenFileError,
    RecordingUnsupportedSchemaError,
    RecordingWriteError,
)

if TYPE_CHECKING:
    from ._models import ErrorPayload, Violation

RETIRED_CODES: tuple[int, ...] = (4,)
KINDS: tuple[str, ...] = ("aimux", "recording", "binding", "protocol")
#: The code range of each domain (CONTRACT §1): the code→kind rule every binding generates.
KIND_RANGES: dict[str, tuple[int, int]] = {
    "aimux": (1, 99),
    "recording": (100, 199),
    "binding": (200, 299),
    "protocol": (300, 399),
}


def kind_of_code(code: int) -> str | None:
    """The domain a code belongs to, or None outside every range (0: a source node)."""
    for kind, (low, high) in KIND_RANGES.items():
        if low <= code <= high:
            return kind
    return None


class UnknownError(AimuxError):
    """A decoded node whose kind, code or name this version does not know (raw JSON kept)."""

    def __init__(self, message: str, *, kind: str, code: int, name: str | None) -> None:
        super().__init__(message)
        self.kind = kind
        self.code = code
        self.error_name = name or ""

    def __getattr__(self, name: str) -> Any:
        # Payload members of a node this version does not know, as attributes too.
        raw = self.__dict__.get("raw")
        error = raw.get("error") if isinstance(raw, dict) else None
        if isinstance(error, dict) and name in error and name != "name":
            return error[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def payload_fields(self) -> dict[str, Any]:
        if self.raw is not None and isinstance(self.raw.get("error"), dict):
            return {k: v for k, v in self.raw["error"].items() if k != "name"}
        return {}


__all__ = [
    "AIError",
    "APICallError",
    "AbortedError",
    "AimuxError",
    "BindingError",
    "ErrorPayload",
    "InternalError",
    "InvalidArgumentError",
    "InvalidHandleError",
    "InvalidParamsError",
    "InvalidPromptError",
    "InvalidResponseDataError",
    "InvalidToolInputError",
    "InvalidUTF8Error",
    "InvalidUtf8Error",
    "InvalidWireJSONError",
    "InvalidWireJsonError",
    "JSONParseError",
    "KINDS",
    "KIND_RANGES",
    "LoadAPIKeyError",
    "NoObjectGeneratedError",
    "NoOutputGeneratedError",
    "NoSuchModelError",
    "NoSuchProviderError",
    "NoSuchToolError",
    "NullArgumentError",
    "OtherError",
    "ProtocolError",
    "RETIRED_CODES",
    "RecordingCorruptError",
    "RecordingError",
    "RecordingNoMatchError",
    "RecordingOpenFileError",
    "RecordingUnsupportedSchemaError",
    "RecordingWriteError",
    "ResultSerializationError",
    "RetryError",
    "RetryReason",
    "RuntimeInitError",
    "SourceError",
    "TimeoutError",
    "ToolCallRepairError",
    "ToolExecutionError",
    "TypeValidationError",
    "UnknownError",
    "UnknownOpError",
    "UnsupportedFunctionalityError",
    "Violation",
    "WrongModeError",
    "catalogue",
    "constant_of",
    "kind_of_code",
    "lookup",
]


def __getattr__(name: str) -> Any:
    """The pydantic models (``ErrorPayload``, ``Violation``), imported on the first read of one
    (cold start: a call that succeeds never loads pydantic for its errors)."""
    if name in ("ErrorPayload", "Violation"):
        from . import _models

        value = getattr(_models, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
