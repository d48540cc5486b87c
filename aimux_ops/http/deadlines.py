"""Deadlines of reads that block a thread: one watchdog thread per process (``aimux-deadlines``).

A response read on its caller's thread (the sync client: every call with ``timeoutMs``, every
stream read on the caller's thread) must be ended when its deadline passes mid-body, so a slow
drip cannot outlive it (``transport.HttpResponse``: the callback shuts the socket down). Those
deadlines are entries of one heap, watched by one daemon thread, not a timer thread each.

- ``after(delay_s, callback)`` registers ``callback`` to run once, ``delay_s`` seconds from now
  (any thread); it returns an ``Entry`` whose ``cancel()`` (any thread) is O(1) and takes no lock:
  it marks the entry, and the watchdog skips it when it comes up (the heap is compacted when
  cancelled entries are the majority). A callback that was already due may still run once after
  ``cancel()`` returns (as with ``threading.Timer``): callbacks check their own state.
- The thread starts with the first deadline, waits on a condition until the earliest one, and is
  woken when an earlier one is added. Callbacks run on it in deadline order, outside its lock;
  one that raises is ignored, the others still run. It is a daemon: nothing joins it (DESIGN.md
  "The host's exit").
- A forked child starts with no thread, an empty heap and a fresh lock (``on_fork_child``): its
  first deadline starts its own thread; the parent's deadlines are not the child's.

DESIGN.md "Deadlines: one watchdog thread".
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable

from ..guest import on_fork_child

__all__ = ["THREAD_NAME", "Entry", "after"]

THREAD_NAME = "aimux-deadlines"

#: the heap is rebuilt without its cancelled entries when more than this many and more than
#: half of it are cancelled (amortized O(1) per cancel; a finished call's entry would otherwise
#: stay until its deadline)
_COMPACT_MIN = 64


class Entry:
    """One registered deadline: ``cancel()`` it when it is no longer needed."""

    __slots__ = ("_owner", "callback")

    def __init__(self, callback: Callable[[], object], owner: _Watchdog) -> None:
        #: None once cancelled or taken by the watchdog to run
        self.callback: Callable[[], object] | None = callback
        self._owner = owner

    def cancel(self) -> None:
        """Never run the callback (unless it is running or about to): no lock, no wait."""
        if self.callback is not None:
            self.callback = None  # drops the callback's references (a response) at once
            self._owner.cancelled += 1  # a hint for compaction; a lost increment is harmless


_Item = tuple[float, int, Entry]


class _Watchdog:
    """The heap, its lock and condition, and the thread (one per process)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[_Item] = []
        self._seq = 0
        self._started = False
        self.thread: threading.Thread | None = None  # once started
        self.cancelled = 0  # entries cancelled and maybe still in the heap (approximate)

    def add(self, delay_s: float, callback: Callable[[], object]) -> Entry:
        entry = Entry(callback, self)
        when = time.monotonic() + max(delay_s, 0.0)
        with self._cond:
            self._seq += 1
            item = (when, self._seq, entry)
            heap = self._heap
            heapq.heappush(heap, item)
            if self.cancelled > _COMPACT_MIN and self.cancelled * 2 > len(heap):
                heap[:] = [i for i in heap if i[2].callback is not None]
                heapq.heapify(heap)
                self.cancelled = 0
            if not self._started:
                thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
                try:
                    thread.start()
                except BaseException:  # no thread can be started: fail as Timer.start did
                    entry.callback = None
                    raise
                self._started = True
                self.thread = thread
            elif heap[0] is item:
                self._cond.notify()  # the watchdog waits for a later deadline
        return entry

    def _run(self) -> None:
        cond = self._cond
        heap = self._heap
        while True:
            due: list[Callable[[], object]] = []
            with cond:
                while not due:
                    now = time.monotonic()
                    while heap and heap[0][0] <= now:
                        entry = heapq.heappop(heap)[2]
                        callback = entry.callback
                        if callback is None:
                            if self.cancelled > 0:
                                self.cancelled -= 1
                        else:
                            entry.callback = None
                            due.append(callback)
                    if not due:
                        cond.wait(heap[0][0] - now if heap else None)
            for callback in due:
                try:
                    callback()
                except BaseException:  # noqa: BLE001 - a failing callback must not stop the others
                    pass


_watchdog = _Watchdog()


def after(delay_s: float, callback: Callable[[], object]) -> Entry:
    """Run ``callback`` on the watchdog thread ``delay_s`` seconds from now (unless cancelled)."""
    return _watchdog.add(delay_s, callback)


@on_fork_child
def _reset_after_fork() -> None:
    """In a forked child: no watchdog thread (it does not exist here), an empty heap, a fresh
    lock (the parent's thread may have held it at the fork). The parent's entries are left to
    the abandoned object: a cancel of one touches nothing the child uses."""
    global _watchdog
    _watchdog = _Watchdog()
