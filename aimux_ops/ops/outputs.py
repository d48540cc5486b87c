"""The results and events of the provider ops (pydantic, camelCase, ``extra="forbid"``), part of
the one source of ``schema/ops/*``: read by the schemas, the manifest and the bindings' codegen,
never by a call, so they load on first use (read them through ``models``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ._model import Model as _Model

__all__ = [
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
]


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


class ToolResultPart(_Model):
    """A host tool's answer the model read: its output, or (``tool-error``) its error."""

    tool_call_id: str
    tool_name: str
    input: Any = None
    output: Any = None


class ToolErrorPart(_Model):
    tool_call_id: str
    tool_name: str
    input: Any = None
    error: dict[str, Any] = Field(
        description="{message, data?} from the host, or the envelope of a call the model got "
        "wrong (NoSuchToolError, InvalidToolInputError)."
    )


class StepResult(_Model):
    """One step of the tool loop: one model call and the tools it called."""

    text: str
    tool_calls: list[ToolCall]
    tool_results: list[ToolResultPart]
    tool_errors: list[ToolErrorPart]
    finish_reason: FinishReason
    usage: Usage
    response: ResponseInfo | None = None


class GenerateTextResult(_Model):
    text: str
    finish_reason: FinishReason
    usage: Usage = Field(description="Every step's usage summed.")
    tool_calls: list[ToolCall]
    response: ResponseInfo
    tool_results: list[ToolResultPart] | None = Field(
        default=None,
        description="With host tools (the bindings' loop over stream_text): the last step's.",
    )
    steps: list[StepResult] | None = Field(
        default=None, description="With host tools: every step, in order."
    )


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


class StartStepEvent(_Model):
    """The tool loop: a step (model call) begins."""

    type: Literal["start-step"]


class FinishStepEvent(_Model):
    """The tool loop: a step ended (its own finish reason and usage)."""

    type: Literal["finish-step"]
    finish_reason: FinishReason
    usage: Usage
    response: ResponseInfo | None = None


class ToolResultEvent(ToolResultPart):
    type: Literal["tool-result"]


class ToolErrorEvent(ToolErrorPart):
    type: Literal["tool-error"]


StreamEvent = Annotated[
    TextDeltaEvent
    | ToolCallEvent
    | ToolResultEvent
    | ToolErrorEvent
    | StartStepEvent
    | FinishStepEvent
    | FinishEvent
    | ErrorEvent,
    Field(discriminator="type"),
]
