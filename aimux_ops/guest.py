"""The core as a guest in its host's process: what must be reset after a fork, and the limits.

- **Fork reset hooks.** Everything process-bound (the HTTP pools, the stream-handle registry,
  module locks another thread may have held at fork time, threads the core started) registers a
  hook with ``on_fork_child``; the hooks run in the child of every fork, in registration order,
  before the child's first call. One ``os.register_at_fork(after_in_child=...)`` runs them: for a
  fork through ``os.fork()`` CPython calls it, for a C-level ``fork()`` of a host the shim's
  ``pthread_atfork`` handlers run CPython's after-fork handling (``PyOS_AfterFork_Child``), which
  calls it. A hook must not take a lock it did not create itself and must not do I/O: it abandons
  the parent's objects (the parent still owns them) and makes fresh ones.
- **The host's exit.** Inside libaimux the interpreter is never finalized, so a host that ends
  while the core's threads run Python would run its C exit handlers (OpenSSL's among them) under
  those threads. ``guard_exit`` arms the shim's exit handler, which stops every thread at the
  interpreter lock; the core calls it before it starts a thread (``core_thread``) or opens an
  HTTP client. A no-op in a plain Python process (its own finalization stops the threads).
- **Limits** (environment variables, read once per process and again after a fork): see
  ``Limits``. Documented in DESIGN.md "The library as a guest".
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "Limits",
    "core_thread",
    "guard_exit",
    "limits",
    "on_fork_child",
    "use_exit_guard",
]

_hooks: list[Callable[[], None]] = []


def on_fork_child(hook: Callable[[], None]) -> Callable[[], None]:
    """Register ``hook`` to run in the child after a fork (usable as a decorator)."""
    _hooks.append(hook)
    return hook


def _after_fork_child() -> None:
    global _limits
    _limits = None
    for hook in list(_hooks):
        try:
            hook()
        except Exception:  # noqa: BLE001 - one broken hook must not stop the others
            pass


os.register_at_fork(after_in_child=_after_fork_child)


_arm_exit_guard: Callable[[], object] | None = None


def use_exit_guard(arm: Callable[[], object]) -> None:
    """Called once by libaimux's init code with the shim's ``_aimux_exit_guard_arm``."""
    global _arm_exit_guard
    _arm_exit_guard = arm


def guard_exit() -> None:
    """Arms the shim's exit handler, once, after OpenSSL's (exit handlers run last-registered
    first, and OpenSSL registers its own when it is first loaded: loaded here first)."""
    global _arm_exit_guard
    arm = _arm_exit_guard
    if arm is None:
        return
    _arm_exit_guard = None  # a second arming would only register the same handler twice
    for crypto in ("_hashlib", "_ssl"):
        try:
            __import__(crypto)
        except ImportError:  # a Python built without OpenSSL: nothing to order against
            pass
    arm()


def core_thread(target: Callable[..., object], name: str, *args: object) -> threading.Thread:
    """One of the core's own (daemon) threads, not started yet (the caller may publish it
    first), with the host's exit guarded."""
    guard_exit()
    return threading.Thread(target=target, args=args, name=name, daemon=True)


def _env_int(name: str, default: int, minimum: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        return default
    return max(value, minimum)


@dataclass(frozen=True)
class Limits:
    """The core's resource limits (environment variables; defaults in brackets).

    - ``AIMUX_POOL_MAX_PER_HOST`` [4096]: connections open at once to one host (scheme, host,
      port), idle or in use. A call that needs one more waits for a free connection at most
      ``AIMUX_POOL_TIMEOUT_MS`` [10000], then fails with a retryable ``AI_APICallError`` saying
      the pool limit was reached and that nothing was sent.
    - ``AIMUX_POOL_MAX_IDLE_PER_HOST`` [64]: idle keep-alive connections kept per host.
    - ``AIMUX_STREAM_IDLE_TIMEOUT_MS`` [300000; 0 disables]: a stream nobody has read for this
      long is closed by the core (its connection released); its next read answers a terminal
      ``error`` event (``AI_TimeoutError``), and its handle stays valid until freed.
    """

    pool_max_per_host: int
    pool_max_idle_per_host: int
    pool_timeout_ms: int
    stream_idle_timeout_ms: int


_limits: Limits | None = None


def limits() -> Limits:
    """The limits of this process (read from the environment on first use)."""
    global _limits
    lim = _limits
    if lim is None:
        lim = Limits(
            pool_max_per_host=_env_int("AIMUX_POOL_MAX_PER_HOST", 4096, 1),
            pool_max_idle_per_host=_env_int("AIMUX_POOL_MAX_IDLE_PER_HOST", 64, 0),
            pool_timeout_ms=_env_int("AIMUX_POOL_TIMEOUT_MS", 10_000, 1),
            stream_idle_timeout_ms=_env_int("AIMUX_STREAM_IDLE_TIMEOUT_MS", 300_000, 0),
        )
        _limits = lim
    return lim
