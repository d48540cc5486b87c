"""The C queues of libaimux (``native/src/aimux_queue.c``), when the library runs this core.

``use(ffi, lib)`` is called once by the library's init code; until then (a plain Python process)
``lib`` is None and every stream keeps its events in Python. ``AnswerQueue``: a stream's host tool
answers beside its C queue (``native/src/aimux_answers.c``). The queue's flag, answer and
wake-up values are defined once, in ``native/src/aimux_queue.h``, which cffi's cdef reads too:
they are taken from ``lib`` here, never copied.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AnswerQueue", "ffi", "lib", "take", "use"]

#: libaimux's cffi ``ffi`` and ``lib`` (None in a plain Python process)
ffi: Any = None
lib: Any = None

# the values of aimux_queue.h (set by ``use``)
Q_END = Q_PY = Q_CANCEL = Q_STOPPED = Q_DONE = Q_PULL = Q_BLOCKED = 0
T_DATA = T_END = T_EMPTY = T_PY = T_OOM = 0
W_ROOM = W_RELIST = 0

#: _aimux_cq_push's answer when it could not take the events (out of memory)
SIZE_MAX = 2**64 - 1


def use(new_ffi: Any, new_lib: Any) -> None:
    """libaimux runs this core: streams opened through the C ABI get a C queue."""
    global ffi, lib, Q_END, Q_PY, Q_CANCEL, Q_STOPPED, Q_DONE, Q_PULL, Q_BLOCKED
    global T_DATA, T_END, T_EMPTY, T_PY, T_OOM, W_ROOM, W_RELIST
    Q_END, Q_PY, Q_CANCEL = new_lib._AIMUX_Q_END, new_lib._AIMUX_Q_PY, new_lib._AIMUX_Q_CANCEL
    Q_STOPPED, Q_DONE = new_lib._AIMUX_Q_STOPPED, new_lib._AIMUX_Q_DONE
    Q_PULL, Q_BLOCKED = new_lib._AIMUX_Q_PULL, new_lib._AIMUX_Q_BLOCKED
    T_DATA, T_END, T_EMPTY = new_lib._AIMUX_T_DATA, new_lib._AIMUX_T_END, new_lib._AIMUX_T_EMPTY
    T_PY, T_OOM = new_lib._AIMUX_T_PY, new_lib._AIMUX_T_OOM
    W_ROOM, W_RELIST = new_lib._AIMUX_W_ROOM, new_lib._AIMUX_W_RELIST
    ffi, lib = new_ffi, new_lib


def take(q: Any, max_events: int, blocking: bool) -> tuple[int, bytes | None, bool, int]:
    """``_aimux_cq_take`` of the C queue ``q``: (answer, event or batch, ended, wake-ups)."""
    out = ffi.new("char **")
    ended = ffi.new("int32_t *")
    wake = ffi.new("int *")
    st = lib._aimux_cq_take(q, max_events, 1 if blocking else 0, out, ended, wake)
    data = None
    if out[0] != ffi.NULL:
        data = ffi.string(out[0])
        lib._aimux_cq_free_string(out[0])
    if st == T_OOM or (st == T_DATA and data is None):
        raise MemoryError("cannot take the stream's events")
    return st, data, bool(ended[0]), wake[0]


class AnswerQueue:
    """A stream's host tool answers beside its C queue ``q`` (``native/src/aimux_answers.c``):
    ``ops.answers.ToolAnswers``'s ``AnswerQueue`` (the loop waits in C, without the interpreter
    lock; a plain output is taken there on the host's thread)."""

    __slots__ = ("_q",)

    def __init__(self, q: Any) -> None:
        self._q = q  # (a reference: the queue lives as long as this does)

    def expect(self, call_id: str) -> None:
        key = call_id.encode("utf-8", "surrogatepass")
        if not lib._aimux_cq_expect(self._q, key, len(key)):
            raise MemoryError("cannot note the tool call awaited")

    def claim(self, call_id: str) -> int:
        """1: queued (an answer taken by the Python side); 2: answered already; 0: not
        awaited."""
        key = call_id.encode("utf-8", "surrogatepass")
        got = int(lib._aimux_cq_claim(self._q, key, len(key)))
        if got < 0:
            raise MemoryError("cannot queue the tool's answer")
        return got

    def wake(self) -> None:
        lib._aimux_cq_answers_wake(self._q)

    def take(self, timeout: float) -> tuple[str, bytes | None] | None:
        """The oldest answer, waiting up to ``timeout`` s (< 0: no bound): (call id, its answer
        JSON, or None for one the Python side holds), or None."""
        out_id = ffi.new("char **")
        out_json = ffi.new("char **")
        if not lib._aimux_cq_answer_take(self._q, timeout, out_id, out_json):
            return None
        try:
            call_id = ffi.string(out_id[0]).decode("utf-8", "surrogatepass")
            text = None if out_json[0] == ffi.NULL else ffi.string(out_json[0])
        finally:
            lib._aimux_cq_free_string(out_id[0])
            if out_json[0] != ffi.NULL:
                lib._aimux_cq_free_string(out_json[0])
        return call_id, text
