"""``response.headers`` on a success (the AI SDK's): the provider response's headers through the
Python API, a call and a stream, OpenAI and Anthropic, live and replayed from a recording — the
request id and rate limits as sent, a cookie and the echoed key redacted, the key nowhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from fault_server import FaultServer
from helpers import CANARY, assert_no_canary

import aimux_ops

HDRS = "mode=ok;headers=1"  # the fault server adds a request id, a rate limit, a cookie, the key


def _model(server: FaultServer, provider: str) -> aimux_ops.ModelSpec:
    return {
        "provider": provider,
        "modelId": "gpt-4o-mini" if provider == "openai" else "claude-sonnet-4-5",
        "baseURL": server.base_url,
        "apiKey": CANARY,
        "headers": {"x-fault": HDRS},
    }


def _check(headers: dict[str, str] | None) -> None:
    assert headers is not None
    assert headers["x-request-id"] == "req_hdrs_1"
    assert headers["x-ratelimit-remaining-requests"] == "99"
    assert headers["set-cookie"] == "[REDACTED]"  # a secret-named header: its value never shown
    assert headers["x-echo-key"] == "[REDACTED]"  # the call's key, echoed: scrubbed
    assert all(name == name.lower() for name in headers)
    assert_no_canary(orjson.dumps(headers))
    assert "cookie-secret-1" not in orjson.dumps(headers).decode()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_generate_text_and_object_carry_the_response_headers(
    server: FaultServer, provider: str
) -> None:
    result = aimux_ops.generate_text(model=_model(server, provider), prompt="hi", max_retries=0)
    assert result.text == "Hello!"
    _check(result.response.headers)
    assert "json" in (result.response.headers or {})["content-type"]
    obj = aimux_ops.generate_object(
        model={**_model(server, provider), "headers": {"x-fault": "mode=object;headers=1"}},
        prompt="hi",
        schema={"type": "object"},
        max_retries=0,
    )
    _check(obj.response.headers)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_stream_finish_carries_the_response_headers(server: FaultServer, provider: str) -> None:
    events = list(aimux_ops.stream_text(model=_model(server, provider), prompt="hi"))
    (finish,) = [e for e in events if e.type == "finish"]
    _check(finish.raw["response"]["headers"])
    assert "event-stream" in finish.raw["response"]["headers"]["content-type"]


def test_tool_loop_steps_carry_their_response_headers(server: FaultServer) -> None:
    events = list(
        aimux_ops.stream(
            "stream_text",
            {
                "model": {**_model(server, "openai"), "headers": {"x-fault": "mode=ok;headers=1"}},
                "prompt": "hi",
                "tools": {"t": {"inputSchema": {"type": "object"}, "execute": True}},
            },
        )
    )
    kinds = [e["type"] for e in events]
    assert kinds[0] == "start-step" and kinds[-2:] == ["finish-step", "finish"]
    _check(events[-2]["response"]["headers"])
    _check(events[-1]["response"]["headers"])


def test_a_replay_carries_the_live_headers(server: FaultServer, tmp_path: Path) -> None:
    path = str(tmp_path / "rec.jsonl")
    p: dict[str, Any] = {
        "model": _model(server, "openai"),
        "prompt": "hi",
        "recording": {"mode": "record", "path": path},
    }
    live = aimux_ops.call("generate_text", p)
    replay = {
        **p,
        "model": {**p["model"], "apiKey": "sk-other", "baseURL": "http://127.0.0.1:1/v1"},
        "recording": {"mode": "replay", "path": path},
    }
    replayed = aimux_ops.call("generate_text", replay)
    _check(replayed["response"]["headers"])
    assert replayed["response"]["headers"] == live["response"]["headers"]
    assert_no_canary(Path(path).read_bytes())
