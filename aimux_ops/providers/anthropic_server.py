"""What the Messages API's provider-run blocks and citations become (shared by its non-stream
and stream readers), following ``@ai-sdk/anthropic``'s mapping:

- ``server_tool_use`` (web search, web fetch, code execution, tool search, advisor …) and
  ``mcp_tool_use`` → a ``tool-call`` part with ``providerExecuted: true`` (the code execution
  tool's ``bash_code_execution`` / ``text_editor_code_execution`` calls are ``code_execution``
  with their kind as the input's ``type``; a ``{code}`` input of ``code_execution`` is a
  ``programmatic-tool-call``, as the AI SDK names them);
- ``*_tool_result`` and ``mcp_tool_result`` → a ``tool-result`` part (``providerExecuted``), or a
  ``tool-error`` part when the provider reports the tool failed (``is_error``, an ``…_error``
  content type). The output is the provider's own content, unchanged: lossless, and what a next
  turn replays (the AI SDK reshapes the tools it knows and drops the rest; DESIGN.md);
- a web search's results and the citations → ``source`` parts (``url`` for web results, and
  for ``web_search_result_location`` citations when no search found results — a search's
  results are the sources, as the AI SDK reports them; ``document`` for ``page_location`` /
  ``char_location`` citations of a prompt document or a fetched page).

Source ids are ``src-<n>`` in the order of the answer (the AI SDK draws random ids).
"""

from __future__ import annotations

from typing import Any

import orjson

from .anthropic_tools import provider_tool
from .base import FilePart, LanguageModelCall

__all__ = [
    "SERVER_CALLS",
    "SERVER_RESULTS",
    "ServerBlocks",
    "server_blocks",
]

#: the content block types of a call the provider runs itself
SERVER_CALLS = frozenset(("server_tool_use", "mcp_tool_use"))
#: the content block types of a provider-run tool's result
SERVER_RESULTS = frozenset(
    (
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "advisor_tool_result",
        "mcp_tool_result",
    )
)
_CODE_EXECUTION_KINDS = ("bash_code_execution", "text_editor_code_execution")


def server_blocks(call: LanguageModelCall | None) -> ServerBlocks:
    """The reader of one answer to ``call``: its prompt's documents and its provider tools'
    names (a call comes back under the name the caller gave the tool)."""
    if call is None:
        return ServerBlocks([], {})
    names: dict[str, str] = {}
    for tool in call.tools:
        sent = provider_tool(tool) if tool.provider_id is not None else None
        if sent is not None:
            names[sent[0]["name"]] = tool.name
    return ServerBlocks(citation_documents(call), names)


def citation_documents(call: LanguageModelCall) -> list[dict[str, Any]]:
    """The prompt's documents a citation's ``document_index`` points into: the user file parts
    with ``providerOptions.anthropic.citations.enabled`` (the AI SDK's list)."""
    docs: list[dict[str, Any]] = []
    for m in call.messages:
        if m.role != "user":
            continue
        for p in m.parts:
            if not isinstance(p, FilePart):
                continue
            anthropic = (p.provider_options or {}).get("anthropic") or {}
            if p.media_type in ("application/pdf", "text/plain") and (
                anthropic.get("citations") or {}
            ).get("enabled"):
                docs.append(
                    {
                        "title": p.filename or "Untitled Document",
                        "filename": p.filename,
                        "mediaType": p.media_type,
                    }
                )
    return docs


def _is_error(block: dict[str, Any]) -> bool:
    content = block.get("content")
    if block.get("is_error") is True:
        return True
    if block["type"] == "web_search_tool_result":
        return not isinstance(content, list)
    return isinstance(content, dict) and str(content.get("type", "")).endswith("_error")


class ServerBlocks:
    """One answer's provider-run calls, their results and its sources, numbered in order."""

    __slots__ = ("_documents", "_held", "_names", "_sources", "_tools", "web_results")

    def __init__(self, documents: list[dict[str, Any]], tools: dict[str, str]) -> None:
        self._documents = list(documents)
        self._tools = tools  # the wire name of a provider tool → the caller's name for it
        self._names: dict[str, str] = {}  # toolCallId → the tool name its result reports
        self._sources = 0
        #: a web search found results: they are the sources, its citations add none
        self.web_results = False
        #: a stream's web citations, held until its end shows whether a search found anything
        self._held: list[dict[str, Any]] | None = None

    def scan(self, blocks: list[Any]) -> None:
        """A whole message: whether a web search in it found results (before its citations)."""
        self.web_results = any(
            isinstance(b, dict)
            and b.get("type") == "web_search_tool_result"
            and isinstance(b.get("content"), list)
            and b["content"]
            for b in blocks
        )

    def hold_web_citations(self) -> None:
        """A stream: its web citations wait for its end (``held_sources``)."""
        self._held = []

    def held_sources(self) -> list[dict[str, Any]]:
        """At a stream's end: its web citations as sources, when no search found results (the
        AI SDK's: a search's results are the sources, its citations would repeat them)."""
        held, self._held = self._held or [], []
        if self.web_results:
            return []
        return [s for s in (self._citation(c) for c in held) if s is not None]

    def start_call(self, block: dict[str, Any]) -> tuple[str, str, str]:
        """(toolCallId, toolName, the input's ``type`` to add or "") of a provider-run call's
        block (its input may still stream)."""
        call_id, name = str(block.get("id") or ""), str(block.get("name") or "")
        kind = ""
        if block["type"] == "server_tool_use":
            if name in _CODE_EXECUTION_KINDS:
                kind, name = name, "code_execution"
            elif name == "code_execution":
                kind = "programmatic-tool-call"
            name = self._tools.get(name, name)
        self._names[call_id] = name
        return call_id, name, kind

    def call_part(
        self, block: dict[str, Any], call_id: str, name: str, kind: str, raw: str
    ) -> dict[str, Any]:
        """The ``tool-call`` part of a provider-run call whose input JSON text is ``raw``."""
        try:
            value = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError:
            value = raw
        if kind and isinstance(value, dict) and "type" not in value:
            if kind != "programmatic-tool-call" or "code" in value:
                value = {"type": kind, **value}
        part: dict[str, Any] = {
            "type": "tool-call",
            "toolCallId": call_id,
            "toolName": name,
            "input": value,
            "providerExecuted": True,
        }
        if block["type"] == "mcp_tool_use":
            part["providerMetadata"] = {
                "anthropic": {"type": "mcp-tool-use", "serverName": block.get("server_name")}
            }
        return part

    def result_parts(self, block: dict[str, Any]) -> list[dict[str, Any]]:
        """The ``tool-result`` / ``tool-error`` part of a provider-run tool's result block, and
        the sources a web search found (or a fetched page a citation may point into)."""
        call_id = str(block.get("tool_use_id") or "")
        btype = block["type"]
        name = self._names.get(call_id) or btype.removesuffix("_tool_result")
        content = block.get("content")
        part: dict[str, Any] = {
            "type": "tool-result",
            "toolCallId": call_id,
            "toolName": name,
            "providerExecuted": True,
            "providerMetadata": {"anthropic": {"type": btype}},
        }
        if _is_error(block):
            part["type"] = "tool-error"
            part["error"] = content
        else:
            part["output"] = content
        out = [part]
        if btype == "web_search_tool_result" and isinstance(content, list):
            self.web_results = self.web_results or bool(content)
            for item in content:
                if isinstance(item, dict) and isinstance(item.get("url"), str):
                    out.append(
                        self._source(
                            "url",
                            url=item["url"],
                            title=item.get("title"),
                            meta={"pageAge": item.get("page_age")},
                        )
                    )
        elif btype == "web_fetch_tool_result" and isinstance(content, dict):
            page = content.get("content")
            if content.get("type") == "web_fetch_result" and isinstance(page, dict):
                source = page.get("source") or {}
                self._documents.append(
                    {
                        "title": page.get("title") or content.get("url"),
                        "filename": None,
                        "mediaType": source.get("media_type"),
                    }
                )
        return out

    def citation(self, citation: Any) -> dict[str, Any] | None:
        """The ``source`` part of a citation (None for a kind it does not know, and for a web
        citation when a search found results or while a stream holds them)."""
        if not isinstance(citation, dict):
            return None
        if citation.get("type") == "web_search_result_location":
            if self.web_results:
                return None
            if self._held is not None:
                self._held.append(citation)
                return None
        return self._citation(citation)

    def _citation(self, citation: dict[str, Any]) -> dict[str, Any] | None:
        kind = citation.get("type")
        if kind == "web_search_result_location":
            return self._source(
                "url",
                url=citation.get("url"),
                title=citation.get("title"),
                meta={
                    "citedText": citation.get("cited_text"),
                    "encryptedIndex": citation.get("encrypted_index"),
                },
            )
        if kind not in ("page_location", "char_location"):
            return None
        index = citation.get("document_index")
        if not isinstance(index, int) or not 0 <= index < len(self._documents):
            return None
        doc = self._documents[index]
        if kind == "page_location":
            meta = {
                "citedText": citation.get("cited_text"),
                "startPageNumber": citation.get("start_page_number"),
                "endPageNumber": citation.get("end_page_number"),
            }
        else:
            meta = {
                "citedText": citation.get("cited_text"),
                "startCharIndex": citation.get("start_char_index"),
                "endCharIndex": citation.get("end_char_index"),
            }
        return self._source(
            "document",
            media_type=doc["mediaType"],
            title=citation.get("document_title") or doc["title"],
            filename=doc["filename"],
            meta=meta,
        )

    def _source(self, source_type: str, *, meta: dict[str, Any], **fields: Any) -> dict[str, Any]:
        self._sources += 1
        part: dict[str, Any] = {
            "type": "source",
            "sourceType": source_type,
            "id": f"src-{self._sources}",
        }
        for key, value in fields.items():
            if value is not None:
                part["mediaType" if key == "media_type" else key] = value
        part["providerMetadata"] = {"anthropic": meta}
        return part
