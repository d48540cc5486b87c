"""The aimux domain (codes 1–99): the AI SDK's error classes, with the AI SDK's names and fields."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime
from typing import Any, Literal

from pydantic import Field

from ._base import AimuxError, ErrorPayload

__all__ = [
    "AIError",
    "APICallError",
    "AbortedError",
    "InvalidArgumentError",
    "InvalidPromptError",
    "InvalidResponseDataError",
    "InvalidToolInputError",
    "JSONParseError",
    "LoadAPIKeyError",
    "NoObjectGeneratedError",
    "NoOutputGeneratedError",
    "NoSuchModelError",
    "NoSuchProviderError",
    "NoSuchToolError",
    "OtherError",
    "RetryError",
    "TimeoutError",
    "ToolCallRepairError",
    "TypeValidationError",
    "UnsupportedFunctionalityError",
]


class AIError(AimuxError):
    """Base of the aimux domain (the AI SDK's ``AISDKError``)."""

    kind = "aimux"


class OtherError(AIError):
    """An aimux failure that fits no other variant."""

    code = 1
    constant = "OTHER"
    error_name = "AI_OtherError"


class _JSONParsePayload(ErrorPayload):
    text: str | None = None


class JSONParseError(AIError):
    """Text that should have been JSON could not be parsed."""

    code = 2
    constant = "JSON_PARSE"
    error_name = "AI_JSONParseError"
    Payload = _JSONParsePayload


class _InvalidResponseDataPayload(ErrorPayload):
    data: Any = None


class InvalidResponseDataError(AIError):
    """The provider answered with data of an unexpected shape."""

    code = 3
    constant = "INVALID_RESPONSE_DATA"
    error_name = "AI_InvalidResponseDataError"
    Payload = _InvalidResponseDataPayload


class _TypeValidationPayload(ErrorPayload):
    value: Any = None


class TypeValidationError(AIError):
    """A value failed validation against its schema (shares code 3)."""

    code = 3
    constant = "TYPE_VALIDATION"
    error_name = "AI_TypeValidationError"
    Payload = _TypeValidationPayload


class _InvalidArgumentPayload(ErrorPayload):
    argument: str | None = None


class InvalidArgumentError(AIError):
    """An argument of the call is invalid."""

    code = 5
    constant = "INVALID_ARGUMENT"
    error_name = "AI_InvalidArgumentError"
    Payload = _InvalidArgumentPayload


class InvalidPromptError(AIError):
    """The prompt is invalid (the prompt itself is not carried: it may be private)."""

    code = 6
    constant = "INVALID_PROMPT"
    error_name = "AI_InvalidPromptError"


class _UnsupportedPayload(ErrorPayload):
    functionality: str | None = None


class UnsupportedFunctionalityError(AIError):
    """The provider or model does not support a requested feature."""

    code = 8
    constant = "UNSUPPORTED_FUNCTIONALITY"
    error_name = "AI_UnsupportedFunctionalityError"
    Payload = _UnsupportedPayload


class _NoSuchModelPayload(ErrorPayload):
    model_id: str | None = None
    model_type: str | None = None


class NoSuchModelError(AIError):
    """The requested model does not exist."""

    code = 9
    constant = "NO_SUCH_MODEL"
    error_name = "AI_NoSuchModelError"
    Payload = _NoSuchModelPayload


class _NoSuchProviderPayload(ErrorPayload):
    provider_id: str | None = None
    available_providers: list[str] | None = None
    model_id: str | None = None
    model_type: str | None = None


class NoSuchProviderError(AIError):
    """The requested provider is not known."""

    code = 10
    constant = "NO_SUCH_PROVIDER"
    error_name = "AI_NoSuchProviderError"
    Payload = _NoSuchProviderPayload


class _APICallPayload(ErrorPayload):
    status_code: int | None = None
    is_retryable: bool = False
    response_headers: dict[str, str] | None = None
    response_body: str | None = None
    data: Any = None


def _parse_retry_after_ms(headers: dict[str, str] | None) -> int | None:
    """The server's retry hint in ms, read like the AI SDK does: ``retry-after-ms`` when it is a
    number, else ``retry-after`` (seconds or an HTTP date). A negative value or a date already
    past is no usable hint (None); so is a value that is not a number or a date."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    ms: float | None = None
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            ms = float(raw_ms)
        except ValueError:
            ms = None
    raw = lowered.get("retry-after")
    if raw is not None and ms is None:
        try:
            ms = float(raw) * 1000
        except ValueError:
            try:
                when = parsedate_to_datetime(raw)
            except (TypeError, ValueError, IndexError):
                return None
            ms = (when.timestamp() - time.time()) * 1000
    if ms is None or ms != ms or ms < 0 or ms == float("inf"):
        return None
    return int(ms)


class APICallError(AIError):
    """A call to the provider's API failed (transport failure or non-2xx or unusable 2xx)."""

    code = 11
    constant = "API_CALL"
    error_name = "AI_APICallError"
    Payload = _APICallPayload
    payload: _APICallPayload

    @property
    def status_code(self) -> int | None:
        return self.payload.status_code

    @property
    def is_retryable(self) -> bool:
        return self.payload.is_retryable

    @property
    def response_headers(self) -> dict[str, str] | None:
        return self.payload.response_headers

    def _own_retryable(self) -> bool:
        return self.payload.is_retryable

    def _own_retry_after_ms(self) -> int | None:
        return _parse_retry_after_ms(self.payload.response_headers)


class _TimeoutPayload(ErrorPayload):
    timeout_ms: int | None = None
    #: The HTTP status already received when the deadline passed mid-body (streams), if any.
    status_code: int | None = None


class TimeoutError(AIError):  # noqa: A001 - mirrors asyncio.TimeoutError / concurrent.futures
    """The call did not complete within ``timeoutMs`` (never retried).

    When the deadline passed during retry backoff, ``errors`` holds the failed attempts and the
    last one is also its cause."""

    code = 12
    constant = "TIMEOUT"
    error_name = "AI_TimeoutError"
    Payload = _TimeoutPayload
    #: the attempts that failed before the deadline passed (set by the retry loop)
    errors: list[BaseException] = []  # noqa: RUF012 - read-only default, replaced per instance

    def cause_children(self) -> list[BaseException]:
        return self.errors

    def _own_retryable(self) -> bool:
        return True


class AbortedError(AIError):
    """The call was cancelled by its caller."""

    code = 13
    constant = "ABORTED"
    error_name = "AI_AbortedError"


RetryReason = Literal["maxRetriesExceeded", "errorNotRetryable", "abort"]


class _RetryPayload(ErrorPayload):
    reason: RetryReason = "maxRetriesExceeded"
    errors: list[Any] = Field(default_factory=list)


class RetryError(AIError):
    """Every attempt failed; ``errors`` holds the attempts, the last one is the native cause."""

    code = 14
    constant = "RETRY"
    error_name = "AI_RetryError"
    Payload = _RetryPayload
    payload: _RetryPayload

    def __init__(
        self,
        message: str | None = None,
        *,
        reason: RetryReason = "maxRetriesExceeded",
        errors: list[BaseException] | None = None,
        **fields: Any,
    ) -> None:
        self.errors: list[BaseException] = list(errors or [])
        super().__init__(message, reason=reason, **fields)

    @property
    def reason(self) -> str:
        return self.payload.reason

    @property
    def last_error(self) -> BaseException | None:
        return self.errors[-1] if self.errors else None

    def default_message(self) -> str:
        n = len(self.errors)
        last = self.last_error
        if self.payload.reason == "errorNotRetryable":
            return f"Failed after {n} attempts with non-retryable error: '{last}'"
        return f"Failed after {n} attempts. Last error: {last}"

    def payload_fields(self) -> dict[str, Any]:
        return {"reason": self.payload.reason}

    def cause_children(self) -> list[BaseException]:
        return self.errors

    def native_next(self) -> BaseException | None:
        return self.last_error

    def _own_retryable(self) -> bool:
        last = self.last_error
        return (
            self.payload.reason == "maxRetriesExceeded"
            and isinstance(last, AimuxError)
            and last.retryable
        )

    def _own_retry_after_ms(self) -> int | None:
        last = self.last_error
        return last.retry_after_ms if isinstance(last, AimuxError) else None


class _NoSuchToolPayload(ErrorPayload):
    tool_name: str | None = None
    available_tools: list[str] | None = None


class NoSuchToolError(AIError):
    """The model called a tool that was not offered."""

    code = 15
    constant = "NO_SUCH_TOOL"
    error_name = "AI_NoSuchToolError"
    Payload = _NoSuchToolPayload


class _InvalidToolInputPayload(ErrorPayload):
    tool_name: str | None = None
    tool_input: str | None = None


class InvalidToolInputError(AIError):
    """The model's tool-call input is not JSON or fails the tool's input schema."""

    code = 16
    constant = "INVALID_TOOL_INPUT"
    error_name = "AI_InvalidToolInputError"
    Payload = _InvalidToolInputPayload


class ToolCallRepairError(AIError):
    """Repairing an invalid tool call failed."""

    code = 17
    constant = "TOOL_CALL_REPAIR"
    error_name = "AI_ToolCallRepairError"


class LoadAPIKeyError(AIError):
    """No API key: neither ``apiKey`` nor the environment variable named by ``apiKeyEnv``."""

    code = 18
    constant = "LOAD_API_KEY"
    error_name = "AI_LoadAPIKeyError"


class NoOutputGeneratedError(AIError):
    """The model produced no output."""

    code = 20
    constant = "NO_OUTPUT_GENERATED"
    error_name = "AI_NoOutputGeneratedError"


class _NoObjectPayload(ErrorPayload):
    text: str | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


class NoObjectGeneratedError(AIError):
    """generate_object: the model's output is not JSON or does not match the schema."""

    code = 21
    constant = "NO_OBJECT_GENERATED"
    error_name = "AI_NoObjectGeneratedError"
    Payload = _NoObjectPayload
