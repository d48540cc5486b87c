"""The ready list of event-driven streams (``aimux_stream_start``) and its pipe.

The list holds the handles with something to poll, each at most once, oldest first; one byte is
written to the pipe (the read end is ``aimux_events_fd``) when the list goes from empty to
non-empty. Once libaimux runs the core (``cqueue.lib``), the list is kept in C
(``aimux_queue.c``), so ``aimux_ready`` / ``aimux_poll_ready`` take handles without the
interpreter lock; the pipe stays this module's. A freed stream leaves the list at once and is
never listed again (``forget``; in C, ``_aimux_cq_unregister``), so a host that never calls
``aimux_ready`` does not grow it. A forked child gets a new pipe and an empty list.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable

from . import cqueue

__all__ = ["ReadyList", "adopt_native", "ready_list", "reset_after_fork"]


class ReadyList:
    """The process's ready list and pipe (see the module docstring)."""

    def __init__(self) -> None:
        self.rfd, self.wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.pid = os.getpid()
        self._ready: deque[int] = deque()
        self._listed: set[int] = set()
        self._lock = threading.Lock()
        self._signalled = False
        if cqueue.lib is not None:
            cqueue.lib._aimux_rl_set_fd(self.wfd)

    def adopt_native(self) -> None:
        """libaimux runs the core now: the list is kept in C from now on, with this pipe, and
        the handles listed so far move there (an extra byte in the pipe is a harmless
        wake-up)."""
        lib = cqueue.lib
        with self._lock:
            lib._aimux_rl_set_fd(self.wfd)
            while self._ready:
                lib._aimux_rl_mark(self._ready.popleft())
            self._listed.clear()
            self._signalled = False

    def mark(self, handle: int, alive: Callable[[], bool]) -> None:
        """List ``handle`` (any thread; cheap when it is listed) while ``alive()`` holds: the
        check is made under the list's lock, which ``forget`` takes too."""
        lib = cqueue.lib
        if lib is not None:
            with self._lock:
                if alive():
                    lib._aimux_rl_mark(handle)
            return
        with self._lock:
            if handle in self._listed or not alive():
                return
            self._listed.add(handle)
            self._ready.append(handle)
            if self._signalled:
                return
            self._signalled = True
        self._write()

    def forget(self, handle: int) -> None:
        """``handle`` was freed: it leaves the list."""
        lib = cqueue.lib
        with self._lock:
            if lib is not None:
                lib._aimux_rl_forget(handle)
            elif handle in self._listed:
                self._listed.discard(handle)
                self._ready.remove(handle)

    def _write(self) -> None:
        try:
            os.write(self.wfd, b"\x01")
        except OSError:
            pass  # a full pipe is readable already

    def take(self, capacity: int) -> list[int]:
        """Up to ``capacity`` listed handles, oldest first; each leaves the list."""
        lib = cqueue.lib
        if lib is not None:
            out: list[int] = []
            buf = cqueue.ffi.new("uint64_t[]", 256)
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

    def __len__(self) -> int:
        lib = cqueue.lib
        if lib is not None:
            return int(lib._aimux_rl_count())
        return len(self._ready)


_list: ReadyList | None = None
_list_lock = threading.Lock()


def ready_list() -> ReadyList:
    """The process's ready list (its pipe made on first use; a new one in a forked child)."""
    global _list
    rl = _list
    if rl is not None and rl.pid == os.getpid():
        return rl
    with _list_lock:
        if _list is None or _list.pid != os.getpid():
            old, _list = _list, ReadyList()
            if old is not None:  # the parent's pipe: close our copies (after the new one
                for fd in (old.rfd, old.wfd):  # exists: the fd numbers differ)
                    try:
                        os.close(fd)
                    except OSError:
                        pass
        return _list


def adopt_native() -> None:
    """libaimux runs the core now: a list made before (a Python host that streamed before it
    loaded the library) moves to C; one made later is kept in C from the start."""
    if _list is not None and _list.pid == os.getpid():
        _list.adopt_native()


def reset_after_fork() -> None:
    """In a forked child: a fresh lock; the next use makes a new pipe and list."""
    global _list_lock
    _list_lock = threading.Lock()
    if _list is not None:
        ready_list()
