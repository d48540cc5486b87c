"""OpenAI wire behaviours where aimux-ops once disagreed with the AI SDK (issue 13), each replayed
byte for byte from the scenario server over real HTTP: ``"error": null`` chunks, tool calls that
share an index, Azure's leading ``prompt_filter_results`` chunk, integral floats in usage,
refusals, same-origin 307/308 redirects (and no key to another origin), a non-SSE 200 to a stream
request, a finish reason without ``[DONE]``, a deadline passing during retry backoff, and an
OpenAI error object in a 200 body."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from helpers import CANARY, assert_no_canary, without_headers
from scenario_server import Reply, ScenarioServer, json_reply, serve_scenarios, sse_reply

from aimux_ops.boundary.dispatch import call_json, stream_free, stream_json, stream_next_json
from aimux_ops.errors import APICallError
from aimux_ops.errors import TimeoutError as AITimeoutError
from aimux_ops.wire.envelope import decode_error, native_chain


@pytest.fixture(scope="module")
def srv() -> Iterator[ScenarioServer]:
    with serve_scenarios() as server:
        yield server


def _params(url: str, **extra: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "model": {"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": url, "apiKey": CANARY},
        "prompt": "hi",
        "maxRetries": 0,
        "retry": {"initialDelayMs": 1, "backoffFactor": 1},
    }
    p.update(extra)
    return p


def generate(url: str, **extra: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    result, env = call_json("generate_text", orjson.dumps(_params(url, **extra)))
    assert_no_canary(result or env or b"")
    return (orjson.loads(result) if result else None), (orjson.loads(env) if env else None)


def stream(url: str, **extra: Any) -> list[dict[str, Any]]:
    """The stream's events; a failure before the first event (the open fails) as one error."""
    handle, env = stream_json("stream_text", orjson.dumps(_params(url, **extra)))
    assert_no_canary(env or b"")
    if handle is None:
        return [{"type": "error", "error": orjson.loads(env or b"null")}]
    events: list[dict[str, Any]] = []
    try:
        while True:
            event, err = stream_next_json(handle)
            assert err is None
            if event is None:
                return events
            assert_no_canary(event)
            events.append(orjson.loads(event))
    finally:
        stream_free(handle)


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    out.update(top)
    return out


USAGE = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
USAGE_CHUNK = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [],
    "usage": USAGE,
}


def completion(message: dict[str, Any], finish: str = "stop", **top: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": "chatcmpl-9",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
        ],
        "usage": USAGE,
    }
    out.update(top)
    return out


def finish_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    assert events and events[-1]["type"] == "finish", events
    return events[-1]


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "text-delta")


# -- stream chunks -------------------------------------------------------------------------------


def test_error_null_is_not_an_error_frame(srv: ScenarioServer) -> None:
    url = srv.add(
        "errnull",
        sse_reply(
            [
                chunk({"role": "assistant", "content": "Hel"}, error=None),
                chunk({"content": "lo"}, error=None),
                chunk({}, "stop", error=None),
                USAGE_CHUNK,
            ]
        ),
    )
    events = stream(url)
    assert text_of(events) == "Hello"
    assert finish_of(events)["finishReason"] == "stop"


def test_two_tool_calls_sharing_an_index_are_two_calls(srv: ScenarioServer) -> None:
    def call(cid: str, name: str, args: str) -> dict[str, Any]:
        return {
            "index": 0,
            "id": cid,
            "type": "function",
            "function": {"name": name, "arguments": args},
        }

    url = srv.add(
        "sameindex",
        sse_reply(
            [
                chunk({"role": "assistant", "tool_calls": [call("call_a", "weather", "")]}),
                chunk(
                    {"tool_calls": [{"index": 0, "function": {"arguments": '{"city":"Paris"}'}}]}
                ),
                chunk({"tool_calls": [call("call_b", "weather", '{"city":"Rome"}')]}),
                chunk({}, "tool_calls"),
                USAGE_CHUNK,
            ]
        ),
    )
    tools = {"weather": {"inputSchema": {"type": "object"}}}
    calls = [e for e in stream(url, tools=tools) if e["type"] == "tool-call"]
    assert [(c["toolCallId"], c["input"]) for c in calls] == [
        ("call_a", {"city": "Paris"}),
        ("call_b", {"city": "Rome"}),
    ]
    assert not any(c.get("invalid") for c in calls)


def test_azure_prompt_filter_chunk_does_not_set_the_response_ids(srv: ScenarioServer) -> None:
    url = srv.add(
        "azure",
        sse_reply(
            [
                {
                    "choices": [],
                    "created": 0,
                    "id": "",
                    "model": "",
                    "object": "",
                    "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
                },
                chunk({"role": "assistant", "content": "Hi"}),
                chunk({}, "stop"),
                USAGE_CHUNK,
            ]
        ),
    )
    fin = finish_of(stream(url))
    assert without_headers(fin)["response"] == {"id": "chatcmpl-1", "modelId": "gpt-4o-mini"}


def test_integral_floats_in_usage_are_integers(srv: ScenarioServer) -> None:
    usage = {"prompt_tokens": 20.0, "completion_tokens": 5.0, "total_tokens": 25.0}
    url = srv.add("floats", json_reply(completion({"content": "ok"}, usage=usage)))
    result, env = generate(url)
    assert env is None and result is not None
    assert result["usage"] == {"inputTokens": 20, "outputTokens": 5, "totalTokens": 25}
    url = srv.add(
        "floats-st", sse_reply([chunk({"content": "ok"}, "stop"), {**USAGE_CHUNK, "usage": usage}])
    )
    assert finish_of(stream(url))["usage"] == {
        "inputTokens": 20,
        "outputTokens": 5,
        "totalTokens": 25,
    }


def test_refusal_is_reported_like_the_ai_sdk(srv: ScenarioServer) -> None:
    url = srv.add(
        "refusal",
        json_reply(completion({"content": None, "refusal": "I'm sorry, I cannot help with that."})),
    )
    result, env = generate(url)
    assert env is None and result is not None
    assert result["text"] == "I'm sorry, I cannot help with that."
    assert result["finishReason"] == "content-filter"
    url = srv.add(
        "refusal-st",
        sse_reply(
            [
                chunk({"role": "assistant", "content": None, "refusal": ""}),
                chunk({"refusal": "I'm sorry, "}),
                chunk({"refusal": "no."}),
                chunk({}, "stop"),
                USAGE_CHUNK,
            ]
        ),
    )
    events = stream(url)
    assert text_of(events) == "I'm sorry, no."
    assert finish_of(events)["finishReason"] == "content-filter"


# -- redirects -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [307, 308])
def test_same_origin_redirect_is_followed_with_method_and_body(
    srv: ScenarioServer, status: int
) -> None:
    name = f"redir{status}"
    url = srv.add(
        name,
        Reply(status, b"", {"location": f"/c/{name}/v2/chat/completions"}),
        json_reply(completion({"content": "moved"})),
    )
    result, env = generate(url)
    assert env is None and result is not None, env
    assert result["text"] == "moved"
    first, second = srv.requests[name]
    assert second["method"] == "POST" and second["path"] == f"/c/{name}/v2/chat/completions"
    assert second["body"] == first["body"]
    assert orjson.loads(second["body"])["messages"][0]["content"] == "hi"
    assert second["headers"]["authorization"] == f"Bearer {CANARY}"


def test_redirect_to_another_origin_never_gets_the_key(srv: ScenarioServer) -> None:
    with serve_scenarios() as other:
        other.add("elsewhere", json_reply(completion({"content": "stolen"})))
        url = srv.add(
            "xorigin", Reply(307, b"", {"location": f"{other.url('elsewhere')}/chat/completions"})
        )
        result, env = generate(url)
        assert other.requests["elsewhere"] == []  # never followed: the key never left
        assert result is None and env is not None
        assert env["error"]["name"] == "AI_APICallError"
        assert env["error"]["statusCode"] == 307 and env["error"]["isRetryable"] is False
        assert "redirect" in env["message"].lower()


# -- stream endings and non-SSE answers ----------------------------------------------------------


def test_json_completion_to_a_stream_request_is_delivered(srv: ScenarioServer) -> None:
    url = srv.add("json-to-stream", json_reply(completion({"content": "whole answer"})))
    events = stream(url, maxRetries=2)
    assert text_of(events) == "whole answer"
    fin = finish_of(events)
    assert fin["finishReason"] == "stop"
    assert fin["usage"] == {"inputTokens": 7, "outputTokens": 3, "totalTokens": 10}
    assert srv.count("json-to-stream") == 1


def test_html_200_to_a_stream_request_is_a_non_retryable_error(srv: ScenarioServer) -> None:
    url = srv.add(
        "html-to-stream",
        Reply(200, b"<html><body>Gateway login</body></html>", content_type="text/html"),
    )
    events = stream(url, maxRetries=2)
    assert srv.count("html-to-stream") == 1
    assert [e["type"] for e in events] == ["error"]
    env = events[0]["error"]
    assert env["error"]["name"] == "AI_APICallError"
    assert env["error"]["isRetryable"] is False and env["error"]["statusCode"] == 200
    assert "text/html" in env["message"] and "[DONE]" not in env["message"]


def test_finish_reason_and_usage_without_done_is_a_normal_finish(srv: ScenarioServer) -> None:
    url = srv.add(
        "nodone-finished",
        sse_reply(
            [chunk({"role": "assistant", "content": "Hi"}), chunk({}, "stop"), USAGE_CHUNK],
            done=False,
        ),
    )
    events = stream(url, maxRetries=2)
    assert text_of(events) == "Hi"
    fin = finish_of(events)
    assert fin["finishReason"] == "stop" and fin["usage"]["totalTokens"] == 10
    assert srv.count("nodone-finished") == 1


# -- retry and deadline --------------------------------------------------------------------------


def test_deadline_during_backoff_keeps_the_attempts(srv: ScenarioServer) -> None:
    url = srv.add(
        "slow-429",
        json_reply(
            {
                "error": {
                    "message": "Rate limit reached",
                    "type": "requests",
                    "code": "rate_limit_exceeded",
                }
            },
            429,
            **{"retry-after": "30"},
        ),
    )
    result, env = generate(url, maxRetries=3, timeoutMs=2000)  # the 429 arrives first, loaded too
    assert result is None and env is not None
    assert env["error"]["name"] == "AI_TimeoutError"
    chain = native_chain(env)
    cause = chain[1]
    assert cause["error"]["name"] == "AI_APICallError"
    assert cause["error"]["statusCode"] == 429
    assert cause["error"]["responseHeaders"]["retry-after"] == "30"
    assert cause["error"]["data"]["error"]["code"] == "rate_limit_exceeded"
    assert [a["error"]["statusCode"] for a in env["error"]["errors"]] == [429]
    assert srv.count("slow-429") == 1
    decoded = decode_error(orjson.dumps(env))
    assert isinstance(decoded, AITimeoutError)
    assert [e.status_code for e in decoded.errors] == [429]  # type: ignore[attr-defined]
    assert isinstance(decoded.__cause__, APICallError) and decoded.__cause__.status_code == 429


# -- error objects in 200 bodies -----------------------------------------------------------------


def test_error_object_in_a_200_body_is_an_api_call_error(srv: ScenarioServer) -> None:
    body = {
        "error": {
            "message": "The model `gpt-9` does not exist",
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }
    url = srv.add("err200", json_reply(body))
    result, env = generate(url, maxRetries=2)
    assert result is None and env is not None
    assert env["error"]["name"] == "AI_APICallError"
    assert env["message"] == "The model `gpt-9` does not exist"
    assert env["error"]["statusCode"] == 200 and env["error"]["isRetryable"] is False
    assert env["error"]["data"] == body
    assert srv.count("err200") == 1
