"""The Anthropic Messages ingress: a request → the ops' neutral params, and the ops' result and
events → a ``message`` / its event stream (``message_start`` … ``message_stop``).

What the neutral model cannot carry is either refused (a 400 naming the field, before anything
is sent upstream) or dropped as an observation, never both.
"""

from __future__ import annotations

from typing import Any

import orjson

from .failures import GatewayError
from .outcome import Outcome, Request, dropped

__all__ = ["EventWriter", "message", "parse_request"]

#: the fields the translation carries; any other is dropped, as an observation
_CARRIED = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "system",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "tools",
        "tool_choice",
        "stream",
    }
)
_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool-calls": "tool_use",
    "content-filter": "refusal",
}


def _bad(message: str, param: str) -> GatewayError:
    return GatewayError("invalid_request", message, param=param)


def _source(block: dict[str, Any], where: str, default_media: str) -> dict[str, Any]:
    src = block.get("source")
    if not isinstance(src, dict):
        raise _bad(f"{where}.source: required", where)
    if src.get("type") == "base64" and isinstance(src.get("data"), str):
        return {
            "type": "file",
            "mediaType": str(src.get("media_type") or default_media),
            "data": src["data"],
        }
    if src.get("type") == "url" and isinstance(src.get("url"), str):
        return {"type": "file", "mediaType": default_media, "data": src["url"]}
    raise _bad(f"{where}.source: a base64 or url source is required", where)


def _text_blocks(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(f"{where}: must be a string or an array of blocks", where)
    out = []
    for j, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise _bad(f"{where}[{j}]: only text blocks are allowed here", f"{where}[{j}]")
        out.append(str(block.get("text", "")))
    return "".join(out)


def _messages(body: dict[str, Any], observations: list[str]) -> list[dict[str, Any]]:
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise _bad("messages: a non-empty array is required", "messages")
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for i, m in enumerate(raw):
        where = f"messages.{i}"
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise _bad(f"{where}.role: must be user or assistant", f"{where}.role")
        role, content = m["role"], m.get("content")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
            continue
        if not isinstance(content, list):
            raise _bad(f"{where}.content: must be a string or an array of blocks", where)
        parts: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for j, block in enumerate(content):
            at = f"{where}.content.{j}"
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                parts.append({"type": "text", "text": str(block.get("text", ""))})
            elif kind == "image" and role == "user":
                parts.append(_source(block, at, "image/*"))
            elif kind == "document" and role == "user":
                parts.append(_source(block, at, "application/pdf"))
            elif kind == "tool_use" and role == "assistant":
                call_id, name = str(block.get("id", "")), str(block.get("name", ""))
                names[call_id] = name
                parts.append(
                    {
                        "type": "tool-call",
                        "toolCallId": call_id,
                        "toolName": name,
                        "input": block.get("input") or {},
                    }
                )
            elif kind == "thinking" and role == "assistant":
                part: dict[str, Any] = {"type": "reasoning", "text": str(block.get("thinking", ""))}
                if block.get("signature"):
                    part["providerOptions"] = {"anthropic": {"signature": block["signature"]}}
                parts.append(part)
            elif kind == "redacted_thinking" and role == "assistant":
                observations.append(f"dropped:{at}.redacted_thinking")
            elif kind == "tool_result" and role == "user":
                call_id = str(block.get("tool_use_id", ""))
                text = _text_blocks(block.get("content") or "", f"{at}.content")
                error = bool(block.get("is_error"))
                results.append(
                    {
                        "type": "tool-result",
                        "toolCallId": call_id,
                        "toolName": names.get(call_id, ""),
                        "output": {"type": "error-text" if error else "text", "value": text},
                    }
                )
            else:
                raise _bad(f"{at}: a {kind!r} block is not supported in a {role} message", at)
        if results:
            out.append({"role": "tool", "content": results})
        if parts or not results:
            out.append({"role": role, "content": parts})
    return out


def _tools(body: dict[str, Any], params: dict[str, Any]) -> None:
    tools = body.get("tools")
    if tools:
        specs: dict[str, Any] = {}
        for j, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                raise _bad(f"tools.{j}.name: required", f"tools.{j}")
            if tool.get("type") not in (None, "custom"):
                raise _bad(
                    f"tools.{j}: server tool {tool['type']!r} is not supported", f"tools.{j}"
                )
            spec: dict[str, Any] = {
                "inputSchema": tool.get("input_schema") or {"type": "object", "properties": {}}
            }
            if tool.get("description"):
                spec["description"] = tool["description"]
            specs[tool["name"]] = spec
        params["tools"] = specs
    choice = body.get("tool_choice")
    if choice is None:
        return
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind in ("auto", "none"):
        params["toolChoice"] = kind
    elif kind == "any":
        params["toolChoice"] = "required"
    elif kind == "tool" and isinstance(choice.get("name"), str):
        params["toolChoice"] = {"type": "tool", "toolName": choice["name"]}
    else:
        raise _bad("tool_choice: not a tool choice", "tool_choice")


def parse_request(body: dict[str, Any]) -> Request:
    """The neutral params of a Messages request (without ``model``)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("model: Field required", "model")
    tokens = body.get("max_tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
        raise _bad("max_tokens: a positive integer is required", "max_tokens")
    observations = dropped(body, _CARRIED)
    params: dict[str, Any] = {
        "messages": _messages(body, observations),
        "maxOutputTokens": tokens,
    }
    system = body.get("system")
    if system:
        params["system"] = _text_blocks(system, "system")
    for ours, theirs in (("temperature", "temperature"), ("topP", "top_p"), ("topK", "top_k")):
        if body.get(theirs) is not None:
            params[ours] = body[theirs]
    if body.get("stop_sequences"):
        params["stopSequences"] = body["stop_sequences"]
    _tools(body, params)
    return Request(model, params, bool(body.get("stream")), observations)


def _usage(u: dict[str, Any]) -> dict[str, Any]:
    out = {"input_tokens": u.get("inputTokens") or 0, "output_tokens": u.get("outputTokens") or 0}
    if u.get("cachedInputTokens"):
        out["cache_read_input_tokens"] = u["cachedInputTokens"]
    return out


def _thinking(r: dict[str, Any]) -> dict[str, Any]:
    sig = ((r.get("providerMetadata") or {}).get("anthropic") or {}).get("signature")
    return {"type": "thinking", "thinking": r["text"], "signature": sig or ""}


def message(out: Outcome, model: str, rid: str) -> bytes:
    content: list[dict[str, Any]] = [_thinking(r) for r in out.reasoning]
    if out.text:
        content.append({"type": "text", "text": out.text})
    content.extend(
        {"type": "tool_use", "id": c["toolCallId"], "name": c["toolName"], "input": c.get("input")}
        for c in out.tool_calls
    )
    return orjson.dumps(
        {
            "id": rid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": _STOP.get(out.finish_reason, "end_turn"),
            "stop_sequence": None,
            "usage": _usage(out.usage),
        }
    )


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


class EventWriter:
    """The ops' events of one stream as the Messages API's SSE events."""

    def __init__(self, model: str, rid: str) -> None:
        self._model, self._rid = model, rid
        self._index = -1
        self._open: str | None = None  # the open content block's type

    def start(self) -> bytes:
        msg: dict[str, Any] = {
            "id": self._rid,
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return _event("message_start", {"type": "message_start", "message": msg}) + _event(
            "ping", {"type": "ping"}
        )

    def _close(self) -> bytes:
        if self._open is None:
            return b""
        self._open = None
        return _event("content_block_stop", {"type": "content_block_stop", "index": self._index})

    def _begin(self, block: dict[str, Any]) -> bytes:
        out = self._close()
        self._index += 1
        self._open = block["type"]
        start = {"type": "content_block_start", "index": self._index, "content_block": block}
        return out + _event("content_block_start", start)

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return _event(
            "content_block_delta",
            {"type": "content_block_delta", "index": self._index, "delta": delta},
        )

    def event(self, ev: dict[str, Any]) -> bytes:
        kind = ev.get("type")
        out = b""
        if kind == "text-delta":
            if self._open != "text":
                out = self._begin({"type": "text", "text": ""})
            return out + self._delta({"type": "text_delta", "text": ev["text"]})
        if kind == "reasoning-delta":
            if self._open != "thinking":
                out = self._begin({"type": "thinking", "thinking": "", "signature": ""})
            if ev.get("text"):
                out += self._delta({"type": "thinking_delta", "thinking": ev["text"]})
            sig = ((ev.get("providerMetadata") or {}).get("anthropic") or {}).get("signature")
            if sig:
                out += self._delta({"type": "signature_delta", "signature": sig})
            return out
        if kind == "tool-call":  # (a client tool's: ``engine`` dropped the provider's)
            block = {"type": "tool_use", "id": ev["toolCallId"], "name": ev["toolName"]}
            out = self._begin({**block, "input": {}})
            partial = orjson.dumps(ev.get("input") if ev.get("input") is not None else {})
            out += self._delta({"type": "input_json_delta", "partial_json": partial.decode()})
            return out + self._close()
        if kind == "finish":
            delta = {"stop_reason": _STOP.get(ev.get("finishReason", ""), "end_turn")}
            end = {
                "type": "message_delta",
                "delta": {**delta, "stop_sequence": None},
                "usage": _usage(ev.get("usage") or {}),
            }
            return (
                self._close()
                + _event("message_delta", end)
                + _event("message_stop", {"type": "message_stop"})
            )
        return b""

    def before_error(self) -> bytes:
        """Nothing: an error event follows an open block as the Messages API sends it."""
        return b""
