"""The reader threads of the core: a pool of parked threads that run streams' reads.

Starting a thread costs more than most of a short stream (``Thread.start`` waits until the new
thread runs: ~0.4 ms on a busy machine), so a reader thread whose stream is over parks and
takes the next stream's run; a thread parked for ``IDLE_S`` exits. Every stream is still one
thread's at a time: ``run`` hands ``job`` to a parked thread, or starts one (with the small
stack ``READER_STACK``), and never queues it. The pool holds at most as many threads as
``AIMUX_STREAM_READER_THREADS`` allows (a thread over it exits when its run is over); the
registry's slots bound the runs themselves. A forked child starts with an empty pool and fresh
locks (no thread of the parent exists there).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..guest import limits, on_fork_child

__all__ = ["IDLE_S", "READER_STACK", "THREAD_NAME", "Reader", "idle_threads", "retire", "run"]

#: a reader thread's stack (its frames: the op, the provider's parse, the HTTP client, TLS)
READER_STACK = 512 * 1024
#: how long a parked reader thread waits for the next run before it exits
IDLE_S = 10.0
THREAD_NAME = "aimux-stream-reader"


class Reader:
    """One run of a stream on a reader thread (what ``Stream._pump_thread`` holds): alive from
    ``run`` until the job returned, as a thread of its own would be."""

    __slots__ = ("_done", "_job", "thread")
    name = THREAD_NAME

    def __init__(self, job: Callable[[], None]) -> None:
        self._job = job
        self._done = threading.Event()
        self.thread: threading.Thread | None = None

    def is_alive(self) -> bool:
        return not self._done.is_set()

    def join(self, timeout: float | None = None) -> None:
        self._done.wait(timeout)

    def runs_here(self) -> bool:
        """The calling thread is the one running this job."""
        return self.thread is threading.current_thread()

    def _run(self) -> None:
        self.thread = threading.current_thread()
        try:
            self._job()
        finally:
            self._job = _nothing  # (drop the stream's references)
            self._done.set()


def _nothing() -> None:
    pass


class _Parked:
    """A parked thread: ``wake`` is held until a run is handed to it (a lock, the cheapest
    hand-off between threads)."""

    __slots__ = ("reader", "wake")

    def __init__(self) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()
        self.reader: Reader | None = None


_lock = threading.Lock()
_parked: list[_Parked] = []  # the most recently parked last (its stack is warm)
_threads = 0  # the pool's threads alive (running or parked)
_stack_lock = threading.Lock()  # ``threading.stack_size`` is the process's


def idle_threads() -> int:
    """Threads parked right now."""
    return len(_parked)


def retire() -> None:
    """Every parked thread exits now (the next run starts a thread)."""
    with _lock:
        parked = _parked[:]
        _parked.clear()
    for slot in parked:
        slot.wake.release()  # (no run: it exits)


def run(reader: Reader) -> None:
    """``reader``'s job on a parked reader thread, else on a new one; raises ``RuntimeError``
    when no thread could be started (nothing ran)."""
    global _threads
    with _lock:
        slot = _parked.pop() if _parked else None
        if slot is None:
            _threads += 1
    if slot is not None:
        slot.reader = reader
        slot.wake.release()
        return
    thread = threading.Thread(target=_serve, args=(reader,), name=THREAD_NAME, daemon=True)
    try:
        with _stack_lock:
            old = threading.stack_size(READER_STACK)
            try:
                thread.start()
            finally:
                threading.stack_size(old)
    except BaseException:
        with _lock:
            _threads -= 1
        raise


def _serve(reader: Reader | None) -> None:
    """A pool thread: its first run, then each run handed to it while parked, until it waited
    ``IDLE_S`` for one or the pool is over the limit."""
    global _threads
    try:
        while reader is not None:
            reader._run()  # (a job's exception ends this thread, reported as a thread's is)
            reader = _park()
    finally:
        with _lock:
            _threads -= 1


def _park() -> Reader | None:
    """The next run handed to this thread, or None: it exits (``_threads`` still counts it)."""
    me = _Parked()
    lock = _lock  # (a fork replaces it: this thread does not exist in the child)
    with lock:
        if _threads > limits().stream_reader_threads:
            return None
        _parked.append(me)
    if not me.wake.acquire(timeout=IDLE_S):
        with lock:
            if me in _parked:  # nobody took it: leave
                _parked.remove(me)
                return None
        me.wake.acquire()  # taken as the wait ran out: its run comes now
    return me.reader


@on_fork_child
def _reset_after_fork() -> None:
    """In a forked child: an empty pool and fresh locks (a parent thread may have held one at
    the fork; the parent's parked threads do not exist here)."""
    global _lock, _parked, _threads, _stack_lock
    _lock = threading.Lock()
    _parked = []
    _threads = 0
    _stack_lock = threading.Lock()
