"""The provider ops ``generate_text``, ``stream_text`` and ``generate_object``: their registration
and what each makes of the provider's neutral result.

Params, results and events are in ``models``; the call itself (provider, transport, recording,
retry) in ``call``; tool and object validation in ``tools``. ``generate_object`` output that is
not JSON or fails its schema raises ``NoObjectGeneratedError`` caused by ``JSONParseError`` /
``TypeValidationError``.

Cold start: the params models are declared by name (``Deferred``): a call whose params the
pre-check accepts (``precheck``) never creates them, and this module loads no pydantic.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import AimuxError, NoObjectGeneratedError, UnsupportedFunctionalityError
from ..providers.base import GenerateResult, LanguageModelCall, ObjectFormat
from .call import neutral_call, run_call, run_stream
from .registry import Deferred, StreamContext, register_op
from .tools import check_schema, parse_json, tool_call, validate_value

if TYPE_CHECKING:
    from .models import (
        CallParams,
        GenerateObjectParams,
        GenerateTextParams,
        Message,
        ModelSpec,
        RecordingSpec,
        RetrySpec,
        StreamTextParams,
        ToolSpec,
    )
    from .outputs import (
        FinishEvent,
        GenerateObjectResult,
        GenerateTextResult,
        StreamEvent,
        TextDeltaEvent,
        ToolCall,
        ToolCallEvent,
        Usage,
    )

#: the results and events: read by the schemas and the manifest only (loaded on first use)
_OUTPUTS = "aimux_ops.ops.outputs"
#: the params: created when a call's params need them (``dispatch._validate``), or read
_MODELS = "aimux_ops.ops.models"
_PARAMS = frozenset(
    (
        "GenerateObjectParams",
        "GenerateTextParams",
        "Message",
        "ModelSpec",
        "RecordingSpec",
        "RetrySpec",
        "StreamTextParams",
        "ToolSpec",
    )
)

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


@register_op(
    "generate_text",
    mode="call",
    params=Deferred(_MODELS, "GenerateTextParams"),
    result=Deferred(_OUTPUTS, "GenerateTextResult"),
    description="Generate text (and tool calls) with a language model.",
)
def generate_text(params: GenerateTextParams) -> dict[str, Any]:
    _no_host_tools(params, "generate_text")

    def build(r: GenerateResult) -> dict[str, Any]:
        content = answer_content(r, params.tools)
        out: dict[str, Any] = {
            "text": r.text,
            "content": content,
            "finishReason": r.finish_reason,
            "usage": r.usage,
            "toolCalls": [_without_type(p) for p in content if p["type"] == "tool-call"],
            "response": r.response,
        }
        if r.reasoning:  # present when the model reasoned (the AI SDK: reasoningText)
            out["reasoningText"] = "".join(p["text"] for p in r.reasoning)
            out["reasoning"] = [{"type": "reasoning", **p} for p in r.reasoning]
        sources = [p for p in content if p["type"] == "source"]
        if sources:
            out["sources"] = sources
        ran = [_without_type(p) for p in content if p["type"] == "tool-result"]
        if ran:  # the results of the tools the provider ran
            out["toolResults"] = ran
        if r.provider_metadata:
            out["providerMetadata"] = r.provider_metadata
        return out

    return run_call("generate_text", params, lambda: neutral_call(params, stream=False), build)


@register_op(
    "generate_object",
    mode="call",
    params=Deferred(_MODELS, "GenerateObjectParams"),
    result=Deferred(_OUTPUTS, "GenerateObjectResult"),
    description="Generate a JSON object matching a JSON Schema.",
)
def generate_object(params: GenerateObjectParams) -> dict[str, Any]:
    _no_host_tools(params, "generate_object")

    def call_of() -> LanguageModelCall:
        check_schema(params.schema_, "schema")
        fmt = ObjectFormat(params.schema_, params.schema_name, params.schema_description)
        return neutral_call(params, stream=False, object_format=fmt)

    def build(r: GenerateResult) -> dict[str, Any]:
        value, perr = parse_json(r.text)
        cause: AimuxError | None = perr
        if perr is None:
            cause = validate_value(value, params.schema_)
        if cause is not None:
            what = (
                "could not parse the response"
                if perr is not None
                else "response did not match schema"
            )
            err = NoObjectGeneratedError(
                f"No object generated: {what}.",
                text=r.text,
                finish_reason=r.finish_reason,
                usage=r.usage,
            )
            raise err from cause
        return {
            "object": value,
            "finishReason": r.finish_reason,
            "usage": r.usage,
            "toolCalls": [tool_call(i, n, a, params.tools) for i, n, a in r.tool_calls],
            "response": r.response,
        }

    return run_call("generate_object", params, call_of, build)


@register_op(
    "stream_text",
    mode="stream",
    params=Deferred(_MODELS, "StreamTextParams"),
    result=None,
    event=Deferred(_OUTPUTS, "StreamEvent"),
    description="Stream text deltas, tool calls and a finish event from a language model.",
)
def stream_text(params: StreamTextParams, ctx: StreamContext) -> Iterator[Any]:
    from .loop import has_host_tools, run_loop  # (the tool loop: streams only)

    if has_host_tools(params):
        return run_loop("stream_text", params, ctx)
    return run_stream("stream_text", params, lambda: neutral_call(params, stream=True), ctx)


def answer_content(r: GenerateResult, tools: dict[str, ToolSpec] | None) -> list[dict[str, Any]]:
    """The answer's parts in order (``content``), its host tool calls validated; made of the
    text, reasoning, sources and tool calls for a provider that reports no order."""
    if r.content is None:
        parts: list[dict[str, Any]] = [{"type": "reasoning", **p} for p in r.reasoning]
        if r.text:
            parts.append({"type": "text", "text": r.text})
        parts.extend(r.sources)
        parts.extend({"type": "tool-call", **tool_call(i, n, a, tools)} for i, n, a in r.tool_calls)
        return parts
    return [
        {"type": "tool-call", **tool_call(p["toolCallId"], p["toolName"], p["input"], tools)}
        if p["type"] == "tool-call" and not p.get("providerExecuted")
        else p
        for p in r.content
    ]


def _without_type(part: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in part.items() if k != "type"}


def _no_host_tools(params: CallParams, op: str) -> None:
    """A call op cannot ask its host (no callback crosses the C ABI): host tools need a stream."""
    for name, spec in (params.tools or {}).items():
        if spec.execute:
            raise UnsupportedFunctionalityError(
                f"tools.{name}.execute: {op} through a call cannot run host tools (the core asks, "
                "the host answers): open stream_text as a stream and answer its tool-call "
                "events with aimux_stream_tool_result (the bindings do this for you).",
                functionality="host tools in a call op",
            )


def __getattr__(name: str) -> Any:
    """The params, results and events this module re-exports, loaded on the first read of one."""
    if name in _PARAMS:
        from . import models

        return getattr(models, name)
    if name in __all__:
        from . import outputs

        return getattr(outputs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
