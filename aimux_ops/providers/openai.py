"""The ``openai`` provider: the Chat Completions wire format (request body, response parsing,
stream chunk parsing, error bodies), following ``@ai-sdk/openai``'s chat language model.

- Non-2xx: ``APICallError`` with the message of OpenAI's ``{"error": {"message"}}`` body (``data``
  the parsed body), else the reason phrase; ``responseBody`` always kept; retryable for 408, 409,
  429 and 5xx; headers redacted.
- 2xx that is not JSON: ``APICallError("Invalid JSON response")`` (status kept, not retryable)
  caused by ``JSONParseError`` caused by the decoder's error; a wrong shape: caused by
  ``TypeValidationError`` caused by a ``ValueError`` naming the offending path.
- Streams: an ``error`` frame, an invalid JSON chunk, a chunk of the wrong shape, or an end before
  ``[DONE]`` each raise one ``APICallError`` that carries the stream's numeric status.

Shape checks are hand-written (no per-chunk pydantic): this is the hot path.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import orjson

from ..errors import APICallError, InvalidResponseDataError, LoadAPIKeyError
from ..redact import redact_headers, remember_secret
from ..transport import HTTPRequest, Response
from .base import (
    GenerateResult,
    LanguageModelCall,
    Provider,
    is_retryable_status,
    json_parse_error,
    type_validation_error,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "OpenAIChatProvider",
    "StreamState",
    "build_body",
    "chat_url",
    "failed_response_error",
    "is_retryable_status",
    "load_api_key",
    "map_finish_reason",
    "parse_completion",
    "request_headers",
    "stream_events",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
USER_AGENT = "aimux-ops/0.1.0"

_FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content-filter",
    "function_call": "tool-calls",
    "tool_calls": "tool-calls",
}


def map_finish_reason(reason: Any) -> str:
    """OpenAI's finish reason → the AI SDK's unified one (anything else: ``other``; none
    reported: ``unknown``)."""
    if reason is None:
        return "unknown"
    return _FINISH_REASONS.get(reason, "other") if isinstance(reason, str) else "other"


def load_api_key(api_key: str | None, api_key_env: str | None, *, required: bool) -> str | None:
    """``apiKey``, else the environment variable ``apiKeyEnv`` (default ``OPENAI_API_KEY``)."""
    env_name = api_key_env or DEFAULT_API_KEY_ENV
    key = api_key if api_key is not None else os.environ.get(env_name)
    if not key:
        if not required:
            return None
        raise LoadAPIKeyError(
            "OpenAI API key is missing. Pass it using the 'apiKey' parameter or the "
            f"{env_name} environment variable."
        )
    remember_secret(key)
    return key


def chat_url(base_url: str | None) -> str:
    """``{baseURL}/chat/completions``, keeping a query string (``?api-version=…``) at the end."""
    base = base_url or DEFAULT_BASE_URL
    if "?" not in base:
        return base.rstrip("/") + "/chat/completions"
    head, _, query = base.partition("?")
    return head.rstrip("/") + "/chat/completions?" + query


def request_headers(api_key: str | None, *extra: dict[str, str] | None) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json",
        "user-agent": USER_AGENT,
    }
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    for more in extra:
        if more:
            for k, v in more.items():
                headers[k.lower()] = v
    return headers


def build_body(
    model_id: str,
    messages: list[dict[str, Any]],
    settings: dict[str, Any],
    *,
    stream: bool,
    tools: list[dict[str, Any]] | None = None,
    tool_choice: Any = None,
    response_format: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The Chat Completions request body. ``settings`` keys are OpenAI's (``max_tokens``…);
    None values are left out."""
    body: dict[str, Any] = {"model": model_id, "messages": messages}
    for key, value in settings.items():
        if value is not None:
            body[key] = value
    if tools:
        body["tools"] = tools
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
    if response_format is not None:
        body["response_format"] = response_format
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


# -- errors --------------------------------------------------------------------------------------


def failed_response_error(resp: Response) -> APICallError:
    """The ``APICallError`` of a non-2xx response (reads its body)."""
    raw = resp.read()
    status = resp.status
    text = raw.decode("utf-8", "replace")
    message = resp.reason or f"HTTP {status}"
    data: Any = None
    if text.strip():
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            err = parsed.get("error")
            if isinstance(err, dict) and isinstance(err.get("message"), str):
                message = err["message"]
                data = parsed
    return APICallError(
        message,
        status_code=status,
        is_retryable=is_retryable_status(status),
        response_headers=redact_headers(resp.headers),
        response_body=text,
        data=data,
    )


def _invalid_response(resp: Response, text: str, cause: BaseException) -> APICallError:
    err = APICallError(
        "Invalid JSON response",
        status_code=resp.status,
        is_retryable=is_retryable_status(resp.status),
        response_headers=redact_headers(resp.headers),
        response_body=text,
    )
    err.__cause__ = cause
    return err


# -- non-streaming -------------------------------------------------------------------------------


def _check_completion(body: Any) -> str | None:
    """None when ``body`` has the shape of a chat completion, else the first violation."""
    if not isinstance(body, dict):
        return "(root): expected an object"
    choices = body.get("choices")
    if not isinstance(choices, list):
        return "choices: expected an array"
    if not choices:
        return "choices: expected at least one choice"
    choice = choices[0]
    if not isinstance(choice, dict):
        return "choices[0]: expected an object"
    message = choice.get("message")
    if not isinstance(message, dict):
        return "choices[0].message: expected an object"
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return "choices[0].message.content: expected a string or null"
    calls = message.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            return "choices[0].message.tool_calls: expected an array"
        for i, call in enumerate(calls):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                return f"choices[0].message.tool_calls[{i}].function.name: expected a string"
            if not isinstance(fn.get("arguments", ""), str):
                return f"choices[0].message.tool_calls[{i}].function.arguments: expected a string"
    usage = body.get("usage")
    if usage is not None and not isinstance(usage, dict):
        return "usage: expected an object or null"
    for key in ("id", "model"):
        if body.get(key) is not None and not isinstance(body[key], str):
            return f"{key}: expected a string"
    return None


def usage_of(raw: Any) -> dict[str, int | None]:
    if not isinstance(raw, dict):
        return {"inputTokens": None, "outputTokens": None, "totalTokens": None}
    inp = raw.get("prompt_tokens")
    out = raw.get("completion_tokens")
    total = raw.get("total_tokens")
    inp = inp if isinstance(inp, int) else None
    out = out if isinstance(out, int) else None
    if not isinstance(total, int):
        total = inp + out if inp is not None and out is not None else None
    return {"inputTokens": inp, "outputTokens": out, "totalTokens": total}


def parse_completion(resp: Response) -> dict[str, Any]:
    """Read and check a 2xx chat completion; the parsed body."""
    raw = resp.read()
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        text = raw.decode("utf-8", "replace")
        raise _invalid_response(resp, text, json_parse_error(text, exc))  # noqa: B904
    violation = _check_completion(body)
    if violation is not None:
        text = raw.decode("utf-8", "replace")
        raise _invalid_response(resp, text, type_validation_error(body, violation))
    return body  # type: ignore[no-any-return]


def completion_parts(
    body: dict[str, Any],
) -> tuple[str, list[tuple[str, str, str]], str, dict[str, int | None], dict[str, Any]]:
    """(text, [(toolCallId, toolName, raw input)], finishReason, usage, response info)."""
    choice = body["choices"][0]
    message = choice["message"]
    calls: list[tuple[str, str, str]] = []
    for i, call in enumerate(message.get("tool_calls") or ()):
        fn = call["function"]
        call_id = call.get("id")
        calls.append(
            (
                call_id if isinstance(call_id, str) else f"call_{i}",
                fn["name"],
                fn.get("arguments") or "",
            )
        )
    response = {"id": body.get("id"), "modelId": body.get("model")}
    return (
        message.get("content") or "",
        calls,
        map_finish_reason(choice.get("finish_reason")),
        usage_of(body.get("usage")),
        response,
    )


# -- streaming -----------------------------------------------------------------------------------


class StreamState:
    """What a stream accumulated besides its deltas (tool calls, finish, usage, ids)."""

    __slots__ = ("done", "finish_reason", "model_id", "response_id", "tool_calls", "usage")

    def __init__(self) -> None:
        self.done = False
        self.finish_reason = "unknown"
        self.usage: dict[str, int | None] = usage_of(None)
        self.response_id: str | None = None
        self.model_id: str | None = None
        #: index → [id, name, arguments]
        self.tool_calls: dict[int, list[str]] = {}


def _stream_error(
    resp: Response, message: str, *, retryable: bool, data: Any = None, status: int | None = None
) -> APICallError:
    return APICallError(
        message,
        status_code=status if status is not None else resp.status,
        is_retryable=retryable,
        response_headers=redact_headers(resp.headers),
        data=data,
    )


#: error-frame ``type`` / ``code`` values that mean "the same call could succeed later"
_RETRYABLE_FRAME_KINDS = ("server_error", "overload", "rate_limit", "timeout", "unavailable")


def _frame_status(err: Any) -> int | None:
    """A numeric HTTP status carried by an error frame, when it carries one."""
    if isinstance(err, dict):
        for key in ("status", "status_code", "code"):
            value = err.get(key)
            if isinstance(value, int) and 400 <= value <= 599:
                return value
            if isinstance(value, str) and value.isdigit() and 400 <= int(value) <= 599:
                return int(value)
    return None


def _error_frame(resp: Response, frame: Any) -> APICallError:
    err = frame.get("error") if isinstance(frame, dict) else None
    message = "The provider sent an error in the stream"
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        message = err["message"]
    elif isinstance(err, str):
        message = err
    status = _frame_status(err)
    if status is not None:
        retryable = is_retryable_status(status)
    else:  # no status in the frame: classify by its structured type / code, never by message
        kinds = " ".join(
            str(err.get(k)) for k in ("type", "code") if isinstance(err, dict) and err.get(k)
        ).lower()
        retryable = any(t in kinds for t in _RETRYABLE_FRAME_KINDS)
    return _stream_error(resp, message, retryable=retryable, data=frame, status=status)


def _invalid_tool_delta(resp: Response, call: Any) -> APICallError:
    """The first delta of a tool call without its function name (the AI SDK's
    ``InvalidResponseDataError``), carried with the stream's status."""
    err = _stream_error(resp, "Invalid stream chunk: a tool call without a name", retryable=False)
    err.__cause__ = InvalidResponseDataError("Expected 'function.name' to be a string.", data=call)
    return err


def stream_events(resp: Response, state: StreamState) -> Iterator[dict[str, Any]]:
    """``text-delta`` events from a 2xx SSE response; tool calls, usage and the finish reason are
    left in ``state`` (``state.done`` once ``[DONE]`` arrived). Raises ``APICallError`` (with the
    stream's numeric status) for an error frame, a bad chunk or an end before ``[DONE]``."""
    loads = orjson.loads
    tool_calls = state.tool_calls
    for event, data in resp.iter_events():
        if data == b"[DONE]":
            state.done = True
            return
        try:
            chunk = loads(data)
        except orjson.JSONDecodeError as exc:
            text = data.decode("utf-8", "replace")
            err = _stream_error(resp, "Invalid JSON in stream chunk", retryable=False)
            err.__cause__ = json_parse_error(text, exc)
            raise err  # noqa: B904 - __cause__ set above
        try:
            if "error" in chunk or event == "error":
                raise _error_frame(resp, chunk)
            if state.response_id is None:
                state.response_id = chunk.get("id")
                state.model_id = chunk.get("model")
            choices = chunk.get("choices")
            if choices:
                choice = choices[0]
                delta = choice.get("delta")
                if delta:
                    content = delta.get("content")
                    if content:
                        if type(content) is not str:
                            raise TypeError("choices[0].delta.content: expected a string")
                        yield {"type": "text-delta", "text": content}
                    calls = delta.get("tool_calls")
                    if calls:
                        for call in calls:
                            index = call.get("index", len(tool_calls))
                            slot = tool_calls.get(index)
                            fn = call.get("function") or {}
                            if slot is None:
                                if not isinstance(fn.get("name"), str) or not fn["name"]:
                                    raise _invalid_tool_delta(resp, call)
                                tool_calls[index] = [
                                    call.get("id") or f"call_{index}",
                                    fn.get("name") or "",
                                    fn.get("arguments") or "",
                                ]
                            else:
                                if fn.get("arguments"):
                                    slot[2] += fn["arguments"]
                                if fn.get("name") and not slot[1]:
                                    slot[1] = fn["name"]
                reason = choice.get("finish_reason")
                if reason is not None:
                    state.finish_reason = map_finish_reason(reason)
            usage = chunk.get("usage")
            if usage:
                state.usage = usage_of(usage)
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            text = data.decode("utf-8", "replace")
            reason = f"stream chunk of an unexpected shape ({type(exc).__name__}: {exc})"
            err = _stream_error(resp, "Invalid stream chunk", retryable=False)
            err.__cause__ = type_validation_error(text, reason)
            raise err  # noqa: B904 - __cause__ set above
    raise _stream_error(
        resp,
        "The stream ended before the provider's terminal event ([DONE])",
        retryable=True,
    )


# -- the provider ----------------------------------------------------------------------------------


def chat_messages(call: LanguageModelCall) -> list[dict[str, Any]]:
    """The neutral prompt as Chat Completions messages (``system`` first)."""
    out: list[dict[str, Any]] = []
    if call.system is not None:
        out.append({"role": "system", "content": call.system})
    for m in call.messages:
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


def chat_tools(call: LanguageModelCall) -> tuple[list[dict[str, Any]] | None, Any]:
    """``tools`` and ``tool_choice`` of the request body (None, None without tools)."""
    if not call.tools:
        return None, None
    tools = []
    for tool in call.tools:
        fn: dict[str, Any] = {"name": tool.name, "parameters": tool.input_schema}
        if tool.description is not None:
            fn["description"] = tool.description
        tools.append({"type": "function", "function": fn})
    choice: Any = call.tool_choice
    if choice == "tool":
        choice = {"type": "function", "function": {"name": call.tool_choice_name}}
    return tools, choice


def response_format(call: LanguageModelCall) -> dict[str, Any] | None:
    """``generate_object``: a ``json_schema`` response format (not strict, as the AI SDK)."""
    fmt = call.object_format
    if fmt is None:
        return None
    out: dict[str, Any] = {
        "type": "json_schema",
        "json_schema": {"name": fmt.name or "response", "schema": fmt.schema, "strict": False},
    }
    if fmt.description is not None:
        out["json_schema"]["description"] = fmt.description
    return out


class OpenAIChatProvider(Provider):
    """``openai``: Chat Completions, through the module functions above."""

    id = "openai"
    default_base_url = DEFAULT_BASE_URL
    default_api_key_env = DEFAULT_API_KEY_ENV
    display_name = "OpenAI"

    def load_api_key(
        self, api_key: str | None, api_key_env: str | None, *, required: bool
    ) -> str | None:
        return load_api_key(api_key, api_key_env, required=required)

    def request(
        self,
        call: LanguageModelCall,
        *,
        base_url: str | None,
        api_key: str | None,
        headers: tuple[dict[str, str] | None, ...],
    ) -> HTTPRequest:
        s = call.settings
        settings = {
            "max_tokens": s.max_output_tokens,
            "temperature": s.temperature,
            "top_p": s.top_p,
            "presence_penalty": s.presence_penalty,
            "frequency_penalty": s.frequency_penalty,
            "stop": s.stop_sequences,
            "seed": s.seed,
        }
        tools, choice = chat_tools(call)
        body = build_body(
            call.model_id,
            chat_messages(call),
            settings,
            stream=call.stream,
            tools=tools,
            tool_choice=choice,
            response_format=response_format(call),
        )
        return HTTPRequest(
            "POST",
            chat_url(base_url),
            request_headers(api_key, *headers),
            orjson.dumps(body),
            stream=call.stream,
            json_body=body,
        )

    def failed_response_error(self, resp: Response) -> APICallError:
        return failed_response_error(resp)

    def parse_result(self, resp: Response, call: LanguageModelCall) -> GenerateResult:
        text, calls, finish, usage, response = completion_parts(parse_completion(resp))
        return GenerateResult(text, calls, finish, usage, response)

    def open_stream(
        self, resp: Response, call: LanguageModelCall
    ) -> tuple[StreamState, Iterator[dict[str, Any]]]:
        state = StreamState()
        return state, stream_events(resp, state)


PROVIDER = OpenAIChatProvider()
