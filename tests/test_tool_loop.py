"""Host tools and the multi-step loop (CONTRACT §2.2, seed 001's three layers), through the Python
API and the boundary the shim calls, against the scripted server speaking each provider's wire
format: what the model is sent at the next step is asserted on the server's side."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from helpers import ROOT, validator
from scenario_server import Reply, ScenarioServer, sse_reply

import aimux_ops
from aimux_ops import ToolResult
from aimux_ops.errors import ToolExecutionError
from aimux_ops.ops.registry import StreamContext, get_op


@pytest.fixture(scope="module")
def scenarios() -> Iterator[ScenarioServer]:
    server = ScenarioServer().start()
    yield server
    server.stop()


# -- each provider's wire format ----------------------------------------------------------------


def openai_tool_calls(*calls: tuple[str, str, dict[str, Any]]) -> Reply:
    frames: list[Any] = [
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}
    ]
    for i, (call_id, name, args) in enumerate(calls):
        frames.append(
            {
                "id": "c1",
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": i,
                                    "id": call_id,
                                    "type": "function",
                                    "function": {
                                        "name": name,
                                        "arguments": orjson.dumps(args).decode(),
                                    },
                                }
                            ]
                        },
                    }
                ],
            }
        )
    frames.append(
        {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    )
    frames.append(
        {"id": "c1", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
    )
    return sse_reply(frames)


def openai_text(text: str) -> Reply:
    return sse_reply(
        [
            {"id": "c2", "model": "m", "choices": [{"index": 0, "delta": {"content": text}}]},
            {"id": "c2", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"id": "c2", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 3}},
        ]
    )


def _event(name: str, data: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def anthropic_tool_calls(*calls: tuple[str, str, dict[str, Any]]) -> Reply:
    frames = [
        _event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg1",
                    "type": "message",
                    "role": "assistant",
                    "model": "m",
                    "content": [],
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        )
    ]
    for i, (call_id, name, args) in enumerate(calls):
        frames.append(
            _event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
            )
        )
        frames.append(
            _event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": orjson.dumps(args).decode(),
                    },
                },
            )
        )
        frames.append(_event("content_block_stop", {"type": "content_block_stop", "index": i}))
    frames.append(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 5},
            },
        )
    )
    frames.append(_event("message_stop", {"type": "message_stop"}))
    return sse_reply(frames, done=False)


def anthropic_text(text: str) -> Reply:
    return sse_reply(
        [
            _event(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg2",
                        "type": "message",
                        "role": "assistant",
                        "model": "m",
                        "content": [],
                        "usage": {"input_tokens": 20, "output_tokens": 1},
                    },
                },
            ),
            _event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            _event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
            ),
            _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 3},
                },
            ),
            _event("message_stop", {"type": "message_stop"}),
        ],
        done=False,
    )


WIRE = {
    "openai": (openai_tool_calls, openai_text),
    "anthropic": (anthropic_tool_calls, anthropic_text),
}

WEATHER = {
    "description": "The weather in a city.",
    "inputSchema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def params(provider: str, base_url: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": {"provider": provider, "modelId": "m", "baseURL": base_url, "apiKey": "k"},
        "prompt": "What is the weather in Paris?",
        "tools": {"weather": WEATHER},
        "stopWhen": {"stepCount": 5},
        "maxRetries": 0,
        **extra,
    }


def tool_results_sent(provider: str, request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results of the request's last turn, as (id, content, is_error)."""
    body = orjson.loads(request["body"])
    if provider == "openai":
        return [
            {"id": m["tool_call_id"], "content": m["content"], "is_error": False}
            for m in body["messages"]
            if m["role"] == "tool"
        ]
    last = body["messages"][-1]
    assert last["role"] == "user"
    return [
        {"id": b["tool_use_id"], "content": b.get("content"), "is_error": b.get("is_error", False)}
        for b in last["content"]
        if b["type"] == "tool_result"
    ]


def assistant_calls_sent(provider: str, request: dict[str, Any]) -> list[str]:
    body = orjson.loads(request["body"])
    if provider == "openai":
        return [
            c["id"] for m in body["messages"] if m["role"] == "assistant" for c in m["tool_calls"]
        ]
    return [
        b["id"]
        for m in body["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "tool_use"
    ]


PROVIDERS = ["openai", "anthropic"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_tool_value_goes_to_the_model_and_the_loop_answers(
    scenarios: ScenarioServer, provider: str
) -> None:
    calls, text = WIRE[provider]
    name = f"ok-{provider}"
    url = scenarios.add(name, calls(("t1", "weather", {"city": "Paris"})), text("Sunny in Paris."))
    seen: list[Any] = []

    def weather(args: dict[str, Any]) -> dict[str, Any]:
        seen.append(args)
        return {"forecast": "sunny", "celsius": 21}

    result = aimux_ops.call("generate_text", params(provider, url), execute={"weather": weather})
    assert seen == [{"city": "Paris"}]
    assert result["text"] == "Sunny in Paris."
    assert [s["finishReason"] for s in result["steps"]] == ["tool-calls", "stop"]
    assert result["steps"][0]["toolResults"] == [
        {
            "toolCallId": "t1",
            "toolName": "weather",
            "input": {"city": "Paris"},
            "output": {"forecast": "sunny", "celsius": 21},
        }
    ]
    assert result["usage"]["inputTokens"] == 30 and result["usage"]["outputTokens"] == 8
    validator("ops/generate_text.result.schema.json").validate(result)
    requests = scenarios.requests[name]
    assert len(requests) == 2
    assert assistant_calls_sent(provider, requests[1]) == ["t1"]
    assert tool_results_sent(provider, requests[1]) == [
        {"id": "t1", "content": '{"forecast":"sunny","celsius":21}', "is_error": False}
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_tool_level_error_is_seen_by_the_model_which_recovers(
    scenarios: ScenarioServer, provider: str
) -> None:
    calls, text = WIRE[provider]
    name = f"toolerr-{provider}"
    url = scenarios.add(name, calls(("t1", "weather", {"city": "Atlantis"})), text("No such city."))
    events = list(
        aimux_ops.stream(
            "stream_text",
            params(provider, url),
            execute={
                "weather": lambda a: ToolResult.error_with_data("unknown city", {"city": a["city"]})
            },
        )
    )
    event_schema = validator("ops/stream_text.event.schema.json")
    for event in events:
        event_schema.validate(event)  # the manifest's event schema holds every loop event
    kinds = [e["type"] for e in events]
    assert kinds == [
        "start-step",
        "tool-call",
        "tool-error",
        "finish-step",
        "start-step",
        "text-delta",
        "finish-step",
        "finish",
    ]
    tool_error = events[2]
    assert tool_error["error"] == {"message": "unknown city", "data": {"city": "Atlantis"}}
    sent = tool_results_sent(provider, scenarios.requests[name][1])
    seen = '{"message":"unknown city","data":{"city":"Atlantis"}}'
    assert sent == [
        {
            "id": "t1",
            # as the AI SDK sends an error-json output: Chat Completions has no error flag
            "content": seen if provider == "anthropic" else '{"error":' + seen + "}",
            "is_error": provider == "anthropic",
        }
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_raised_exception_reaches_the_caller_with_its_own_chain_and_never_the_model(
    scenarios: ScenarioServer, provider: str
) -> None:
    calls, text = WIRE[provider]
    name = f"raise-{provider}"
    url = scenarios.add(name, calls(("t1", "weather", {"city": "Paris"})), text("never"))

    def weather(args: dict[str, Any]) -> Any:
        try:
            open("/nonexistent/aimux/weather.json")
        except OSError as exc:
            raise RuntimeError("cannot read the weather file") from exc

    with pytest.raises(ToolExecutionError) as caught:
        aimux_ops.call("generate_text", params(provider, url), execute={"weather": weather})
    err = caught.value
    assert err.code == 22
    assert (err.tool_name, err.tool_call_id, err.input) == ("weather", "t1", {"city": "Paris"})
    assert isinstance(err.__cause__, RuntimeError)
    assert isinstance(err.__cause__.__cause__, FileNotFoundError)
    assert scenarios.count(name) == 1  # the model never saw it


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_raised_exception_to_the_model_when_asked(
    scenarios: ScenarioServer, provider: str
) -> None:
    calls, text = WIRE[provider]
    name = f"tomodel-{provider}"
    url = scenarios.add(name, calls(("t1", "weather", {"city": "Paris"})), text("Sorry."))

    def weather(args: dict[str, Any]) -> Any:
        raise FileNotFoundError(2, "No such file or directory", "weather.json")

    result = aimux_ops.call(
        "generate_text",
        params(provider, url, toolFailures="to-model"),
        execute={"weather": weather},
    )
    assert result["text"] == "Sorry."
    sent = tool_results_sent(provider, scenarios.requests[name][1])
    message = "[Errno 2] No such file or directory: 'weather.json'"
    assert sent == [
        {
            "id": "t1",
            "content": message
            if provider == "anthropic"
            else orjson.dumps({"error": message}).decode(),
            "is_error": provider == "anthropic",
        }
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_unknown_tool_goes_back_to_the_model_as_a_tool_error(
    scenarios: ScenarioServer, provider: str
) -> None:
    calls, text = WIRE[provider]
    name = f"unknown-{provider}"
    url = scenarios.add(name, calls(("t1", "teleport", {"to": "Mars"})), text("I cannot."))
    events = list(aimux_ops.stream("stream_text", params(provider, url), execute={"weather": dict}))
    tool_error = next(e for e in events if e["type"] == "tool-error")
    assert tool_error["error"]["error"]["name"] == "AI_NoSuchToolError"
    sent = tool_results_sent(provider, scenarios.requests[name][1])
    assert (
        len(sent) == 1
        and sent[0]["id"] == "t1"
        and "unavailable tool 'teleport'" in sent[0]["content"]
    )
    assert sent[0]["is_error"] is (provider == "anthropic")
    assert events[-1]["type"] == "finish"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_two_calls_of_one_step_run_concurrently_and_are_answered_in_any_order(
    scenarios: ScenarioServer, provider: str
) -> None:
    calls, text = WIRE[provider]
    name = f"parallel-{provider}"
    url = scenarios.add(
        name,
        calls(("t1", "weather", {"city": "Paris"}), ("t2", "weather", {"city": "Oslo"})),
        text("Both."),
    )
    paris_may_finish = threading.Event()

    def weather(args: dict[str, Any]) -> str:
        if args["city"] == "Paris":
            # Paris waits until Oslo ran: only concurrent execution lets this finish
            assert paris_may_finish.wait(30)
        else:
            paris_may_finish.set()
        return f"{args['city']}: fine"

    events = list(
        aimux_ops.stream("stream_text", params(provider, url), execute={"weather": weather})
    )
    results = [e["toolCallId"] for e in events if e["type"] == "tool-result"]
    assert results == ["t2", "t1"]  # as they came
    sent = tool_results_sent(provider, scenarios.requests[name][1])
    assert [s["id"] for s in sent] == ["t1", "t2"]  # the model reads them in its own order
    assert [s["content"] for s in sent] == ["Paris: fine", "Oslo: fine"]


def test_the_default_stop_runs_the_tools_of_one_step_and_calls_the_model_once(
    scenarios: ScenarioServer,
) -> None:
    url = scenarios.add("onestep", openai_tool_calls(("t1", "weather", {"city": "Paris"})))
    p = params("openai", url)
    del p["stopWhen"]
    result = aimux_ops.call("generate_text", p, execute={"weather": lambda a: "sunny"})
    assert scenarios.count("onestep") == 1
    assert result["toolResults"][0]["output"] == "sunny"
    assert result["finishReason"] == "tool-calls"


def test_has_tool_call_stops_the_loop(scenarios: ScenarioServer) -> None:
    url = scenarios.add(
        "hastool", openai_tool_calls(("t1", "weather", {"city": "Paris"})), openai_text("x")
    )
    p = params("openai", url, stopWhen=[{"stepCount": 9}, {"hasToolCall": ["weather"]}])
    aimux_ops.call("generate_text", p, execute={"weather": lambda a: "sunny"})
    assert scenarios.count("hastool") == 1


def test_closing_the_stream_while_a_tool_runs_cancels_it_without_a_next_step(
    scenarios: ScenarioServer,
) -> None:
    url = scenarios.add(
        "cancel", openai_tool_calls(("t1", "weather", {"city": "Paris"})), openai_text("x")
    )
    running, release = threading.Event(), threading.Event()

    def weather(args: dict[str, Any]) -> str:
        running.set()
        release.wait(30)
        return "late"

    events = aimux_ops.stream("stream_text", params("openai", url), execute={"weather": weather})
    for event in events:
        if event["type"] == "tool-call":
            break
    assert running.wait(30)
    events.close()  # cancels the stream while the tool runs
    release.set()
    assert scenarios.count("cancel") == 1


def test_a_call_op_with_host_tools_through_the_boundary_is_unsupported(
    scenarios: ScenarioServer,
) -> None:
    from aimux_ops.boundary.dispatch import call_json

    url = scenarios.add("callop", openai_text("x"))
    p = params("openai", url)
    p["tools"]["weather"] = {**WEATHER, "execute": True}
    _, envelope = call_json("generate_text", orjson.dumps(p))
    assert envelope is not None
    env = orjson.loads(envelope)
    assert env["code"] == 8 and "aimux_stream_tool_result" in env["message"]
    assert scenarios.count("callop") == 0


def test_answers_the_stream_does_not_wait_for_are_clear_errors(scenarios: ScenarioServer) -> None:
    from aimux_ops.boundary.dispatch import (
        stream_free,
        stream_json,
        stream_next_objects,
        stream_tool_result_json,
    )

    url = scenarios.add(
        "answers", openai_tool_calls(("t1", "weather", {"city": "Paris"})), openai_text("ok")
    )
    p = params("openai", url)
    p["tools"]["weather"] = {**WEATHER, "execute": True}
    handle, envelope = stream_json("stream_text", orjson.dumps(p))
    assert envelope is None and handle is not None

    def code(call_id: Any, answer: Any) -> int | None:
        env = stream_tool_result_json(handle, call_id, answer)
        return None if env is None else orjson.loads(env)["code"]

    batch, _ = stream_next_objects(handle)
    assert [e["type"] for e in batch] == ["start-step", "tool-call"]
    assert code("nope", b'{"output": 1}') == 301  # no such pending call
    assert code("t1", b"{not json") == 202
    assert code("t1", b'{"output": 1, "error": {"message": "x"}}') == 301
    assert code("t1", b'{"error": {"msg": "x"}}') == 301
    assert code("t1", b"\xff") == 201
    assert code(None, b"{}") == 204
    assert code("t1", b'{"output": "sunny"}') is None  # the call still waited for it
    assert code("t1", b'{"output": "again"}') == 301  # already answered
    rest: list[Any] = []
    while True:
        batch, env = stream_next_objects(handle)
        assert env is None
        if batch is None:
            break
        rest.extend(batch)
    assert [e["type"] for e in rest][-1] == "finish"
    assert next(e for e in rest if e["type"] == "tool-result")["output"] == "sunny"
    stream_free(handle)
    assert code("t1", b'{"output": 1}') == 203  # a freed stream


def test_answers_in_at_once_come_in_one_batch_with_the_finish_step(
    scenarios: ScenarioServer,
) -> None:
    """The answers in when the loop looks come as one batch, and the step's last ones with its
    ``finish-step``: one hand-over to the host for a step's answers, not one per event."""
    from aimux_ops.boundary.dispatch import (
        stream_free,
        stream_json,
        stream_next_objects,
        stream_tool_result_json,
    )

    url = scenarios.add(
        "one-batch",
        openai_tool_calls(
            ("t1", "weather", {"city": "Paris"}), ("t2", "weather", {"city": "Oslo"})
        ),
        openai_text("Both."),
    )
    p = params("openai", url)
    p["tools"]["weather"] = {**WEATHER, "execute": True}
    handle, _ = stream_json("stream_text", orjson.dumps(p))
    assert handle is not None

    def batch() -> list[dict[str, Any]]:
        got, err = stream_next_objects(handle)
        assert err is None and got is not None
        return [e if type(e) is dict else orjson.loads(e) for e in got]

    try:
        seen: list[dict[str, Any]] = []
        while sum(e["type"] == "tool-call" for e in seen) < 2:
            seen += batch()
        for call_id in ("t2", "t1"):
            assert stream_tool_result_json(handle, call_id, b'{"output": "fine"}') is None
        assert [(e["type"], e.get("toolCallId")) for e in batch()] == [
            ("tool-result", "t2"),
            ("tool-result", "t1"),
            ("finish-step", None),
        ]
    finally:
        stream_free(handle)


def test_a_timeout_bounds_the_wait_for_an_answer(scenarios: ScenarioServer) -> None:
    from aimux_ops.boundary.dispatch import stream_free, stream_json, stream_next_objects

    url = scenarios.add("timeout", openai_tool_calls(("t1", "weather", {"city": "Paris"})))
    p = params("openai", url, timeoutMs=300)
    p["tools"]["weather"] = {**WEATHER, "execute": True}
    handle, _ = stream_json("stream_text", orjson.dumps(p))
    assert handle is not None
    events: list[Any] = []
    while True:
        batch, _ = stream_next_objects(handle)
        if batch is None:
            break
        events.extend(batch)
    stream_free(handle)
    last = events[-1]
    if type(last) is bytes:
        last = orjson.loads(last)
    assert last["type"] == "error" and last["error"]["error"]["name"] == "AI_TimeoutError"


# -- through libaimux (a C host) ----------------------------------------------------------------

LIB = ROOT / "native" / "build" / "libaimux.so"

_C_HOST = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.aimux_stream.restype = lib.aimux_stream_tool_result.restype = ctypes.c_void_p
lib.aimux_stream.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)]
lib.aimux_stream_tool_result.argtypes = [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_char_p]
lib.aimux_stream_next.restype = ctypes.c_void_p
lib.aimux_stream_next.argtypes = [ctypes.c_uint64, ctypes.POINTER(ctypes.c_void_p)]
lib.aimux_error_code.argtypes = [ctypes.c_void_p]
lib.aimux_error_free.argtypes = [ctypes.c_void_p]
lib.aimux_string_free.argtypes = [ctypes.c_void_p]
lib.aimux_stream_free.argtypes = [ctypes.c_uint64]

def code(err):
    if not err:
        return None
    c = lib.aimux_error_code(err)
    lib.aimux_error_free(err)
    return c

h = ctypes.c_uint64()
assert code(lib.aimux_stream(b"stream_text", sys.argv[2].encode(), ctypes.byref(h))) is None
out = []
ev = ctypes.c_void_p()
while True:
    assert code(lib.aimux_stream_next(h.value, ctypes.byref(ev))) is None
    if not ev.value:
        break
    text = ctypes.string_at(ev.value).decode()
    lib.aimux_string_free(ev.value)
    out.append(text)
    if '"tool-call"' in text:
        out.append(str(code(lib.aimux_stream_tool_result(h.value, None, b"{}"))))
        out.append(str(code(lib.aimux_stream_tool_result(h.value, b"t1", None))))
        out.append(str(code(lib.aimux_stream_tool_result(h.value, b"t9", b'{"output": 1}'))))
        out.append(str(code(lib.aimux_stream_tool_result(h.value, b"t1", b'{"output": "sunny"}'))))
lib.aimux_stream_free(h.value)
out.append(str(code(lib.aimux_stream_tool_result(h.value, b"t1", b'{"output": 1}'))))
print("\n".join(out))
"""


def test_a_c_host_answers_through_aimux_stream_tool_result(
    scenarios: ScenarioServer, tmp_path: Any
) -> None:
    import os
    import subprocess
    import sys

    url = scenarios.add(
        "cabi", openai_tool_calls(("t1", "weather", {"city": "Paris"})), openai_text("Sunny.")
    )
    p = params("openai", url)
    p["tools"]["weather"] = {**WEATHER, "execute": True}
    host = tmp_path / "host.py"
    host.write_text(_C_HOST)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run(
        [sys.executable, str(host), str(LIB), orjson.dumps(p).decode()],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    i = next(n for n, line in enumerate(lines) if '"tool-call"' in line)
    assert lines[i + 1 : i + 5] == ["204", "204", "301", "None"]
    assert '"tool-result"' in lines[i + 5] and '"sunny"' in lines[i + 5]
    assert '"Sunny."' in "".join(lines)
    assert lines[-1] == "203"  # the stream was freed
    assert tool_results_sent("openai", scenarios.requests["cabi"][1]) == [
        {"id": "t1", "content": "sunny", "is_error": False}
    ]


_C_LIB = r"""
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
lib.aimux_stream.restype = lib.aimux_stream_tool_result.restype = ctypes.c_void_p
lib.aimux_stream.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)]
lib.aimux_stream_tool_result.argtypes = [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_char_p]
lib.aimux_stream_next.restype = ctypes.c_void_p
lib.aimux_stream_next.argtypes = [ctypes.c_uint64, ctypes.POINTER(ctypes.c_void_p)]
lib.aimux_error_code.argtypes = lib.aimux_error_free.argtypes = [ctypes.c_void_p]
lib.aimux_error_message.restype = ctypes.c_void_p
lib.aimux_error_message.argtypes = lib.aimux_string_free.argtypes = [ctypes.c_void_p]
lib.aimux_stream_free.argtypes = [ctypes.c_uint64]
h = ctypes.c_uint64()
assert not lib.aimux_stream(b"stream_text", sys.argv[2].encode(), ctypes.byref(h))
ev = ctypes.c_void_p()
"""
"""A C host of libaimux (ctypes): the library bound, the stream of argv[2] open as ``h``."""


def run_c_host(script: str, tmp_path: Any, p: dict[str, Any]) -> list[str]:
    """``script`` (one made of ``_C_LIB``) in a process of its own: the lines it printed."""
    import os
    import subprocess
    import sys

    host = tmp_path / "host.py"
    host.write_text(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run(
        [sys.executable, str(host), str(LIB), orjson.dumps(p).decode(), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


_C_HOST_PLAIN = (
    r"""
import sys
sys.path.insert(0, sys.argv[3])
from aimux_ops.boundary import dispatch

entered = []  # the Python side's answers (the library resolves the function at its start)
python_side = dispatch.stream_tool_result_json
def counted(handle, call_id, answer):
    entered.append(call_id)
    return python_side(handle, call_id, answer)
dispatch.stream_tool_result_json = counted
"""
    + _C_LIB
    + r"""
def answer(call_id, text):
    err = lib.aimux_stream_tool_result(h.value, call_id, text)
    if not err:
        return "taken"
    msg = ctypes.string_at(lib.aimux_error_message(err)).decode()
    got = f"{lib.aimux_error_code(err)} {msg}"
    lib.aimux_error_free(err)
    return got

out, calls = [], 0
while True:
    assert not lib.aimux_stream_next(h.value, ctypes.byref(ev))
    if not ev.value:
        break
    text = ctypes.string_at(ev.value).decode()
    lib.aimux_string_free(ev.value)
    out.append(text)
    calls += text.count('"tool-call"')
    if calls == 2:
        calls = 3
        out.append(answer(b"t2", b'{"error": {"message": "no road"}}'))
        out.append(answer(b"t1", b'{"output": {"sky": ["clear", 21.5, true, null]}}'))
        out.append(answer(b"t1", b'{"output": 1}'))
        out.append(answer(b"t2", b'{"error": {"message": "again"}}'))
lib.aimux_stream_free(h.value)
out.append("entered " + ",".join(e.decode() for e in entered))
print("\n".join(out))
"""
)


def test_a_plain_output_is_taken_without_the_python_side_in_the_order_answers_came(
    scenarios: ScenarioServer, tmp_path: Any
) -> None:
    """Through libaimux, an answer that is plainly ``{"output": V}`` for a call awaited is
    taken on the host's thread without the core's Python side (no interpreter lock to wait
    for); an error layer, and a second answer to a call, go to the Python side as ever (which
    says what is wrong); the loop reads them in the order they came, from both."""
    url = scenarios.add(
        "cabi-plain",
        openai_tool_calls(
            ("t1", "weather", {"city": "Paris"}), ("t2", "weather", {"city": "Oslo"})
        ),
        openai_text("Done."),
    )
    p = params("openai", url)
    p["tools"]["weather"] = {**WEATHER, "execute": True}
    lines = run_c_host(_C_HOST_PLAIN, tmp_path, p)
    i = next(n for n, line in enumerate(lines) if line == "taken")
    assert lines[i : i + 4] == [
        "taken",
        "taken",
        "301 invalid answer for aimux_stream_tool_result: tool_call_id: already answered: 't1'",
        "301 invalid answer for aimux_stream_tool_result: tool_call_id: already answered: 't2'",
    ]
    # only the error layer and the second answers entered the Python side
    assert lines[-1] == "entered t2,t1,t2"
    settled = [orjson.loads(line) for line in lines if '"tool-' in line and "call" not in line]
    assert [(e["type"], e["toolCallId"]) for e in settled] == [
        ("tool-error", "t2"),
        ("tool-result", "t1"),
    ]
    assert settled[1]["output"] == {"sky": ["clear", 21.5, True, None]}
    sent = tool_results_sent("openai", scenarios.requests["cabi-plain"][1])
    assert [s["id"] for s in sent] == ["t1", "t2"]
    assert "no road" in sent[1]["content"]


_C_HOST_SILENT = (
    _C_LIB
    + r"""
while True:  # no answer: the loop's wait for one ends at timeoutMs
    assert not lib.aimux_stream_next(h.value, ctypes.byref(ev))
    if not ev.value:
        break
    print(ctypes.string_at(ev.value).decode())
    lib.aimux_string_free(ev.value)
lib.aimux_stream_free(h.value)
"""
)


def test_a_timeout_bounds_the_wait_for_an_answer_through_libaimux(
    scenarios: ScenarioServer, tmp_path: Any
) -> None:
    """The loop waits for its answers beside the stream's C queue: ``timeoutMs`` ends that wait
    too (the stream's terminal event is the timeout)."""
    url = scenarios.add("cabi-silent", openai_tool_calls(("t1", "weather", {"city": "Paris"})))
    p = params("openai", url, timeoutMs=400)
    p["tools"]["weather"] = {**WEATHER, "execute": True}
    events = [orjson.loads(line) for line in run_c_host(_C_HOST_SILENT, tmp_path, p)]
    assert [e["type"] for e in events] == ["start-step", "tool-call", "error"]
    assert events[-1]["error"]["error"]["name"] == "AI_TimeoutError"


_C_HOST_ANSWERING = (
    _C_LIB
    + r"""
while True:
    assert not lib.aimux_stream_next(h.value, ctypes.byref(ev))
    if not ev.value:
        break
    text = ctypes.string_at(ev.value).decode()
    lib.aimux_string_free(ev.value)
    print(text)
    event = json.loads(text)
    if event["type"] == "tool-call":
        answer = json.dumps({"output": event["input"]["city"] + ": fine"}).encode()
        assert not lib.aimux_stream_tool_result(h.value, event["toolCallId"].encode(), answer)
lib.aimux_stream_free(h.value)
"""
)


def test_a_call_id_the_provider_reuses_at_the_next_step_is_awaited_again_through_libaimux(
    scenarios: ScenarioServer, tmp_path: Any
) -> None:
    """Some OpenAI-compatible servers number their calls anew each step: a call id announced
    again is awaited again (the answers kept beside the stream's C queue as in the core's own)."""
    url = scenarios.add(
        "cabi-reused",
        openai_tool_calls(("call_0", "weather", {"city": "Paris"})),
        openai_tool_calls(("call_0", "weather", {"city": "Oslo"})),
        openai_text("Both."),
    )
    p = params("openai", url)
    p["tools"]["weather"] = {**WEATHER, "execute": True}
    events = [orjson.loads(line) for line in run_c_host(_C_HOST_ANSWERING, tmp_path, p)]
    assert [e["output"] for e in events if e["type"] == "tool-result"] == [
        "Paris: fine",
        "Oslo: fine",
    ]
    assert events[-1]["type"] == "finish" and events[-1]["finishReason"] == "stop"
    sent = tool_results_sent("openai", scenarios.requests["cabi-reused"][2])
    assert [s["content"] for s in sent] == ["Paris: fine", "Oslo: fine"]


def test_the_c_agent_demo_runs_from_outside_the_checkout(tmp_path: Any) -> None:
    """``native/examples/agent.c`` built as a user builds a program on the library (header,
    library, rpath) and run from another directory with an empty environment."""
    import subprocess

    agent = tmp_path / "agent"
    subprocess.run(
        [
            "cc",
            "-O1",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{ROOT / 'native'}",
            str(ROOT / "native" / "examples" / "agent.c"),
            "-o",
            str(agent),
            f"-L{LIB.parent}",
            "-laimux",
            f"-Wl,-rpath,{LIB.parent}",
        ],
        check=True,
        capture_output=True,
    )
    proc = subprocess.run(
        [str(agent), str(ROOT / "recordings" / "agent.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'host answers {"error": {"message": "file not found: notes/missing.txt"}}' in proc.stdout
    assert proc.stdout.strip().endswith(
        "done after 3 steps: Your todo list: buy milk, and call Ada."
    )


def test_a_tool_the_provider_ran_is_reported_never_awaited_nor_answered(
    scenarios: ScenarioServer,
) -> None:
    """A step in which the provider ran a tool itself (Anthropic's web search: its call, its
    result and the sources) beside a host tool's call: the provider's call is reported with
    ``providerExecuted``, the loop waits only for the host's answer, and the next step sends the
    host tool's call and result alone."""
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    found = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://example.com/p", "title": "P"}],
    }
    step1 = anthropic_tool_calls(("t1", "weather", {"city": "Paris"}))
    assert isinstance(step1.body, list)
    frames = [f + b"\n\n" for f in b"".join(step1.body).split(b"\n\n") if f]
    head, rest = frames[:1], frames[1:]
    server_blocks = [
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 7, "content_block": search},
        ),
        _event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 7,
                "delta": {"type": "input_json_delta", "partial_json": '{"query": "paris"}'},
            },
        ),
        _event("content_block_stop", {"type": "content_block_stop", "index": 7}),
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 8, "content_block": found},
        ),
        _event("content_block_stop", {"type": "content_block_stop", "index": 8}),
    ]
    step1 = Reply(
        step1.status, [b"".join([*head, *server_blocks, *rest])], step1.headers, step1.content_type
    )
    url = scenarios.add("provider-ran", step1, anthropic_text("Sunny."))
    p = params("anthropic", url)
    p["tools"]["web_search"] = {"type": "provider", "id": "anthropic.web_search_20250305"}
    events = list(
        aimux_ops.stream("stream_text", p, execute={"weather": lambda a: {"forecast": "sunny"}})
    )
    ran = [e for e in events if e.get("providerExecuted")]
    assert [(e["type"], e["toolName"]) for e in ran] == [
        ("tool-call", "web_search"),
        ("tool-result", "web_search"),
    ]
    assert ran[0]["input"] == {"query": "paris"}
    assert [e["url"] for e in events if e["type"] == "source"] == ["https://example.com/p"]
    assert [e["type"] for e in events].count("finish-step") == 2
    requests = scenarios.requests["provider-ran"]
    assert len(requests) == 2
    assert assistant_calls_sent("anthropic", requests[1]) == ["t1"]
    assert [r["id"] for r in tool_results_sent("anthropic", requests[1])] == ["t1"]
    sent_tools = orjson.loads(requests[0]["body"])["tools"]
    assert {"type": "web_search_20250305", "name": "web_search"} in sent_tools


def anthropic_text_and_call(text: str, call_id: str, city: str) -> Reply:
    """One Anthropic answer, written in one piece: a text block, then a host tool's call."""
    step = anthropic_tool_calls((call_id, "weather", {"city": city}))
    assert isinstance(step.body, list)
    frames = [f + b"\n\n" for f in b"".join(step.body).split(b"\n\n") if f]
    blocks = [
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 5, "content_block": {"type": "text"}},
        ),
        _event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 5,
                "delta": {"type": "text_delta", "text": text},
            },
        ),
        _event("content_block_stop", {"type": "content_block_stop", "index": 5}),
    ]
    return Reply(step.status, [b"".join([frames[0], *blocks, *frames[1:]])], step.headers)


@pytest.mark.parametrize("calls", [1, 2])
def test_host_calls_that_arrive_with_other_events_in_one_read_are_run_at_once(
    scenarios: ScenarioServer, calls: int
) -> None:
    """The stream's end makes its host tools' calls and its finish known at once: they come in
    one read. Every call in it is announced and run before the step ends (its execute has run
    when the step's finish-step arrives), and the next step sends every result."""
    ids = [f"t{i}" for i in range(1, calls + 1)]
    step1 = openai_tool_calls(*[(i, "weather", {"city": i}) for i in ids])
    # the premise: through the op itself (no loop), the calls and the finish are one read's
    direct = get_op("stream_text")
    assert direct is not None
    plain = direct.params.model_validate(params("openai", scenarios.add(f"reads-{calls}", step1)))
    plain.stop_when = None
    reads = list(direct.handler(plain, StreamContext(batches=True)))
    assert [e["type"] for e in reads[-1]] == ["tool-call"] * calls + ["finish"]

    name = f"one-read-{calls}"
    p = params("openai", scenarios.add(name, step1, openai_text("Done.")))
    ran: list[str] = []
    kinds: list[str] = []
    ran_by_finish_step: list[str] | None = None
    for event in aimux_ops.stream(
        "stream_text", p, execute={"weather": lambda a: ran.append(a["city"]) or "ok"}
    ):
        kinds.append(event["type"])
        if event["type"] == "finish-step" and ran_by_finish_step is None:
            ran_by_finish_step = sorted(ran)
    assert ran_by_finish_step == ids  # each execute ran before its step ended
    assert kinds == [
        "start-step",
        *["tool-call"] * calls,
        *["tool-result"] * calls,
        "finish-step",
        "start-step",
        "text-delta",
        "finish-step",
        "finish",
    ]
    requests = scenarios.requests[name]
    assert len(requests) == 2
    assert [r["id"] for r in tool_results_sent("openai", requests[1])] == ids


def test_a_provider_run_call_alone_in_its_read_is_never_awaited_nor_answered(
    scenarios: ScenarioServer,
) -> None:
    """Anthropic's web search call ends in a read of its own (the server holds the rest back
    until the caller has seen it): it is reported, and neither awaited nor sent back with a
    result; the host tool's call after it is, and the loop goes on."""
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    found = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://example.com/p", "title": "P"}],
    }
    step1 = anthropic_tool_calls(("t1", "weather", {"city": "Paris"}))
    assert isinstance(step1.body, list)
    frames = [f + b"\n\n" for f in b"".join(step1.body).split(b"\n\n") if f]
    search_call = [
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": search},
        ),
        _event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"query": "paris"}'},
            },
        ),
        _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ]
    search_result = [
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 1, "content_block": found},
        ),
        _event("content_block_stop", {"type": "content_block_stop", "index": 1}),
    ]
    seen_call = threading.Event()
    host_call = [f.replace(b'"index":0', b'"index":2') for f in frames[1:]]
    step1 = Reply(
        step1.status,
        [b"".join([frames[0], *search_call]), seen_call, b"".join([*search_result, *host_call])],
        step1.headers,
        step1.content_type,
    )
    url = scenarios.add("provider-ran-alone", step1, anthropic_text("Sunny."))
    p = params("anthropic", url)
    p["tools"]["web_search"] = {"type": "provider", "id": "anthropic.web_search_20250305"}
    events = []
    for event in aimux_ops.stream(
        "stream_text", p, execute={"weather": lambda a: {"forecast": "sunny"}}
    ):
        events.append(event)
        if event.get("providerExecuted") and event["type"] == "tool-call":
            assert not seen_call.is_set()  # nothing after it was sent: it was alone in its read
            seen_call.set()
    kinds = [(e["type"], e.get("toolName")) for e in events if e["type"] != "text-delta"]
    assert kinds == [
        ("start-step", None),
        ("tool-call", "web_search"),
        ("tool-result", "web_search"),
        ("source", None),
        ("tool-call", "weather"),
        ("tool-result", "weather"),
        ("finish-step", None),
        ("start-step", None),
        ("finish-step", None),
        ("finish", None),
    ]
    requests = scenarios.requests["provider-ran-alone"]
    assert len(requests) == 2
    assert assistant_calls_sent("anthropic", requests[1]) == ["t1"]
    assert [r["id"] for r in tool_results_sent("anthropic", requests[1])] == ["t1"]


def test_a_direct_caller_of_the_handler_gets_the_loop_one_event_at_a_time(
    scenarios: ScenarioServer,
) -> None:
    """Without ``batches`` (a direct caller of the op's handler, not the dispatcher) the loop's
    events come one by one, as every stream op's do, and the loop still runs."""
    from aimux_ops.ops.answers import parse_answer

    url = scenarios.add(
        "direct", openai_tool_calls(("t1", "weather", {"city": "Paris"})), openai_text("Sunny.")
    )
    p = params("openai", url)
    p["tools"]["weather"] = {**WEATHER, "execute": True}
    direct = get_op("stream_text")
    assert direct is not None
    ctx = StreamContext()
    kinds = []
    for event in direct.handler(direct.params.model_validate(p), ctx):
        assert type(event) is dict
        kinds.append(event["type"])
        if event["type"] == "tool-call":
            ctx.answers.put(event["toolCallId"], parse_answer(b'{"output": "sunny"}'))
    assert kinds == [
        "start-step",
        "tool-call",
        "tool-result",
        "finish-step",
        "start-step",
        "text-delta",
        "finish-step",
        "finish",
    ]
