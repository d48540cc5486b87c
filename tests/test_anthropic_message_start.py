"""What an Anthropic stream's ``message_start`` holds and when one may come (``providers/
anthropic.py``), as the AI SDK's Anthropic provider reads it: ids and usage; content blocks
already in ``message.content`` (tool calls a server ran before the stream); a ``stop_reason``;
the open message's start again (ignored); another message's start while one is open (a spliced
stream: rejected). Each stream served byte for byte by the scenario server (plain and
gzip-compressed) and read with the C chunk reader and without it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from helpers import CANARY, assert_no_canary, without_headers
from op_calls import chain_names as names
from scenario_server import Reply, ScenarioServer, encoded, serve_scenarios

from aimux_ops import _speedups as _cext
from aimux_ops.boundary.dispatch import stream_free, stream_json, stream_next_json
from aimux_ops.providers import anthropic


@pytest.fixture(scope="module")
def srv() -> Iterator[ScenarioServer]:
    with serve_scenarios() as server:
        yield server


READERS = ["python"] if _cext.PURE_PYTHON else ["c-reader", "python"]


@pytest.fixture(
    params=[(r, e) for r in READERS for e in ("plain", "gzip")], ids=lambda p: "-".join(p)
)
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    reader, encoding = request.param
    if reader == "python":
        monkeypatch.setattr(anthropic, "_cchunks", None)
    elif anthropic._cchunks_module() is None:
        pytest.fail("aimux_ops._speedups._cchunks is not loaded (run make native)")
    return str(encoding)


def _events(chunks: list[dict[str, Any]]) -> list[bytes]:
    return [
        b"event: " + str(c["type"]).encode() + b"\ndata: " + orjson.dumps(c) + b"\n\n"
        for c in chunks
    ]


def read(
    srv: ScenarioServer, name: str, chunks: list[dict[str, Any]], encoding: str, **extra: Any
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """(the events, the open's envelope or None) of ``stream_text`` on ``chunks``."""
    reply = Reply(200, _events(chunks), {}, "text/event-stream; charset=utf-8")
    name = f"{name}-{encoding}"
    url = srv.add(name, reply if encoding == "plain" else encoded(reply, encoding))
    p: dict[str, Any] = {
        "model": {"provider": "anthropic", "modelId": "m-1", "baseURL": url, "apiKey": CANARY},
        "prompt": "hi",
        "maxRetries": 2,
        "retry": {"initialDelayMs": 1, "backoffFactor": 1},
        "tools": {
            n: {"description": n, "inputSchema": {"type": "object"}} for n in ("rollDie", "weather")
        },
        **extra,
    }
    handle, env = stream_json("stream_text", orjson.dumps(p))
    assert_no_canary(env or b"")
    if handle is None:
        return [], orjson.loads(env or b"null")
    events = []
    try:
        while True:
            event, err = stream_next_json(handle)
            assert err is None
            if event is None:
                break
            events.append(orjson.loads(event))
    finally:
        stream_free(handle)
    return events, None


def start(
    mid: str = "msg_1",
    content: list[Any] | None = None,
    stop: str | None = None,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    message = {"id": mid, "type": "message", "role": "assistant", "model": "claude-x"}
    message |= {"content": content or [], "stop_reason": stop, "stop_sequence": None}
    message["usage"] = usage or {"input_tokens": 25, "output_tokens": 1}
    return {"type": "message_start", "message": message}


def text_block(index: int, *pieces: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        }
    ]
    for piece in pieces:
        out.append(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": piece},
            }
        )
    return [*out, {"type": "content_block_stop", "index": index}]


def delta(stop: str | None = "end_turn", output: int = 9) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": output},
    }


STOP = {"type": "message_stop"}
ROLL = {"type": "tool_use", "id": "toolu_roll", "name": "rollDie", "input": {"player": "p2"}}


def _calls(events: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    return [
        (e["toolCallId"], e["toolName"], e["input"]) for e in events if e["type"] == "tool-call"
    ]


def test_tool_call_inside_message_start_comes_first(srv: ScenarioServer, mode: str) -> None:
    tool_block = [
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_w", "name": "weather", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"city":"Oslo"}'},
        },
        {"type": "content_block_stop", "index": 1},
    ]
    chunks = [start(content=[ROLL]), *text_block(0, "Rolling."), *tool_block, delta("tool_use")]
    events, env = read(srv, "ms-tool", [*chunks, STOP], mode)
    assert env is None, env
    assert [e["text"] for e in events if e["type"] == "text-delta"] == ["Rolling."]
    assert _calls(events) == [
        ("toolu_roll", "rollDie", {"player": "p2"}),
        ("toolu_w", "weather", {"city": "Oslo"}),
    ]
    assert events[-1]["finishReason"] == "tool-calls"


def test_stop_reason_and_usage_inside_message_start(srv: ScenarioServer, mode: str) -> None:
    usage = {"input_tokens": 7, "cache_read_input_tokens": 100, "output_tokens": 3}
    events, env = read(
        srv, "ms-stop", [start(content=[ROLL], stop="tool_use", usage=usage), STOP], mode
    )
    assert env is None, env
    assert _calls(events) == [("toolu_roll", "rollDie", {"player": "p2"})]
    finish = events[-1]
    assert finish["type"] == "finish" and finish["finishReason"] == "tool-calls"
    assert finish["usage"] == {
        "inputTokens": 107,
        "outputTokens": 3,
        "totalTokens": 110,
        "cachedInputTokens": 100,
        "inputTokenDetails": {"noCacheTokens": 7, "cacheReadTokens": 100},
    }
    assert without_headers(finish)["response"] == {"id": "msg_1", "modelId": "claude-x"}


def test_message_delta_overrides_the_start_stop_reason(srv: ScenarioServer, mode: str) -> None:
    chunks = [start(stop="end_turn"), *text_block(0, "Hi"), delta("max_tokens"), STOP]
    events, env = read(srv, "ms-override", chunks, mode)
    assert env is None and events[-1]["finishReason"] == "length", (env, events)


def test_text_inside_message_start_is_kept(srv: ScenarioServer, mode: str) -> None:
    """Beyond the AI SDK (whose schema takes only tool calls there): text is never dropped."""
    chunks = [start(content=[{"type": "text", "text": "Already "}]), *text_block(0, "here")]
    events, env = read(srv, "ms-text", [*chunks, delta(), STOP], mode)
    assert env is None, env
    assert "".join(e["text"] for e in events if e["type"] == "text-delta") == "Already here"


def test_tool_call_without_a_name_inside_message_start(srv: ScenarioServer, mode: str) -> None:
    bad = {"type": "tool_use", "id": "toolu_x", "input": {}}
    events, env = read(srv, "ms-noname", [start(content=[bad]), delta(), STOP], mode)
    assert events == [] and env is not None
    assert names(env) == ["AI_APICallError", "AI_InvalidResponseDataError"]
    assert env["error"]["isRetryable"] is False and srv.count(f"ms-noname-{mode}") == 1


def test_the_open_message_started_again_is_ignored(srv: ScenarioServer, mode: str) -> None:
    chunks = [
        start("msg_same"),
        *text_block(0, "one "),
        start("msg_same"),
        *text_block(1, "answer"),
    ]
    events, env = read(srv, "ms-same", [*chunks, delta(), STOP], mode)
    assert env is None, env
    assert "".join(e["text"] for e in events if e["type"] == "text-delta") == "one answer"
    assert events[-1]["type"] == "finish" and events[-1]["response"]["id"] == "msg_same"


def test_spliced_stream_after_events_is_one_terminal_error(srv: ScenarioServer, mode: str) -> None:
    """A second message starts while the first is open, mid tool call: the partial tool call
    and the second answer are not taken; the stream ends in one error event."""
    partial = [
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Os'},
        },
    ]
    second = start("msg_B")
    chunks = [start("msg_A"), *text_block(0, "Let me check."), *partial, second]
    chunks += [*text_block(0, "Hello from another answer"), delta(), STOP]
    events, env = read(srv, "ms-spliced", chunks, mode)
    assert env is None, env
    assert events[0] == {"type": "text-delta", "text": "Let me check."}
    assert [e["type"] for e in events[1:]] == ["error"], events
    err = events[-1]["error"]
    message = 'Received message_start for message "msg_B" while message "msg_A" is still open.'
    assert err["message"] == message
    assert err["error"]["name"] == "AI_APICallError" and err["error"]["statusCode"] == 200
    assert err["error"]["isRetryable"] is False
    assert names(err) == ["AI_APICallError", "AI_InvalidResponseDataError"]
    assert err["cause"]["message"] == message and err["cause"]["error"]["data"] == second
    assert srv.count(f"ms-spliced-{mode}") == 1


def test_spliced_stream_before_any_event_fails_the_open(srv: ScenarioServer, mode: str) -> None:
    chunks = [start("msg_A"), start("msg_B"), *text_block(0, "Hello"), delta(), STOP]
    events, env = read(srv, "ms-spliced0", chunks, mode)
    assert events == [] and env is not None
    assert names(env) == ["AI_APICallError", "AI_InvalidResponseDataError"]
    assert env["error"]["isRetryable"] is False and env["error"]["statusCode"] == 200
    assert srv.count(f"ms-spliced0-{mode}") == 1  # not retried: the same splice would come again
