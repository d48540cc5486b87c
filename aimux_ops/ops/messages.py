"""Each of the params' ``messages`` as a provider-neutral message (``prompt.neutral_messages``):
its parts checked against its role (an ``InvalidPromptError`` naming the message and part), a
``file`` part's ``data`` told apart as base64, a ``data:`` URL or an http(s) URL."""

from __future__ import annotations

import re
from typing import Any

from ..errors import InvalidPromptError
from ..providers.base import (
    FilePart,
    NeutralMessage,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from .models import (
    FileContent,
    Message,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    ToolResultContent,
)

__all__ = ["neutral_message"]

#: the part types each role may hold (the AI SDK's message schemas)
_ALLOWED: dict[str, tuple[type, ...]] = {
    "system": (TextContent,),
    "user": (TextContent, FileContent),
    "assistant": (TextContent, FileContent, ReasoningContent, ToolCallContent),
    "tool": (ToolResultContent,),
}
_KIND = {
    TextContent: "text",
    FileContent: "file",
    ReasoningContent: "reasoning",
    ToolCallContent: "tool-call",
    ToolResultContent: "tool-result",
}
#: an absolute URL's scheme (RFC 3986), as ``new URL(s)`` accepts one
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def neutral_message(index: int, m: Message) -> NeutralMessage:
    where = f"messages[{index}]"
    parts: list[Part] = []
    content = m.content
    if m.role == "tool" and not isinstance(content, list):
        if m.tool_call_id is None:
            raise InvalidPromptError(
                f"{where}: a tool message needs tool-result parts (or toolCallId with text)"
            )
        parts.append(ToolResultPart(m.tool_call_id, "", "text", content or ""))
    elif isinstance(content, str):
        if content:
            parts.append(TextPart(content))
    elif content is not None:
        allowed = _ALLOWED[m.role]
        for j, part in enumerate(content):
            if not isinstance(part, allowed):
                raise InvalidPromptError(
                    f"{where}.content[{j}]: a {_KIND[type(part)]} part cannot be in a "
                    f"{m.role} message"
                )
            parts.append(_part(part, f"{where}.content[{j}]"))
    if m.tool_calls:
        if m.role != "assistant":
            raise InvalidPromptError(
                f"{where}.toolCalls: only an assistant message makes tool calls"
            )
        parts.extend(ToolCallPart(c.tool_call_id, c.tool_name, c.input) for c in m.tool_calls)
    if m.role == "system" and isinstance(content, list):
        raise InvalidPromptError(f"{where}: a system message's content is text")
    return NeutralMessage(m.role, tuple(parts), m.provider_options)


def _part(part: Any, where: str) -> Part:
    if isinstance(part, TextContent):
        return TextPart(part.text, part.provider_options)
    if isinstance(part, FileContent):
        return _file(part, where)
    if isinstance(part, ReasoningContent):
        return ReasoningPart(part.text, part.provider_options)
    if isinstance(part, ToolCallContent):
        return ToolCallPart(part.tool_call_id, part.tool_name, part.input, part.provider_options)
    assert isinstance(part, ToolResultContent)
    return ToolResultPart(
        part.tool_call_id,
        part.tool_name,
        part.output.type,
        part.output.value,
        part.provider_options,
    )


def _file(part: FileContent, where: str) -> FilePart:
    data = part.data
    if data.startswith("data:"):
        header, comma, body = data.partition(",")
        media = header[len("data:") :].split(";")[0]
        if not comma or not media or ";base64" not in header:
            raise InvalidPromptError(f"{where}.data: a data URL must be data:<type>;base64,<data>")
        return FilePart(media, body, None, part.filename, part.provider_options)
    if _SCHEME.match(data):
        return FilePart(part.media_type, None, data, part.filename, part.provider_options)
    return FilePart(part.media_type, data, None, part.filename, part.provider_options)
