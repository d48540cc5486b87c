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


#: the agent of ``native/examples/agent.c`` (``make demo``): its tool fails once at tool level
#: (a file that is not there), the model recovers with another path, then answers
AGENT_PROMPT = "What is on my todo list?"
AGENT_TOOLS = {
    "read_file": {
        "description": "Read a text file of the user's notes.",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
        "execute": True,
    }
}
AGENT_FILES = {"notes/todo.txt": "buy milk; call Ada"}
AGENT_TEXT = "Your todo list: buy milk, and call Ada."


def agent_params(base_url: str, recording: dict[str, str]) -> dict[str, Any]:
    return {
        "model": {"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": base_url},
        "prompt": AGENT_PROMPT,
        "tools": AGENT_TOOLS,
        "stopWhen": {"stepCount": 5},
        "recording": recording,
    }


def read_file(args: dict[str, Any]) -> Any:
    """The agent's tool, as agent.c runs it: a missing file is a tool-level error."""
    path = args["path"]
    if path not in AGENT_FILES:
        return aimux_ops.ToolResult.error(f"file not found: {path}")
    return AGENT_FILES[path]


def record_agent() -> None:
    import orjson
    from scenario_server import ScenarioServer, sse_reply

    def tool_call(call_id: str, path: str) -> Any:
        args = orjson.dumps({"path": path}).decode()
        delta = {
            "tool_calls": [
                {
                    "index": 0,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "read_file", "arguments": args},
                }
            ]
        }
        return sse_reply(
            [
                {
                    "id": f"chatcmpl-{call_id}",
                    "model": "gpt-4o-mini",
                    "choices": [{"index": 0, "delta": {"role": "assistant", **delta}}],
                },
                {
                    "id": f"chatcmpl-{call_id}",
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                },
                {
                    "id": f"chatcmpl-{call_id}",
                    "choices": [],
                    "usage": {"prompt_tokens": 40, "completion_tokens": 9},
                },
            ]
        )

    answer = sse_reply(
        [
            {
                "id": "chatcmpl-agent-3",
                "model": "gpt-4o-mini",
                "choices": [{"index": 0, "delta": {"content": AGENT_TEXT}}],
            },
            {
                "id": "chatcmpl-agent-3",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            },
            {
                "id": "chatcmpl-agent-3",
                "choices": [],
                "usage": {"prompt_tokens": 80, "completion_tokens": 11},
            },
        ]
    )
    server = ScenarioServer().start()
    out = ROOT / "recordings" / "agent.jsonl"
    tmp = out.with_suffix(".jsonl.tmp")
    try:
        if tmp.exists():
            tmp.unlink()
        # the unnamed case: served at /v1/..., the path a replay asks for
        server.add(
            "",
            tool_call("call_1", "notes/missing.txt"),
            tool_call("call_2", "notes/todo.txt"),
            answer,
        )
        url = server.origin + "/v1"
        params = agent_params(url, {"mode": "record", "path": str(tmp)})
        params["model"]["apiKey"] = "sk-demo-recording-not-a-key"
        result = aimux_ops.call("generate_text", params, execute={"read_file": read_file})
        assert result["text"] == AGENT_TEXT, result
        check_agent(str(tmp))
        os.replace(tmp, out)
    finally:
        server.stop()
        if tmp.exists():
            tmp.unlink()
    print(f"wrote {out.relative_to(ROOT)}")


def check_agent(path: str) -> None:
    params = agent_params("http://127.0.0.1:1/v1", {"mode": "replay", "path": path})
    result = aimux_ops.call("generate_text", params, execute={"read_file": read_file})
    assert result["text"] == AGENT_TEXT, result
    assert [s["finishReason"] for s in result["steps"]] == ["tool-calls", "tool-calls", "stop"]
    assert result["steps"][0]["toolErrors"][0]["error"] == {
        "message": "file not found: notes/missing.txt"
    }, result


def main() -> None:
    server = FaultServer().start()
    try:
        for name in RECORDINGS:
            record(server, name)
    finally:
        server.stop()
    record_agent()


if __name__ == "__main__":
    main()
