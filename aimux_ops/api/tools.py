"""The Python binding's host tools (CONTRACT §2.2): ``execute`` functions run on the host's
threads and answered through the stream protocol every binding uses (the core asks, the host
answers).

``execute`` maps a tool name to a function of the tool's input. What it does decides the layer:

- returns a value → ``{"output": value}``: a ``tool-result``, the model reads it;
- returns ``ToolResult.error(message)`` / ``ToolResult.error_with_data(message, data)`` → a
  ``tool-error`` the model reads and may recover from;
- raises → ``{"failure": <its cause chain>}``: the model never sees it; the call fails with
  ``AI_ToolExecutionError`` whose ``__cause__`` is the very exception the function raised
  (``toolFailures: "to-model"`` sends its message to the model instead).

A step's calls run concurrently on a small thread pool per stream; closing the iteration (or a
failure) cancels the stream, and calls not started yet never start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson

__all__ = [
    "HOST_TOOL_OPS",
    "Execute",
    "ResultBuilder",
    "ToolResult",
    "answering",
    "native_error",
    "run_to_result",
    "with_tools",
]

#: tool name -> the function that runs it (its argument: the tool's input, as JSON values)
Execute = Mapping[str, Callable[[Any], Any]]

#: the ops that take ``execute`` (host tools): the stream op, and the call op run over it
HOST_TOOL_OPS = frozenset({"generate_text", "stream_text"})

#: concurrent calls of one stream's tools
_WORKERS = 8


class ToolResult:
    """A tool-level error an ``execute`` function returns: the model sees it (seed 001's
    ``ToolResult::error``); a raised exception is a framework error instead."""

    __slots__ = ("data", "has_data", "message")

    def __init__(self, message: str, data: Any = None, *, has_data: bool = False) -> None:
        self.message = message
        self.data = data
        self.has_data = has_data

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(str(message))

    @classmethod
    def error_with_data(cls, message: str, data: Any) -> ToolResult:
        return cls(str(message), data, has_data=True)

    def answer(self) -> dict[str, Any]:
        error: dict[str, Any] = {"message": self.message}
        if self.has_data:
            error["data"] = self.data
        return {"error": error}

    def __repr__(self) -> str:
        data = f", data={self.data!r}" if self.has_data else ""
        return f"ToolResult.error({self.message!r}{data})"


def with_tools(params: Any, execute: Execute) -> dict[str, Any]:
    """``params`` with every tool ``execute`` names marked as the host's (``execute: true``)."""
    out = dict(params or {})
    tools = {name: dict(spec) for name, spec in (out.get("tools") or {}).items()}
    for name in execute:
        tools.setdefault(name, {})["execute"] = True
    out["tools"] = tools
    return out


class _Host:
    """One stream's running tools: answers each call, keeps what each raised."""

    def __init__(self, handle: int, execute: Execute) -> None:
        self.handle = handle
        self.execute = execute
        self.raised: dict[str, BaseException] = {}
        self.pool: ThreadPoolExecutor | None = None

    def start(self, event: dict[str, Any]) -> None:
        fn = self.execute.get(event.get("toolName", ""))
        if fn is None or event.get("invalid"):
            return
        if self.pool is None:
            self.pool = ThreadPoolExecutor(_WORKERS, thread_name_prefix="aimux-tool")
        self.pool.submit(self._run, event["toolCallId"], fn, event.get("input"))

    def _run(self, call_id: str, fn: Callable[[Any], Any], value: Any) -> None:
        from ..boundary.dispatch import stream_tool_result_json

        try:
            got = fn(value)
            answer = got.answer() if isinstance(got, ToolResult) else {"output": got}
            text = orjson.dumps(answer)
        except BaseException as exc:  # noqa: BLE001 - the framework layer: the caller gets it
            from ..wire.causes import capture

            self.raised[call_id] = exc
            text = orjson.dumps({"failure": capture(exc)})
        # an answer the stream no longer takes (cancelled, freed) is nobody's: dropped
        stream_tool_result_json(self.handle, call_id, text)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)

    def native(self, envelope: dict[str, Any]) -> BaseException:
        return native_error(envelope, self.raised)


def native_error(envelope: dict[str, Any], raised: Mapping[str, BaseException]) -> BaseException:
    """The decoded error of an ``error`` event; a tool's failure keeps its own exception (the
    one ``execute`` raised, by call id, in ``raised``)."""
    from ..wire.envelope import decode_error

    err = decode_error(envelope)
    call_id = (envelope.get("error") or {}).get("toolCallId")
    if envelope.get("code") == 22 and isinstance(call_id, str) and call_id in raised:
        err.__cause__ = raised[call_id]
    return err


def answering(
    handle: int, events: Iterator[dict[str, Any]], execute: Execute, host: _Host | None = None
) -> Iterator[dict[str, Any]]:
    """``events`` of a stream with host tools, each host tool call run and answered as it
    comes; the events go on to the caller unchanged."""
    host = host or _Host(handle, execute)
    try:
        for event in events:
            if event.get("type") == "tool-call":
                host.start(event)
            yield event
    finally:
        host.close()
        close = getattr(events, "close", None)
        if close is not None:
            close()


def run_to_result(op: str, params: Any, execute: Execute) -> dict[str, Any]:
    """A generate op with host tools: the loop streamed (``stream_text``), its result put
    together as the AI SDK's ``generateText`` gives it (``text``, ``toolCalls``,
    ``toolResults`` of the last step, every step, ``usage`` summed)."""
    from ..boundary.dispatch import stream_free, stream_json, stream_next_objects
    from ..wire.envelope import decode_error
    from ._io import events, params_json

    if op != "generate_text":
        from ..errors import UnsupportedFunctionalityError

        raise UnsupportedFunctionalityError(
            f"host tools (execute) run with generate_text or stream_text, not {op}",
            functionality=f"execute with {op}",
        )
    handle, envelope = stream_json("stream_text", params_json(with_tools(params, execute)))
    if envelope is not None:
        raise decode_error(envelope)
    assert handle is not None
    host = _Host(handle, execute)
    builder = ResultBuilder()
    for event in answering(handle, events(handle, stream_next_objects, stream_free), execute, host):
        builder.add(event)
        if event.get("type") == "error":
            raise host.native(event["error"])
    return builder.result()


class ResultBuilder:
    """``generate_text``'s result put together from ``stream_text``'s events, as the AI SDK's
    ``generateText`` gives it: ``text``, ``reasoningText`` / ``reasoning``, ``toolCalls`` and
    ``toolResults`` of the last step, every step, ``usage`` summed (the finish event's),
    ``warnings``."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.step = _new_step()
        self.reasoning: list[dict[str, Any]] = []
        self.thinking = ""
        self.finish: dict[str, Any] | None = None

    def add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        step = self.step
        if kind == "text-delta":
            step["text"] += event.get("text", "")
        elif kind == "reasoning-delta":
            self.thinking += event.get("text", "")
            if event.get("providerMetadata") is not None:  # a block's end (its signature)
                self._reasoned(event["providerMetadata"])
        elif kind == "tool-call":
            step["toolCalls"].append(
                {k: v for k, v in event.items() if k != "type" and v is not None}
            )
        elif kind == "tool-result":
            step["toolResults"].append({**_call_of(event), "output": event.get("output")})
        elif kind == "tool-error":
            step["toolErrors"].append({**_call_of(event), "error": event.get("error")})
        elif kind == "finish-step":
            for key in ("finishReason", "usage", "response"):
                step[key] = event.get(key)
            self.steps.append(step)
            self.step = _new_step()
        elif kind == "finish":
            if self.step["text"] or self.step["toolCalls"]:  # a stream without steps
                for key in ("finishReason", "usage", "response"):
                    self.step[key] = event.get(key)
                self.steps.append(self.step)
                self.step = _new_step()
            self.finish = event

    def _reasoned(self, metadata: Any = None) -> None:
        if self.thinking or metadata is not None:
            part: dict[str, Any] = {"type": "reasoning", "text": self.thinking}
            if metadata is not None:
                part["providerMetadata"] = metadata
            self.reasoning.append(part)
        self.thinking = ""

    def result(self) -> dict[str, Any]:
        """The result once the finish event came; an ``AbortedError`` when it never did."""
        event = self.finish
        if event is None:
            from ..errors import AbortedError

            raise AbortedError("The call ended before its finish event.")
        self._reasoned()
        last = self.steps[-1] if self.steps else _new_step()
        out: dict[str, Any] = {
            "text": last["text"],
            "finishReason": event.get("finishReason"),
            "usage": event.get("usage"),
            "toolCalls": last["toolCalls"],
            "toolResults": last["toolResults"],
            "response": event.get("response"),
            "steps": self.steps,
        }
        if self.reasoning:
            out["reasoningText"] = "".join(p["text"] for p in self.reasoning)
            out["reasoning"] = self.reasoning
        if event.get("warnings") is not None:
            out["warnings"] = event["warnings"]
        return out


def _new_step() -> dict[str, Any]:
    return {"text": "", "toolCalls": [], "toolResults": [], "toolErrors": []}


def _call_of(event: dict[str, Any]) -> dict[str, Any]:
    return {k: event.get(k) for k in ("toolCallId", "toolName", "input")}
