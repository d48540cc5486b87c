"""The aimux domain (codes 1–99): the AI SDK's error classes, with the AI SDK's names and fields."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Literal

from ._base import AimuxError

if TYPE_CHECKING:
    from ._models import ErrorPayload

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
    "RetryReason",
    "TimeoutError",
    "ToolCallRepairError",
    "TypeValidationError",
    "UnsupportedFunctionalityError",
]


class AIError(AimuxError):
    """Base of the aimux domain (the AI SDK's ``AISDKError``)."""

    kind = "aimux"
    name_prefix = "AI_"


class OtherError(AIError, code=1):
    """An aimux failure that fits no other variant."""


class JSONParseError(AIError, code=2):
    """Text that should have been JSON could not be parsed."""

    text: str | None = None


class InvalidResponseDataError(AIError, code=3):
    """The provider answered with data of an unexpected shape."""

    data: Any = None


class TypeValidationError(AIError, code=3):
    """A value failed validation against its schema (shares code 3)."""

    value: Any = None


class InvalidArgumentError(AIError, code=5):
    """An argument of the call is invalid."""

    argument: str | None = None


class InvalidPromptError(AIError, code=6):
    """The prompt is invalid (the prompt itself is not carried: it may be private)."""


class UnsupportedFunctionalityError(AIError, code=8):
    """The provider or model does not support a requested feature."""

    functionality: str | None = None


class NoSuchModelError(AIError, code=9):
    """The requested model does not exist."""

    model_id: str | None = None
    model_type: str | None = None


class NoSuchProviderError(AIError, code=10):
    """The requested provider is not known."""

    provider_id: str | None = None
    available_providers: list[str] | None = None
    model_id: str | None = None
    model_type: str | None = None


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
            from email.utils import parsedate_to_datetime  # (an HTTP date: rare, loaded then)

            try:
                when = parsedate_to_datetime(raw)
            except (TypeError, ValueError, IndexError):
                return None
            ms = (when.timestamp() - time.time()) * 1000
    if ms is None or ms != ms or ms < 0 or ms == float("inf"):
        return None
    return int(ms)


class APICallError(AIError, code=11):
    """A call to the provider's API failed (transport failure or non-2xx or unusable 2xx)."""

    status_code: int | None = None
    is_retryable: bool = False
    response_headers: dict[str, str] | None = None
    response_body: str | None = None
    data: Any = None

    def _own_retryable(self) -> bool:
        return self.is_retryable

    def _own_retry_after_ms(self) -> int | None:
        return _parse_retry_after_ms(self.response_headers)


class TimeoutError(AIError, code=12):  # noqa: A001 - mirrors asyncio.TimeoutError / concurrent.futures
    """The call did not complete within ``timeoutMs`` (never retried).

    When the deadline passed during retry backoff, ``errors`` holds the failed attempts and the
    last one is also its cause."""

    timeout_ms: int | None = None
    #: The HTTP status already received when the deadline passed mid-body (streams), if any.
    status_code: int | None = None

    def __init__(
        self,
        message: str | None = None,
        /,
        *,
        errors: list[BaseException] | None = None,
        payload: ErrorPayload | None = None,
        **fields: Any,
    ) -> None:
        super().__init__(message, payload=payload, **fields)
        #: The attempts that failed before the deadline passed (set by the retry loop; not a
        #: payload field: projected as cause nodes).
        self.errors: list[BaseException] = list(errors or [])
        #: attempts that failed but are not in ``errors`` (as ``RetryError.attempts_dropped``)
        self.attempts_dropped = 0

    def cause_children(self) -> list[BaseException]:
        return self.errors

    def _own_retryable(self) -> bool:
        return True


class AbortedError(AIError, code=13):
    """The call was cancelled by its caller."""


RetryReason = Literal["maxRetriesExceeded", "errorNotRetryable"]


#: the attempts a failed retry loop keeps and its envelope reports: the first and the latest
#: (``retry`` drops the others as they fail; ``causes.Limits.attempts``)
KEPT_ATTEMPTS = 16


class RetryError(AIError, code=14):
    """Every attempt failed; ``errors`` holds the attempts, the last one is the native cause."""

    reason: RetryReason = "maxRetriesExceeded"
    #: The attempts, oldest first (exceptions; on the wire: aimux nodes).
    errors: list[Any] | None = None
    #: The last attempt's HTTP status, when it had one: what a user who caught the retry error
    #: reads (``err.status_code``, ``statusCode`` on the wire, ``aimux_error_status_code``).
    status_code: int | None = None

    def __init__(
        self,
        message: str | None = None,
        /,
        *,
        reason: RetryReason = "maxRetriesExceeded",
        errors: list[BaseException] | None = None,
        attempts_dropped: int = 0,
        **fields: Any,
    ) -> None:
        #: attempts that failed but are not in ``errors`` (a long loop keeps the first and the
        #: latest ones only: ``KEPT_ATTEMPTS``); not on the wire, the message counts them
        self.attempts_dropped = attempts_dropped
        super().__init__(message, reason=reason, errors=list(errors or []), **fields)
        if self.status_code is None:  # the one place the rule is written: the last attempt's
            status = getattr(self.last_error, "status_code", None)
            if type(status) is int:
                self.status_code = status

    @property
    def last_error(self) -> BaseException | None:
        return self.errors[-1] if self.errors else None

    def default_message(self) -> str:
        n = len(self.errors or []) + self.attempts_dropped
        last = self.last_error
        if self.reason == "errorNotRetryable":
            return f"Failed after {n} attempts with non-retryable error: '{last}'"
        return f"Failed after {n} attempts. Last error: {last}"

    def payload_fields(self) -> dict[str, Any]:
        status = self.status_code
        if status is None:
            return {"reason": self.reason}
        return {"reason": self.reason, "statusCode": status}

    def cause_children(self) -> list[BaseException]:
        return list(self.errors or [])

    def native_next(self) -> BaseException | None:
        return self.last_error

    def _own_retryable(self) -> bool:
        last = self.last_error
        return (
            self.reason == "maxRetriesExceeded" and isinstance(last, AimuxError) and last.retryable
        )

    def _own_retry_after_ms(self) -> int | None:
        last = self.last_error
        return last.retry_after_ms if isinstance(last, AimuxError) else None


class NoSuchToolError(AIError, code=15):
    """The model called a tool that was not offered."""

    tool_name: str | None = None
    available_tools: list[str] | None = None


class InvalidToolInputError(AIError, code=16):
    """The model's tool-call input is not JSON or fails the tool's input schema."""

    tool_name: str | None = None
    tool_input: str | None = None


class ToolCallRepairError(AIError, code=17):
    """Repairing an invalid tool call failed."""


class LoadAPIKeyError(AIError, code=18):
    """No API key: neither ``apiKey`` nor the environment variable named by ``apiKeyEnv``."""


class NoOutputGeneratedError(AIError, code=20):
    """The model produced no output."""


class NoObjectGeneratedError(AIError, code=21):
    """generate_object: the model's output is not JSON or does not match the schema."""

    text: str | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


class ToolExecutionError(AIError, code=22):
    """A host tool failed at framework level (its ``execute`` raised, threw or returned an
    error): the model never sees it; the cause is the host's own exception chain."""

    tool_name: str | None = None
    tool_call_id: str | None = None
    input: Any = None
