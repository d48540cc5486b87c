"""The multi-step loop (CONTRACT §2.2, seed 001's three layers): model call → tool calls → the
host's answers → the next model call, until ``stopWhen`` holds.

Each step is one streamed model call (``call.run_stream``'s, retried as ever) whose events pass
through, wrapped in ``start-step`` … ``finish-step``. A host tool's call (``tools.<name>.execute:
true``) is announced as a ``tool-call`` event and awaited in ``ctx.answers`` (``ToolAnswers``);
every call of a step is announced before the loop waits, and answers are taken as they come:

- ``output`` → a ``tool-result`` event; the model reads the output (text as is, other JSON as
  its text);
- ``error`` → a ``tool-error`` event; the model reads the message (error-text), or the message
  and the data (error-json), and may recover;
- ``failure`` → the model reads nothing: the stream ends with ``AI_ToolExecutionError`` caused by
  the host's own chain (``toolFailures: "to-model"``: a ``tool-error`` with its message instead).

A call the model got wrong (unknown tool, input not JSON or not matching the schema) goes back to
the model as a tool error, as the AI SDK v7 does. The loop goes on while every call of the step
has an output (a tool without ``execute`` stops it, its call left to the caller) and no stop
condition holds (default: one step). ``timeoutMs`` bounds the whole loop, the waits included;
``usage`` on the final ``finish`` sums every step.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

import orjson

from ..errors import TimeoutError as AITimeoutError
from ..errors import ToolExecutionError
from ..providers.base import (
    LanguageModelCall,
    NeutralMessage,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from .answers import Answer, ToolAnswers
from .call import CallSetup, neutral_call, run_stream
from .models import CallParams, StopCondition
from .registry import EventBatch, StreamContext

__all__ = ["has_host_tools", "run_loop"]


def has_host_tools(params: CallParams) -> bool:
    """Whether any tool of ``params`` is executed by the host (or a ``stopWhen`` is given)."""
    return params.stop_when is not None or any(
        spec.execute for spec in (params.tools or {}).values()
    )


def _conditions(params: CallParams) -> list[StopCondition]:
    given = params.stop_when
    if given is None:
        return [StopCondition(step_count=1)]
    return given if isinstance(given, list) else [given]


def _stop(conditions: list[StopCondition], steps: int, called: set[str]) -> bool:
    for c in conditions:
        if c.step_count is not None and steps >= c.step_count:
            return True
        if c.has_tool_call is not None and called.intersection(c.has_tool_call):
            return True
    return False


def _add_usage(total: dict[str, int | None], usage: dict[str, Any]) -> None:
    for key, value in usage.items():
        if isinstance(value, int):
            held = total.get(key)
            total[key] = value + (held if isinstance(held, int) else 0)
        else:
            total.setdefault(key, None)


class _Step:
    """What one step produced: its text, its tool calls and what goes back to the model."""

    def __init__(self) -> None:
        self.text: list[str] = []
        #: the step's reasoning: [text, provider metadata] per block (replayed to the model)
        self.reasoning: list[list[Any]] = []
        self.calls: list[dict[str, Any]] = []
        self.finish: dict[str, Any] | None = None
        #: toolCallId -> what the model reads: (output type, value), the AI SDK's tool outputs
        self.outputs: dict[str, tuple[str, Any]] = {}

    def read(self, batch: EventBatch, tools: dict[str, Any], answers: ToolAnswers) -> EventBatch:
        """One read's events, each looked at: a host tool's call is announced the moment it
        arrives (whatever else came in its read), the text and reasoning kept for the next
        step's replay, the model call's ``finish`` kept back (the step's ``finish-step`` is made
        of it once the calls are settled). The events to pass on, in order."""
        finish = None
        for event in batch:
            if type(event) is bytes:  # an event serialized already (a text delta)
                if b'"text-delta"' not in event:
                    continue
                event = orjson.loads(event)
            elif type(event) is not dict:
                continue
            kind = event.get("type")
            if kind == "text-delta":
                if isinstance(event.get("text"), str):
                    self.text.append(event["text"])
            elif kind == "reasoning-delta":
                meta = event.get("providerMetadata")
                if not self.reasoning or self.reasoning[-1][1] is not None:
                    self.reasoning.append(["", None])  # a new block (after a signed one)
                self.reasoning[-1][0] += event.get("text") or ""
                if meta is not None:
                    self.reasoning[-1][1] = meta
            elif kind == "tool-call":
                if not event.get("providerExecuted"):  # the provider's own: neither awaited
                    _announce(event, tools, self, answers)  # nor sent back with a result
            elif kind == "finish":
                finish = self.finish = event
        if finish is None:
            return batch
        return EventBatch(e for e in batch if e is not finish)

    def messages(self) -> tuple[NeutralMessage, ...]:
        """The assistant turn and the tool results, for the next step's prompt."""
        text = "".join(self.text)
        calls = tuple(ToolCallPart(c["toolCallId"], c["toolName"], c["input"]) for c in self.calls)
        thoughts = tuple(ReasoningPart(t, meta) for t, meta in self.reasoning)
        assistant = NeutralMessage(
            "assistant", thoughts + ((TextPart(text),) if text else ()) + calls
        )
        results = tuple(
            ToolResultPart(c["toolCallId"], c["toolName"], *self.outputs[c["toolCallId"]])
            for c in self.calls
        )
        return (assistant, NeutralMessage("tool", results))


def run_loop(op: str, params: CallParams, ctx: StreamContext) -> Iterator[Any]:
    """The loop's events: one ``EventBatch`` per read with ``ctx.batches`` (the dispatcher sets
    it), else one by one (a direct caller of the handler); the loop reads its model calls by
    read either way."""
    if ctx.batches:
        return _loop(op, params, ctx)
    ctx.batches = True
    return _one_by_one(_loop(op, params, ctx))


def _one_by_one(batches: Iterator[EventBatch]) -> Iterator[Any]:
    try:
        for batch in batches:
            yield from batch
    finally:
        batches.close()  # type: ignore[attr-defined] # a generator: its cleanup runs now


def _loop(op: str, params: CallParams, ctx: StreamContext) -> Iterator[EventBatch]:
    base = neutral_call(params, stream=True)
    setup = CallSetup(params)  # (provider, key, secrets: checked once for every step)
    conditions = _conditions(params)
    tools = params.tools or {}
    deadline = None if params.timeout_ms is None else time.monotonic() + params.timeout_ms / 1000
    answers = ToolAnswers(ctx.answer_queue)
    ctx.answers = answers
    ctx.on_cancel(answers.wake)
    extra: tuple[NeutralMessage, ...] = ()
    total: dict[str, int | None] = {}
    steps = 0
    last: dict[str, Any] = {}
    warnings: list[dict[str, Any]] = []
    while True:
        step = _Step()
        step_params = params
        if deadline is not None:
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms < 1:
                raise _timeout(params.timeout_ms)
            step_params = params.model_copy(update={"timeout_ms": left_ms})
        call = dataclasses.replace(base, messages=base.messages + extra)
        started = False
        # (the model call's response is closed while the host runs its calls: through libaimux
        # a plain answer is taken without the interpreter lock, and is most often in by then)
        for read in run_stream(op, step_params, _returning(call), ctx, setup):
            batch = step.read(read, tools, answers)
            if not batch:
                continue  # the finish alone
            if not started:  # held until the step's first event: a first step's failure
                started = True  # before it still fails the open (retries happen there)
                batch = EventBatch([{"type": "start-step"}, *batch])
            yield batch
        if step.finish is None:
            return  # cancelled
        if not started:
            yield EventBatch(({"type": "start-step"},))
        settled = yield from _settle(step, params, answers, deadline)
        if ctx.cancelled.is_set():
            if settled:
                yield EventBatch(settled)
            return
        steps += 1
        _add_usage(total, step.finish.get("usage") or {})
        warnings.extend(w for w in step.finish.get("warnings") or () if w not in warnings)
        last = step.finish
        # the step's last tool results go out with its finish-step: one hand-over to the host
        yield EventBatch((*settled, {**step.finish, "type": "finish-step"}))
        called = {c["toolName"] for c in step.calls}
        answered = step.calls and all(c["toolCallId"] in step.outputs for c in step.calls)
        if not answered or _stop(conditions, steps, called):
            break
        extra = extra + step.messages()
    finish = {
        "type": "finish",
        "finishReason": last.get("finishReason"),
        "usage": total,
        "response": last.get("response"),
    }
    if last.get("providerMetadata"):
        finish["providerMetadata"] = last["providerMetadata"]
    if warnings:
        finish["warnings"] = warnings
    yield EventBatch((finish,))


def _returning(call: LanguageModelCall) -> Callable[[], LanguageModelCall]:
    return lambda: call


def _announce(
    event: dict[str, Any], tools: dict[str, Any], step: _Step, answers: ToolAnswers
) -> None:
    """A tool call of the step, before its event goes out: a host tool's answer is awaited from
    now on (a host may answer before the loop waits); a wrong call's error goes to the model."""
    step.calls.append(event)
    call_id = event["toolCallId"]
    if event.get("invalid"):
        message = (event.get("error") or {}).get("message") or "invalid tool call"
        step.outputs[call_id] = ("error-text", message)
        return
    spec = tools.get(event["toolName"])
    if spec is not None and spec.execute:
        answers.expect([call_id])


def _timeout(timeout_ms: int | None) -> AITimeoutError:
    return AITimeoutError(
        f"The call did not finish within timeoutMs ({timeout_ms} ms).", timeout_ms=timeout_ms
    )


def _settle(
    step: _Step, params: CallParams, answers: ToolAnswers, deadline: float | None
) -> Generator[EventBatch, None, list[dict[str, Any]]]:
    """The step's tool errors and the host's answers, as they come (the answers ready at once
    in one batch); the last of them are returned, not yielded (the caller sends them with the
    step's ``finish-step``). A cancel ends the wait: what came is returned."""
    tools = params.tools or {}
    errors: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}
    for call in step.calls:
        call_id = call["toolCallId"]
        if call.get("invalid"):
            errors.append(_event("tool-error", call, error=call.get("error")))
            continue
        spec = tools.get(call["toolName"])
        if spec is not None and spec.execute:
            pending[call_id] = call
    if not pending:
        return errors
    if errors:
        yield EventBatch(errors)
    while True:
        got = answers.take_ready(deadline)
        if not got:
            if answers.woken:
                return []  # cancelled: the stream ends
            raise _timeout(params.timeout_ms)
        events: list[dict[str, Any]] = []
        try:
            for call_id, answer in got:
                events.append(_answered(pending.pop(call_id), answer, step, params))
        except BaseException:
            if events:  # the answers before a framework failure still go out, in order
                yield EventBatch(events)
            raise
        if not pending:
            return events
        yield EventBatch(events)


def _event(kind: str, call: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "toolCallId": call["toolCallId"],
        "toolName": call["toolName"],
        "input": call["input"],
        **fields,
    }


def _answered(
    call: dict[str, Any], answer: Answer, step: _Step, params: CallParams
) -> dict[str, Any]:
    """The event of one answer, and what the model reads of it; a framework failure raises."""
    call_id = call["toolCallId"]
    if answer.layer == "output":
        value = answer.value
        step.outputs[call_id] = ("text" if isinstance(value, str) else "json", value)
        return _event("tool-result", call, output=value)
    if answer.layer == "error":
        error = answer.value
        step.outputs[call_id] = (
            ("error-json", error) if "data" in error else ("error-text", error["message"])
        )
        return _event("tool-error", call, error=error)
    node = answer.value
    if params.tool_failures == "to-model":
        step.outputs[call_id] = ("error-text", node["message"])
        return _event("tool-error", call, error={"message": node["message"]})
    from ..wire.envelope import decode_cause  # the decoder: loaded by the first failure

    err = ToolExecutionError(
        f"Error executing tool {call['toolName']}: {node['message']}",
        tool_name=call["toolName"],
        tool_call_id=call_id,
        input=call["input"],
    )
    raise err from decode_cause(node)
