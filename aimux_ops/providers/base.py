"""The provider interface (in the spirit of the AI SDK's ``LanguageModelV2``) and its neutral types.

The ops build one provider-neutral ``LanguageModelCall`` (system, messages, settings, tools, tool
choice, object format, stream flag) and hand it to the ``Provider`` named by ``model.provider``.
The provider owns everything of its wire format: URL, headers, body, API-key variable, response
parsing, finish-reason and usage mapping, error-body parsing and its stream's terminal-event rule.
It answers with a ``GenerateResult`` or, for a stream, ``text-delta`` events (a list per network
read) plus a ``StreamState`` (tool calls, finish reason, usage, ids) filled as the stream is read.

Retry, timeouts, recording, redaction, tool validation and projection stay in the shared layers
(``retry``, ``transport``, ``recording``, ``redact``, ``ops``, ``envelope``): a provider never
sleeps, never retries and never decides what is secret beyond registering the key it sends.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterator
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any, Protocol

import orjson

from .._version import __version__
from ..errors import APICallError, JSONParseError, LoadAPIKeyError, TypeValidationError
from ..http.transport import HTTPRequest, Response, SSEBatch
from ..wire.redact import redact_headers, remember_secret

__all__ = [
    "FilePart",
    "GenerateResult",
    "LanguageModelCall",
    "NeutralMessage",
    "ObjectFormat",
    "Part",
    "Provider",
    "ProviderOptions",
    "ReasoningPart",
    "Settings",
    "StreamState",
    "TextPart",
    "ToolCallPart",
    "ToolDef",
    "ToolResultPart",
    "error_body_response",
    "with_details",
    "invalid_response",
    "is_retryable_status",
    "json_parse_error",
    "json_headers",
    "load_api_key",
    "stream_error",
    "type_validation_error",
]


# -- the neutral call ------------------------------------------------------------------------------


#: ``providerOptions``: per provider id, that provider's options (the others ignore them)
ProviderOptions = dict[str, dict[str, Any]]


_set = object.__setattr__


class _Frozen:
    """Base of the neutral records: immutable, equal and hashed by their fields (``__slots__``,
    in order), shown and copied as ``@dataclass(frozen=True, slots=True)`` would make them
    (cold start: a dataclass generates and compiles its methods per class at import)."""

    __slots__ = ()
    #: the fields, in order (each subclass's ``__slots__``)
    _fields: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._values())


class TextPart(_Frozen):
    _fields = ("text", "provider_options")
    __slots__ = _fields
    text: str
    provider_options: ProviderOptions | None

    def __init__(self, text: str, provider_options: ProviderOptions | None = None) -> None:
        _set(self, "text", text)
        _set(self, "provider_options", provider_options)


class FilePart(_Frozen):
    """A file: ``data`` inline (base64, ``url`` None) or at ``url`` (http/https)."""

    _fields = ("media_type", "data", "url", "filename", "provider_options")
    __slots__ = _fields
    media_type: str
    data: str | None
    url: str | None
    filename: str | None
    provider_options: ProviderOptions | None

    def __init__(
        self,
        media_type: str,
        data: str | None = None,
        url: str | None = None,
        filename: str | None = None,
        provider_options: ProviderOptions | None = None,
    ) -> None:
        _set(self, "media_type", media_type)
        _set(self, "data", data)
        _set(self, "url", url)
        _set(self, "filename", filename)
        _set(self, "provider_options", provider_options)


class ReasoningPart(_Frozen):
    """The model's reasoning of an earlier turn (replayed: Anthropic ``thinking`` with its
    ``providerOptions.anthropic.signature``, ``redacted_thinking`` with ``redactedData``)."""

    _fields = ("text", "provider_options")
    __slots__ = _fields
    text: str
    provider_options: ProviderOptions | None

    def __init__(self, text: str, provider_options: ProviderOptions | None = None) -> None:
        _set(self, "text", text)
        _set(self, "provider_options", provider_options)


class ToolCallPart(_Frozen):
    """A tool call the assistant made in an earlier turn (``input``: a value or its JSON text)."""

    _fields = ("tool_call_id", "tool_name", "input", "provider_options")
    __slots__ = _fields
    tool_call_id: str
    tool_name: str
    input: Any
    provider_options: ProviderOptions | None

    def __init__(
        self,
        tool_call_id: str,
        tool_name: str,
        input: Any = None,  # noqa: A002 - the AI SDK's name
        provider_options: ProviderOptions | None = None,
    ) -> None:
        _set(self, "tool_call_id", tool_call_id)
        _set(self, "tool_name", tool_name)
        _set(self, "input", input)
        _set(self, "provider_options", provider_options)


class ToolResultPart(_Frozen):
    """A tool's result the model reads: ``output_type`` ``text`` | ``json`` | ``error-text`` |
    ``error-json`` and its value (the AI SDK's tool output types)."""

    _fields = ("tool_call_id", "tool_name", "output_type", "value", "provider_options")
    __slots__ = _fields
    tool_call_id: str
    tool_name: str
    output_type: str
    value: Any
    provider_options: ProviderOptions | None

    def __init__(
        self,
        tool_call_id: str,
        tool_name: str,
        output_type: str,
        value: Any = None,
        provider_options: ProviderOptions | None = None,
    ) -> None:
        _set(self, "tool_call_id", tool_call_id)
        _set(self, "tool_name", tool_name)
        _set(self, "output_type", output_type)
        _set(self, "value", value)
        _set(self, "provider_options", provider_options)

    @property
    def is_error(self) -> bool:
        return self.output_type.startswith("error-")


Part = TextPart | FilePart | ReasoningPart | ToolCallPart | ToolResultPart


class NeutralMessage(_Frozen):
    """One turn of the neutral prompt: ``system`` (text parts only), ``user`` (text, file),
    ``assistant`` (text, file, reasoning, tool-call) or ``tool`` (tool-result)."""

    _fields = ("role", "parts", "provider_options")
    __slots__ = _fields
    role: str
    parts: tuple[Part, ...]
    provider_options: ProviderOptions | None

    def __init__(
        self,
        role: str,
        parts: tuple[Part, ...] = (),
        provider_options: ProviderOptions | None = None,
    ) -> None:
        _set(self, "role", role)
        _set(self, "parts", parts)
        _set(self, "provider_options", provider_options)

    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))


class Settings(_Frozen):
    _fields = (
        "max_output_tokens",
        "temperature",
        "top_p",
        "top_k",
        "presence_penalty",
        "frequency_penalty",
        "stop_sequences",
        "seed",
    )
    __slots__ = _fields
    max_output_tokens: int | None
    temperature: float | None
    top_p: float | None
    top_k: int | None
    presence_penalty: float | None
    frequency_penalty: float | None
    stop_sequences: list[str] | None
    seed: int | None

    def __init__(
        self,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        top_k: int | None = None,
        presence_penalty: float | None = None,
        frequency_penalty: float | None = None,
        stop_sequences: list[str] | None = None,
        seed: int | None = None,
    ) -> None:
        _set(self, "max_output_tokens", max_output_tokens)
        _set(self, "temperature", temperature)
        _set(self, "top_p", top_p)
        _set(self, "top_k", top_k)
        _set(self, "presence_penalty", presence_penalty)
        _set(self, "frequency_penalty", frequency_penalty)
        _set(self, "stop_sequences", stop_sequences)
        _set(self, "seed", seed)


class ToolDef(_Frozen):
    """A tool the model may call: a function (its input schema) or, with ``provider_id``, one the
    provider runs itself (``anthropic.web_search_20250305``: its ``args``)."""

    _fields = ("name", "description", "input_schema", "provider_id", "args")
    __slots__ = _fields
    name: str
    description: str | None
    input_schema: dict[str, Any]
    provider_id: str | None
    args: dict[str, Any] | None

    def __init__(
        self,
        name: str,
        description: str | None,
        input_schema: dict[str, Any],
        provider_id: str | None = None,
        args: dict[str, Any] | None = None,
    ) -> None:
        _set(self, "name", name)
        _set(self, "description", description)
        _set(self, "input_schema", input_schema)
        _set(self, "provider_id", provider_id)
        _set(self, "args", args)


class ObjectFormat(_Frozen):
    """``generate_object``: the JSON Schema the answer must match (each provider asks for it its
    own way: a response format, a forced tool …)."""

    _fields = ("schema", "name", "description")
    __slots__ = _fields
    schema: dict[str, Any]
    name: str | None
    description: str | None

    def __init__(
        self, schema: dict[str, Any], name: str | None = None, description: str | None = None
    ) -> None:
        _set(self, "schema", schema)
        _set(self, "name", name)
        _set(self, "description", description)


@dataclass(frozen=True, slots=True)
class LanguageModelCall:
    model_id: str
    system: str | None
    messages: tuple[NeutralMessage, ...]
    settings: Settings
    tools: tuple[ToolDef, ...] = ()
    #: None, "auto", "none", "required" or "tool" (then ``tool_choice_name``)
    tool_choice: str | None = None
    tool_choice_name: str | None = None
    object_format: ObjectFormat | None = None
    stream: bool = False
    #: observations (seed 003): what a provider adapted or dropped of this call, in the AI
    #: SDK's warning types (``unsupported`` / ``compatibility`` / ``other``); providers append
    warnings: list[dict[str, Any]] = field(default_factory=list, compare=False)


# -- the neutral answers ---------------------------------------------------------------------------


@dataclass(slots=True)
class GenerateResult:
    text: str
    #: (toolCallId, toolName, raw JSON input text) — validated by the ops, not the provider
    tool_calls: list[tuple[str, str, str]]
    finish_reason: str
    usage: dict[str, Any]
    response: dict[str, Any] = field(default_factory=dict)
    #: the model's reasoning, in order: {"text", "providerMetadata"?} (Anthropic's signature)
    reasoning: list[dict[str, Any]] = field(default_factory=list)
    #: the answer's parts in order (text, reasoning, source, tool-call, tool-result,
    #: tool-error), when the provider reports them so; a host tool's ``tool-call`` holds its raw
    #: JSON input text (validated by the ops). None: the ops make them of the fields above.
    content: list[dict[str, Any]] | None = None
    #: the sources the answer cited (``source`` parts), when ``content`` is None
    sources: list[dict[str, Any]] = field(default_factory=list)
    #: what the provider reported beyond the neutral fields, by provider id
    provider_metadata: dict[str, Any] | None = None


class StreamState(Protocol):
    """What a stream accumulated besides its ``text-delta`` events; complete once the provider's
    terminal event arrived (a stream that ends earlier raises instead)."""

    finish_reason: str
    usage: dict[str, int | None]
    response_id: str | None
    model_id: str | None
    #: block / choice index → [toolCallId, toolName, raw JSON input text]
    tool_calls: dict[int, list[str]]


class Provider(ABC):
    """One wire format. Instances are stateless and shared by every call."""

    #: the ``model.provider`` id
    id: str
    default_base_url: str
    default_api_key_env: str
    #: the product name used in messages ("OpenAI", "Anthropic")
    display_name: str

    def load_api_key(
        self, api_key: str | None, api_key_env: str | None, *, required: bool
    ) -> str | None:
        return load_api_key(
            api_key,
            api_key_env or self.default_api_key_env,
            required=required,
            display_name=self.display_name,
        )

    @abstractmethod
    def request(
        self,
        call: LanguageModelCall,
        *,
        base_url: str | None,
        api_key: str | None,
        headers: tuple[dict[str, str] | None, ...],
    ) -> HTTPRequest:
        """The HTTP request of ``call`` (URL, headers, body)."""

    @abstractmethod
    def failed_response_error(self, resp: Response) -> APICallError:
        """The ``APICallError`` of a non-2xx response (reads its body)."""

    @abstractmethod
    def parse_result(self, resp: Response, call: LanguageModelCall) -> GenerateResult:
        """Read and check a 2xx answer; raises ``APICallError`` for an unusable one."""

    @abstractmethod
    def open_stream(
        self, resp: Response, call: LanguageModelCall
    ) -> tuple[StreamState, Iterator[list[dict[str, Any]]]]:
        """``text-delta`` events of a 2xx stream (lazily read), one non-empty list per network
        read, and the state they fill. The iterator raises ``APICallError`` (with the stream's
        numeric status) for an error event, a bad event or an end before the terminal event;
        the events a read completed before such a failure come first."""


# -- helpers every provider shares -----------------------------------------------------------------


def with_details(
    usage: dict[str, Any],
    *,
    cache_read: int | None = None,
    cache_write: int | None = None,
    reasoning: int | None = None,
) -> dict[str, Any]:
    """``usage`` with the token details a provider reported (never fabricated): the flat
    ``cachedInputTokens`` / ``reasoningTokens`` and the AI SDK v7's ``inputTokenDetails``
    (``noCacheTokens``, ``cacheReadTokens``, ``cacheWriteTokens``) / ``outputTokenDetails``
    (``textTokens``, ``reasoningTokens``), each only when reported."""
    inp, out = usage.get("inputTokens"), usage.get("outputTokens")
    if cache_read is not None or cache_write is not None:
        details: dict[str, int] = {}
        if inp is not None:
            details["noCacheTokens"] = max(0, inp - (cache_read or 0) - (cache_write or 0))
        if cache_read is not None:
            details["cacheReadTokens"] = cache_read
            usage["cachedInputTokens"] = cache_read
        if cache_write is not None:
            details["cacheWriteTokens"] = cache_write
        usage["inputTokenDetails"] = details
    if reasoning is not None:
        usage["reasoningTokens"] = reasoning
        odetails = {"reasoningTokens": reasoning}
        if out is not None:
            odetails["textTokens"] = max(0, out - reasoning)
        usage["outputTokenDetails"] = odetails
    return usage


def is_retryable_status(status: int) -> bool:
    """The AI SDK's default: 408, 409, 429 and every 5xx."""
    return status in (408, 409, 429) or status >= 500


def error_body_response(
    resp: Response,
    *,
    is_error: Callable[[dict[str, Any]], bool],
    fallback_message: Callable[[int], str | None] | None = None,
) -> APICallError:
    """The ``APICallError`` of a non-2xx response (reads its body).

    The provider-neutral skeleton: the message is the body's ``error.message`` when the body is a
    JSON object whose ``error`` passes ``is_error`` (the provider's own shape check; the parsed
    body is then the error's ``data``), else ``fallback_message(status)`` when given and not
    ``None``, else the reason phrase.
    """
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
            if isinstance(err, dict) and is_error(err):
                message = err["message"]
                data = parsed
    if data is None and fallback_message is not None:
        message = fallback_message(status) or message
    return APICallError(
        message,
        status_code=status,
        is_retryable=is_retryable_status(status),
        response_headers=redact_headers(resp.headers),
        response_body=text,
        data=data,
    )


def invalid_response(resp: Response, text: str, cause: BaseException) -> APICallError:
    """The ``APICallError`` of a 2xx answer whose body is unusable (``cause``: why)."""
    err = APICallError(
        "Invalid JSON response",
        status_code=resp.status,
        is_retryable=is_retryable_status(resp.status),
        response_headers=redact_headers(resp.headers),
        response_body=text,
    )
    err.__cause__ = cause
    return err


def stream_error(
    resp: Response, message: str, *, retryable: bool, data: Any = None, status: int | None = None
) -> APICallError:
    """The ``APICallError`` of a stream that went wrong after its 2xx status (``status`` defaults
    to the response's own)."""
    return APICallError(
        message,
        status_code=status if status is not None else resp.status,
        is_retryable=retryable,
        response_headers=redact_headers(resp.headers),
        data=data,
    )


def load_api_key(
    api_key: str | None, env_name: str, *, required: bool, display_name: str
) -> str | None:
    """``apiKey``, else the environment variable ``env_name``; registered as a secret."""
    key = api_key if api_key is not None else os.environ.get(env_name)
    if not key:
        if not required:
            return None
        raise LoadAPIKeyError(
            f"{display_name} API key is missing. Pass it using the 'apiKey' parameter or the "
            f"{env_name} environment variable."
        )
    remember_secret(key)
    return key


def json_parse_error(text: str, exc: BaseException) -> JSONParseError:
    err = JSONParseError(f"JSON parsing failed: {exc}", text=text)
    err.__cause__ = exc
    return err


def type_validation_error(value: Any, reason: str) -> TypeValidationError:
    err = TypeValidationError(f"Type validation failed: {reason}", value=value)
    err.__cause__ = ValueError(reason)
    return err


USER_AGENT = f"aimux-ops/{__version__}"


def json_headers(own: dict[str, str], *extra: dict[str, str] | None) -> dict[str, str]:
    """A JSON request's headers: content type, accept and user agent, then the provider's ``own``
    (version, credential), then each of ``extra`` in order with its names lower-cased."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json",
        "user-agent": USER_AGENT,
        **own,
    }
    for more in extra:
        if more:
            for k, v in more.items():
                headers[k.lower()] = v
    return headers


def endpoint_url(base_url: str, path: str) -> str:
    """``{baseURL}/{path}``, keeping a query string (``?api-version=…``) at the end."""
    if "?" not in base_url:
        return base_url.rstrip("/") + "/" + path
    head, _, query = base_url.partition("?")
    return head.rstrip("/") + "/" + path + "?" + query


#: A provider's parser of one network read: it appends the events the read's SSE events
#: (``names``, ``datas``) complete to ``out`` and answers whether its terminal event was there.
ReadEvents = Callable[[list[str | None] | None, list[bytes], list[dict[str, Any]]], bool]


def read_batches(
    reads: Iterator[SSEBatch], read: ReadEvents
) -> Generator[list[dict[str, Any]], None, bool]:
    """A provider's ``stream_batches``: the events of each network read as one non-empty list.
    The events a read completed before a failure are delivered before it is raised. Returns True
    once the terminal event came (nothing after it is read), False when the reads ran out."""
    for names, datas in reads:
        out: list[dict[str, Any]] = []
        try:
            ended = read(names, datas, out)
        except BaseException:
            if out:  # what the read completed before the failure comes first
                yield out
            raise
        if out:
            yield out
        if ended:
            return True
    return False
