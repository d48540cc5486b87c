"""The results and events of the provider ops (pydantic, camelCase, ``extra="forbid"``), part of
the one source of ``schema/ops/*``: read by the schemas, the manifest and the bindings' codegen,
never by a call, so they load on first use (read them through ``models``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from ._model import Model as _Model

__all__ = [
    "ContentOutput",
    "ReasoningOutput",
    "Source",
    "SourceEvent",
    "TextOutput",
    "ToolCallOutput",
    "ToolErrorOutput",
    "ToolResultOutput",
    "ReasoningDeltaEvent",
    "OutputTokenDetails",
    "InputTokenDetails",
    "ErrorEvent",
    "FinishEvent",
    "FinishReason",
    "FinishStepEvent",
    "GenerateObjectResult",
    "GenerateTextResult",
    "ResponseInfo",
    "StartStepEvent",
    "StepResult",
    "StreamEvent",
    "TextDeltaEvent",
    "ToolCall",
    "ToolCallEvent",
    "ToolErrorEvent",
    "ToolErrorPart",
    "ToolResultEvent",
    "ToolResultPart",
    "Usage",
    "CallWarning",
]


# -- results and events ----------------------------------------------------------------------------


class InputTokenDetails(_Model):
    no_cache_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None


class OutputTokenDetails(_Model):
    text_tokens: int | None = None
    reasoning_tokens: int | None = None


class Usage(_Model):
    """Token counts; the details only when the provider reported them (never fabricated)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    input_token_details: InputTokenDetails | None = None
    output_token_details: OutputTokenDetails | None = None


class ReasoningOutput(_Model):
    """A piece of the model's reasoning (``providerMetadata.anthropic.signature`` replays it)."""

    type: Literal["reasoning"]
    text: str
    provider_metadata: dict[str, dict[str, Any]] | None = None


#: ``providerMetadata``: per provider id, what that provider reported beyond the neutral fields
_PROVIDER_METADATA = Field(
    default=None,
    description="What the provider reported beyond the neutral fields, by provider id (e.g. "
    '{"anthropic": {"usage": {...}, "stopSequence": null}}).',
)
_PROVIDER_EXECUTED = Field(
    default=None,
    description="true: the provider ran this tool itself (web search, code execution, MCP, "
    "...); the host never answers it.",
)


class TextOutput(_Model):
    """A text part of the answer (``providerMetadata.anthropic.type`` is ``compaction`` for a
    compaction block's summary)."""

    type: Literal["text"]
    text: str
    provider_metadata: dict[str, dict[str, Any]] | None = _PROVIDER_METADATA


class Source(_Model):
    """A source the model cited or a provider-run tool found (the AI SDK's source part):
    ``sourceType`` ``url`` (``url``, ``title``) or ``document`` (``mediaType``, ``title``,
    ``filename``); the list of source types may grow."""

    model_config = ConfigDict(extra="allow")
    type: Literal["source"]
    source_type: str
    id: str
    url: str | None = None
    title: str | None = None
    media_type: str | None = None
    filename: str | None = None
    provider_metadata: dict[str, dict[str, Any]] | None = _PROVIDER_METADATA


class SourceEvent(Source):
    """A source, as the stream reports it when it arrives."""


class ResponseInfo(_Model):
    id: str | None = None
    model_id: str | None = None
    headers: dict[str, str] | None = Field(
        default=None,
        description="The provider response's headers: lower-cased names, secret values redacted.",
    )


class ToolCall(_Model):
    tool_call_id: str
    tool_name: str
    input: Any = None
    invalid: bool | None = Field(
        default=None, description="The call is not usable: unknown tool or invalid input."
    )
    error: dict[str, Any] | None = Field(default=None, description="Its error envelope.")
    provider_executed: bool | None = _PROVIDER_EXECUTED
    provider_metadata: dict[str, dict[str, Any]] | None = _PROVIDER_METADATA


FinishReason = Literal[
    "stop", "length", "content-filter", "tool-calls", "error", "other", "unknown"
]


class ToolResultPart(_Model):
    """A tool's result: a host tool's answer the model read, or (``providerExecuted``) the
    result of a tool the provider ran, as the provider gave it."""

    tool_call_id: str
    tool_name: str
    input: Any = None
    output: Any = None
    provider_executed: bool | None = _PROVIDER_EXECUTED
    provider_metadata: dict[str, dict[str, Any]] | None = Field(
        default=None,
        description="A provider-run tool's: the wire block it came in "
        '({"anthropic": {"type": "web_search_tool_result"}}).',
    )


class ToolErrorPart(_Model):
    tool_call_id: str
    tool_name: str
    input: Any = None
    error: dict[str, Any] = Field(
        description="{message, data?} from the host, or the envelope of a call the model got "
        "wrong (NoSuchToolError, InvalidToolInputError); a provider-run tool's failure as "
        "the provider gave it."
    )
    provider_executed: bool | None = _PROVIDER_EXECUTED
    provider_metadata: dict[str, dict[str, Any]] | None = None


class ToolCallOutput(ToolCall):
    type: Literal["tool-call"]


class ToolResultOutput(ToolResultPart):
    type: Literal["tool-result"]


class ToolErrorOutput(ToolErrorPart):
    type: Literal["tool-error"]


ContentOutput = Annotated[
    TextOutput | ReasoningOutput | Source | ToolCallOutput | ToolResultOutput | ToolErrorOutput,
    Field(discriminator="type"),
]


class StepResult(_Model):
    """One step of the tool loop: one model call and the tools it called."""

    text: str
    tool_calls: list[ToolCall]
    tool_results: list[ToolResultPart]
    tool_errors: list[ToolErrorPart]
    finish_reason: FinishReason
    usage: Usage
    response: ResponseInfo | None = None


class CallWarning(_Model):
    """An observation (seed 003): a setting or content a provider adapted or dropped; never also
    an error. The AI SDK's warning types: ``unsupported`` and ``compatibility`` name a
    ``feature``, ``other`` has a ``message``; the type list may grow."""

    model_config = ConfigDict(extra="allow")
    type: str
    feature: str | None = None
    details: str | None = None
    message: str | None = None


_WARNINGS = Field(default=None, description="Observations: what the provider adapted or dropped.")


class GenerateTextResult(_Model):
    text: str
    content: list[ContentOutput] | None = Field(
        default=None,
        description="The answer's parts in order: text, reasoning, sources, tool calls and the "
        "results of tools the provider ran.",
    )
    sources: list[Source] | None = Field(
        default=None, description="The sources the model cited or a provider-run tool found."
    )
    provider_metadata: dict[str, dict[str, Any]] | None = _PROVIDER_METADATA
    reasoning_text: str | None = Field(default=None, description="The model's reasoning, joined.")
    reasoning: list[ReasoningOutput] | None = None
    finish_reason: FinishReason
    usage: Usage = Field(description="Every step's usage summed.")
    tool_calls: list[ToolCall]
    response: ResponseInfo
    tool_results: list[ToolResultPart] | None = Field(
        default=None,
        description="With host tools (the bindings' loop over stream_text): the last step's; "
        "else the results of the tools the provider ran.",
    )
    steps: list[StepResult] | None = Field(
        default=None, description="With host tools: every step, in order."
    )
    warnings: list[CallWarning] | None = _WARNINGS


class GenerateObjectResult(_Model):
    object: Any
    finish_reason: FinishReason
    usage: Usage
    warnings: list[CallWarning] | None = _WARNINGS
    tool_calls: list[ToolCall] = Field(
        default_factory=list, description="Tool calls the model made beside the object (tools?)."
    )
    response: ResponseInfo


class TextDeltaEvent(_Model):
    type: Literal["text-delta"]
    text: str
    provider_metadata: dict[str, dict[str, Any]] | None = Field(
        default=None,
        description='Anthropic: {"anthropic": {"type": "compaction"}} for a compaction '
        "block's summary.",
    )


class ReasoningDeltaEvent(_Model):
    type: Literal["reasoning-delta"]
    text: str
    provider_metadata: dict[str, dict[str, Any]] | None = Field(
        default=None, description="Anthropic: the block's signature (with an empty text)."
    )


class ToolCallEvent(ToolCall):
    type: Literal["tool-call"]


class FinishEvent(_Model):
    type: Literal["finish"]
    finish_reason: FinishReason
    usage: Usage
    response: ResponseInfo | None = None
    warnings: list[CallWarning] | None = _WARNINGS
    provider_metadata: dict[str, dict[str, Any]] | None = _PROVIDER_METADATA


class ErrorEvent(_Model):
    type: Literal["error"]
    error: dict[str, Any] = Field(description="The error envelope.")


class StartStepEvent(_Model):
    """The tool loop: a step (model call) begins."""

    type: Literal["start-step"]


class FinishStepEvent(_Model):
    """The tool loop: a step ended (its own finish reason and usage)."""

    type: Literal["finish-step"]
    finish_reason: FinishReason
    usage: Usage
    response: ResponseInfo | None = None
    warnings: list[CallWarning] | None = _WARNINGS
    provider_metadata: dict[str, dict[str, Any]] | None = _PROVIDER_METADATA


class ToolResultEvent(ToolResultPart):
    type: Literal["tool-result"]


class ToolErrorEvent(ToolErrorPart):
    type: Literal["tool-error"]


StreamEvent = Annotated[
    TextDeltaEvent
    | ReasoningDeltaEvent
    | SourceEvent
    | ToolCallEvent
    | ToolResultEvent
    | ToolErrorEvent
    | StartStepEvent
    | FinishStepEvent
    | FinishEvent
    | ErrorEvent,
    Field(discriminator="type"),
]
