"""Retry: the AI SDK's ``retryWithExponentialBackoff`` (CONTRACT §2).

- Only an ``APICallError`` with ``isRetryable`` is retried; anything else stops the loop.
- ``maxRetries`` 0, or a non-retryable *first* failure: the error comes back unwrapped.
- Otherwise ``RetryError`` with reason ``maxRetriesExceeded`` (attempts = maxRetries + 1) or
  ``errorNotRetryable``; ``errors`` holds the attempts' errors (of a long loop the first and
  the latest: below), the last one is the native cause.
- The delay starts at ``initialDelayMs`` and is multiplied by ``backoffFactor`` after each retry;
  the server's ``retry-after-ms``, then ``retry-after`` (seconds or an HTTP date) replace it when
  ``0 <= hint < 60 s`` (or shorter than the backoff), exactly like the AI SDK's
  ``getRetryDelayInMs``.
- A cancellation (``AbortedError``) or a ``TimeoutError`` is never retried and never wrapped
  (the AI SDK rethrows abort errors as they are); the wait between
  attempts wakes early on cancellation and never sleeps past the call's deadline. A deadline
  that passes after failed attempts keeps them: the ``TimeoutError`` carries them as ``errors``
  and the last one as its cause (the AI SDK loses them).
- Bounded memory (issue 32): of a long loop only the attempts an envelope reports are kept, the
  first and the latest ``KEPT_ATTEMPTS - 1``; every other one (its traceback, frames and causes)
  is dropped as the next one fails. ``attempts_dropped`` on the raised error counts them (the
  message still says how many attempts failed; the envelope marks ``error.errors`` truncated).
  Each wait is at most ``MAX_WAIT_MS`` (the longest ``timeoutMs``).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TypeVar

from ..errors import AbortedError, APICallError, RetryError
from ..errors import TimeoutError as AITimeoutError
from ..errors.aimux import KEPT_ATTEMPTS, _parse_retry_after_ms

__all__ = ["KEPT_ATTEMPTS", "MAX_WAIT_MS", "retry_delay_ms", "retry_with_exponential_backoff"]

T = TypeVar("T")

_MAX_HINT_MS = 60_000
#: the longest wait between two attempts (2**31 - 1 ms, ``ops.limits.MAX_TIMER_MS``)
MAX_WAIT_MS = 2**31 - 1


class _Attempts:
    """The failed attempts of one loop: the first and the latest ``KEPT_ATTEMPTS - 1`` kept,
    the others dropped as they come (only their count is kept)."""

    __slots__ = ("count", "first", "latest")

    def __init__(self) -> None:
        self.count = 0
        self.first: BaseException | None = None
        self.latest: deque[BaseException] = deque(maxlen=KEPT_ATTEMPTS - 1)

    def add(self, error: BaseException) -> None:
        self.count += 1
        if self.first is None:
            self.first = error
        else:
            self.latest.append(error)  # the oldest of the latest drops out here

    def kept(self) -> list[BaseException]:
        return ([self.first] if self.first is not None else []) + list(self.latest)

    @property
    def dropped(self) -> int:
        return self.count - (1 if self.first is not None else 0) - len(self.latest)


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
    errors = _Attempts()
    delay_ms = float(initial_delay_ms)
    while True:
        try:
            return attempt()
        except BaseException as error:
            if isinstance(error, AITimeoutError) and errors.count:
                # the deadline passed during backoff (or the next attempt): the timeout keeps
                # the attempts, the last one as its cause (its status, retry-after and the
                # provider's code are the reason the call ran out of time)
                error.errors = errors.kept()
                error.attempts_dropped = errors.dropped
                if error.__cause__ is None:
                    error.__cause__ = error.errors[-1]
                raise
            if isinstance(error, (AbortedError, AITimeoutError)) or not isinstance(
                error, Exception
            ):
                # the AI SDK rethrows abort / timeout errors as they are (isAbortError)
                raise
            if max_retries == 0:
                raise
            errors.add(error)
            tries = errors.count
            if tries > max_retries:
                raise RetryError(
                    reason="maxRetriesExceeded",
                    errors=errors.kept(),
                    attempts_dropped=errors.dropped,
                ) from None
            if isinstance(error, APICallError) and error.is_retryable:
                wait_s = min(retry_delay_ms(error, delay_ms), MAX_WAIT_MS) / 1000.0
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
            raise RetryError(
                reason="errorNotRetryable", errors=errors.kept(), attempts_dropped=errors.dropped
            ) from None


def _sleep(seconds: float, cancelled: threading.Event | None) -> bool:
    """Wait ``seconds`` on this thread; True when ``cancelled`` was set meanwhile."""
    if cancelled is not None:
        return cancelled.wait(seconds)
    if seconds > 0:
        time.sleep(seconds)
    return False
