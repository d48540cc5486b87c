"""The stream loop: every open stream runs on one asyncio event loop thread inside the core, so no
stream holds a thread of its own while it waits on the network (DESIGN.md "The library as a
guest" → threads and concurrency).

- ``spawn(fn)`` runs the synchronous ``fn`` in a greenlet on the loop thread. Inside it,
  ``await_only(awaitable)`` suspends that greenlet until the awaitable completes (the loop serves
  every other stream meanwhile): the providers' synchronous event iterators run unchanged over an
  asynchronous byte source (``transport.HttpResponse`` switches to ``httpx.AsyncClient`` when
  ``in_stream()``). The returned future's ``cancel()`` (any thread) throws ``CancelledError`` into
  the greenlet at its current wait; a stream is cancelled with ``interrupt`` instead (its
  interruptible waits end) and by shutting its socket down.
- ``sleep(seconds, cancelled)``: a wait that never blocks the loop when called on it.
- ``Notifier``: the process's ready list of stream handles and the pipe whose read end is the C
  ABI's ``aimux_events_fd``: a byte is written when the list goes from empty to non-empty.
- ``reset_after_fork()``: a forked child drops the parent's loop, client and pipe (they belong
  to the parent); the next stream starts fresh ones.
- ``stop(wait)``: a Python host's exit (``dispatch``'s ``atexit`` hook, before the interpreter
  finalizes): the loop lets its tasks end for at most ``wait`` seconds, stops, and its thread is
  joined, so that no greenlet is resumed while the interpreter tears itself down (DESIGN.md
  "The host's exit" → "A Python host's exit").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import importlib.util
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import greenlet

from .redact import NO_SECRETS, Secrets, active_secrets

# httpcore asks sniffio which async library runs, importing it on every request; without sniffio
# installed that is a failed import (~0.3 ms) each time. Remember the failure (a None entry makes
# `import sniffio` fail at once); httpcore then assumes asyncio, which it is here.
if importlib.util.find_spec("sniffio") is None:
    sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]

__all__ = [
    "Notifier",
    "await_only",
    "current",
    "in_stream",
    "interrupt",
    "loop_state",
    "notifier",
    "reset_after_fork",
    "set_none",
    "sleep",
    "spawn",
    "stop",
    "wait",
]

T = TypeVar("T")


class _StreamGreenlet(greenlet.greenlet):  # type: ignore[misc]
    """A greenlet running one stream's synchronous code on the loop thread."""

    #: the future of an interruptible wait in progress (``sleep``, ``wait``), else None
    waiting: asyncio.Future[Any] | None = None
    interrupted = False
    #: called each time the greenlet is about to suspend in ``await_only``
    on_suspend: Callable[[], None] | None = None
    #: the call secrets active in the greenlet when it suspended: active in the code it awaits
    #: too (that runs in the loop's task: httpx's reads and their log records)
    secrets: Secrets = NO_SECRETS


def _on_loop_thread() -> bool:
    """True on the stream loop's thread. Other threads never touch greenlet here: a host thread
    keeps no greenlet state of ours, which its own thread-local destructors would free at the
    host's exit before the host's exit handlers run (and may call us)."""
    st = _state
    return st is not None and st.thread.ident == threading.get_ident()


def in_stream() -> bool:
    """True when called from a stream's code on the loop thread (``await_only`` works)."""
    return _on_loop_thread() and isinstance(greenlet.getcurrent(), _StreamGreenlet)


def await_only(awaitable: Awaitable[T]) -> T:
    """Wait for ``awaitable`` from a stream greenlet: the loop runs everything else meanwhile."""
    current = greenlet.getcurrent()
    if not isinstance(current, _StreamGreenlet):
        raise RuntimeError("await_only outside a stream greenlet")
    hook = current.on_suspend
    if hook is not None:
        hook()
    current.secrets = active_secrets()
    result: T = current.parent.switch(awaitable)
    return result


def current() -> Any:
    """The calling stream's greenlet (for ``interrupt``); None outside a stream."""
    if not _on_loop_thread():
        return None
    g = greenlet.getcurrent()
    return g if isinstance(g, _StreamGreenlet) else None


def wait(future: asyncio.Future[Any]) -> bool:
    """Wait for ``future`` from a stream greenlet; False when ``interrupt`` ended the wait."""
    g = greenlet.getcurrent()
    if not isinstance(g, _StreamGreenlet):
        raise RuntimeError("aio.wait outside a stream greenlet")
    if g.interrupted:
        return False
    g.waiting = future
    try:
        await_only(future)
    except asyncio.CancelledError:
        return False
    finally:
        g.waiting = None
    return True


def _interrupt(g: _StreamGreenlet) -> None:
    g.interrupted = True
    fut = g.waiting
    if fut is not None and not fut.done():
        fut.cancel()


def interrupt(g: Any) -> None:
    """End ``g``'s interruptible wait, now or when it starts one (any thread). Network reads
    are not interrupted this way (cancelling httpx mid-body leaks the connection): a stream's
    cancel shuts its socket down instead."""
    if isinstance(g, _StreamGreenlet) and not g.dead:  # a finished stream has no wait to end
        st = _state  # g's loop, or a newer one (never a loop started just for this)
        if st is not None and st.pid == os.getpid():
            st.loop.call_soon_threadsafe(_interrupt, g)


async def _drive(fn: Callable[[], None]) -> None:
    g = _StreamGreenlet(fn)
    request = g.switch()
    while not g.dead:
        try:
            with g.secrets.active():
                value = await request
        except BaseException as exc:  # noqa: BLE001 - handed to the stream's code
            request = g.throw(exc)
        else:
            request = g.switch(value)


class _Loop:
    """One event loop thread and the async HTTP client bound to it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self.client: Any = None  # httpx.AsyncClient, made on the loop thread on first use
        self.stopped = False  # ``stop`` ran: the next stream starts a new loop
        self.thread = threading.Thread(target=self._run, name="aimux-streams", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:  # what httpx's first async request imports, before any stream's deadline runs
            importlib.import_module("anyio._backends._asyncio")
        except ImportError:
            pass
        self.loop.run_forever()

    async def _wind_down(self, deadline: float) -> None:
        """Wait for the other tasks to end (at most until ``deadline``), then stop the loop:
        what is still suspended then is never resumed (``stop``)."""
        me = asyncio.current_task()
        while True:
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            left = deadline - time.monotonic()
            if not tasks or left <= 0:
                break
            await asyncio.wait(tasks, timeout=left)
        self.loop.stop()


_state: _Loop | None = None
_state_lock = threading.Lock()


def loop_state() -> _Loop:
    """The process's stream loop (started on first use; a new one in a forked child)."""
    global _state
    st = _state
    if st is not None and st.pid == os.getpid() and not st.stopped:
        return st
    with _state_lock:
        if _state is None or _state.pid != os.getpid() or _state.stopped:
            _state = _Loop()
        return _state


def stop(wait: float) -> bool:
    """Stop this process's stream loop (a Python host's exit, before finalization): its tasks
    get at most ``wait`` seconds to end (``dispatch`` cancels the running streams first), then
    the loop stops and its thread is joined (at most one second more). A task still suspended
    then is never resumed. True when no loop thread of this process runs any more. Nothing to
    do when no loop runs here (never started, or the parent's after a fork); a stream started
    afterwards gets a new loop."""
    st = _state
    if st is None or st.pid != os.getpid() or st.stopped:
        return True
    if st.thread is threading.current_thread():
        return False  # not from the loop itself: nothing could join it
    deadline = time.monotonic() + max(wait, 0.0)

    def wind_down() -> None:
        st.loop.create_task(st._wind_down(deadline))

    try:
        st.loop.call_soon_threadsafe(wind_down)
    except RuntimeError:  # closed: its thread is over
        pass
    st.thread.join(max(deadline - time.monotonic(), 0.0) + 1.0)
    st.stopped = True
    return not st.thread.is_alive()


def spawn(fn: Callable[[], None]) -> concurrent.futures.Future[None]:
    """Run ``fn`` in a new stream greenlet on the loop (returns at once, from any thread)."""
    return asyncio.run_coroutine_threadsafe(_drive(fn), loop_state().loop)


def sleep(seconds: float, cancelled: threading.Event | None = None) -> bool:
    """Wait ``seconds``; True when ``cancelled`` was set (or the stream cancelled) meanwhile.
    On the loop it suspends the stream only; elsewhere it blocks the calling thread."""
    if in_stream():
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        timer = loop.call_later(max(seconds, 0.0), set_none, fut)
        try:
            if not wait(fut):
                return True
        finally:
            timer.cancel()
        return cancelled is not None and cancelled.is_set()
    if cancelled is not None:
        return cancelled.wait(seconds)
    if seconds > 0:
        time.sleep(seconds)
    return False


def set_none(fut: asyncio.Future[None]) -> None:
    """Complete ``fut`` with None unless it is done already (a loop callback)."""
    if not fut.done():
        fut.set_result(None)


def _native_ready() -> tuple[Any, Any] | None:
    """libaimux's ready list (its cffi ``ffi`` and ``lib``) when the library runs this core
    (``dispatch.use_native_queues``): the list, with the same rules, is then kept in C, so the C
    ABI's ``aimux_ready`` / ``aimux_poll_ready`` take handles without the interpreter lock."""
    dispatch = sys.modules.get("aimux_ops.dispatch")
    lib = getattr(dispatch, "_native", None)
    return None if lib is None else (getattr(dispatch, "_native_ffi", None), lib)


class Notifier:
    """The ready list: handles of event-driven streams with something to poll, and the pipe
    that tells a host's event loop (one byte per empty → non-empty transition of the list)."""

    def __init__(self) -> None:
        self.rfd, self.wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.pid = os.getpid()
        self._ready: deque[int] = deque()
        self._listed: set[int] = set()
        self._lock = threading.Lock()
        self._signalled = False
        self._flush_scheduled = False
        self._native: tuple[Any, Any] | None = None
        native = _native_ready()
        if native is not None:
            self.adopt_native(*native)

    def adopt_native(self, ffi: Any, lib: Any) -> None:
        """Keep the list in libaimux from now on (``dispatch.use_native_queues``; also for a
        notifier made before a Python host loaded the library): its pipe, and the handles
        listed so far, move there (an extra byte in the pipe is a harmless wake-up)."""
        with self._lock:
            lib._aimux_rl_set_fd(self.wfd)
            self._native = (ffi, lib)
            while self._ready:
                handle = self._ready.popleft()
                lib._aimux_rl_mark(handle, 0)
            self._listed.clear()
            self._signalled = False

    def mark(self, handle: int) -> None:
        """``handle`` has something to poll (any thread; cheap when already listed). On the loop
        thread the byte is written once per loop iteration, after every stream that had data in
        it was served (one wake-up of the host for all of them, not one per event)."""
        if self._native is not None:
            self._mark_native(handle)
            return
        with self._lock:
            if self._native is not None:  # adopted meanwhile
                self._mark_native(handle)
                return
            if handle in self._listed:
                return
            self._listed.add(handle)
            self._ready.append(handle)
            if self._signalled:
                return
            self._signalled = True
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None:
                if not self._flush_scheduled:
                    self._flush_scheduled = True
                    loop.call_soon(self._flush)
                return
        self._write()

    def _mark_native(self, handle: int) -> None:
        assert self._native is not None
        lib = self._native[1]
        loop = asyncio._get_running_loop()
        if lib._aimux_rl_mark(handle, 0 if loop is None else 1) == 1 and loop is not None:
            loop.call_soon(lib._aimux_rl_write)

    def _flush(self) -> None:
        with self._lock:
            self._flush_scheduled = False
        self._write()

    def _write(self) -> None:
        try:
            os.write(self.wfd, b"\x01")
        except (BlockingIOError, OSError):
            pass  # a full pipe is readable already

    def take(self, capacity: int) -> list[int]:
        """Up to ``capacity`` listed handles, oldest first; each leaves the list."""
        if self._native is not None:
            ffi, lib = self._native
            out: list[int] = []
            buf = ffi.new("uint64_t[]", 256)
            while len(out) < capacity:
                n = lib._aimux_rl_take(buf, min(256, capacity - len(out)))
                out.extend(buf[0:n])
                if n < 256:
                    break
            return out
        with self._lock:
            n = min(capacity, len(self._ready))
            out = [self._ready.popleft() for _ in range(n)]
            self._listed.difference_update(out)
            if not self._ready:
                self._signalled = False
        return out


_notifier: Notifier | None = None


def notifier() -> Notifier:
    """The process's notifier (its pipe made on first use; a new one in a forked child)."""
    global _notifier
    n = _notifier
    if n is not None and n.pid == os.getpid():
        return n
    with _state_lock:
        if _notifier is None or _notifier.pid != os.getpid():
            old, _notifier = _notifier, Notifier()
            if old is not None:  # the parent's pipe: close our copies of it (after the new
                for fd in (old.rfd, old.wfd):  # one exists: the fd numbers differ)
                    try:
                        os.close(fd)
                    except OSError:
                        pass
        return _notifier


def reset_after_fork() -> None:
    """In a forked child: forget the parent's loop thread (it does not exist here), its HTTP
    client and its pipe. Safe to call more than once; also done lazily by pid check."""
    global _state, _state_lock
    _state_lock = threading.Lock()  # another parent thread may have held it at the fork
    st = _state
    if st is not None and st.pid != os.getpid():
        _state = None
    if _notifier is not None:
        notifier()  # replaces (and closes) an inherited pipe
