"""Records ``recordings/demo.jsonl`` (provider ``openai``) and ``recordings/anthropic.jsonl``
(provider ``anthropic``, the Messages API) against the fault server (``make recordings``).

Each: one ``generate_text`` line and one ``stream_text`` line, with exactly the params, result
and events ``recordings/README.md`` promises; then replays both with the README's params (no
network) and checks them, so a drifted recording fails here, not in another language's tests.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fault_server import FaultServer  # noqa: E402

import aimux_ops  # noqa: E402

PROMPT = "Say hello in one word."
#: recording file → (provider, model id, response id)
RECORDINGS = {
    "demo.jsonl": ("openai", "gpt-4o-mini", "chatcmpl-demo-1"),
    "anthropic.jsonl": ("anthropic", "claude-sonnet-4-5", "msg_01QC4g3HwBThD4BaNtBckFDJ"),
}


def expected_result(name: str) -> dict[str, Any]:
    _, model, response_id = RECORDINGS[name]
    return {
        "text": "Hello!",
        "finishReason": "stop",
        "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
        "toolCalls": [],
        "response": {"id": response_id, "modelId": model},
    }


def replay_params(path: str, name: str = "demo.jsonl") -> dict[str, Any]:
    provider, model, _ = RECORDINGS[name]
    return {
        "model": {"provider": provider, "modelId": model, "baseURL": "http://127.0.0.1:1/v1"},
        "prompt": PROMPT,
        "recording": {"mode": "replay", "path": path},
    }


def check(path: str, name: str = "demo.jsonl") -> None:
    result = aimux_ops.call("generate_text", replay_params(path, name))
    assert result == expected_result(name), result
    events = list(aimux_ops.stream("stream_text", replay_params(path, name)))
    kinds = [(e["type"], e.get("text")) for e in events]
    assert kinds == [("text-delta", "Hel"), ("text-delta", "lo!"), ("finish", None)], events
    assert events[-1]["finishReason"] == "stop", events


def record(server: FaultServer, name: str) -> None:
    out = ROOT / "recordings" / name
    provider, model, _ = RECORDINGS[name]
    tmp = out.with_suffix(".jsonl.tmp")
    try:
        if tmp.exists():
            tmp.unlink()
        params = {
            "model": {
                "provider": provider,
                "modelId": model,
                "baseURL": server.base_url,
                "apiKey": "sk-demo-recording-not-a-key",
            },
            "prompt": PROMPT,
            "recording": {"mode": "record", "path": str(tmp)},
        }
        result = aimux_ops.call("generate_text", params)
        assert result == expected_result(name), result
        events = list(aimux_ops.stream("stream_text", params))
        assert events[-1]["type"] == "finish", events
        check(str(tmp), name)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    print(f"wrote {out.relative_to(ROOT)}")


def main() -> None:
    server = FaultServer().start()
    try:
        for name in RECORDINGS:
            record(server, name)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
