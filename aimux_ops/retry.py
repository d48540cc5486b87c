"""Retry: the AI SDK's ``retryWithExponentialBackoff`` (CONTRACT §2).

- Only an ``APICallError`` with ``isRetryable`` is retried; anything else stops the loop.
- ``maxRetries`` 0, or a non-retryable *first* failure: the error comes back unwrapped.
- Otherwise ``RetryError`` with reason ``maxRetriesExceeded`` (attempts = maxRetries + 1) or
  ``errorNotRetryable``; ``errors`` holds every attempt's error, the last one is the native cause.
- The delay starts at ``initialDelayMs`` and is multiplied by ``backoffFactor`` after each retry;
  the server's ``retry-after-ms``, then ``retry-after`` (seconds or an HTTP date) replace it when
  ``0 <= hint < 60 s`` (or shorter than the backoff), exactly like the AI SDK's
  ``getRetryDelayInMs``.
- A cancellation (``AbortedError``) or a ``TimeoutError`` is never retried and never wrapped
  (the AI SDK rethrows abort errors as they are); the wait between
  attempts wakes early on cancellation and never sleeps past the call's deadline. A deadline
  that passes after failed attempts keeps them: the ``TimeoutError`` carries them as ``errors``
  and the last one as its cause (the AI SDK loses them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from .errors import AbortedError, APICallError, RetryError
from .errors import TimeoutError as AITimeoutError
from .errors.aimux import _parse_retry_after_ms

__all__ = ["retry_delay_ms", "retry_with_exponential_backoff"]

T = TypeVar("T")

_MAX_HINT_MS = 60_000


def retry_delay_ms(error: APICallError, backoff_ms: float) -> float:
    """The delay before the next attempt: the server's hint when usable, else the backoff.
    The hint is the one ``retryAfterMs`` reports (``_parse_retry_after_ms``: a negative value or
    a date already past is no hint), used when ``hint < 60 s`` or shorter than the backoff."""
    hint = _parse_retry_after_ms(error.response_headers)
    if hint is not None and (hint < _MAX_HINT_MS or hint < backoff_ms):
        return float(hint)
    return backoff_ms


def retry_with_exponential_backoff(
    attempt: Callable[[], T],
    *,
    max_retries: int = 2,
    initial_delay_ms: float = 2000,
    backoff_factor: float = 2,
    cancelled: threading.Event | None = None,
    deadline_remaining: Callable[[], float | None] | None = None,
) -> T:
    """Run ``attempt`` until it succeeds, following the AI SDK's retry rules."""
    errors: list[BaseException] = []
    delay_ms = float(initial_delay_ms)
    while True:
        try:
            return attempt()
        except BaseException as error:
            if isinstance(error, AITimeoutError) and errors:
                # the deadline passed during backoff (or the next attempt): the timeout keeps
                # the attempts, the last one as its cause (its status, retry-after and the
                # provider's code are the reason the call ran out of time)
                error.errors = list(errors)
                if error.__cause__ is None:
                    error.__cause__ = errors[-1]
                raise
            if isinstance(error, (AbortedError, AITimeoutError)) or not isinstance(
                error, Exception
            ):
                # the AI SDK rethrows abort / timeout errors as they are (isAbortError)
                raise
            if max_retries == 0:
                raise
            errors.append(error)
            tries = len(errors)
            if tries > max_retries:
                raise RetryError(reason="maxRetriesExceeded", errors=errors) from None
            if isinstance(error, APICallError) and error.is_retryable:
                wait_s = retry_delay_ms(error, delay_ms) / 1000.0
                if deadline_remaining is not None:
                    rem = deadline_remaining()
                    if rem is not None:
                        wait_s = min(wait_s, max(rem, 0.0))
                if _sleep(wait_s, cancelled):
                    raise AbortedError("The call was cancelled.") from error
                delay_ms *= backoff_factor
                continue
            if tries == 1:
                raise
            raise RetryError(reason="errorNotRetryable", errors=errors) from None


def _sleep(seconds: float, cancelled: threading.Event | None) -> bool:
    """Wait ``seconds`` on this thread; True when ``cancelled`` was set meanwhile."""
    if cancelled is not None:
        return cancelled.wait(seconds)
    if seconds > 0:
        time.sleep(seconds)
    return False
