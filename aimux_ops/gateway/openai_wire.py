"""The OpenAI Chat Completions ingress: a request → the ops' neutral params, and the ops'
result and events → a ``chat.completion`` / ``chat.completion.chunk`` stream.

What the neutral model cannot carry is either refused (a 400 naming the field, before anything
is sent upstream) or dropped as an observation (``observations``), never both.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from .failures import GatewayError
from .outcome import Outcome, Request, dropped, parse_tool_input

__all__ = ["ChunkWriter", "completion", "parse_request"]

#: the fields the translation carries; any other is dropped, as an observation
_CARRIED = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "presence_penalty",
        "frequency_penalty",
        "seed",
        "stop",
        "tools",
        "tool_choice",
        "stream",
        "stream_options",
        "n",
    }
)
_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool-calls": "tool_calls",
    "content-filter": "content_filter",
}


def _bad(message: str, param: str) -> GatewayError:
    return GatewayError("invalid_request", message, param=param)


def _text_of(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text":
                raise _bad(f"{where}[{j}]: only text parts are allowed here", f"{where}[{j}]")
            out.append(str(part.get("text", "")))
        return "".join(out)
    raise _bad(f"{where}: must be a string or an array of parts", where)


def _user_parts(content: Any, where: str) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(f"{where}: must be a string or an array of parts", where)
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            parts.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind == "image_url":
            url = (part.get("image_url") or {}).get("url")
            if not isinstance(url, str) or not url:
                raise _bad(f"{where}[{j}].image_url.url: required", f"{where}[{j}].image_url.url")
            media = url[5:].split(";")[0] if url.startswith("data:") else "image/*"
            parts.append({"type": "file", "mediaType": media or "image/*", "data": url})
        elif kind == "file":
            f = part.get("file") or {}
            data = f.get("file_data")
            if not isinstance(data, str) or not data.startswith("data:"):
                raise _bad(f"{where}[{j}].file.file_data: a data URL is required", where)
            parts.append({"type": "file", "mediaType": data[5:].split(";")[0], "data": data})
        else:
            raise _bad(f"{where}[{j}]: a {kind!r} part is not supported", f"{where}[{j}]")
    return parts


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise _bad("messages: a non-empty array is required", "messages")
    names: dict[str, str] = {}  # tool call id → tool name (a tool message names only the id)
    out: list[dict[str, Any]] = []
    for i, m in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise _bad(f"{where}: must be an object", where)
        role = m.get("role")
        content = m.get("content")
        if role in ("system", "developer"):
            out.append({"role": "system", "content": _text_of(content, f"{where}.content")})
        elif role == "user":
            out.append({"role": "user", "content": _user_parts(content, f"{where}.content")})
        elif role == "assistant":
            parts: list[dict[str, Any]] = []
            text = _text_of(content, f"{where}.content")
            if text:
                parts.append({"type": "text", "text": text})
            for j, call in enumerate(m.get("tool_calls") or ()):
                fn = call.get("function") if isinstance(call, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                    raise _bad(f"{where}.tool_calls[{j}].function: required", where)
                call_id = str(call.get("id") or f"call_{i}_{j}")
                names[call_id] = fn["name"]
                param = f"{where}.tool_calls[{j}].function.arguments"
                parts.append(
                    {
                        "type": "tool-call",
                        "toolCallId": call_id,
                        "toolName": fn["name"],
                        "input": parse_tool_input(fn.get("arguments"), param),
                    }
                )
            out.append({"role": "assistant", "content": parts})
        elif role == "tool":
            answered = m.get("tool_call_id")
            if not isinstance(answered, str):
                raise _bad(f"{where}.tool_call_id: required", f"{where}.tool_call_id")
            call_id = answered
            result = {
                "type": "tool-result",
                "toolCallId": call_id,
                "toolName": names.get(call_id, ""),
                "output": {"type": "text", "value": _text_of(content, f"{where}.content")},
            }
            if out and out[-1]["role"] == "tool":
                out[-1]["content"].append(result)
            else:
                out.append({"role": "tool", "content": [result]})
        else:
            raise _bad(f"{where}.role: {role!r} is not a role", f"{where}.role")
    return out


def _tools(body: dict[str, Any], params: dict[str, Any]) -> None:
    tools = body.get("tools")
    if tools:
        specs: dict[str, Any] = {}
        for j, tool in enumerate(tools):
            fn = tool.get("function") if isinstance(tool, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise _bad(f"tools[{j}].function.name: required", f"tools[{j}]")
            spec: dict[str, Any] = {
                "inputSchema": fn.get("parameters") or {"type": "object", "properties": {}}
            }
            if fn.get("description"):
                spec["description"] = fn["description"]
            specs[fn["name"]] = spec
        params["tools"] = specs
    choice = body.get("tool_choice")
    if choice in ("auto", "none", "required"):
        params["toolChoice"] = choice
    elif isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        if not isinstance(name, str):
            raise _bad("tool_choice.function.name: required", "tool_choice")
        params["toolChoice"] = {"type": "tool", "toolName": name}
    elif choice is not None:
        raise _bad("tool_choice: not a tool choice", "tool_choice")


def parse_request(body: dict[str, Any]) -> Request:
    """The neutral params of a Chat Completions request (without ``model``)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("model: required", "model")
    observations = dropped(body, _CARRIED)
    n = body.get("n")
    if n not in (None, 1):
        raise _bad("n: only 1 choice is supported", "n")
    params: dict[str, Any] = {"messages": _messages(body)}
    tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if tokens is not None:
        params["maxOutputTokens"] = tokens
    for ours, theirs in (
        ("temperature", "temperature"),
        ("topP", "top_p"),
        ("presencePenalty", "presence_penalty"),
        ("frequencyPenalty", "frequency_penalty"),
        ("seed", "seed"),
    ):
        if body.get(theirs) is not None:
            params[ours] = body[theirs]
    stop = body.get("stop")
    if stop is not None:
        params["stopSequences"] = [stop] if isinstance(stop, str) else stop
    _tools(body, params)
    stream = bool(body.get("stream"))
    usage = bool((body.get("stream_options") or {}).get("include_usage"))
    return Request(model, params, stream, observations, include_usage=usage)


def _usage(u: dict[str, Any]) -> dict[str, Any]:
    prompt = u.get("inputTokens") or 0
    done = u.get("outputTokens") or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": done,
        "total_tokens": u.get("totalTokens") or prompt + done,
    }


def _tool_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "id": c["toolCallId"],
            "type": "function",
            "function": {
                "name": c["toolName"],
                "arguments": orjson.dumps(c.get("input")).decode(),
            },
        }
        for c in calls
    ]


def completion(out: Outcome, model: str, rid: str) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": out.text or None}
    if out.reasoning:  # the field OpenAI-compatible servers (and their clients) use
        message["reasoning_content"] = "".join(r["text"] for r in out.reasoning)
    if out.tool_calls:
        message["tool_calls"] = _tool_calls(out.tool_calls)
    return orjson.dumps(
        {
            "id": rid,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": _FINISH.get(out.finish_reason, "stop"),
                    "logprobs": None,
                }
            ],
            "usage": _usage(out.usage),
        }
    )


class ChunkWriter:
    """The ops' events of one stream as ``chat.completion.chunk`` SSE frames."""

    def __init__(self, model: str, rid: str, include_usage: bool) -> None:
        self._head = {"id": rid, "object": "chat.completion.chunk", "created": int(time.time())}
        self._head["model"] = model
        self._include_usage = include_usage
        self._started = False
        self._tools = 0

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return b"data: " + orjson.dumps({**self._head, "choices": [choice]}) + b"\n\n"

    def start(self) -> bytes:
        self._started = True
        return self._chunk({"role": "assistant", "content": ""})

    def event(self, ev: dict[str, Any]) -> bytes:
        kind = ev.get("type")
        if kind == "text-delta":
            return self._chunk({"content": ev["text"]})
        if kind == "reasoning-delta":
            return self._chunk({"reasoning_content": ev["text"]}) if ev.get("text") else b""
        if kind == "tool-call":  # (a client tool's: ``engine`` dropped the provider's)
            index, self._tools = self._tools, self._tools + 1
            call = _tool_calls([ev])[0]
            return self._chunk({"tool_calls": [{"index": index, **call}]})
        if kind == "finish":
            out = self._chunk({}, _FINISH.get(ev.get("finishReason", ""), "stop"))
            if self._include_usage:
                usage = {**self._head, "choices": [], "usage": _usage(ev.get("usage") or {})}
                out += b"data: " + orjson.dumps(usage) + b"\n\n"
            return out + b"data: [DONE]\n\n"
        return b""  # the loop's step events have no Chat Completions frame
