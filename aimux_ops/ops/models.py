"""The params, results and events of the provider ops (pydantic, camelCase, ``extra="forbid"``):
the one source of ``schema/ops/*`` and of the bindings' typed params.

The params are here; the results and events (``outputs``, which only the schemas, the manifest
and the bindings' codegen read) are defined in ``outputs`` and loaded on their first use, read
through this module like the params (cold start: a call never creates their classes).
"""

# No ``from __future__ import annotations`` here: pydantic would evaluate every field's annotation
# string when the class is created; written as objects they cost nothing more (cold start).

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema, model_validator

from ..providers import available_providers
from ._model import Model as _Model
from .limits import MAX_RETRIES, MAX_TIMER_MS, json_depth_checked

__all__ = [
    "CallParams",
    "ErrorEvent",
    "FinishEvent",
    "FinishReason",
    "GenerateObjectParams",
    "GenerateObjectResult",
    "GenerateTextParams",
    "GenerateTextResult",
    "Message",
    "ModelSpec",
    "RecordingSpec",
    "ResponseInfo",
    "RetrySpec",
    "StreamEvent",
    "StopCondition",
    "StreamTextParams",
    "TextDeltaEvent",
    "ToolCall",
    "ToolCallEvent",
    "ContentPart",
    "FileContent",
    "ReasoningContent",
    "TextContent",
    "ToolCallContent",
    "ToolCallPart",
    "ToolOutput",
    "ToolResultContent",
    "ToolChoiceTool",
    "ToolSpec",
    "Usage",
]

#: the JSON Schema of ``model.provider``: the known ids (the runtime accepts any string and
#: answers an unknown one with NoSuchProviderError, code 10)
_PROVIDER_SCHEMA = {
    "type": "string",
    "enum": available_providers(),
    "description": 'The provider id: "openai" (Chat Completions wire format) or "anthropic" '
    "(Messages API); any other id is NoSuchProviderError.",
}


#: a free-form JSON value of the caller's (schemas, content parts, tool inputs): its nesting is
#: capped (``limits.MAX_JSON_DEPTH``), checked before pydantic walks it
_Bounded = BeforeValidator(json_depth_checked)


# -- params ----------------------------------------------------------------------------------------


class ModelSpec(_Model):
    """Which model, where, and with which key."""

    provider: Annotated[str, WithJsonSchema(_PROVIDER_SCHEMA)] = Field(
        description='The provider id: "openai" (Chat Completions wire format) or "anthropic" '
        "(Messages API); any other id is NoSuchProviderError."
    )
    model_id: str = Field(min_length=1)
    base_url: str | None = Field(
        default=None,
        alias="baseURL",
        description="Default https://api.openai.com/v1 (openai), https://api.anthropic.com/v1 "
        "(anthropic).",
    )
    api_key: str | None = Field(default=None, description="Never recorded, never in an error.")
    api_key_env: str | None = Field(
        default=None,
        description="Environment variable holding the key (default OPENAI_API_KEY / "
        "ANTHROPIC_API_KEY).",
    )
    headers: dict[str, str] | None = None


ProviderOptions = dict[str, dict[str, Any]]
_PROVIDER_OPTIONS = Field(
    default=None,
    description='Options for one provider, by provider id (e.g. {"anthropic": {"signature": '
    '"…"}}); the other providers ignore them.',
)


class ToolCallPart(_Model):
    """A tool call made by the assistant in an earlier turn (``toolCalls``, the short form)."""

    tool_call_id: str
    tool_name: str
    input: Annotated[Any, _Bounded] = None


class TextContent(_Model):
    type: Literal["text"]
    text: str
    provider_options: ProviderOptions | None = _PROVIDER_OPTIONS


class FileContent(_Model):
    """A file (image, PDF, audio, …): ``data`` is its base64 text, a ``data:`` URL, or an
    http(s) URL (sent as a URL where the provider takes one, else an
    UnsupportedFunctionalityError: the core never downloads)."""

    type: Literal["file"]
    media_type: str = Field(min_length=1, description="e.g. image/png, application/pdf.")
    data: str = Field(min_length=1)
    filename: str | None = None
    provider_options: ProviderOptions | None = _PROVIDER_OPTIONS


class ReasoningContent(_Model):
    """The model's reasoning of an earlier turn (assistant), replayed where the provider takes
    it (Anthropic: with its providerOptions.anthropic.signature)."""

    type: Literal["reasoning"]
    text: str
    provider_options: ProviderOptions | None = _PROVIDER_OPTIONS


class ToolCallContent(_Model):
    type: Literal["tool-call"]
    tool_call_id: str
    tool_name: str
    input: Annotated[Any, _Bounded] = None
    provider_options: ProviderOptions | None = _PROVIDER_OPTIONS


class ToolOutput(_Model):
    """What the model reads of a tool's result (the AI SDK's tool output types)."""

    type: Literal["text", "json", "error-text", "error-json"]
    value: Any = None


class ToolResultContent(_Model):
    type: Literal["tool-result"]
    tool_call_id: str
    tool_name: str
    output: ToolOutput
    provider_options: ProviderOptions | None = _PROVIDER_OPTIONS


ContentPart = Annotated[
    TextContent | FileContent | ReasoningContent | ToolCallContent | ToolResultContent,
    Field(discriminator="type"),
]


class Message(_Model):
    """One turn. ``content`` is text or provider-neutral parts: ``user`` text and file parts,
    ``assistant`` text, file, reasoning and tool-call parts, ``tool`` tool-result parts,
    ``system`` text. ``toolCalls`` / ``toolCallId`` with text content are the short form of an
    assistant's tool calls and of a tool's text result."""

    role: Literal["system", "user", "assistant", "tool"]
    content: Annotated[str | list[ContentPart] | None, _Bounded] = None
    #: role "assistant": the tool calls it made; role "tool": which call this answers.
    tool_calls: list[ToolCallPart] | None = None
    tool_call_id: str | None = None
    provider_options: ProviderOptions | None = _PROVIDER_OPTIONS


class ToolSpec(_Model):
    """A tool: a function the model calls (``inputSchema``; the host runs it with ``execute``),
    or (``type: "provider"``) a tool the provider runs itself, named by its ``id`` (e.g.
    ``anthropic.web_search_20250305``) with its ``args``; its calls and results come back marked
    ``providerExecuted``."""

    type: Literal["function", "provider"] = "function"
    id: str | None = Field(
        default=None,
        min_length=1,
        description='type "provider": the provider tool\'s id, "<provider>.<tool type>" (e.g. '
        '"anthropic.web_search_20250305").',
    )
    args: Annotated[dict[str, Any] | None, _Bounded] = Field(
        default=None, description='type "provider": the tool\'s settings (e.g. {"maxUses": 3}).'
    )
    description: str | None = None
    input_schema: Annotated[dict[str, Any], _Bounded] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema of the tool's input.",
    )
    execute: bool = Field(
        default=False,
        description="true: the host runs this tool. Its calls arrive as tool-call events and "
        "are answered with aimux_stream_tool_result (stream ops only).",
    )

    @model_validator(mode="after")
    def _provider_tool_has_an_id(self) -> "ToolSpec":
        if self.type == "provider":
            if self.id is None:
                raise ValueError('a tool of type "provider" needs its "id"')
            if self.execute:
                raise ValueError('a tool of type "provider" runs at the provider: no "execute"')
        elif self.id is not None or self.args is not None:
            raise ValueError('"id" and "args" belong to a tool of type "provider"')
        return self


class StopCondition(_Model):
    """When the multi-step loop stops (any condition that holds stops it)."""

    step_count: int | None = Field(
        default=None, ge=1, description="Stop after this many steps (model calls)."
    )
    has_tool_call: list[str] | None = Field(
        default=None, description="Stop after a step that called one of these tools."
    )


class ToolChoiceTool(_Model):
    type: Literal["tool"]
    tool_name: str


class RetrySpec(_Model):
    initial_delay_ms: float = Field(default=2000, ge=0, le=MAX_TIMER_MS)
    backoff_factor: float = Field(default=2, ge=0, le=1000)


class RecordingSpec(_Model):
    mode: Literal["record", "replay"]
    path: str = Field(min_length=1)


class CallParams(_Model):
    model: ModelSpec
    system: str | None = None
    prompt: str | None = None
    messages: list[Message] | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = Field(default=None, ge=1)
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop_sequences: list[str] | None = None
    seed: int | None = None
    headers: dict[str, str] | None = None
    max_retries: int = Field(
        default=2,
        ge=0,
        le=MAX_RETRIES,
        description=f"Retries after the first attempt (the AI SDK's maxRetries), at most "
        f"{MAX_RETRIES} (more is invalid params); a failed call reports the first and the latest "
        "15 attempts.",
    )
    retry: RetrySpec | None = None
    timeout_ms: int | None = Field(default=None, ge=1, le=MAX_TIMER_MS)
    recording: RecordingSpec | None = None
    tools: dict[str, ToolSpec] | None = None
    tool_choice: Literal["auto", "none", "required"] | ToolChoiceTool | None = None
    stop_when: StopCondition | list[StopCondition] | None = Field(
        default=None,
        description="When the tool loop stops (default: one step, as the AI SDK).",
    )
    tool_failures: Literal["to-caller", "to-model"] = Field(
        default="to-caller",
        description='A host tool that failed (raised): "to-caller" ends the call with '
        'AI_ToolExecutionError caused by the host\'s error; "to-model" sends its message to '
        "the model as a tool error (the AI SDK's behaviour).",
    )


class GenerateTextParams(CallParams):
    pass


class StreamTextParams(GenerateTextParams):
    pass


class GenerateObjectParams(CallParams):
    schema_: Annotated[dict[str, Any], _Bounded] = Field(
        alias="schema", description="JSON Schema of the object."
    )
    schema_name: str | None = None
    schema_description: str | None = None


if TYPE_CHECKING:
    from .outputs import (
        ErrorEvent,
        FinishEvent,
        FinishReason,
        GenerateObjectResult,
        GenerateTextResult,
        ResponseInfo,
        StreamEvent,
        TextDeltaEvent,
        ToolCall,
        ToolCallEvent,
        Usage,
    )

_OUTPUTS = frozenset(
    (
        "ErrorEvent",
        "ToolResultPart",
        "ToolResultEvent",
        "ToolErrorPart",
        "ToolErrorEvent",
        "StepResult",
        "StartStepEvent",
        "FinishStepEvent",
        "FinishEvent",
        "FinishReason",
        "GenerateObjectResult",
        "GenerateTextResult",
        "ResponseInfo",
        "StreamEvent",
        "TextDeltaEvent",
        "ToolCall",
        "ToolCallEvent",
        "Usage",
        "CallWarning",
        "ReasoningOutput",
        "ReasoningDeltaEvent",
        "OutputTokenDetails",
        "InputTokenDetails",
        "ContentOutput",
        "Source",
        "SourceEvent",
        "TextOutput",
        "ToolCallOutput",
        "ToolResultOutput",
        "ToolErrorOutput",
    )
)


def __getattr__(name: str) -> Any:
    """The results and events, from ``outputs`` (imported on the first read of one)."""
    if name in _OUTPUTS:
        from . import outputs

        return getattr(outputs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
