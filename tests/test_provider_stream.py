"""stream_text against the real fault server: events, one terminal error event (with its numeric
status) for every mid-stream fault, retry only before the first event, timeouts, cancellation,
streamed tool calls, and the canary key in every event byte.

No wall-clock bounds: a timeout or a cancel is shown by the server seeing the client leave a
stream it would have kept open for a minute (speed is measured in bench/)."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import orjson
from fault_server import FaultServer
from helpers import provider_params as params
from hypothesis import given, settings
from hypothesis import strategies as st
from op_calls import chain_names as names
from op_calls import drain, open_stream, wait_blocked_reader

from aimux_ops.boundary.dispatch import stream_cancel, stream_free, stream_next_json


def run(p: dict[str, Any]) -> list[dict[str, Any]]:
    handle, env = open_stream(p)
    assert env is None and handle is not None, env
    return drain(handle)


def test_happy_stream(server: FaultServer) -> None:
    events = run(params(server))
    assert events[-1]["response"].pop("headers")["content-type"] == "text/event-stream"
    assert events == [
        {"type": "text-delta", "text": "Hel"},
        {"type": "text-delta", "text": "lo!"},
        {
            "type": "finish",
            "finishReason": "stop",
            "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
            "response": {"id": "chatcmpl-demo-1", "modelId": "gpt-4o-mini"},
        },
    ]
    body = server.bodies[-1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def _one_terminal_error(events: list[dict[str, Any]]) -> dict[str, Any]:
    assert [e["type"] for e in events].count("error") == 1, events
    assert events[-1]["type"] == "error", events
    assert all(e["type"] != "finish" for e in events), events
    return events[-1]["error"]  # type: ignore[no-any-return]


def test_error_frame_mid_stream(server: FaultServer) -> None:
    events = run(params(server, "mode=errframe;message=overloaded", scenario="s-ef", maxRetries=2))
    assert events[0] == {"type": "text-delta", "text": "Hel"}
    env = _one_terminal_error(events)
    assert env["error"]["name"] == "AI_APICallError" and env["message"] == "overloaded"
    assert env["error"]["statusCode"] == 200  # the observed status; none is invented
    assert env["error"]["data"]["error"]["type"] == "server_error"
    assert env["error"]["isRetryable"] is True  # from the frame's structured type
    assert server.count("s-ef") == 1  # after the first event: never retried


def test_error_frame_of_a_client_error_type_is_not_retryable(server: FaultServer) -> None:
    spec = "mode=errframe;etype=invalid_request_error;code=invalid_value"
    env = _one_terminal_error(run(params(server, spec)))
    assert env["error"]["isRetryable"] is False and env["retryable"] is False


def test_error_frame_with_status_code(server: FaultServer) -> None:
    events = run(params(server, "mode=errframe;code=503"))
    env = _one_terminal_error(events)
    assert env["error"]["statusCode"] == 503 and env["error"]["isRetryable"] is True


def test_invalid_json_chunk(server: FaultServer) -> None:
    env = _one_terminal_error(run(params(server, "mode=badchunk")))
    assert env["error"]["statusCode"] == 200 and env["error"]["isRetryable"] is False
    assert names(env) == ["AI_APICallError", "AI_JSONParseError", "orjson.JSONDecodeError"]
    assert env["cause"]["error"]["text"].startswith('{"id": "chatcmpl-demo-1"')


def test_cut_connection(server: FaultServer) -> None:
    events = run(params(server, "mode=cut", scenario="s-cut", maxRetries=2))
    assert events[0]["type"] == "text-delta"
    env = _one_terminal_error(events)
    assert env["error"]["statusCode"] == 200 and env["error"]["isRetryable"] is True
    chain = names(env)
    assert chain[0] == "AI_APICallError" and chain[1].startswith("aimux_ops.http."), chain
    assert server.count("s-cut") == 1


def test_clean_end_without_done(server: FaultServer) -> None:
    env = _one_terminal_error(run(params(server, "mode=nodone")))
    assert env["error"]["statusCode"] == 200
    assert "[DONE]" in env["message"]


def test_failure_before_first_event_is_retried(server: FaultServer) -> None:
    events = run(params(server, "mode=status;status=503;times=2", scenario="s-503", maxRetries=2))
    assert events[-1]["type"] == "finish"
    assert server.count("s-503") == 3


def test_cut_before_first_event_is_retried(server: FaultServer) -> None:
    handle, env = open_stream(params(server, "mode=cut;after=0", scenario="s-cut0", maxRetries=2))
    assert handle is None and env is not None
    assert env["error"]["name"] == "AI_RetryError"
    assert env["error"]["reason"] == "maxRetriesExceeded"
    assert server.count("s-cut0") == 3


def test_open_fails_unwrapped_when_not_retryable(server: FaultServer) -> None:
    handle, env = open_stream(
        params(server, "mode=status;status=401", scenario="s-401", maxRetries=2)
    )
    assert handle is None and env is not None
    assert env["error"]["name"] == "AI_APICallError" and env["error"]["statusCode"] == 401
    assert server.count("s-401") == 1


def test_echoed_key_in_stream_open(server: FaultServer) -> None:
    handle, env = open_stream(params(server, "mode=echo", maxRetries=0))
    assert handle is None and env is not None and env["error"]["statusCode"] == 401


def test_stall_mid_stream_times_out(server: FaultServer) -> None:
    # the server stalls a minute after the first delta: only the client's timeout ends it early
    # (2 s: the first delta must arrive first, on a loaded machine too)
    events = run(params(server, "mode=stall;stall_ms=60000", scenario="s-stall", timeoutMs=2000))
    env = _one_terminal_error(events)
    assert events[0] == {"type": "text-delta", "text": "Hel"}
    assert (env["code"], env["error"]["timeoutMs"]) == (12, 2000)
    assert env["error"]["statusCode"] == 200, "a stream error carries the status already sent"
    assert server.wait_for("stall", "s-stall") == 1
    assert server.wait_for("gone", "s-stall") == 1, "the client left the stalled stream"


def test_slow_drip_cannot_outlive_the_deadline(server: FaultServer) -> None:
    """Each read is quick (200 ms apart) but the whole stream (10 s) is not: the 2 s deadline
    ends it (an idle timeout would let all 50 deltas through)."""
    events = run(
        params(
            server,
            "mode=ok;text=" + "x" * 50 + ";parts=50;drip_ms=200",
            scenario="s-drip",
            timeoutMs=2000,
        )
    )
    env = _one_terminal_error(events)
    assert env["code"] == 12
    assert 2 <= len(events) < 51, len(events)  # some deltas, then the error: never all 50
    assert server.wait_for("gone", "s-drip") == 1, "the client left the dripping stream"


def test_cancel_wakes_a_blocked_read(server: FaultServer) -> None:
    # the server keeps the stream open a minute: only the cancel can end the blocked read early
    handle, env = open_stream(params(server, "mode=stall;stall_ms=60000", scenario="s-cancel"))
    assert handle is not None and env is None
    first, _ = stream_next_json(handle)
    assert first is not None and orjson.loads(first)["type"] == "text-delta"
    cancelled = threading.Event()

    def cancel() -> None:  # once this test's read waits on the stalled stream
        wait_blocked_reader(handle)
        cancelled.set()
        stream_cancel(handle)

    canceller = threading.Thread(target=cancel)
    canceller.start()
    event, raw_env = stream_next_json(handle)
    assert cancelled.is_set(), "the read ended before the cancel"
    assert (event, raw_env) == (None, None)  # the end, not the server's close after a minute
    assert server.wait_for("gone", "s-cancel") == 1, "the cancel closed the connection"
    canceller.join()
    stream_free(handle)
    event, raw_env = stream_next_json(handle)
    assert event is None and raw_env is not None and orjson.loads(raw_env)["code"] == 203


WEATHER = {
    "weather": {
        "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }
    }
}


def test_streamed_tool_call_is_assembled(server: FaultServer) -> None:
    events = run(params(server, "mode=tool", tools=WEATHER))
    assert events[0] == {
        "toolCallId": "call_1",
        "toolName": "weather",
        "input": {"city": "Paris"},
        "type": "tool-call",
    }
    assert events[-1]["type"] == "finish" and events[-1]["finishReason"] == "tool-calls"


def test_streamed_invalid_tool_call(server: FaultServer) -> None:
    events = run(params(server, "mode=tool;args=badjson", tools=WEATHER))
    call = events[0]
    assert call["type"] == "tool-call" and call["invalid"] is True
    assert names(call["error"])[:2] == ["AI_InvalidToolInputError", "AI_JSONParseError"]
    assert events[-1]["type"] == "finish"


def test_five_thousand_chunks(server: FaultServer) -> None:
    events = run(params(server, "mode=chunks;n=5000"))
    deltas = [e for e in events if e["type"] == "text-delta"]
    assert len(deltas) == 5000 and deltas[4999]["text"] == "w4999 "
    assert events[-1]["type"] == "finish"


def test_public_stream_api_yields_error_event(server: FaultServer) -> None:
    import aimux_ops

    events = list(aimux_ops.stream("stream_text", params(server, "mode=badchunk")))
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["error"]["statusCode"] == 200


# -- the SSE parser --------------------------------------------------------------------------------

SSE_STREAM = (
    b"data: a\n\n"
    b": a comment\r\n"
    b"event: error\r\ndata: x\r\ndata: y\r\n\r\n"
    b"id: 7\nretry: 100\n\n"
    b"data:nospace\n\n\n\n"
    b'data: {"k": "v"}\n\n'
    b"data: [DONE]\n\n"
)
SSE_EVENTS = [
    (None, b"a"),
    ("error", b"x\ny"),
    (None, b"nospace"),
    (None, b'{"k": "v"}'),
    (None, b"[DONE]"),
]


def test_sse_parser_whole() -> None:
    from aimux_ops.http.transport import iter_sse

    assert list(iter_sse(iter([SSE_STREAM]))) == SSE_EVENTS
    assert list(iter_sse(iter([b"data: tail-without-blank-line"]))) == [
        (None, b"tail-without-blank-line")
    ]


@given(st.lists(st.integers(min_value=1, max_value=len(SSE_STREAM) - 1), max_size=12))
@settings(max_examples=300, deadline=None)
def test_sse_parser_any_chunking(cuts: list[int]) -> None:
    from aimux_ops.http.transport import iter_sse

    bounds = [0, *sorted(set(cuts)), len(SSE_STREAM)]
    chunks = [SSE_STREAM[a:b] for a, b in itertools.pairwise(bounds)]
    assert list(iter_sse(iter(chunks))) == SSE_EVENTS


def test_streamed_tool_call_without_a_name(server: FaultServer) -> None:
    handle, env = open_stream(
        params(server, "mode=tool;noname=1", scenario="s-noname", tools=WEATHER, maxRetries=2)
    )
    assert handle is None and env is not None  # before the first event: fails the open
    assert server.count("s-noname") == 1  # not retryable
    assert env["error"]["statusCode"] == 200
    assert names(env)[:2] == ["AI_APICallError", "AI_InvalidResponseDataError"]
    assert env["cause"]["error"]["data"]["index"] == 0


def test_chunk_of_the_wrong_shape(server: FaultServer) -> None:
    env = _one_terminal_error(run(params(server, "mode=badshape")))
    assert env["error"]["statusCode"] == 200 and env["message"] == "Invalid stream chunk"
    assert names(env) == ["AI_APICallError", "AI_TypeValidationError", "ValueError"]
    assert "delta.content" in env["cause"]["message"]
