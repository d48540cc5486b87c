"""The core as a guest in its host's process: what must be reset after a fork, and the limits.

- **Fork reset hooks.** Everything process-bound (the HTTP pools, the stream-handle registry,
  module locks another thread may have held at fork time, threads the core started) registers a
  hook with ``on_fork_child``; the hooks run in the child of every fork, in registration order,
  before the child's first call. One ``os.register_at_fork(after_in_child=...)`` runs them: for a
  fork through ``os.fork()`` CPython calls it, for a C-level ``fork()`` of a host the shim's
  ``pthread_atfork`` handlers run CPython's after-fork handling (``PyOS_AfterFork_Child``), which
  calls it. A hook must not take a lock it did not create itself and must not do I/O: it abandons
  the parent's objects (the parent still owns them) and makes fresh ones. Before the hooks, the
  import system's state a fork orphaned is reset (``_reset_imports_after_fork``): a module
  another thread was importing is imported again, whole, by the child.
- **What a fork waits for** (``_before_fork``). Some state cannot be reset in a child: pydantic
  and pydantic_core hold locks a child could never free while they work (pydantic_core's Rust
  one-time cells: PyO3's ``PyOnceLock`` gives up the interpreter lock inside its first
  initialisation, so a fork can take the lock there and the child waits on a cell that never
  completes; functools' ``cached_property`` lock on 3.11; pydantic's rebuild lock). So a fork
  waits until no other thread has a frame of those packages on its stack (``_FORK_WAITS_FOR``,
  and the core's functions that call pydantic_core directly, ``fork_waits_inside``),
  for at most ``_FORK_WAIT_S`` (a thread that stays inside longer, waiting on the forking thread,
  must not deadlock the fork: it then forks as before). Checked only when forking.
- **The host's exit.** Inside libaimux the interpreter is never finalized, so the core's threads
  may still run while the host's C exit handlers do. OpenSSL's (``OPENSSL_cleanup``) would free
  what those threads use; ``keep_openssl_at_exit`` makes libaimux initialize OpenSSL, before
  Python first loads it, without that handler (DESIGN.md "The host's exit").
- **Limits** (environment variables, read once per process and again after a fork): see
  ``Limits``. Documented in DESIGN.md "The library as a guest".
"""

from __future__ import annotations

import sys
from posix import register_at_fork  # os's, without importing os

# This module is on libaimux's first-call path, which imports neither os, typing nor dataclasses
# (cold start): os is imported where it is used.
TYPE_CHECKING = False  # typing's own flag
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Any, TypeVar

    T = TypeVar("T")

__all__ = [
    "Limits",
    "fork_waits_inside",
    "keep_openssl_at_exit",
    "limits",
    "on_fork_child",
]

_hooks: list[Callable[[], None]] = []


def on_fork_child(hook: Callable[[], None]) -> Callable[[], None]:
    """Register ``hook`` to run in the child after a fork (usable as a decorator)."""
    _hooks.append(hook)
    return hook


def _reset_imports_after_fork() -> None:
    """The import system's state a fork orphaned, made usable again in the child.

    A thread of the parent half-way through an import holds that module's import lock
    (importlib's per-module ``_ModuleLock``; CPython resets only its global import lock after a
    fork) and has its module in ``sys.modules`` half executed. In the child that thread does not
    exist: the first import of the same module would wait for its lock forever, or get the half
    module. So every module lock another thread owned is dropped (the next import of that
    module makes a fresh one) and every module that thread was executing leaves ``sys.modules``
    (the next import runs it again, whole). importlib's private table is read here, the one
    place, with a test that fails if this stops working (``tests/test_guest.py``)."""
    import _thread  # built in, imported at start-up: no import runs here

    me = _thread.get_ident()
    table = getattr(sys.modules.get("_frozen_importlib"), "_module_locks", None)
    if not isinstance(table, dict):
        return
    orphaned: set[str] = set()
    for name, ref in list(table.items()):
        lock = ref() if callable(ref) else None
        owner = getattr(lock, "owner", None)
        if owner is not None and owner != me:
            orphaned.add(name)
            table.pop(name, None)
    for name in orphaned:
        module = sys.modules.get(name)
        if getattr(getattr(module, "__spec__", None), "_initializing", False):
            del sys.modules[name]


def _after_fork_child() -> None:
    global _limits
    _limits = None
    _reset_imports_after_fork()
    for hook in list(_hooks):
        try:
            hook()
        except Exception:  # noqa: BLE001 - one broken hook must not stop the others
            pass


#: the packages whose half-done work a child cannot redo: a fork waits for threads inside them
_FORK_WAITS_FOR = ("pydantic", "pydantic_core", "orjson")
#: the longest a fork waits for them (seconds)
_FORK_WAIT_S = 10.0
#: the core's own functions that call into pydantic_core directly (no pydantic frame above it)
_FORK_WAITS_IN: set[object] = set()


def fork_waits_inside(fn: Callable[..., T]) -> Callable[..., T]:
    """Mark ``fn`` (a decorator) as one a fork waits for, as for ``_FORK_WAITS_FOR``: for a
    function of the core that calls pydantic_core's own methods (its Rust code, no frame of its
    own) outside any pydantic frame."""
    _FORK_WAITS_IN.add(fn.__code__)
    return fn


def _inside_packages_elsewhere() -> bool:
    """Whether a thread other than this one has a frame of ``_FORK_WAITS_FOR`` on its stack
    (one loaded, or being imported). The answer holds while this thread keeps the interpreter
    lock: the fork follows at once (a switch interval, 5 ms, is far longer than what is left)."""
    import _thread

    prefixes = []
    for name in _FORK_WAITS_FOR:
        file = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(file, str):
            prefixes.append(file[: file.rfind("/") + 1])
    if not prefixes:
        return False
    starts, waits_in = tuple(prefixes), _FORK_WAITS_IN
    me = _thread.get_ident()
    for ident, top in sys._current_frames().items():
        frame: FrameType | None = None if ident == me else top
        while frame is not None:
            code = frame.f_code
            if code in waits_in or code.co_filename.startswith(starts):
                return True
            frame = frame.f_back
    return False


def _before_fork() -> None:
    """Before every fork (``os.fork()``, or a host's ``fork()`` through the shim's prepare
    handler): wait, giving up the interpreter lock, until no other thread is inside
    ``_FORK_WAITS_FOR``, at most ``_FORK_WAIT_S``."""
    if not _inside_packages_elsewhere():
        return
    import time

    end = time.monotonic() + _FORK_WAIT_S
    while _inside_packages_elsewhere() and time.monotonic() < end:
        time.sleep(0.0005)  # the interpreter lock to the others: they leave


register_at_fork(before=_before_fork, after_in_child=_after_fork_child)


#: the extension modules whose first import loads OpenSSL
_OPENSSL_USERS = ("_hashlib", "_ssl")


class _OpenSSLFirst:
    """Runs ``keep(path)`` with the path of the first of ``_OPENSSL_USERS`` about to be imported
    (before the import loads OpenSSL), once; finds nothing itself."""

    def __init__(self, keep: Callable[[bytes], object]) -> None:
        self._keep: Callable[[bytes], object] | None = keep

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        """A meta path finder's hook (``sys.meta_path``)."""
        keep = self._keep
        if keep is None or fullname not in _OPENSSL_USERS:
            return None
        self._keep = None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(fullname, path)
        if spec is not None and spec.origin:
            import os

            keep(os.fsencode(spec.origin))
        # None: the usual finders import it


def keep_openssl_at_exit(keep: Callable[[bytes], object]) -> None:
    """Called once by libaimux's init code with the shim's ``_aimux_openssl_keep``: before the
    first import that loads OpenSSL, ``keep`` gets that extension module's path and initializes
    OpenSSL there without its exit handler. Only in an interpreter libaimux started itself (a
    Python host's interpreter, and its OpenSSL, follow the host's rules); nothing when one of
    them is imported already."""
    if any(name in sys.modules for name in _OPENSSL_USERS):
        return
    sys.meta_path.insert(0, _OpenSSLFirst(keep))


def _env_int(name: str, default: int, minimum: int) -> int:
    import os

    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        return default
    return max(value, minimum)


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
    - ``AIMUX_STREAM_READER_THREADS`` [4096; 0: none]: event-driven streams
      (``aimux_stream_start``) running at once, each read by a reader thread of its own (a small
      stack); one more is a clear error (``AI_APICallError``, retryable, naming the setting;
      nothing was sent).
    - ``AIMUX_MAX_DECODED_BYTES`` [67108864; at least 1024]: what a compressed response body
      (``Content-Encoding``) may decode to: a whole body read at once, or each network read of a
      stream. Past it the decoding stops: a non-retryable ``AI_APICallError`` with the status,
      caused by ``aimux_ops.http.DecodedSizeError`` (a stream's events before it delivered first).
    """

    __slots__ = _LIMIT_FIELDS = (
        "pool_max_per_host",
        "pool_max_idle_per_host",
        "pool_timeout_ms",
        "stream_idle_timeout_ms",
        "stream_reader_threads",
        "max_decoded_bytes",
    )
    pool_max_per_host: int
    pool_max_idle_per_host: int
    pool_timeout_ms: int
    stream_idle_timeout_ms: int
    stream_reader_threads: int
    max_decoded_bytes: int

    def __init__(
        self,
        *,
        pool_max_per_host: int,
        pool_max_idle_per_host: int,
        pool_timeout_ms: int,
        stream_idle_timeout_ms: int,
        stream_reader_threads: int,
        max_decoded_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        values = (
            pool_max_per_host,
            pool_max_idle_per_host,
            pool_timeout_ms,
            stream_idle_timeout_ms,
            stream_reader_threads,
            max_decoded_bytes,
        )
        for name, value in zip(self._LIMIT_FIELDS, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Limits is immutable: cannot set {name!r}")

    def replace(self, **changes: int) -> Limits:
        """These limits with ``changes`` (``dataclasses.replace``'s use, for tests)."""
        return Limits(**{**dict(zip(self._LIMIT_FIELDS, self._values(), strict=True)), **changes})

    def _values(self) -> tuple[int, ...]:
        return tuple(getattr(self, n) for n in self._LIMIT_FIELDS)

    def __eq__(self, other: object) -> bool:
        return type(other) is Limits and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._LIMIT_FIELDS)
        return f"Limits({shown})"


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
            stream_reader_threads=_env_int("AIMUX_STREAM_READER_THREADS", 4096, 0),
            max_decoded_bytes=_env_int("AIMUX_MAX_DECODED_BYTES", 64 * 1024 * 1024, 1024),
        )
        _limits = lim
    return lim
