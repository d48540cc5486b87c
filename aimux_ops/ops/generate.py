"""The provider ops ``generate_text``, ``stream_text`` and ``generate_object``: their params,
results and events (pydantic, camelCase, ``extra="forbid"``) and their handlers.

A call: provider lookup → API key → request body → transport (live, recording or replay) →
the AI SDK's retry loop around one attempt (streams: until the first event) → the result.
Tool calls are checked like the AI SDK v7 does: an unknown tool or an input that is not JSON or
fails the tool's input schema comes back in the result marked ``invalid: true`` with its error
envelope (``NoSuchToolError`` / ``InvalidToolInputError`` caused by ``JSONParseError`` /
``TypeValidationError``). ``generate_object`` output that is not JSON or fails its schema raises
``NoObjectGeneratedError`` caused by ``JSONParseError`` / ``TypeValidationError``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..errors import (
    AimuxError,
    InvalidArgumentError,
    InvalidPromptError,
    InvalidToolInputError,
    JSONParseError,
    NoObjectGeneratedError,
    NoSuchToolError,
    TypeValidationError,
)
from ..guest import on_fork_child
from ..providers import get_provider, openai
from ..recording import Recorder, Replayer
from ..redact import guard_url, is_secret_header, remember_secret
from ..retry import retry_with_exponential_backoff
from ..transport import Deadline, HTTPRequest, Response, Transport, default_transport
from .registry import StreamContext, register_op

__all__ = [
    "FinishEvent",
    "GenerateObjectParams",
    "GenerateObjectResult",
    "GenerateTextParams",
    "GenerateTextResult",
    "Message",
    "ModelSpec",
    "RecordingSpec",
    "RetrySpec",
    "StreamEvent",
    "StreamTextParams",
    "TextDeltaEvent",
    "ToolCall",
    "ToolCallEvent",
    "ToolSpec",
    "Usage",
    "generate_object",
    "generate_text",
    "stream_text",
]

T = TypeVar("T")


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=False
    )


# -- params ----------------------------------------------------------------------------------------


class ModelSpec(_Model):
    """Which model, where, and with which key."""

    provider: str = Field(description='The provider id; "openai" (Chat Completions wire format).')
    model_id: str = Field(min_length=1)
    base_url: str | None = Field(
        default=None, alias="baseURL", description="Default https://api.openai.com/v1."
    )
    api_key: str | None = Field(default=None, description="Never recorded, never in an error.")
    api_key_env: str | None = Field(
        default=None, description="Environment variable holding the key (default OPENAI_API_KEY)."
    )
    headers: dict[str, str] | None = None


class ToolCallPart(_Model):
    """A tool call made by the assistant in an earlier turn."""

    tool_call_id: str
    tool_name: str
    input: Any = None


class Message(_Model):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    #: role "assistant": the tool calls it made; role "tool": which call this answers.
    tool_calls: list[ToolCallPart] | None = None
    tool_call_id: str | None = None


class ToolSpec(_Model):
    description: str | None = None
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema of the tool's input.",
    )


class ToolChoiceTool(_Model):
    type: Literal["tool"]
    tool_name: str


class RetrySpec(_Model):
    initial_delay_ms: float = Field(default=2000, ge=0)
    backoff_factor: float = Field(default=2, ge=0)


class RecordingSpec(_Model):
    mode: Literal["record", "replay"]
    path: str = Field(min_length=1)


class _CallParams(_Model):
    model: ModelSpec
    system: str | None = None
    prompt: str | None = None
    messages: list[Message] | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop_sequences: list[str] | None = None
    seed: int | None = None
    headers: dict[str, str] | None = None
    max_retries: int = Field(default=2, ge=0)
    retry: RetrySpec | None = None
    timeout_ms: int | None = Field(default=None, ge=1)
    recording: RecordingSpec | None = None
    tools: dict[str, ToolSpec] | None = None
    tool_choice: Literal["auto", "none", "required"] | ToolChoiceTool | None = None


class GenerateTextParams(_CallParams):
    pass


class StreamTextParams(GenerateTextParams):
    pass


class GenerateObjectParams(_CallParams):
    schema_: dict[str, Any] = Field(alias="schema", description="JSON Schema of the object.")
    schema_name: str | None = None
    schema_description: str | None = None


# -- results and events ----------------------------------------------------------------------------


class Usage(_Model):
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None


class ResponseInfo(_Model):
    id: str | None = None
    model_id: str | None = None


class ToolCall(_Model):
    tool_call_id: str
    tool_name: str
    input: Any = None
    invalid: bool | None = Field(
        default=None, description="The call is not usable: unknown tool or invalid input."
    )
    error: dict[str, Any] | None = Field(default=None, description="Its error envelope.")


FinishReason = Literal[
    "stop", "length", "content-filter", "tool-calls", "error", "other", "unknown"
]


class GenerateTextResult(_Model):
    text: str
    finish_reason: FinishReason
    usage: Usage
    tool_calls: list[ToolCall]
    response: ResponseInfo


class GenerateObjectResult(_Model):
    object: Any
    finish_reason: FinishReason
    usage: Usage
    tool_calls: list[ToolCall] = Field(
        default_factory=list, description="Tool calls the model made beside the object (tools?)."
    )
    response: ResponseInfo


class TextDeltaEvent(_Model):
    type: Literal["text-delta"]
    text: str


class ToolCallEvent(ToolCall):
    type: Literal["tool-call"]


class FinishEvent(_Model):
    type: Literal["finish"]
    finish_reason: FinishReason
    usage: Usage
    response: ResponseInfo | None = None


class ErrorEvent(_Model):
    type: Literal["error"]
    error: dict[str, Any] = Field(description="The error envelope.")


StreamEvent = Annotated[
    TextDeltaEvent | ToolCallEvent | FinishEvent | ErrorEvent, Field(discriminator="type")
]


# -- the call --------------------------------------------------------------------------------------


def _to_envelope(exc: BaseException) -> dict[str, Any]:
    from ..envelope import to_envelope

    return to_envelope(exc)


def _messages(params: _CallParams) -> list[dict[str, Any]]:
    if params.prompt is not None and params.messages is not None:
        raise InvalidPromptError("prompt and messages cannot be defined at the same time")
    if params.prompt is None and params.messages is None:
        raise InvalidPromptError("prompt or messages must be defined")
    out: list[dict[str, Any]] = []
    if params.system is not None:
        out.append({"role": "system", "content": params.system})
    if params.prompt is not None:
        out.append({"role": "user", "content": params.prompt})
        return out
    for m in params.messages or ():
        msg: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            msg["tool_calls"] = [
                {
                    "id": c.tool_call_id,
                    "type": "function",
                    "function": {
                        "name": c.tool_name,
                        "arguments": c.input
                        if isinstance(c.input, str)
                        else orjson.dumps(c.input).decode(),
                    },
                }
                for c in m.tool_calls
            ]
        if m.tool_call_id is not None:
            msg["tool_call_id"] = m.tool_call_id
        out.append(msg)
    return out


def _settings(params: _CallParams) -> dict[str, Any]:
    return {
        "max_tokens": params.max_output_tokens,
        "temperature": params.temperature,
        "top_p": params.top_p,
        "presence_penalty": params.presence_penalty,
        "frequency_penalty": params.frequency_penalty,
        "stop": params.stop_sequences,
        "seed": params.seed,
    }


class _Call:
    """One op invocation: request, transport and recording, shared by its attempts."""

    def __init__(self, op: str, params: _CallParams, body: dict[str, Any], stream: bool) -> None:
        spec = params.model
        get_provider(spec.provider, spec.model_id)
        rec = params.recording
        replay = rec is not None and rec.mode == "replay"
        key = openai.load_api_key(spec.api_key, spec.api_key_env, required=not replay)
        base_url = guard_url(spec.base_url) if spec.base_url else None
        for extra in (spec.headers, params.headers):  # a key passed as a header is a key too
            for name, value in (extra or {}).items():
                if is_secret_header(name):
                    remember_secret(value.removeprefix("Bearer ").strip())
        self.params = params
        self.deadline = Deadline(params.timeout_ms)
        self.request = HTTPRequest(
            "POST",
            openai.chat_url(base_url),
            openai.request_headers(key, spec.headers, params.headers),
            orjson.dumps(body),
            stream=stream,
            json_body=body,
        )
        self.recorder: Recorder | None = None
        self.transport: Transport
        if rec is None:
            self.transport = default_transport()
        elif replay:
            self.transport = Replayer(rec.path).transport
        else:
            dumped = params.model_dump(mode="json", by_alias=True, exclude_none=True)
            self.recorder = Recorder(rec.path, op, dumped, default_transport())
            self.transport = self.recorder.transport

    def send(self) -> Response:
        resp = self.transport.send(self.request, self.deadline)
        if not 200 <= resp.status < 300:
            try:
                raise openai.failed_response_error(resp)
            finally:
                resp.close()
        return resp

    def retry(self, attempt: Callable[[], T], cancelled: threading.Event | None = None) -> T:
        r = self.params.retry
        return retry_with_exponential_backoff(
            attempt,
            max_retries=self.params.max_retries,
            initial_delay_ms=r.initial_delay_ms if r is not None else 2000,
            backoff_factor=r.backoff_factor if r is not None else 2,
            cancelled=cancelled,
            deadline_remaining=self.deadline.remaining,
        )

    def finish_ok(self, result: Any) -> None:
        if self.recorder is not None:
            self.recorder.finish_ok(result)

    def finish_error(self, exc: BaseException) -> None:
        if self.recorder is not None:
            self.recorder.finish_error(exc)

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()


def _run_call(
    op: str,
    params: _CallParams,
    body_of: Callable[[], dict[str, Any]],
    build: Callable[[dict[str, Any]], dict[str, Any]],
) -> dict[str, Any]:
    call = _Call(op, params, body_of(), stream=False)
    try:
        try:
            body = call.retry(lambda: openai.parse_completion(call.send()))
            result = build(body)
        except AimuxError as exc:
            call.finish_error(exc)
            raise
        call.finish_ok(result)
        return result
    finally:
        call.close()


# -- tools -----------------------------------------------------------------------------------------

_validators: OrderedDict[bytes, Any] = OrderedDict()
_validators_lock = threading.Lock()


@on_fork_child
def _reset_lock_after_fork() -> None:
    """In a forked child: a fresh lock (another thread may have held this one at fork time)."""
    global _validators_lock
    _validators_lock = threading.Lock()


def _validator(schema: dict[str, Any], argument: str = "schema") -> Any:
    """A (cached) validator for ``schema``; an invalid schema is ``InvalidArgumentError`` naming
    the param it came from, raised before any network."""
    key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    with _validators_lock:
        hit = _validators.get(key)
        if hit is not None:
            _validators.move_to_end(key)
            return hit
    import jsonschema  # imported on first use: it costs ~160 ms at start-up of every host

    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise InvalidArgumentError(
            f"Invalid argument for {argument}: not a valid JSON Schema: {exc.message}",
            argument=argument,
        ) from exc
    validator = cls(schema)
    with _validators_lock:
        _validators[key] = validator
        while len(_validators) > 256:
            _validators.popitem(last=False)
    return validator


def _validate_value(value: Any, schema: dict[str, Any]) -> TypeValidationError | None:
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    tve = TypeValidationError(f"Type validation failed: {where}: {error.message}", value=value)
    tve.__cause__ = error
    return tve


def _parse_json(text: str) -> tuple[Any, JSONParseError | None]:
    try:
        return orjson.loads(text), None
    except orjson.JSONDecodeError as exc:
        return None, openai.json_parse_error(text, exc)


def _tool_call(
    call_id: str, name: str, raw: str, tools: dict[str, ToolSpec] | None
) -> dict[str, Any]:
    """A tool call as the result carries it; invalid ones marked with their error envelope."""
    spec = tools.get(name) if tools else None
    error: AimuxError | None = None
    value: Any = raw
    if spec is None:
        available = sorted(tools) if tools else []
        error = NoSuchToolError(
            f"Model tried to call unavailable tool '{name}'. "
            + (
                f"Available tools: {', '.join(available)}."
                if available
                else "No tools are available."
            ),
            tool_name=name,
            available_tools=available,
        )
        parsed, perr = _parse_json(raw or "{}")
        if perr is None:
            value = parsed
    else:
        parsed, perr = _parse_json(raw if raw.strip() else "{}")
        cause: AimuxError | None = perr
        if perr is None:
            value = parsed
            cause = _validate_value(parsed, spec.input_schema)
        if cause is not None:
            error = InvalidToolInputError(
                f"Invalid input for tool {name}: {cause.message}", tool_name=name, tool_input=raw
            )
            error.__cause__ = cause
    out: dict[str, Any] = {"toolCallId": call_id, "toolName": name, "input": value}
    if error is not None:
        out["invalid"] = True
        out["error"] = _to_envelope(error)
    return out


def _tools_wire(params: _CallParams) -> tuple[list[dict[str, Any]] | None, Any]:
    if not params.tools:
        return None, None
    tools = []
    for name, spec in params.tools.items():
        _validator(spec.input_schema, f"tools.{name}.inputSchema")
        fn: dict[str, Any] = {"name": name, "parameters": spec.input_schema}
        if spec.description is not None:
            fn["description"] = spec.description
        tools.append({"type": "function", "function": fn})
    choice = params.tool_choice
    wire_choice: Any = None
    if isinstance(choice, ToolChoiceTool):
        wire_choice = {"type": "function", "function": {"name": choice.tool_name}}
    elif choice is not None:
        wire_choice = choice
    return tools, wire_choice


def _body(
    params: _CallParams, stream: bool, response_format: dict[str, Any] | None = None
) -> dict[str, Any]:
    tools, choice = _tools_wire(params)
    return openai.build_body(
        params.model.model_id,
        _messages(params),
        _settings(params),
        stream=stream,
        tools=tools,
        tool_choice=choice,
        response_format=response_format,
    )


# -- generate_text ---------------------------------------------------------------------------------


@register_op(
    "generate_text",
    mode="call",
    params=GenerateTextParams,
    result=GenerateTextResult,
    description="Generate text (and tool calls) with a language model.",
)
def generate_text(params: GenerateTextParams) -> dict[str, Any]:
    def build(body: dict[str, Any]) -> dict[str, Any]:
        text, calls, finish, usage, response = openai.completion_parts(body)
        return {
            "text": text,
            "finishReason": finish,
            "usage": usage,
            "toolCalls": [_tool_call(i, n, a, params.tools) for i, n, a in calls],
            "response": response,
        }

    return _run_call("generate_text", params, lambda: _body(params, False), build)


# -- generate_object -------------------------------------------------------------------------------


@register_op(
    "generate_object",
    mode="call",
    params=GenerateObjectParams,
    result=GenerateObjectResult,
    description="Generate a JSON object matching a JSON Schema.",
)
def generate_object(params: GenerateObjectParams) -> dict[str, Any]:
    def body_of() -> dict[str, Any]:
        _validator(params.schema_, "schema")
        fmt: dict[str, Any] = {
            "type": "json_schema",
            "json_schema": {
                "name": params.schema_name or "response",
                "schema": params.schema_,
                "strict": False,
            },
        }
        if params.schema_description is not None:
            fmt["json_schema"]["description"] = params.schema_description
        return _body(params, False, fmt)

    def build(body: dict[str, Any]) -> dict[str, Any]:
        text, calls, finish, usage, response = openai.completion_parts(body)
        value, perr = _parse_json(text)
        cause: AimuxError | None = perr
        if perr is None:
            cause = _validate_value(value, params.schema_)
        if cause is not None:
            what = (
                "could not parse the response"
                if perr is not None
                else "response did not match schema"
            )
            err = NoObjectGeneratedError(
                f"No object generated: {what}.", text=text, finish_reason=finish, usage=usage
            )
            raise err from cause
        return {
            "object": value,
            "finishReason": finish,
            "usage": usage,
            "toolCalls": [_tool_call(i, n, a, params.tools) for i, n, a in calls],
            "response": response,
        }

    return _run_call("generate_object", params, body_of, build)


# -- stream_text -----------------------------------------------------------------------------------


@register_op(
    "stream_text",
    mode="stream",
    params=StreamTextParams,
    result=None,
    event=StreamEvent,
    description="Stream text deltas, tool calls and a finish event from a language model.",
)
def stream_text(params: StreamTextParams, ctx: StreamContext) -> Iterator[dict[str, Any]]:
    call = _Call("stream_text", params, _body(params, True), stream=True)
    current: list[Response] = []

    def abort() -> None:
        for r in list(current):
            r.abort()

    ctx.on_cancel(abort)

    def attempt() -> tuple[
        Response, openai.StreamState, Iterator[dict[str, Any]], dict[str, Any] | None
    ]:
        resp = call.send()
        current[:] = [resp]
        if ctx.cancelled.is_set():
            resp.abort()
        state = openai.StreamState()
        events = openai.stream_events(resp, state)
        try:
            first = next(events, None)
        except BaseException:
            resp.close()
            raise
        return resp, state, events, first

    resp: Response | None = None
    finished = False
    try:
        try:
            resp, state, events, first = call.retry(attempt, ctx.cancelled)
            if first is not None:
                yield first
                # the dispatcher checks for cancellation before each pull, and a cancel shuts
                # the socket down: no per-event check here (this is the hot path)
                yield from events
        except AimuxError as exc:
            if ctx.cancelled.is_set():
                return
            call.finish_error(exc)
            raise
        if ctx.cancelled.is_set():
            return
        for _index, (call_id, name, raw) in sorted(state.tool_calls.items()):
            event = _tool_call(call_id, name, raw, params.tools)
            event["type"] = "tool-call"
            yield event
        finish = {
            "type": "finish",
            "finishReason": state.finish_reason,
            "usage": state.usage,
            "response": {"id": state.response_id, "modelId": state.model_id},
        }
        call.finish_ok(finish)
        finished = True
        yield finish
    finally:
        if resp is not None:
            resp.close()
        if not finished and call.recorder is not None and ctx.cancelled.is_set():
            try:
                call.recorder.finish_cancelled()
            except AimuxError:
                pass
        call.close()
