"""Records ``recordings/demo.jsonl`` against the fault server (``make recordings``).

One ``generate_text`` line and one ``stream_text`` line, with exactly the params, result and
events ``recordings/README.md`` promises; then replays both with the README's params (no
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

OUT = ROOT / "recordings" / "demo.jsonl"
PROMPT = "Say hello in one word."
EXPECTED_RESULT = {
    "text": "Hello!",
    "finishReason": "stop",
    "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
    "toolCalls": [],
    "response": {"id": "chatcmpl-demo-1", "modelId": "gpt-4o-mini"},
}


def replay_params(path: str) -> dict[str, Any]:
    return {
        "model": {
            "provider": "openai",
            "modelId": "gpt-4o-mini",
            "baseURL": "http://127.0.0.1:1/v1",
        },
        "prompt": PROMPT,
        "recording": {"mode": "replay", "path": path},
    }


def check(path: str) -> None:
    result = aimux_ops.call("generate_text", replay_params(path))
    assert result == EXPECTED_RESULT, result
    events = list(aimux_ops.stream("stream_text", replay_params(path)))
    kinds = [(e["type"], e.get("text")) for e in events]
    assert kinds == [("text-delta", "Hel"), ("text-delta", "lo!"), ("finish", None)], events
    assert events[-1]["finishReason"] == "stop", events


def main() -> None:
    server = FaultServer().start()
    tmp = OUT.with_suffix(".jsonl.tmp")
    try:
        if tmp.exists():
            tmp.unlink()
        params = {
            "model": {
                "provider": "openai",
                "modelId": "gpt-4o-mini",
                "baseURL": server.base_url,
                "apiKey": "sk-demo-recording-not-a-key",
            },
            "prompt": PROMPT,
            "recording": {"mode": "record", "path": str(tmp)},
        }
        result = aimux_ops.call("generate_text", params)
        assert result == EXPECTED_RESULT, result
        events = list(aimux_ops.stream("stream_text", params))
        assert events[-1]["type"] == "finish", events
        check(str(tmp))
        os.replace(tmp, OUT)
    finally:
        server.stop()
        if tmp.exists():
            tmp.unlink()
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
