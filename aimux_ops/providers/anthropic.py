"""The ``anthropic`` provider: the Messages API wire format (request body, response parsing, the
stream event grammar, error bodies), following ``@ai-sdk/anthropic``'s language model.

- Request: ``POST {baseURL}/messages`` with ``x-api-key`` and ``anthropic-version: 2023-06-01``;
  system messages become the top-level ``system``; ``max_tokens`` is always sent (the model's
  default output limit when ``maxOutputTokens`` is absent, as the AI SDK's model table gives it);
  tools as ``input_schema`` and ``toolChoice`` as ``auto`` / ``any`` / ``none`` / ``tool``;
  ``temperature`` above 1 is clamped to 1 and the penalties and ``seed`` (which the API lacks) are
  left out, as the AI SDK does (so are sampling parameters for the models that reject them).
  ``generate_object`` asks with native structured outputs (``output_config.format``) on a model
  that has them for a schema they can take, else forces a ``json`` tool whose input schema is the
  object's schema and whose input is the answer — the AI SDK's ``auto`` mode
  (``anthropic_models``).
- Non-2xx: ``APICallError`` with the message of the ``{"type": "error", "error": {"type",
  "message"}}`` body (``data`` the parsed body: the error type is in it), else the reason phrase;
  retryable for 408, 409, 429 and 5xx (529 "overloaded" included).
- Streams: ``message_start`` (ids, input usage, content blocks it already holds, a
  ``stop_reason``; another message's start while one is open is a spliced stream: an
  ``APICallError`` caused by ``InvalidResponseDataError``), ``content_block_start`` / ``_delta``
  (``text_delta``, ``input_json_delta``) / ``_stop``, ``message_delta`` (``stop_reason``, output
  usage), ``ping``, and the terminal ``message_stop``. An ``error`` event raises an
  ``APICallError`` carrying the frame's type and message, the status its type stands for (529 for
  ``overloaded_error``, 429, 500 …, as the AI SDK infers it) and that status's retryability; a bad
  event or an end before ``message_stop`` raises one too (the stream's status).

Shape checks are hand-written (no per-event pydantic): this is the hot path.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from itertools import repeat
from typing import Any

import orjson

from .._speedups import CChunks, ReadAnthropic, chunk_reader, new_pace, read_paced
from ..errors import (
    APICallError,
    InvalidPromptError,
    InvalidResponseDataError,
    UnsupportedFunctionalityError,
)
from ..http.transport import HTTPRequest, Response, event_batches
from .anthropic_models import capabilities, native_schema_ok, sanitize_schema
from .anthropic_server import SERVER_CALLS, SERVER_RESULTS, ServerBlocks, server_blocks
from .anthropic_tools import provider_tool
from .base import (
    FilePart,
    GenerateResult,
    LanguageModelCall,
    Part,
    Provider,
    ReadEvents,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    endpoint_url,
    error_body_response,
    invalid_response,
    json_headers,
    json_parse_error,
    read_batches,
    stream_error,
    type_validation_error,
    with_details,
)

__all__ = [
    "API_VERSION",
    "DEFAULT_BASE_URL",
    "PROVIDER",
    "AnthropicMessagesProvider",
    "AnthropicStreamState",
    "build_body",
    "default_max_tokens",
    "map_stop_reason",
]

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
DEFAULT_API_KEY_ENV = "ANTHROPIC_API_KEY"
API_VERSION = "2023-06-01"
#: the forced tool of ``generate_object`` (the AI SDK's name and description)
JSON_TOOL = "json"
JSON_TOOL_DESCRIPTION = "Respond with a JSON object."


def map_stop_reason(reason: Any, *, json_tool: bool = False) -> str:
    """Anthropic's ``stop_reason`` → the AI SDK's unified finish reason (none: ``unknown``)."""
    if reason is None:
        return "unknown"
    if reason in ("end_turn", "stop_sequence", "pause_turn"):
        return "stop"
    if reason == "tool_use":
        return "stop" if json_tool else "tool-calls"
    if reason in ("max_tokens", "model_context_window_exceeded"):
        return "length"
    if reason == "refusal":
        return "content-filter"
    return "other"


def default_max_tokens(model_id: str) -> int:
    """``max_tokens`` when ``maxOutputTokens`` is absent, as the AI SDK's model table gives it:
    the model's output limit; 4096 for Claude 2 / 3 and for an id it does not know (a compatible
    server's own model); 128000 for a newer ``claude-`` id."""
    return capabilities(model_id).max_tokens


def uses_json_tool(call: LanguageModelCall) -> bool:
    """``generate_object`` through the forced ``json`` tool (else: native structured outputs,
    on a model that has them, for a schema they can take — the AI SDK's ``auto`` mode)."""
    fmt = call.object_format
    if fmt is None:
        return False
    return not (
        capabilities(call.model_id).native_structured_output and native_schema_ok(fmt.schema)
    )


def messages_url(base_url: str | None) -> str:
    return endpoint_url(base_url or DEFAULT_BASE_URL, "messages")


def request_headers(api_key: str | None, *extra: dict[str, str] | None) -> dict[str, str]:
    own = {"anthropic-version": API_VERSION}
    if api_key:
        own["x-api-key"] = api_key
    return json_headers(own, *extra)


def _tool_input(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return {}
    return {} if value is None else value


#: the beta the AI SDK asks for with a PDF document block
PDF_BETA = "pdfs-2024-09-25"


def _file_block(p: FilePart, betas: set[str]) -> dict[str, Any]:
    media = p.media_type
    if media.startswith("image/"):
        source: dict[str, Any] = (
            {"type": "url", "url": p.url}
            if p.url is not None
            else {"type": "base64", "media_type": media, "data": p.data}
        )
        return {"type": "image", "source": source}
    if media == "application/pdf":
        betas.add(PDF_BETA)
        source = (
            {"type": "url", "url": p.url}
            if p.url is not None
            else {"type": "base64", "media_type": "application/pdf", "data": p.data}
        )
    elif media == "text/plain":
        if p.url is not None:
            source = {"type": "url", "url": p.url}
        else:
            try:
                text = base64.b64decode(p.data or "", validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError) as exc:
                raise InvalidPromptError(
                    "a text/plain file part's data is not base64 of UTF-8 text"
                ) from exc
            source = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        raise UnsupportedFunctionalityError(
            f"'media type: {media}' functionality not supported.",
            functionality=f"media type: {media}",
        )
    block: dict[str, Any] = {"type": "document", "source": source}
    anthropic = (p.provider_options or {}).get("anthropic") or {}
    title = anthropic.get("title", p.filename)
    if title is not None:
        block["title"] = title
    if anthropic.get("context"):
        block["context"] = anthropic["context"]
    if (anthropic.get("citations") or {}).get("enabled"):
        block["citations"] = {"enabled": True}
    return block


def _tool_result_block(p: ToolResultPart) -> dict[str, Any]:
    value = p.value
    if p.output_type in ("text", "error-text") and isinstance(value, str):
        content: Any = value
    else:
        content = orjson.dumps(value).decode()
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": p.tool_call_id,
        "content": content,
    }
    if p.is_error:
        block["is_error"] = True
    return block


def _assistant_block(p: Part, warnings: list[dict[str, Any]]) -> dict[str, Any] | None:
    if isinstance(p, TextPart):
        return {"type": "text", "text": p.text} if p.text else None
    if isinstance(p, ToolCallPart):
        return {
            "type": "tool_use",
            "id": p.tool_call_id,
            "name": p.tool_name,
            "input": _tool_input(p.input),
        }
    if isinstance(p, ReasoningPart):
        meta = (p.provider_options or {}).get("anthropic") or {}
        if isinstance(meta.get("signature"), str):
            return {"type": "thinking", "thinking": p.text, "signature": meta["signature"]}
        if isinstance(meta.get("redactedData"), str):
            return {"type": "redacted_thinking", "data": meta["redactedData"]}
        warnings.append({"type": "other", "message": "unsupported reasoning metadata"})
        return None
    assert isinstance(p, FilePart)
    return _file_block(p, set())


def convert_prompt(
    call: LanguageModelCall, betas: set[str] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(top-level ``system`` blocks, ``messages``), as the AI SDK's Anthropic provider converts
    the neutral prompt: system messages join ``system``; user text, ``image`` and ``document``
    blocks (PDF, plain text; by base64 or URL); tool results are ``tool_result`` blocks of a user
    turn (``is_error`` for error outputs); assistant text (empty parts left out, the last
    assistant text of the prompt trimmed), ``thinking`` replayed with its signature
    (``redacted_thinking`` with its data, else left out with a warning) and ``tool_use``;
    consecutive turns of one role merge. ``betas`` collects the beta headers a block needs."""
    betas = set() if betas is None else betas
    system: list[dict[str, Any]] = []
    if call.system is not None:
        system.append({"type": "text", "text": call.system})
    messages: list[dict[str, Any]] = []
    for m in call.messages:
        if m.role == "system":
            system.append({"type": "text", "text": m.text()})
            continue
        blocks: list[dict[str, Any]] = []
        if m.role == "assistant":
            role = "assistant"
            for p in m.parts:
                block = _assistant_block(p, call.warnings)
                if block is not None:
                    blocks.append(block)
        else:
            role = "user"
            for p in m.parts:
                if isinstance(p, TextPart):
                    blocks.append({"type": "text", "text": p.text})
                elif isinstance(p, FilePart):
                    blocks.append(_file_block(p, betas))
                elif isinstance(p, ToolResultPart):
                    blocks.append(_tool_result_block(p))
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    if messages and messages[-1]["role"] == "assistant":
        content = messages[-1]["content"]
        if content and content[-1]["type"] == "text":
            content[-1]["text"] = content[-1]["text"].strip()
    return system, messages


def call_warnings(call: LanguageModelCall) -> None:
    """The settings the Messages API has no field for (the AI SDK's warnings)."""
    s = call.settings
    for feature, value in (
        ("frequencyPenalty", s.frequency_penalty),
        ("presencePenalty", s.presence_penalty),
        ("seed", s.seed),
    ):
        if value is not None:
            call.warnings.append({"type": "unsupported", "feature": feature})
    t = s.temperature
    if t is not None and t > 1:
        call.warnings.append(
            {
                "type": "unsupported",
                "feature": "temperature",
                "details": f"{t:g} exceeds anthropic maximum of 1.0. clamped to 1.0",
            }
        )
    elif t is not None and t < 0:
        call.warnings.append(
            {
                "type": "unsupported",
                "feature": "temperature",
                "details": f"{t:g} is below anthropic minimum of 0. clamped to 0",
            }
        )


def build_body(call: LanguageModelCall, betas: set[str] | None = None) -> dict[str, Any]:
    """The Messages API request body of ``call`` (``betas``: the beta headers it needs)."""
    call_warnings(call)
    system, messages = convert_prompt(call, betas)
    s = call.settings
    caps = capabilities(call.model_id)
    body: dict[str, Any] = {
        "model": call.model_id,
        "max_tokens": s.max_output_tokens or caps.max_tokens,
    }
    if caps.sampling:  # models without sampling parameters ignore them (the AI SDK warns)
        if s.temperature is not None:
            body["temperature"] = min(max(s.temperature, 0.0), 1.0)
        if s.top_p is not None:
            body["top_p"] = s.top_p
        if s.top_k is not None:
            body["top_k"] = s.top_k
    if s.stop_sequences is not None:
        body["stop_sequences"] = s.stop_sequences
    fmt = call.object_format
    json_tool = uses_json_tool(call)
    if fmt is not None and not json_tool:
        body["output_config"] = {
            "format": {"type": "json_schema", "schema": sanitize_schema(fmt.schema)}
        }
    if system:
        body["system"] = system
    body["messages"] = messages
    tools: list[dict[str, Any]] = []
    choice: dict[str, Any] | None = None
    wanted = call.tool_choice
    for tool in call.tools:
        if tool.provider_id is not None:
            sent = provider_tool(tool)
            if sent is None:
                call.warnings.append(
                    {"type": "unsupported", "feature": f"provider-defined tool {tool.provider_id}"}
                )
            else:
                tools.append(sent[0])
                if sent[1] is not None and betas is not None:
                    betas.add(sent[1])
            continue
        if json_tool and (
            wanted == "none" or (wanted == "tool" and tool.name != call.tool_choice_name)
        ):
            continue  # the JSON tool is forced: only the tools the choice allows go along
        if wanted == "tool" and not caps.forced_tool_choice and tool.name != call.tool_choice_name:
            continue  # no forced choice on this model: only the chosen tool, with "auto"
        wire: dict[str, Any] = {"name": tool.name}
        if tool.description is not None:
            wire["description"] = tool.description
        wire["input_schema"] = tool.input_schema
        tools.append(wire)
    if json_tool and fmt is not None:
        tools.append(
            {"name": JSON_TOOL, "description": JSON_TOOL_DESCRIPTION, "input_schema": fmt.schema}
        )
        choice = {"type": "any", "disable_parallel_tool_use": True}
    elif wanted == "tool" and caps.forced_tool_choice:
        choice = {"type": "tool", "name": call.tool_choice_name}
    elif wanted == "required" and caps.forced_tool_choice:
        choice = {"type": "any"}
    else:  # no choice: "auto", as the AI SDK sends it whenever there are tools
        choice = {"type": "none" if wanted == "none" else "auto"}
    if tools:
        body["tools"] = tools
        if choice is not None:
            body["tool_choice"] = choice
    if call.stream:
        body["stream"] = True
    return body


# -- errors ----------------------------------------------------------------------------------------


def _is_error_object(err: dict[str, Any]) -> bool:
    """An Anthropic error object: a string ``message`` and a string ``type``."""
    return isinstance(err.get("message"), str) and isinstance(err.get("type"), str)


def failed_response_error(resp: Response) -> APICallError:
    """The ``APICallError`` of a non-2xx response (reads its body)."""
    return error_body_response(resp, is_error=_is_error_object)


#: an ``error`` event's type → (the status it stands for, retryable), as the AI SDK infers them
_ERROR_TYPES: dict[str, tuple[int, bool]] = {
    "api_error": (500, True),
    "overloaded_error": (529, True),
    "rate_limit_error": (429, True),
    "request_too_large": (413, False),
    "authentication_error": (401, False),
    "permission_error": (403, False),
    "not_found_error": (404, False),
    "billing_error": (400, False),
    "invalid_request_error": (400, False),
}


def _error_event(resp: Response, frame: Any) -> APICallError:
    err = frame.get("error") if isinstance(frame, dict) else None
    message = "The provider sent an error in the stream"
    kind = None
    if isinstance(err, dict):
        if isinstance(err.get("message"), str):
            message = err["message"]
        if isinstance(err.get("type"), str):
            kind = err["type"]
    status, retryable = _ERROR_TYPES.get(kind or "", (None, False))
    return stream_error(resp, message, retryable=retryable, data=frame, status=status)


# -- non-streaming ---------------------------------------------------------------------------------


def _check_message(body: Any) -> str | None:
    """None when ``body`` has the shape of a Messages API message, else the first violation."""
    if not isinstance(body, dict):
        return "(root): expected an object"
    content = body.get("content")
    if not isinstance(content, list):
        return "content: expected an array"
    for i, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            return f"content[{i}].type: expected a string"
        kind = block["type"]
        if kind == "text" and not isinstance(block.get("text"), str):
            return f"content[{i}].text: expected a string"
        if kind == "tool_use":
            for key in ("id", "name"):
                if not isinstance(block.get(key), str):
                    return f"content[{i}].{key}: expected a string"
    usage = body.get("usage")
    if usage is not None and not isinstance(usage, dict):
        return "usage: expected an object or null"
    for key in ("id", "model", "stop_reason"):
        if body.get(key) is not None and not isinstance(body[key], str):
            return f"{key}: expected a string"
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_of(raw: Any) -> dict[str, Any]:
    """inputTokens = input + cache creation + cache read tokens (the AI SDK's total), with the
    cache reads and writes when reported (``base.with_details``)."""
    if not isinstance(raw, dict):
        return {"inputTokens": None, "outputTokens": None, "totalTokens": None}
    inp, out = _executor_tokens(raw)
    write, read = (
        _int(raw.get("cache_creation_input_tokens")),
        _int(raw.get("cache_read_input_tokens")),
    )
    if inp is not None:
        inp += (write or 0) + (read or 0)
    total = inp + out if inp is not None and out is not None else None
    usage: dict[str, Any] = {"inputTokens": inp, "outputTokens": out, "totalTokens": total}
    details = raw.get("output_tokens_details")
    thinking = _int(details.get("thinking_tokens")) if isinstance(details, dict) else None
    # the Messages API sends both cache counts on every answer, 0 when no cache was used: only
    # a cache that was used is a detail worth reporting
    return with_details(
        usage, cache_read=read or None, cache_write=write or None, reasoning=thinking
    )


def _executor_tokens(raw: dict[str, Any]) -> tuple[int | None, int | None]:
    """(input, output) tokens: with ``iterations`` (a compaction ran first), the sums of the
    compaction and message iterations the top level leaves out, as the AI SDK counts them
    (advisor iterations bill apart; a fallback's top level is the served answer's)."""
    inp, out = _int(raw.get("input_tokens")), _int(raw.get("output_tokens"))
    iterations = raw.get("iterations")
    if not isinstance(iterations, list) or not iterations:
        return inp, out
    kinds = [i.get("type") for i in iterations if isinstance(i, dict)]
    if "fallback_message" in kinds:
        return inp, out
    executor = [
        i for i in iterations if isinstance(i, dict) and i.get("type") in ("compaction", "message")
    ]
    if not executor:
        return inp, out
    return (
        sum(_int(i.get("input_tokens")) or 0 for i in executor),
        sum(_int(i.get("output_tokens")) or 0 for i in executor),
    )


def parse_message(
    resp: Response, *, json_tool: bool, server: ServerBlocks | None = None
) -> GenerateResult:
    """Read and check a 2xx message; its neutral result (the ``json`` tool's input is the text
    when ``json_tool``; ``server``: the reader of its provider-run blocks and citations)."""
    raw = resp.read()
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        text = raw.decode("utf-8", "replace")
        raise invalid_response(resp, text, json_parse_error(text, exc))  # noqa: B904
    violation = _check_message(body)
    if violation is not None:
        text = raw.decode("utf-8", "replace")
        raise invalid_response(resp, text, type_validation_error(body, violation))
    texts: list[str] = []
    calls: list[tuple[str, str, str]] = []
    reasoning: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    server = server if server is not None else server_blocks(None)
    server.scan(body["content"])
    json_text: str | None = None
    for block in body["content"]:
        kind = block["type"]
        if kind == "text":
            texts.append(block["text"])
            content.append(_text_part(block["text"], block.get("citations")))
            for citation in block.get("citations") or ():
                source = server.citation(citation)
                if source is not None:
                    content.append(source)
        elif kind == "compaction":
            summary = block.get("content") or ""
            texts.append(summary)
            content.append(
                {
                    "type": "text",
                    "text": summary,
                    "providerMetadata": {"anthropic": {"type": "compaction"}},
                }
            )
        elif kind in ("thinking", "redacted_thinking"):
            part = _reasoning_part(block)
            reasoning.append(part)
            content.append({"type": "reasoning", **part})
        elif kind == "tool_use":
            value = block.get("input")
            raw_input = orjson.dumps({} if value is None else value).decode()
            if json_tool and block["name"] == JSON_TOOL:
                json_text = raw_input if json_text is None else json_text
            else:
                calls.append((block["id"], block["name"], raw_input))
                content.append(
                    {
                        "type": "tool-call",
                        "toolCallId": block["id"],
                        "toolName": block["name"],
                        "input": raw_input,
                    }
                )
        elif kind in SERVER_CALLS:
            call_id, name, input_type = server.start_call(block)
            value = block.get("input")
            raw_input = orjson.dumps({} if value is None else value).decode()
            content.append(server.call_part(block, call_id, name, input_type, raw_input))
        elif kind in SERVER_RESULTS:
            content.extend(server.result_parts(block))
    if json_text is not None:
        content = [p for p in content if p["type"] != "text"]
        content.insert(0, {"type": "text", "text": json_text})
    return GenerateResult(
        json_text if json_text is not None else "".join(texts),
        calls,
        map_stop_reason(body.get("stop_reason"), json_tool=json_tool and json_text is not None),
        usage_of(body.get("usage")),
        {"id": body.get("id"), "modelId": body.get("model")},
        reasoning,
        content=content,
        provider_metadata=provider_metadata(body.get("usage"), body.get("stop_sequence"), body),
    )


def _text_part(text: str, citations: Any) -> dict[str, Any]:
    """A text block's part; its web search citations in ``providerMetadata`` (the AI SDK's)."""
    part: dict[str, Any] = {"type": "text", "text": text}
    if isinstance(citations, list):
        web = [c for c in citations if isinstance(c, dict) and c.get("type") == WEB_CITATION]
        if web:
            part["providerMetadata"] = {"anthropic": {"citations": web}}
    return part


#: the citation kind of a web search result
WEB_CITATION = "web_search_result_location"


def provider_metadata(usage: Any, stop_sequence: Any, message: Any) -> dict[str, Any]:
    """``providerMetadata.anthropic``: the raw usage, the cache writes and the stop sequence (and
    the code execution container, when one was used), as the AI SDK reports them."""
    raw = usage if isinstance(usage, dict) else {}
    meta: dict[str, Any] = {
        "usage": raw,
        "cacheCreationInputTokens": _int(raw.get("cache_creation_input_tokens")),
        "stopSequence": stop_sequence if isinstance(stop_sequence, str) else None,
    }
    container = message.get("container") if isinstance(message, dict) else None
    if isinstance(container, dict):
        meta["container"] = {"id": container.get("id"), "expiresAt": container.get("expires_at")}
    return {"anthropic": meta}


def _compaction_delta(summary: str) -> dict[str, Any]:
    """A compaction block's summary, streamed as text marked as such (the AI SDK's)."""
    return {
        "type": "text-delta",
        "text": summary,
        "providerMetadata": {"anthropic": {"type": "compaction"}},
    }


def _reasoning_part(block: dict[str, Any]) -> dict[str, Any]:
    """A ``thinking`` block as a reasoning part (its signature in ``providerMetadata``, as the
    AI SDK gives it, so a next turn can replay it), a ``redacted_thinking`` one with its data."""
    if block["type"] == "redacted_thinking":
        return {"text": "", "providerMetadata": {"anthropic": {"redactedData": block.get("data")}}}
    part: dict[str, Any] = {"text": block.get("thinking") or ""}
    if isinstance(block.get("signature"), str):
        part["providerMetadata"] = {"anthropic": {"signature": block["signature"]}}
    return part


# -- streaming -------------------------------------------------------------------------------------


class AnthropicStreamState:
    """What a stream accumulated besides its deltas (see ``base.StreamState``)."""

    __slots__ = (
        "_raw_usage",
        "compaction",
        "container",
        "done",
        "finish_reason",
        "json_blocks",
        "model_id",
        "open",
        "response_id",
        "server",
        "stop_sequence",
        "tool_calls",
        "usage",
    )

    def __init__(self, server: ServerBlocks | None = None) -> None:
        self.done = False
        #: the provider-run calls, their results and the sources (``anthropic_server``)
        self.server = server if server is not None else server_blocks(None)
        self.server.hold_web_citations()
        #: indexes of compaction blocks (their summary streams as text)
        self.compaction: set[int] = set()
        self.stop_sequence: Any = None
        self.container: Any = None
        self.finish_reason = "unknown"
        self.usage: dict[str, int | None] = usage_of(None)
        self._raw_usage: dict[str, Any] = {}
        self.response_id: str | None = None
        self.model_id: str | None = None
        #: a ``message_start`` arrived (its ``message_stop`` ends the stream)
        self.open = False
        #: content block index → [id, name, partial JSON so far]
        #: (a provider-run call's: [id, name, partial JSON, input type, its block])
        self.tool_calls: dict[int, list[Any]] = {}
        #: indexes of ``json``-tool blocks whose input streams as text (generate_object)
        self.json_blocks: set[int] = set()

    def add_usage(self, raw: Any) -> None:
        if isinstance(raw, dict):
            self._raw_usage.update({k: v for k, v in raw.items() if v is not None})
            self.usage = usage_of(self._raw_usage)

    @property
    def provider_metadata(self) -> dict[str, Any]:
        return provider_metadata(self._raw_usage, self.stop_sequence, {"container": self.container})

    def end_server_call(self, index: int, out: list[dict[str, Any]]) -> None:
        """A provider-run call's block ended: its ``tool-call`` event (its input complete)."""
        slot = self.tool_calls.get(index)
        if slot is not None and len(slot) > 3:
            del self.tool_calls[index]
            out.append(self.server.call_part(slot[4], slot[0], slot[1], slot[3], slot[2]))


def _invalid_tool_block(resp: Response, block: Any) -> APICallError:
    err = stream_error(resp, "Invalid stream chunk: a tool call without a name", retryable=False)
    err.__cause__ = InvalidResponseDataError("Expected 'name' to be a string.", data=block)
    return err


def _spliced(resp: Response, frame: Any, open_id: Any) -> APICallError:
    """A second message's ``message_start`` while the first is still open (the AI SDK's
    message): a stream spliced from two answers is no answer."""
    new_id = frame["message"].get("id")
    message = (
        f"Received message_start for message {orjson.dumps(new_id).decode()} "
        f"while message {orjson.dumps(open_id).decode()} is still open."
    )
    err = stream_error(resp, message, retryable=False)
    err.__cause__ = InvalidResponseDataError(message, data=frame)
    return err


def _start_message(
    resp: Response,
    state: AnthropicStreamState,
    json_tool: bool,
    message: Any,
    append: Callable[[dict[str, Any]], None],
) -> None:
    """What a ``message_start``'s message already holds: ids, usage, content blocks (tool calls
    a server ran before the stream, as with deferred tool calls; text) and a ``stop_reason``."""
    state.open = True
    state.response_id = message.get("id")
    state.model_id = message.get("model")
    state.add_usage(message.get("usage"))
    state.container = message.get("container")
    content = message.get("content")
    if content:
        if not isinstance(content, list):
            raise TypeError("message.content: expected an array")
        for i, block in enumerate(content):
            btype = block["type"]
            if btype == "text":
                if type(block.get("text")) is not str:
                    raise TypeError(f"message.content[{i}].text: expected a string")
                if block["text"]:
                    append({"type": "text-delta", "text": block["text"]})
            elif btype == "tool_use":
                name = block.get("name")
                if not isinstance(name, str) or not name:
                    raise _invalid_tool_block(resp, block)
                value = block.get("input")
                raw_input = orjson.dumps({} if value is None else value).decode()
                key = i - len(content)  # before every content block of the stream, in order
                if json_tool and name == JSON_TOOL:
                    state.json_blocks.add(key)
                    append({"type": "text-delta", "text": raw_input})
                else:
                    state.tool_calls[key] = [block.get("id") or f"toolu_{key}", name, raw_input]
            elif btype in SERVER_CALLS:
                call_id, name, kind = state.server.start_call(block)
                value = block.get("input")
                raw_input = orjson.dumps({} if value is None else value).decode()
                append(state.server.call_part(block, call_id, name, kind, raw_input))
            elif btype in SERVER_RESULTS:
                for part in state.server.result_parts(block):
                    append(part)
            # other blocks (thinking) carry nothing the ops report
    reason = message.get("stop_reason")
    if reason is not None:
        state.finish_reason = map_stop_reason(
            reason, json_tool=json_tool and bool(state.json_blocks)
        )


def stream_events(
    resp: Response, state: AnthropicStreamState, *, json_tool: bool = False
) -> Iterator[dict[str, Any]]:
    """``text-delta`` events from a 2xx SSE response; tool calls, usage and the finish reason are
    left in ``state`` (``state.done`` once ``message_stop`` arrived). Raises ``APICallError`` (with
    the stream's numeric status) for an ``error`` event, a bad event or an end before
    ``message_stop``. The events of ``stream_batches``, one by one."""
    for batch in stream_batches(resp, state, json_tool=json_tool):
        yield from batch


def stream_batches(
    resp: Response, state: AnthropicStreamState, *, json_tool: bool = False
) -> Iterator[list[dict[str, Any]]]:
    """``stream_events`` one network read at a time: a non-empty list of the events each read
    completed (the events before a failure are delivered before it is raised)."""
    cchunks = _cchunks_module()
    read: ReadEvents
    if cchunks is None:
        read = lambda names, datas, out: _read_events(resp, state, json_tool, names, datas, out)  # noqa: E731
    else:
        fast, unparsed, pace = cchunks.read_anthropic, cchunks.UNPARSED, new_pace()
        read = lambda names, datas, out: _read_fast(  # noqa: E731
            resp, state, json_tool, names, datas, out, fast, unparsed, pace
        )
    if (yield from read_batches(event_batches(resp), read)):
        return
    raise stream_error(
        resp,
        "The stream ended before the provider's terminal event (message_stop)",
        retryable=True,
    )


#: ``aimux_ops._speedups._cchunks`` (DESIGN.md "Stream chunks in C"): ``_cext.chunk_reader``.
_cchunks: Any = ...


def _cchunks_module() -> CChunks | None:
    return chunk_reader(globals())


def _read_fast(
    resp: Response,
    state: AnthropicStreamState,
    json_tool: bool,
    names: list[str | None] | None,
    datas: list[bytes],
    out: list[dict[str, Any]],
    fast: ReadAnthropic,
    unparsed: object,
    pace: list[int] | None = None,
) -> bool:
    """``_read_events`` with the content block deltas read in C (``fast``: text, the tool input
    of ``input_json_delta`` and the delta types the Python loop ignores; ``_cext.read_paced``:
    a frame the C reader hands back, any other type or shape, a bad chunk, is ``_read_events``'s).
    """
    loads = orjson.loads
    json_blocks, tool_calls = state.json_blocks, state.tool_calls
    return read_paced(
        lambda start: fast(datas, out, loads, start, json_blocks, tool_calls),
        lambda names, datas, loads: _read_events(resp, state, json_tool, names, datas, out, loads),
        names,
        datas,
        loads,
        unparsed,
        pace,
    )


def _read_events(
    resp: Response,
    state: AnthropicStreamState,
    json_tool: bool,
    names: list[str | None] | None,
    datas: list[bytes],
    out: list[dict[str, Any]],
    loads: Any = orjson.loads,
) -> bool:
    """Append the events of one read's SSE data to ``out``; True at ``message_stop`` (the rest
    of the read is not looked at)."""
    append = out.append
    tool_calls = state.tool_calls
    json_blocks = state.json_blocks
    for event, data in zip(repeat(None) if names is None else names, datas, strict=False):
        try:
            frame = loads(data)
        except orjson.JSONDecodeError as exc:
            text = data.decode("utf-8", "replace")
            err = stream_error(resp, "Invalid JSON in stream chunk", retryable=False)
            err.__cause__ = json_parse_error(text, exc)
            raise err  # noqa: B904 - __cause__ set above
        try:
            kind = frame["type"]
            if kind == "content_block_delta":
                delta = frame["delta"]
                dtype = delta["type"]
                if dtype == "text_delta":
                    text = delta["text"]
                    if type(text) is not str:
                        raise TypeError("delta.text: expected a string")
                    if text:
                        append({"type": "text-delta", "text": text})
                elif dtype == "input_json_delta":
                    piece = delta["partial_json"]
                    if type(piece) is not str:
                        raise TypeError("delta.partial_json: expected a string")
                    index = frame["index"]
                    if index in json_blocks:
                        if piece:
                            append({"type": "text-delta", "text": piece})
                    else:
                        slot = tool_calls.get(index)
                        if slot is not None:  # else a server tool's input: not ours to report
                            slot[2] += piece
                elif dtype == "thinking_delta":
                    thought = delta["thinking"]
                    if type(thought) is not str:
                        raise TypeError("delta.thinking: expected a string")
                    if thought:
                        append({"type": "reasoning-delta", "text": thought})
                elif dtype == "signature_delta":
                    signature = delta["signature"]
                    if type(signature) is not str:
                        raise TypeError("delta.signature: expected a string")
                    append(
                        {
                            "type": "reasoning-delta",
                            "text": "",
                            "providerMetadata": {"anthropic": {"signature": signature}},
                        }
                    )
                elif dtype == "citations_delta":
                    source = state.server.citation(delta.get("citation"))
                    if source is not None:
                        append(source)
                elif dtype == "compaction_delta":
                    summary = delta.get("content")
                    if summary is not None:
                        if type(summary) is not str:
                            raise TypeError("delta.content: expected a string")
                        append(_compaction_delta(summary))
            elif kind == "message_start":
                message = frame["message"]
                if state.open:
                    if message.get("id") == state.response_id:
                        continue  # the open message's start again: nothing new (the AI SDK's)
                    raise _spliced(resp, frame, state.response_id)
                _start_message(resp, state, json_tool, message, append)
            elif kind == "content_block_start":
                block = frame["content_block"]
                index = frame["index"]
                btype = block["type"]
                if btype == "text":
                    if block.get("text"):
                        append({"type": "text-delta", "text": block["text"]})
                elif btype == "compaction":
                    state.compaction.add(index)
                    if block.get("content"):
                        append(_compaction_delta(block["content"]))
                elif btype in SERVER_CALLS:
                    call_id, name, kind = state.server.start_call(block)
                    start = block.get("input")
                    initial = orjson.dumps(start).decode() if start else ""
                    # a list of five: the C reader adds the input's pieces to [2] as a host
                    # call's; its block's end (below) makes it a provider-run tool-call event
                    state.tool_calls[index] = [call_id, name, initial, kind, block]
                elif btype in SERVER_RESULTS:
                    for part in state.server.result_parts(block):
                        append(part)
                elif btype == "redacted_thinking":
                    part = _reasoning_part(block)
                    append({"type": "reasoning-delta", **part})
                elif btype == "tool_use":
                    name = block.get("name")
                    if not isinstance(name, str) or not name:
                        raise _invalid_tool_block(resp, block)
                    start = block.get("input")
                    initial = orjson.dumps(start).decode() if start else ""
                    if json_tool and name == JSON_TOOL:
                        json_blocks.add(index)
                        if initial:
                            append({"type": "text-delta", "text": initial})
                    else:
                        tool_calls[index] = [block.get("id") or f"toolu_{index}", name, initial]
            elif kind == "content_block_stop":
                state.end_server_call(frame["index"], out)
            elif kind == "message_delta":
                if "stop_sequence" in frame["delta"]:
                    state.stop_sequence = frame["delta"]["stop_sequence"]
                if frame["delta"].get("container") is not None:
                    state.container = frame["delta"]["container"]
                reason = frame["delta"].get("stop_reason")
                if reason is not None:
                    state.finish_reason = map_stop_reason(
                        reason, json_tool=json_tool and bool(json_blocks)
                    )
                state.add_usage(frame.get("usage"))
            elif kind == "message_stop":
                for index in [i for i, slot in tool_calls.items() if len(slot) > 3]:
                    state.end_server_call(index, out)  # a provider-run call left open
                out.extend(state.server.held_sources())
                state.done = True
                state.open = False
                return True
            elif kind == "error" or event == "error":
                raise _error_event(resp, frame)
            # ping and event types added later carry nothing to report
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            text = data.decode("utf-8", "replace")
            reason = f"stream chunk of an unexpected shape ({type(exc).__name__}: {exc})"
            err = stream_error(resp, "Invalid stream chunk", retryable=False)
            err.__cause__ = type_validation_error(text, reason)
            raise err  # noqa: B904 - __cause__ set above
    return False


# -- the provider ----------------------------------------------------------------------------------


class AnthropicMessagesProvider(Provider):
    """``anthropic``: the Messages API."""

    id = "anthropic"
    default_base_url = DEFAULT_BASE_URL
    default_api_key_env = DEFAULT_API_KEY_ENV
    display_name = "Anthropic"

    def request(
        self,
        call: LanguageModelCall,
        *,
        base_url: str | None,
        api_key: str | None,
        headers: tuple[dict[str, str] | None, ...],
    ) -> HTTPRequest:
        betas: set[str] = set()
        body = build_body(call, betas)
        beta = {"anthropic-beta": ",".join(sorted(betas))} if betas else None
        return HTTPRequest(
            "POST",
            messages_url(base_url),
            request_headers(api_key, beta, *headers),
            orjson.dumps(body),
            stream=call.stream,
            json_body=body,
        )

    def failed_response_error(self, resp: Response) -> APICallError:
        return failed_response_error(resp)

    def parse_result(self, resp: Response, call: LanguageModelCall) -> GenerateResult:
        return parse_message(resp, json_tool=uses_json_tool(call), server=server_blocks(call))

    def open_stream(
        self, resp: Response, call: LanguageModelCall
    ) -> tuple[AnthropicStreamState, Iterator[list[dict[str, Any]]]]:
        state = AnthropicStreamState(server_blocks(call))
        return state, stream_batches(resp, state, json_tool=uses_json_tool(call))


PROVIDER = AnthropicMessagesProvider()
