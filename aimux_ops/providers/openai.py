"""The ``openai`` provider: the Chat Completions wire format (request body, response parsing,
stream chunk parsing, error bodies), following ``@ai-sdk/openai``'s chat language model.

- Non-2xx: ``APICallError`` with the message of OpenAI's ``{"error": {"message"}}`` body (``data``
  the parsed body), else the reason phrase; ``responseBody`` always kept; retryable for 408, 409,
  429 and 5xx; headers redacted.
- 2xx that is not JSON: ``APICallError("Invalid JSON response")`` (status kept, not retryable)
  caused by ``JSONParseError`` caused by the decoder's error; a wrong shape: caused by
  ``TypeValidationError`` caused by a ``ValueError`` naming the offending path. A 2xx whose body
  is an OpenAI error object: ``APICallError`` with the provider's message (as in a stream).
- A 3xx that reached us (the transport follows only same-origin 307/308) is an error saying so.
- ``message.refusal`` / ``delta.refusal`` is text, and ``stop`` then becomes ``content-filter``
  (the AI SDK's mapping); integral floats in usage (``20.0``) are counts.
- Streams: an ``error`` frame (``"error": null`` is none), an invalid JSON chunk, a chunk of the
  wrong shape, or an end before the terminal event each raise one ``APICallError`` that carries
  the stream's numeric status. The terminal event is the ``finish_reason`` chunk (CONTRACT §2):
  a missing ``[DONE]`` after it is a normal end. A 2xx labelled other than
  ``text/event-stream``: read as an event stream when it is one, else a chat completion is
  delivered as the stream, and anything else is a non-retryable error saying what arrived.
  Tool-call deltas are matched to calls by id, then index and name, as the AI SDK's
  ``StreamingToolCallTracker`` does (two ids on one index are two calls). The response id and
  model come from the first chunk that has one (not Azure's empty ``prompt_filter_results``).

Shape checks are hand-written (no per-chunk pydantic): this is the hot path.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import repeat
from typing import Any, Literal

import orjson

from .._speedups import CChunks, ReadOpenAI, chunk_reader, new_pace, read_paced
from ..errors import APICallError, InvalidResponseDataError, UnsupportedFunctionalityError
from ..http.transport import HTTPRequest, Response, SSEBatch, event_batches, iter_sse_batches
from .base import (
    FilePart,
    GenerateResult,
    LanguageModelCall,
    Part,
    Provider,
    ReadEvents,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    endpoint_url,
    error_body_response,
    invalid_response,
    is_retryable_status,
    json_headers,
    json_parse_error,
    read_batches,
    stream_error,
    type_validation_error,
    with_details,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "OpenAIChatProvider",
    "StreamState",
    "build_body",
    "chat_url",
    "failed_response_error",
    "is_retryable_status",
    "map_finish_reason",
    "parse_completion",
    "request_headers",
    "stream_batches",
    "stream_events",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"

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


def chat_url(base_url: str | None) -> str:
    """``{baseURL}/chat/completions``, keeping a query string (``?api-version=…``) at the end."""
    return endpoint_url(base_url or DEFAULT_BASE_URL, "chat/completions")


def request_headers(api_key: str | None, *extra: dict[str, str] | None) -> dict[str, str]:
    return json_headers({"authorization": f"Bearer {api_key}"} if api_key else {}, *extra)


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


def _is_error_object(err: dict[str, Any]) -> bool:
    """An OpenAI error object: a string ``message``."""
    return isinstance(err.get("message"), str)


def _redirect_message(status: int) -> str | None:
    """The message of a redirect that was not followed (no error object in its body)."""
    if 300 <= status < 400:
        return (
            f"Redirect (HTTP {status}) not followed: only a same-origin 307/308 is followed, "
            "and a request with the API key never goes to another origin"
        )
    return None


def failed_response_error(resp: Response) -> APICallError:
    """The ``APICallError`` of a non-2xx response (reads its body)."""
    return error_body_response(resp, is_error=_is_error_object, fallback_message=_redirect_message)


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


def _count(value: Any) -> int | None:
    """A token count: an integer, or an integral float (``20.0``: JSON has one number type)
    that a double holds exactly; anything else (a fraction, a bool, a string) is no count."""
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return None


def usage_of(raw: Any) -> dict[str, Any]:
    """Chat Completions usage, with the details it reported (``base.with_details``)."""
    if not isinstance(raw, dict):
        return {"inputTokens": None, "outputTokens": None, "totalTokens": None}
    inp = _count(raw.get("prompt_tokens"))
    out = _count(raw.get("completion_tokens"))
    total = _count(raw.get("total_tokens"))
    if total is None:
        total = inp + out if inp is not None and out is not None else None
    usage: dict[str, Any] = {"inputTokens": inp, "outputTokens": out, "totalTokens": total}
    pdetails, cdetails = raw.get("prompt_tokens_details"), raw.get("completion_tokens_details")
    return with_details(
        usage,
        cache_read=_count(pdetails.get("cached_tokens")) if isinstance(pdetails, dict) else None,
        cache_write=_count(pdetails.get("cache_write_tokens"))
        if isinstance(pdetails, dict)
        else None,
        reasoning=_count(cdetails.get("reasoning_tokens")) if isinstance(cdetails, dict) else None,
    )


def parse_completion(resp: Response) -> dict[str, Any]:
    """Read and check a 2xx chat completion; the parsed body."""
    raw = resp.read()
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        text = raw.decode("utf-8", "replace")
        raise invalid_response(resp, text, json_parse_error(text, exc))  # noqa: B904
    violation = _check_completion(body)
    if violation is not None:
        text = raw.decode("utf-8", "replace")
        if isinstance(body, dict) and "choices" not in body and body.get("error") is not None:
            # an OpenAI error object answered with 200 (gateways do): the provider's own message,
            # classified like the same object inside a stream
            err = _error_frame(resp, body)
            err.response_body = text
            raise err
        raise invalid_response(resp, text, type_validation_error(body, violation))
    return body  # type: ignore[no-any-return]


def completion_parts(
    body: dict[str, Any],
) -> tuple[
    str, list[tuple[str, str, str]], str, dict[str, Any], dict[str, Any], list[dict[str, Any]]
]:
    """(text, [(toolCallId, toolName, raw input)], finishReason, usage, response info,
    reasoning parts)."""
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
    text = message.get("content") or ""
    audio = message.get("audio")
    if not text and isinstance(audio, dict) and isinstance(audio.get("transcript"), str):
        text = audio["transcript"]  # an audio answer's text (the AI SDK reads it the same way)
    finish = map_finish_reason(choice.get("finish_reason"))
    thought = _reasoning_of(message)
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        # the AI SDK: the refusal is a text part after the content, and "stop" becomes
        # "content-filter"
        text += refusal
        if finish == "stop":
            finish = "content-filter"
    reasoning = [{"text": thought}] if thought else []
    return text, calls, finish, usage_of(body.get("usage")), response, reasoning


def url_sources(annotations: Any, counter: list[int]) -> list[dict[str, Any]]:
    """The ``url_citation`` annotations of a message or delta as ``source`` parts (the AI
    SDK's), numbered ``src-<n>`` on from ``counter[0]``; other annotation kinds are skipped."""
    out: list[dict[str, Any]] = []
    if not isinstance(annotations, list):
        return out
    for a in annotations:
        cite = a.get("url_citation") if isinstance(a, dict) else None
        if not isinstance(cite, dict) or not isinstance(cite.get("url"), str):
            continue
        counter[0] += 1
        source: dict[str, Any] = {
            "type": "source",
            "sourceType": "url",
            "id": f"src-{counter[0]}",
            "url": cite["url"],
        }
        if isinstance(cite.get("title"), str):
            source["title"] = cite["title"]
        out.append(source)
    return out


def _reasoning_of(message: Any) -> str | None:
    """The reasoning an OpenAI-compatible server sends beside the answer (``reasoning_content``:
    DeepSeek, vLLM, …; ``reasoning``: OpenRouter, Groq, Ollama), or None."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return None


# -- streaming -----------------------------------------------------------------------------------


class StreamState:
    """What a stream accumulated besides its deltas (tool calls, finish, usage, ids)."""

    __slots__ = (
        "by_id",
        "by_index",
        "calls",
        "done",
        "finish_reason",
        "has_refusal",
        "metadata_seen",
        "model_id",
        "response_id",
        "sources",
        "tool_calls",
        "usage",
    )

    def __init__(self) -> None:
        self.done = False
        #: the number of sources reported so far (their ids: ``src-<n>``)
        self.sources = [0]
        self.finish_reason = "unknown"
        self.usage: dict[str, int | None] = usage_of(None)
        self.response_id: str | None = None
        self.model_id: str | None = None
        self.metadata_seen = False
        self.has_refusal = False
        #: the calls in the order they ended, keyed 0, 1, … (filled when the stream ends):
        #: key → [id, name, arguments]
        self.tool_calls: dict[int, list[str]] = {}
        #: while streaming: every call as [id, name, arguments, index or None, sequence]
        self.calls: list[list[Any]] = []
        self.by_id: dict[str, list[list[Any]]] = {}
        self.by_index: dict[int, list[list[Any]]] = {}


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
    elif err is None and isinstance(frame, dict) and isinstance(frame.get("message"), str):
        message = frame["message"]  # an ``event: error`` frame whose body is its own error
    status = _frame_status(err)
    if status is not None:
        retryable = is_retryable_status(status)
    else:  # no status in the frame: classify by its structured type / code, never by message
        kinds = " ".join(
            str(err.get(k)) for k in ("type", "code") if isinstance(err, dict) and err.get(k)
        ).lower()
        retryable = any(t in kinds for t in _RETRYABLE_FRAME_KINDS)
    return stream_error(resp, message, retryable=retryable, data=frame, status=status)


def _invalid_tool_delta(resp: Response, call: Any) -> APICallError:
    """The first delta of a tool call without its function name (the AI SDK's
    ``InvalidResponseDataError``), carried with the stream's status."""
    err = stream_error(resp, "Invalid stream chunk: a tool call without a name", retryable=False)
    err.__cause__ = InvalidResponseDataError("Expected 'function.name' to be a string.", data=call)
    return err


def _nonblank(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _complete_json(args: str) -> bool:
    """The arguments already hold a whole JSON object / array (a new delta for the same index
    then starts another call)."""
    if not args or args.lstrip()[:1] not in ("{", "["):
        return False
    try:
        return isinstance(orjson.loads(args), (dict, list))
    except orjson.JSONDecodeError:
        return False


def _pick(calls: list[list[Any]], starts_call: bool) -> list[Any] | Literal[False] | None:
    """The AI SDK's ``resolveMatchingToolCall``: the call a delta continues, None for a new
    call, False when it is ambiguous (the delta is dropped)."""
    if not calls:
        return None
    if not starts_call and len(calls) == 1:
        return calls[0]
    open_calls = [c for c in calls if not _complete_json(c[2])]
    if len(open_calls) == 1:
        return open_calls[0]
    if len(open_calls) > 1 or not starts_call:
        return False
    return None


def _resolve_call(
    state: StreamState, wire_id: str | None, index: int | None, name: str | None, args: Any
) -> list[Any] | Literal[False] | None:
    """Which call a tool-call delta belongs to, by id first, then index and name, as the AI
    SDK's ``StreamingToolCallTracker`` decides it (two ids on one index are two calls)."""
    at_index = state.by_index.get(index) if index is not None else None
    matching = [c for c in at_index or () if name is None or c[1] == name]
    starts_call = name is not None and isinstance(args, str) and args.lstrip()[:1] in "{["
    starts_call = starts_call and bool(args.strip())
    if wire_id is not None:
        with_id = state.by_id.get(wire_id)
        if with_id is not None:
            if index is not None:
                ids = {id(c) for c in with_id}
                found = _pick([c for c in matching if id(c) in ids], starts_call)
                if found is not None:
                    return found
                if name is not None:
                    return None
                if at_index is not None:
                    return False
                return _pick(with_id, False)
            if name is not None:
                return _pick([c for c in with_id if c[1] == name], starts_call)
            return _pick(with_id, False)
        if matching:
            if starts_call:
                return None
            empty = not isinstance(args, str) or not args.strip()
            return _pick(matching, name is not None and empty)
        return None
    if at_index is not None:
        return _pick(matching, starts_call)
    if name is not None:
        return None
    return _pick(state.calls, False)


def _tool_delta(resp: Response, state: StreamState, call: Any) -> None:
    fn = call.get("function") or {}
    wire_name = fn.get("name")
    name = _nonblank(wire_name)
    wire_id = _nonblank(call.get("id"))
    index = call.get("index")
    index = index if type(index) is int else None
    args = fn.get("arguments")
    if args is not None and type(args) is not str:
        raise TypeError("choices[0].delta.tool_calls[].function.arguments: expected a string")
    slot = _resolve_call(state, wire_id, index, name, args)
    if slot is False:
        return
    if slot is None:
        if isinstance(wire_name, str) and name is None:
            return  # a blank name starts nothing (the AI SDK skips it)
        if name is None:
            raise _invalid_tool_delta(resp, call)
        used = {c[0] for c in state.calls}
        cid = wire_id if wire_id is not None and wire_id not in used else None
        if cid is None:
            cid = f"call_{len(state.calls)}"
            while cid in used:
                cid += "_"
        slot = [cid, name, args if isinstance(args, str) else "", index, len(state.calls)]
        state.calls.append(slot)
    elif isinstance(args, str):
        slot[2] += args
    if wire_id is not None:
        known = state.by_id.setdefault(wire_id, [])
        if not any(c is slot for c in known):
            known.append(slot)
    if index is not None:
        known = state.by_index.setdefault(index, [])
        if not any(c is slot for c in known):
            known.append(slot)


def _finish(state: StreamState) -> None:
    """The stream is over: tool calls in the AI SDK's order (by index, then arrival, when every
    call has an index), a refusal's ``stop`` as ``content-filter``."""
    calls = state.calls
    if calls and all(c[3] is not None for c in calls):
        calls = sorted(calls, key=lambda c: (c[3], c[4]))
    state.tool_calls = {i: [c[0], c[1], c[2]] for i, c in enumerate(calls)}
    if state.has_refusal and state.finish_reason == "stop":
        state.finish_reason = "content-filter"


def _content_type(resp: Response) -> str:
    return str(resp.headers.get("content-type") or "").lower()


def _looks_like_sse(raw: bytes) -> bool:
    """A body labelled as something else that is an event stream all the same (some servers
    send their SSE as ``application/json`` or ``text/plain``)."""
    head = raw.lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith((b"data:", b":", b"event:", b"id:", b"retry:"))


def _not_an_event_stream(
    resp: Response, state: StreamState, raw: bytes
) -> Iterator[dict[str, Any]]:
    """A 2xx answer to a stream request that is not an event stream: a chat completion is
    delivered as the stream; an OpenAI error object is the provider's error; anything else a
    non-retryable error saying what arrived."""
    text = raw.decode("utf-8", "replace")
    try:
        body: Any = orjson.loads(raw)
    except orjson.JSONDecodeError:
        body = None
    if body is not None and _check_completion(body) is None:
        content, calls, finish, usage, info, reasoning = completion_parts(body)
        for part in reasoning:
            yield {"type": "reasoning-delta", "text": part["text"]}
        if content:
            yield {"type": "text-delta", "text": content}
        state.calls = [[i, n, a, None, k] for k, (i, n, a) in enumerate(calls)]
        state.finish_reason = finish
        state.usage = usage
        state.response_id = info["id"]
        state.model_id = info["modelId"]
        state.done = True
        _finish(state)
        return
    if isinstance(body, dict) and "choices" not in body and body.get("error") is not None:
        err = _error_frame(resp, body)
    else:
        what = _content_type(resp).split(";")[0].strip() or "no content type"
        snippet = " ".join(text[:200].split())
        err = stream_error(
            resp,
            f"Expected an event stream (text/event-stream), got {what}: {snippet!r}",
            retryable=False,
        )
    err.response_body = text
    raise err


def stream_events(resp: Response, state: StreamState) -> Iterator[dict[str, Any]]:
    """``text-delta`` events from a 2xx SSE response; tool calls, usage and the finish reason are
    left in ``state`` (``state.done`` once ``[DONE]`` arrived). Raises ``APICallError`` (with the
    stream's numeric status) for an error frame, a bad chunk or an end before the terminal event
    (the ``finish_reason`` chunk, or ``[DONE]``). The events of ``stream_batches``, one by one."""
    for batch in stream_batches(resp, state):
        yield from batch


def stream_batches(resp: Response, state: StreamState) -> Iterator[list[dict[str, Any]]]:
    """``stream_events`` one network read at a time: a non-empty list of the events each read
    completed (the events before a failure are delivered before it is raised)."""
    ctype = _content_type(resp)
    if ctype and "event-stream" not in ctype:
        raw = resp.read()
        if not _looks_like_sse(raw):
            whole = list(_not_an_event_stream(resp, state, raw))
            if whole:
                yield whole
            return
        reads: Iterator[SSEBatch] = iter_sse_batches(iter((raw,)))
    else:
        reads = event_batches(resp)
    loads = orjson.loads
    cchunks = _cchunks_module()
    read: ReadEvents
    if cchunks is None:
        read = lambda names, datas, out: _read_events(resp, state, names, datas, out, loads)  # noqa: E731
    else:
        fast, unparsed, pace = cchunks.read_openai, cchunks.UNPARSED, new_pace()
        read = lambda names, datas, out: _read_fast(  # noqa: E731
            resp, state, names, datas, out, loads, fast, unparsed, pace
        )
    if (yield from read_batches(reads, read)):
        return
    if state.finish_reason != "unknown":
        # CONTRACT §2: the chunk with finish_reason is OpenAI's terminal event; a missing
        # [DONE] after it is not an error (OpenAI-compatible servers differ there)
        _finish(state)
        return
    raise stream_error(
        resp,
        "The stream ended before the provider's terminal event (a finish_reason chunk or [DONE])",
        retryable=True,
    )


#: ``aimux_ops._speedups._cchunks`` (DESIGN.md "Stream chunks in C"): ``_cext.chunk_reader``.
_cchunks: Any = ...


def _cchunks_module() -> CChunks | None:
    return chunk_reader(globals())


def _read_fast(
    resp: Response,
    state: StreamState,
    names: list[str | None] | None,
    datas: list[bytes],
    out: list[dict[str, Any]],
    loads: Any,
    fast: ReadOpenAI,
    unparsed: object,
    pace: list[int] | None = None,
) -> bool:
    """``_read_events`` with the plain text chunks read in C (``fast``; ``_cext.read_paced``:
    what the C reader hands back, ``[DONE]``, an error, a bad chunk, is ``_read_events``'s)."""
    return read_paced(
        lambda start: fast(datas, names, out, loads, start, state.metadata_seen),
        lambda names, datas, loads: _read_events(resp, state, names, datas, out, loads),
        names,
        datas,
        loads,
        unparsed,
        pace,
    )


def _read_events(
    resp: Response,
    state: StreamState,
    names: list[str | None] | None,
    datas: list[bytes],
    out: list[dict[str, Any]],
    loads: Any,
) -> bool:
    """Append the events of one read's SSE data to ``out``; True at ``[DONE]`` (the rest of the
    read is not looked at). This is the per-chunk hot path: plain dict reads, one event dict."""
    append = out.append
    seen = state.metadata_seen
    for event, data in zip(repeat(None) if names is None else names, datas, strict=False):
        if data == b"[DONE]":
            state.done = True
            _finish(state)
            return True
        try:
            chunk = loads(data)
        except orjson.JSONDecodeError as exc:
            text = data.decode("utf-8", "replace")
            err = stream_error(resp, "Invalid JSON in stream chunk", retryable=False)
            err.__cause__ = json_parse_error(text, exc)
            raise err  # noqa: B904 - __cause__ set above
        try:
            if ("error" in chunk and chunk["error"] is not None) or (
                event is not None and event == "error"
            ):
                # ("error": null is no error frame)
                raise _error_frame(resp, chunk)
            if not seen and (chunk.get("id") or chunk.get("model") or chunk.get("created")):
                # the first chunk that says something (Azure's leading prompt_filter_results
                # chunk has an empty id and model)
                state.metadata_seen = seen = True
                state.response_id = chunk.get("id") or None
                state.model_id = chunk.get("model") or None
            choices = chunk.get("choices")
            if choices:
                choice = choices[0]
                delta = choice.get("delta")
                if delta:
                    content = delta.get("content")
                    if content:
                        if type(content) is not str:
                            raise TypeError("choices[0].delta.content: expected a string")
                        append({"type": "text-delta", "text": content})
                    if content is None or len(delta) > 1:  # else the delta is its text alone
                        refusal = delta.get("refusal") if "refusal" in delta else None
                        if refusal:
                            if type(refusal) is not str:
                                raise TypeError("choices[0].delta.refusal: expected a string")
                            state.has_refusal = True
                            append({"type": "text-delta", "text": refusal})
                        calls = delta.get("tool_calls")
                        if calls:
                            for call in calls:
                                _tool_delta(resp, state, call)
                        thought = _reasoning_of(delta)
                        if thought:
                            append({"type": "reasoning-delta", "text": thought})
                        cited = delta.get("annotations")
                        if cited:
                            out.extend(url_sources(cited, state.sources))
                reason = choice.get("finish_reason")
                if reason is not None:
                    state.finish_reason = map_finish_reason(reason)
            usage = chunk.get("usage")
            if usage:
                state.usage = usage_of(usage)
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            text = data.decode("utf-8", "replace")
            reason = f"stream chunk of an unexpected shape ({type(exc).__name__}: {exc})"
            err = stream_error(resp, "Invalid stream chunk", retryable=False)
            err.__cause__ = type_validation_error(text, reason)
            raise err  # noqa: B904 - __cause__ set above
    return False


# -- the provider ----------------------------------------------------------------------------------


def chat_messages(call: LanguageModelCall) -> list[dict[str, Any]]:
    """The neutral prompt as Chat Completions messages (``system`` first), converted as the AI
    SDK's OpenAI chat provider does: a user turn of one text part is a string; images are
    ``image_url`` (a URL or a data URL; ``providerOptions.openai.imageDetail``), wav / mp3 audio
    ``input_audio``, PDFs ``file`` parts; an assistant's text joins and its tool calls become
    ``tool_calls`` (reasoning is not sent); each tool result is a ``tool`` message (text as is,
    other outputs as JSON text, errors as ``{"error": value}``). What Chat Completions cannot
    carry (a PDF or audio URL, another media type) is an ``UnsupportedFunctionalityError``."""
    out: list[dict[str, Any]] = []
    if call.system is not None:
        out.append({"role": "system", "content": call.system})
    for m in call.messages:
        if m.role == "system":
            out.append({"role": "system", "content": m.text()})
        elif m.role == "user":
            parts = m.parts
            if len(parts) == 1 and isinstance(parts[0], TextPart):
                out.append({"role": "user", "content": parts[0].text})
            else:
                out.append(
                    {"role": "user", "content": [_user_part(p, i) for i, p in enumerate(parts)]}
                )
        elif m.role == "assistant":
            calls = [
                {
                    "id": p.tool_call_id,
                    "type": "function",
                    "function": {
                        "name": p.tool_name,
                        "arguments": p.input
                        if isinstance(p.input, str)
                        else orjson.dumps(p.input).decode(),
                    },
                }
                for p in m.parts
                if isinstance(p, ToolCallPart)
            ]
            text = m.text()
            msg: dict[str, Any] = {
                "role": "assistant",
                "content": (text or None) if calls else text,
            }
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
        else:
            for p in m.parts:
                if isinstance(p, ToolResultPart):
                    out.append(
                        {"role": "tool", "tool_call_id": p.tool_call_id, "content": _tool_output(p)}
                    )
    return out


def _tool_output(p: ToolResultPart) -> str:
    if p.output_type == "text":
        return p.value if isinstance(p.value, str) else orjson.dumps(p.value).decode()
    if p.is_error:
        return orjson.dumps({"error": p.value}).decode()
    return orjson.dumps(p.value).decode()


def _user_part(p: Part, index: int) -> dict[str, Any]:
    if isinstance(p, TextPart):
        return {"type": "text", "text": p.text}
    assert isinstance(p, FilePart)
    media = p.media_type
    if media.startswith("image/"):
        url = p.url if p.url is not None else f"data:{_full(media, 'image/jpeg')};base64,{p.data}"
        image: dict[str, Any] = {"url": url}
        detail = ((p.provider_options or {}).get("openai") or {}).get("imageDetail")
        if detail is not None:
            image["detail"] = detail
        return {"type": "image_url", "image_url": image}
    if media.startswith("audio/"):
        if p.url is not None:
            raise UnsupportedFunctionalityError(
                "'audio file parts with URLs' functionality not supported.",
                functionality="audio file parts with URLs",
            )
        formats = {"audio/wav": "wav", "audio/mp3": "mp3", "audio/mpeg": "mp3"}
        if media not in formats:
            what = f"audio content parts with media type {media}"
            raise UnsupportedFunctionalityError(
                f"'{what}' functionality not supported.", functionality=what
            )
        return {"type": "input_audio", "input_audio": {"data": p.data, "format": formats[media]}}
    if media != "application/pdf":
        what = f"file part media type {media}"
        raise UnsupportedFunctionalityError(
            f"'{what}' functionality not supported.", functionality=what
        )
    if p.url is not None:
        raise UnsupportedFunctionalityError(
            "'PDF file parts with URLs' functionality not supported.",
            functionality="PDF file parts with URLs",
        )
    return {
        "type": "file",
        "file": {
            "filename": p.filename if p.filename is not None else f"part-{index}.pdf",
            "file_data": f"data:application/pdf;base64,{p.data}",
        },
    }


def _full(media: str, default: str) -> str:
    """A media type with a wildcard subtype (``image/*``) as the AI SDK sends it."""
    return default if media.endswith("/*") else media


def call_warnings(call: LanguageModelCall) -> None:
    """The settings Chat Completions has no field for (the AI SDK's warnings)."""
    if call.settings.top_k is not None:
        call.warnings.append({"type": "unsupported", "feature": "topK"})


def chat_tools(call: LanguageModelCall) -> tuple[list[dict[str, Any]] | None, Any]:
    """``tools`` and ``tool_choice`` of the request body (None, None without tools)."""
    if not call.tools:
        return None, None
    tools = []
    for tool in call.tools:
        if tool.provider_id is not None:  # Chat Completions runs no tool itself
            call.warnings.append(
                {"type": "unsupported", "feature": f"provider-defined tool {tool.provider_id}"}
            )
            continue
        fn: dict[str, Any] = {"name": tool.name, "parameters": tool.input_schema}
        if tool.description is not None:
            fn["description"] = tool.description
        tools.append({"type": "function", "function": fn})
    if not tools:
        return None, None
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
        call_warnings(call)
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
        body = parse_completion(resp)
        text, calls, finish, usage, response, reasoning = completion_parts(body)
        result = GenerateResult(text, calls, finish, usage, response, reasoning)
        message = body["choices"][0]["message"]
        result.sources = url_sources(message.get("annotations"), [0])
        return result

    def open_stream(
        self, resp: Response, call: LanguageModelCall
    ) -> tuple[StreamState, Iterator[list[dict[str, Any]]]]:
        state = StreamState()
        return state, stream_batches(resp, state)


PROVIDER = OpenAIChatProvider()
