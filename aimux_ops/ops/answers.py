"""The host's answers to its tools' calls (CONTRACT §2.2: the core asks, the host answers).

The loop announces a step's host tool calls (``expect``) before it waits; the host answers each
one from any thread (``put``, reached through ``aimux_stream_tool_result``), in any order; the
loop takes them as they come, every one come at once (``take_ready``), woken by an answer, a
cancel or its deadline. An answer is one of three layers:

- ``{"output": <JSON>}`` — the tool's value (a ``tool-result`` the model sees);
- ``{"error": {"message": str, "data"?: <JSON>}}`` — a tool-level error the model sees and may
  recover from (a ``tool-error``);
- ``{"failure": <cause node>}`` — the tool failed at framework level (its ``execute`` raised):
  the model never sees it, the caller gets ``AI_ToolExecutionError`` caused by that chain.

A malformed answer, one for a call nobody waits for or a second answer to one call is refused
with a ``InvalidParamsError`` (301) naming what is wrong; nothing is lost (the call still waits
for its answer).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import orjson

from ..errors import InvalidParamsError, InvalidUTF8Error, InvalidWireJSONError, Violation

__all__ = ["Answer", "AnswerQueue", "ToolAnswers", "parse_answer", "refused"]

#: the function a host calls, as named in the errors it gets
_FUNCTION = "aimux_stream_tool_result"


@dataclass(frozen=True, slots=True)
class Answer:
    """One host answer: its layer and its value (the output, the error object or the node)."""

    layer: Literal["output", "error", "failure"]
    value: Any


def refused(path: str, reason: str) -> InvalidParamsError:
    return InvalidParamsError(
        f"invalid answer for {_FUNCTION}: {path}: {reason}",
        op=_FUNCTION,
        violations=[Violation(path=path, reason=reason)],
    )


def parse_answer(answer_json: bytes | str) -> Answer:
    """The ``Answer`` of ``answer_json``; a 201 / 202 / 301 error for what is not one."""
    try:
        data = orjson.loads(answer_json)
    except orjson.JSONDecodeError as exc:
        if isinstance(answer_json, bytes):
            try:
                answer_json.decode("utf-8")
            except UnicodeDecodeError as utf8:
                raise InvalidUTF8Error(
                    "answer_json is not valid UTF-8", argument="answer_json"
                ) from utf8
        raise InvalidWireJSONError("answer_json is not valid JSON", argument="answer_json") from exc
    if not isinstance(data, dict):
        raise refused("(root)", 'expected an object with one of "output", "error", "failure"')
    layers = [k for k in ("output", "error", "failure") if k in data]
    extra = sorted(set(data) - {"output", "error", "failure"})
    if len(layers) != 1 or extra:
        reason = (
            f"unknown field {extra[0]!r}"
            if extra
            else 'expected exactly one of "output", "error", "failure"'
        )
        raise refused("(root)", reason)
    layer = layers[0]
    value = data[layer]
    if layer == "error":
        if not isinstance(value, dict) or not isinstance(value.get("message"), str):
            raise refused("error.message", "expected a string")
        unknown = sorted(set(value) - {"message", "data"})
        if unknown:
            raise refused(f"error.{unknown[0]}", "unknown field")
    elif layer == "failure":
        if not isinstance(value, dict) or not isinstance(value.get("message"), str):
            raise refused("failure.message", "expected a cause node with a string message")
    return Answer(layer, value)  # type: ignore[arg-type]


class AnswerQueue(Protocol):
    """Where a stream opened through the C ABI keeps its answers (``streams.cqueue``'s, over
    ``native/src/aimux_answers.c``): a plain output for a call awaited is taken there on the
    host's thread without the interpreter lock; the others are this module's, queued there once
    taken (``claim``), so the loop takes every answer in the order they came, from one place."""

    def expect(self, call_id: str) -> None: ...

    def claim(self, call_id: str) -> int: ...

    def wake(self) -> None: ...

    def take(self, timeout: float) -> tuple[str, bytes | None] | None: ...


class ToolAnswers:
    """The answers of one stream's host tool calls (thread-safe); ``queue``: the stream's
    ``AnswerQueue`` when it has one (then the loop waits there), else a condition here."""

    def __init__(self, queue: AnswerQueue | None = None) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._queue = queue
        self._waiting: set[str] = set()  # announced, not answered yet
        self._answered: set[str] = set()  # answered (taken or not)
        self._ready: list[tuple[str, Answer]] = []  # answered, not taken yet
        #: answers taken here and queued in ``queue`` (their text stays here, parsed)
        self._held: dict[str, Answer] = {}
        self.woken = False  # a cancel woke the loop: it waits no more

    def expect(self, call_ids: list[str]) -> None:
        """The loop announces these calls: answers to them are taken from now on."""
        with self._cond:
            if self._queue is not None:
                for call_id in call_ids:
                    self._queue.expect(call_id)
                return
            self._waiting.update(call_ids)

    def put(self, call_id: str, answer: Answer) -> None:
        """The host's answer to ``call_id`` (any thread); 301 for a call nobody waits for."""
        with self._cond:
            queue = self._queue
            if queue is not None and not self.woken:
                got = queue.claim(call_id)
                if got == 1:  # (the loop takes it from ``_held`` under this lock: after this)
                    self._held[call_id] = answer
                    return
                why = "already answered" if got == 2 else "no such pending call"
                raise refused("tool_call_id", f"{why}: {call_id[:200]!r}")
            if call_id not in self._waiting or self.woken:
                why = (
                    "the stream was cancelled"
                    if self.woken
                    else "already answered"
                    if call_id in self._answered
                    else "no such pending call"
                )
                raise refused("tool_call_id", f"{why}: {call_id[:200]!r}")
            self._waiting.discard(call_id)
            self._answered.add(call_id)
            self._ready.append((call_id, answer))
            self._cond.notify_all()

    def wake(self) -> None:
        """Wake the loop's wait (a cancel)."""
        with self._cond:
            self.woken = True
            self._cond.notify_all()
            if self._queue is not None:
                self._queue.wake()

    def take_ready(self, deadline: float | None) -> list[tuple[str, Answer]]:
        """Every answer come and not taken yet, in the order they came, waiting for the first;
        empty when woken (a cancel) or at ``deadline`` (a ``time.monotonic()`` value) before
        one came."""
        queue = self._queue
        if queue is not None:
            got: list[tuple[str, Answer]] = []
            wait = -1.0 if deadline is None else max(deadline - time.monotonic(), 0.0)
            while (item := queue.take(0.0 if got else wait)) is not None:
                call_id, text = item
                if text is None:  # taken here: its answer is held here
                    with self._cond:
                        answer = self._held.pop(call_id)
                else:  # a plain output, proved readable where it was taken
                    answer = parse_answer(text)
                got.append((call_id, answer))
            return got
        with self._cond:
            while not self._ready and not self.woken:
                timeout = None if deadline is None else deadline - time.monotonic()
                if timeout is not None and timeout <= 0:
                    return []
                self._cond.wait(timeout)
            got, self._ready = self._ready, []
            return got
