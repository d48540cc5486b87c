"""Records ``recordings/demo.jsonl`` (provider ``openai``) and ``recordings/anthropic.jsonl``
(provider ``anthropic``, the Messages API) against the fault server (``make recordings``); then
``recordings/agent.jsonl`` (the C agent of ``make demo``) and ``recordings/loops.jsonl`` (the loop
scenarios of ``contract-tests/calls/loops.json``, both providers) against the scenario server.

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
from helpers import ANTHROPIC_HELLO_METADATA, without_headers  # noqa: E402

import aimux_ops  # noqa: E402

PROMPT = "Say hello in one word."
#: recording file → (provider, model id, response id)
RECORDINGS = {
    "demo.jsonl": ("openai", "gpt-4o-mini", "chatcmpl-demo-1"),
    "anthropic.jsonl": ("anthropic", "claude-sonnet-4-5", "msg_01QC4g3HwBThD4BaNtBckFDJ"),
}


def expected_result(name: str) -> dict[str, Any]:
    provider, model, response_id = RECORDINGS[name]
    result: dict[str, Any] = {
        "text": "Hello!",
        "content": [{"type": "text", "text": "Hello!"}],
        "finishReason": "stop",
        "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
        "toolCalls": [],
        "response": {"id": response_id, "modelId": model},
    }
    if provider == "anthropic":
        result["providerMetadata"] = ANTHROPIC_HELLO_METADATA
    return result


def replay_params(path: str, name: str = "demo.jsonl") -> dict[str, Any]:
    provider, model, _ = RECORDINGS[name]
    return {
        "model": {"provider": provider, "modelId": model, "baseURL": "http://127.0.0.1:1/v1"},
        "prompt": PROMPT,
        "recording": {"mode": "replay", "path": path},
    }


def check(path: str, name: str = "demo.jsonl") -> None:
    result = aimux_ops.call("generate_text", replay_params(path, name))
    assert without_headers(result) == expected_result(name), result
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
        assert without_headers(result) == expected_result(name), result
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


# -- the loop scenarios every binding replays (contract-tests/calls/loops.json) --------------------

#: the host tool of every loop scenario
LOOP_TOOLS = {
    "weather": {
        "description": "The weather in a city.",
        "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
}
LOOP_PROMPT = "What is the weather?"
LOOP_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}
#: the file raise-io opens (it is never there)
LOOP_MISSING_FILE = "/nonexistent/aimux/weather.json"
#: the message of the error `raise` throws
LOOP_RAISED = "weather service down"


def loop_tool(behaviour: str) -> Any:
    """The Python spelling of a behaviour of ``loops.json``'s tools (every binding has its own):

    - ``value``: returns the text ``sunny in <city>``;
    - ``tool-error``: a tool-level error ``no weather for <city>``;
    - ``tool-error-data``: the same with the data ``{"city": <city>}``;
    - ``raise-io``: the language's own error of opening ``LOOP_MISSING_FILE`` (raised as is);
    - ``raise``: the language's generic error with the message ``LOOP_RAISED``;
    - ``value-paired``: ``value``, but the call for Paris returns only once the call for Oslo
      has started (only concurrent calls finish; a binding gives up after 30 s).
    """
    import threading

    oslo_started = threading.Event()

    def run(args: dict[str, Any]) -> Any:
        city = args["city"]
        if behaviour == "value":
            return f"sunny in {city}"
        if behaviour == "tool-error":
            return aimux_ops.ToolResult.error(f"no weather for {city}")
        if behaviour == "tool-error-data":
            return aimux_ops.ToolResult.error_with_data(f"no weather for {city}", {"city": city})
        if behaviour == "raise-io":
            with open(LOOP_MISSING_FILE) as fh:
                return fh.read()
        if behaviour == "raise":
            raise RuntimeError(LOOP_RAISED)
        if behaviour == "value-paired":
            if city == "Oslo":
                oslo_started.set()
            elif not oslo_started.wait(30):
                raise RuntimeError("the Oslo call never started: calls ran one by one")
            return f"sunny in {city}"
        raise ValueError(f"unknown behaviour {behaviour}")

    return run


#: scenario → (tool behaviour, the model's calls of step 1, its answer at step 2 (None: the model
#: is never asked again), extra params, what the model reads at step 2: (id, content, is_error) —
#: content None: the core's own message, checked to name the tool)
LOOP_SCENARIOS: dict[str, Any] = {
    "ok": (
        "value",
        [("t1", "weather", {"city": "Paris"})],
        "Sunny in Paris.",
        {},
        [("t1", "sunny in Paris", False)],
    ),
    "tool-error": (
        "tool-error",
        [("t1", "weather", {"city": "Atlantis"})],
        "I found no weather for Atlantis.",
        {},
        [("t1", "no weather for Atlantis", True)],
    ),
    "tool-error-data": (
        "tool-error-data",
        [("t1", "weather", {"city": "Atlantis"})],
        "I found no weather for Atlantis.",
        {},
        [("t1", '{"message":"no weather for Atlantis","data":{"city":"Atlantis"}}', True)],
    ),
    "raise-io": ("raise-io", [("t1", "weather", {"city": "Paris"})], None, {}, []),
    "to-model": (
        "raise",
        [("t1", "weather", {"city": "Paris"})],
        "The weather service is down.",
        {"toolFailures": "to-model"},
        [("t1", LOOP_RAISED, True)],
    ),
    "unknown-tool": (
        "value",
        [("t1", "forecast", {"city": "Paris"})],
        "I have no forecast tool.",
        {},
        [("t1", None, True)],
    ),
    "parallel": (
        "value-paired",
        [("t1", "weather", {"city": "Paris"}), ("t2", "weather", {"city": "Oslo"})],
        "Sunny in Paris and in Oslo.",
        {},
        [("t1", "sunny in Paris", False), ("t2", "sunny in Oslo", False)],
    ),
}
LOOPS = ROOT / "recordings" / "loops.jsonl"
LOOPS_REF = "@REPO@/recordings/loops.jsonl"


def loop_name(scenario: str, provider: str) -> str:
    return f"{scenario}-{provider}"


def loop_params(scenario: str, provider: str, base_url: str, recording: Any) -> dict[str, Any]:
    """The params of a loop scenario (``base_url``: the origin; the case's path is its name)."""
    extra = LOOP_SCENARIOS[scenario][3]
    return {
        "model": {
            "provider": provider,
            "modelId": LOOP_MODELS[provider],
            "baseURL": f"{base_url}/c/{loop_name(scenario, provider)}/v1",
        },
        "prompt": LOOP_PROMPT,
        "tools": LOOP_TOOLS,
        "stopWhen": {"stepCount": 4},
        "maxRetries": 0,
        **extra,
        "recording": recording,
    }


def record_loops() -> None:
    """``recordings/loops.jsonl``: every loop scenario on both providers, recorded against the
    scenario server; what the model was sent at step 2 is asserted here, once (a replay matches
    every request body byte for byte, so a binding sending anything else finds no exchange)."""
    import orjson
    from scenario_server import ScenarioServer
    from test_tool_loop import WIRE, tool_results_sent

    server = ScenarioServer().start()
    tmp = LOOPS.with_suffix(".jsonl.tmp")
    try:
        if tmp.exists():
            tmp.unlink()
        for scenario, (behaviour, calls, answer, _, sent) in LOOP_SCENARIOS.items():
            for provider in LOOP_MODELS:
                tool_calls, text = WIRE[provider]
                name = loop_name(scenario, provider)
                replies = [tool_calls(*calls)] + ([text(answer)] if answer is not None else [])
                server.add(name, *replies)
                params = loop_params(
                    scenario, provider, server.origin, {"mode": "record", "path": str(tmp)}
                )
                params["model"]["apiKey"] = "sk-demo-recording-not-a-key"
                execute = {"weather": loop_tool(behaviour)}
                try:
                    result = aimux_ops.call("generate_text", params, execute=execute)
                except aimux_ops.AimuxError as exc:
                    assert answer is None and exc.code == 22, (name, exc)
                    assert isinstance(exc.__cause__, FileNotFoundError), (name, exc.__cause__)
                    assert server.count(name) == 1, name  # the model never saw it
                    continue
                assert answer is not None and result["text"] == answer, (name, result)
                requests = server.requests[name]
                assert len(requests) == 2, name
                got = tool_results_sent(provider, requests[1])
                want_anthropic = provider == "anthropic"
                assert [g["id"] for g in got] == [s[0] for s in sent], (name, got)
                for g, (_, content, is_error) in zip(got, sent, strict=True):
                    if content is None:
                        assert "forecast" in g["content"], (name, g)
                    elif is_error and not want_anthropic:
                        # Chat Completions has no error flag: an error output is sent as the AI
                        # SDK sends it, {"error": <its value>}
                        value = orjson.loads(content) if content.startswith("{") else content
                        assert orjson.loads(g["content"]) == {"error": value}, (name, g)
                    else:
                        assert g["content"] == content, (name, g)
                    assert g["is_error"] is (is_error and want_anthropic), (name, g)
        os.replace(tmp, LOOPS)
    finally:
        server.stop()
        if tmp.exists():
            tmp.unlink()
    print(f"wrote {LOOPS.relative_to(ROOT)}")


def main() -> None:
    server = FaultServer().start()
    try:
        for name in RECORDINGS:
            record(server, name)
    finally:
        server.stop()
    record_agent()
    record_loops()


if __name__ == "__main__":
    main()
