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
    "GenerateObjectResult",
    "GenerateTextResult",
    "ResponseInfo",
    "StreamEvent",
    "TextDeltaEvent",
    "ToolCall",
    "ToolCallEvent",
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
