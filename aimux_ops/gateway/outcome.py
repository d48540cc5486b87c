"""What both ingress protocols share: a translated request, and the ops' events of one call
gathered into the result a non-stream response renders."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from .failures import GatewayError

__all__ = ["Outcome", "Request", "dropped", "parse_tool_input"]


@dataclass
class Request:
    """One client request in neutral terms: the public model name, the op's params (all but
    ``model``), whether the client streams, and what the translation dropped or adapted."""

    model: str
    params: dict[str, Any]
    stream: bool
    observations: list[str]
    include_usage: bool = False


@dataclass
class Outcome:
    """A call's events gathered (``add``): the non-stream response's content."""

    text: str = ""
    reasoning: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str = "stop"
    usage: dict[str, Any] = field(default_factory=dict)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False
    _texts: list[str] = field(default_factory=list)
    _thinking: bool = False  # the last event was a reasoning delta

    def add_batch(self, events: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Each event ``add``ed in order, up to the first ``error`` event: returned (None when
        there is none). Text deltas, most of a batch, are taken here without a call each."""
        texts = self._texts
        for ev in events:
            kind = ev.get("type")
            if kind == "text-delta":
                texts.append(ev["text"])
                self._thinking = False
            elif kind == "error":
                return ev
            else:
                self.add(ev)
        return None

    def add(self, ev: dict[str, Any]) -> None:
        kind = ev.get("type")
        thinking, self._thinking = self._thinking, kind == "reasoning-delta"
        if kind == "text-delta":
            self._texts.append(ev["text"])
        elif kind == "reasoning-delta":
            if not thinking:  # a new reasoning part (its signature arrives with its last delta)
                self.reasoning.append({"text": "", "providerMetadata": None})
            part = self.reasoning[-1]
            part["text"] += ev.get("text") or ""
            if ev.get("providerMetadata"):
                part["providerMetadata"] = ev["providerMetadata"]
        elif kind == "tool-call":  # (a client tool's: ``engine`` dropped the provider's)
            self.tool_calls.append(ev)
        elif kind == "finish":
            self.text = "".join(self._texts)
            self.finish_reason = ev.get("finishReason") or "stop"
            self.usage = ev.get("usage") or {}
            self.warnings = list(ev.get("warnings") or ())
            self.finished = True


def parse_tool_input(arguments: Any, param: str) -> Any:
    """A tool call's arguments as JSON text (Chat Completions) → its value; bad JSON is the
    client's 400, never sent upstream."""
    if arguments is None or arguments == "":
        return {}
    if not isinstance(arguments, str):
        return arguments
    try:
        return orjson.loads(arguments)
    except orjson.JSONDecodeError:
        raise GatewayError("invalid_request", f"{param}: not valid JSON", param=param) from None


def dropped(body: dict[str, Any], carried: frozenset[str]) -> list[str]:
    """An observation for each top-level field the translation does not carry (its name made
    safe for a header: at most 64 word characters)."""
    out = []
    for key in sorted(body.keys() - carried):
        name = "".join(c for c in str(key)[:64] if c.isascii() and (c.isalnum() or c in "_-"))
        out.append(f"dropped:{name or '?'}")
    return out
