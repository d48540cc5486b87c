"""The Messages API's own tools (web search, web fetch, code execution, tool search, memory,
computer use, …) asked for with a provider tool (``tools.<name>: {"type": "provider", "id":
"anthropic.<tool type>", "args": {…}}``), as the AI SDK's ``anthropic.tools.*`` send them: the
wire ``type`` is the id's tail, the wire ``name`` the tool's fixed one, the args in snake case,
and the beta header a tool needs."""

from __future__ import annotations

import re
from typing import Any

from .base import ToolDef

__all__ = ["provider_tool"]

#: an id's tool type → (the wire type when it differs, the beta it needs)
_KNOWN: dict[str, tuple[str | None, str | None]] = {
    "code_execution_20250522": (None, "code-execution-2025-05-22"),
    "code_execution_20250825": (None, "code-execution-2025-08-25"),
    "code_execution_20260120": (None, None),
    "computer_20241022": (None, "computer-use-2024-10-22"),
    "computer_20250124": (None, "computer-use-2025-01-24"),
    "computer_20251124": (None, "computer-use-2025-11-24"),
    "text_editor_20241022": (None, "computer-use-2024-10-22"),
    "text_editor_20250124": (None, "computer-use-2025-01-24"),
    "text_editor_20250429": (None, "computer-use-2025-01-24"),
    "text_editor_20250728": (None, None),
    "bash_20241022": (None, "computer-use-2024-10-22"),
    "bash_20250124": (None, "computer-use-2025-01-24"),
    "memory_20250818": (None, "context-management-2025-06-27"),
    "web_fetch_20250910": (None, "web-fetch-2025-09-10"),
    "web_fetch_20260209": (None, "code-execution-web-tools-2026-02-09"),
    "web_search_20250305": (None, None),
    "web_search_20260209": (None, "code-execution-web-tools-2026-02-09"),
    "tool_search_regex_20251119": ("tool_search_tool_regex_20251119", None),
    "tool_search_bm25_20251119": ("tool_search_tool_bm25_20251119", None),
    "advisor_20260301": (None, "advisor-tool-2026-03-01"),
}
_DATED = re.compile(r"^(.*)_(\d{8})$")
_UPPER = re.compile(r"(?<!^)([A-Z])")


def _snake(key: str) -> str:
    return _UPPER.sub(r"_\1", key).lower()


def provider_tool(tool: ToolDef) -> tuple[dict[str, Any], str | None] | None:
    """(the wire tool, the beta it needs) of an ``anthropic.`` provider tool; None for another
    provider's. The wire name is the tool type without its date (``web_search``); a type this
    table does not know yet is sent as its id gives it, with no beta."""
    pid = tool.provider_id or ""
    if not pid.startswith("anthropic."):
        return None
    kind = pid.removeprefix("anthropic.")
    wire_type, beta = _KNOWN.get(kind, (None, None))
    wire_type = wire_type or kind
    dated = _DATED.match(wire_type)
    wire: dict[str, Any] = {"type": wire_type, "name": dated.group(1) if dated else wire_type}
    for key, value in (tool.args or {}).items():
        if value is not None:
            wire[_snake(key)] = value
    return wire, beta
