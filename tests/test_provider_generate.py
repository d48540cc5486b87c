"""generate_text / generate_object against the real fault server: every fault, its whole cause
chain, retry counts and delays, tools, and the canary key in every byte that leaves the core.

No wall-clock bounds on the client (speed is measured in bench/): a timeout is shown by the
server seeing the stall and the client leave it; a retry delay by the gap between two requests
on the server's clock, which a delay can only lengthen (a lower bound, never flaky under load),
and which of two delays was taken by a generous call deadline that only the wrong one would hit;
overlap by the server's barrier releasing only when every call is in flight at once."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import orjson
import pytest
from fault_server import FaultServer
from helpers import CANARY, closed_port
from helpers import provider_params as params
from op_calls import chain_names as links
from op_calls import fail_op as fail
from op_calls import run_op as run

from aimux_ops.boundary.dispatch import call_json
from aimux_ops.wire.envelope import native_chain


def all_messages(env: Any) -> list[str]:
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("message"), str):
                found.append(node["message"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(env)
    return found


# -- happy path ----------------------------------------------------------------------------------


def test_generate_text_result_and_request_body(server: FaultServer) -> None:
    p = params(
        server,
        system="Be brief.",
        maxOutputTokens=20,
        temperature=0.5,
        topP=0.9,
        stopSequences=["\n"],
        seed=7,
        presencePenalty=0.1,
        frequencyPenalty=0.2,
    )
    result, env = run("generate_text", p)
    assert env is None
    assert result is not None
    assert result["response"].pop("headers")["content-type"] == "application/json"
    assert result == {
        "text": "Hello!",
        "content": [{"type": "text", "text": "Hello!"}],
        "finishReason": "stop",
        "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
        "toolCalls": [],
        "response": {"id": "chatcmpl-demo-1", "modelId": "gpt-4o-mini"},
    }
    body = server.bodies[-1]
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello in one word."},
    ]
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["stop"], body["seed"]) == (
        20,
        0.5,
        0.9,
        ["\n"],
        7,
    )
    assert body["presence_penalty"] == 0.1 and body["frequency_penalty"] == 0.2
    assert "stream" not in body


def test_messages_are_sent_as_given(server: FaultServer) -> None:
    p = params(server)
    del p["prompt"]
    p["messages"] = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "toolCalls": [{"toolCallId": "c1", "toolName": "weather", "input": {"city": "Oslo"}}],
        },
        {"role": "tool", "toolCallId": "c1", "content": "sunny"},
    ]
    result, env = run("generate_text", p)
    assert env is None and result is not None
    sent = server.bodies[-1]["messages"]
    assert sent[1]["tool_calls"][0]["function"] == {
        "name": "weather",
        "arguments": '{"city":"Oslo"}',
    }
    assert sent[2] == {"role": "tool", "content": "sunny", "tool_call_id": "c1"}


def test_api_key_from_env(server: FaultServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIMUX_TEST_KEY", CANARY)
    p = params(server)
    del p["model"]["apiKey"]
    p["model"]["apiKeyEnv"] = "AIMUX_TEST_KEY"
    result, env = run("generate_text", p)
    assert env is None and result is not None and result["text"] == "Hello!"


def test_missing_api_key_is_load_api_key_error(
    server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    p = params(server)
    del p["model"]["apiKey"]
    env = fail("generate_text", p)
    assert (env["code"], env["error"]["name"]) == (18, "AI_LoadAPIKeyError")
    assert "OPENAI_API_KEY" in env["message"]


def test_unknown_provider(server: FaultServer) -> None:
    p = params(server)
    p["model"]["provider"] = "nope"
    env = fail("generate_text", p)
    assert (env["code"], env["error"]["name"]) == (10, "AI_NoSuchProviderError")
    assert env["error"]["providerId"] == "nope"
    assert env["error"]["availableProviders"] == ["anthropic", "openai"]


@pytest.mark.parametrize("change", ["both", "neither"])
def test_prompt_and_messages(server: FaultServer, change: str) -> None:
    p = params(server)
    if change == "both":
        p["messages"] = [{"role": "user", "content": "x"}]
    else:
        del p["prompt"]
    env = fail("generate_text", p)
    assert (env["code"], env["error"]["name"]) == (6, "AI_InvalidPromptError")


def test_unknown_param_is_rejected(server: FaultServer) -> None:
    env = fail("generate_text", params(server, bogus=1))
    assert (env["kind"], env["code"]) == ("protocol", 301)


# -- transport failures --------------------------------------------------------------------------


def test_connection_refused_keeps_every_layer(server: FaultServer) -> None:
    p = params(server, maxRetries=0)
    p["model"]["baseURL"] = f"http://127.0.0.1:{closed_port()}/v1"
    env = fail("generate_text", p)
    assert env["error"]["name"] == "AI_APICallError"
    assert env["message"].startswith("Cannot connect to API: ")
    assert "statusCode" not in env["error"]
    assert env["error"]["isRetryable"] is True and env["retryable"] is True
    assert links(env) == [
        "AI_APICallError",
        "aimux_ops.http.ConnectError",
        "ConnectionRefusedError",
    ]
    assert native_chain(env)[-1]["message"] == "[Errno 111] Connection refused"
    for msg in all_messages(env):
        assert "127.0.0.1" not in msg and "http://" not in msg, msg


def test_refused_with_retries_is_retry_error(server: FaultServer) -> None:
    p = params(server, maxRetries=2)
    p["model"]["baseURL"] = f"http://127.0.0.1:{closed_port()}/v1"
    env = fail("generate_text", p)
    assert env["error"]["name"] == "AI_RetryError"
    assert env["error"]["reason"] == "maxRetriesExceeded"
    assert len(env["error"]["errors"]) == 3
    assert links(env)[-1] == "ConnectionRefusedError"
    assert env["message"].startswith("Failed after 3 attempts. Last error: Cannot connect to API")


def test_dns_failure(server: FaultServer) -> None:
    p = params(server, maxRetries=0)
    p["model"]["baseURL"] = "http://no-such-host.invalid/v1"
    env = fail("generate_text", p)
    assert env["error"]["name"] == "AI_APICallError" and env["error"]["isRetryable"] is True
    assert links(env)[-1] == "socket.gaierror"
    for msg in all_messages(env):
        assert "no-such-host" not in msg or "http" not in msg


def test_tls_failure(server: FaultServer) -> None:
    p = params(server, maxRetries=0)
    p["model"]["baseURL"] = f"https://127.0.0.1:{server.port}/v1"  # plain HTTP behind https
    env = fail("generate_text", p)
    assert env["error"]["name"] == "AI_APICallError" and env["error"]["isRetryable"] is True
    chain = links(env)
    assert chain[:2] == ["AI_APICallError", "aimux_ops.http.ConnectError"]
    assert chain[-1].startswith("ssl.SSL"), chain


@pytest.mark.parametrize(
    ("mode", "last"),
    [
        ("reset", ["aimux_ops.http.ReadError", "ConnectionResetError"]),
        ("drop", ["aimux_ops.http.RemoteProtocolError", "EOFError"]),
    ],
)
def test_connection_reset_and_drop(server: FaultServer, mode: str, last: list[str]) -> None:
    scenario = f"t-{mode}"
    env = fail("generate_text", params(server, f"mode={mode}", scenario=scenario, maxRetries=1))
    assert env["error"]["name"] == "AI_RetryError" and env["retryable"] is True
    assert links(env)[-2:] == last, links(env)
    assert server.count(scenario) == 2


def gaps(server: FaultServer, scenario: str) -> list[float]:
    """Seconds between the scenario's consecutive requests, on the server's clock."""
    t = server.times("request", scenario)
    return [b - a for a, b in itertools.pairwise(t)]


#: a wait of N ms shows up as a gap of at least this share of it (timer rounding, nothing more)
AT_LEAST = 0.95


def test_timeout_is_code_12_and_never_retried(server: FaultServer) -> None:
    # the server stalls for a minute: only the client's own timeout can end the call early (2 s:
    # the request must reach the server first, on a loaded machine too)
    env = fail(
        "generate_text",
        params(
            server, "mode=stall;stall_ms=60000", scenario="t-stall", timeoutMs=2000, maxRetries=3
        ),
    )
    assert (env["code"], env["error"]["name"]) == (12, "AI_TimeoutError")
    assert env["error"]["timeoutMs"] == 2000
    assert links(env)[1] == "aimux_ops.http.ReadTimeout"
    assert server.count("t-stall") == 1
    # the server saw the request stall and the client give up on it (not the server ending it)
    assert server.wait_for("stall", "t-stall") == 1
    assert server.wait_for("gone", "t-stall") == 1


def test_deadline_spans_retries(server: FaultServer) -> None:
    """10 retries 400 ms apart need at least 4 s; a 1 s deadline for the whole call ends them:
    a timeout keeping the attempts made, never the RetryError of 11 attempts that a per-attempt
    timeout would give."""
    env = fail(
        "generate_text",
        params(
            server,
            "mode=status;status=503",
            scenario="t-dl",
            timeoutMs=1000,
            maxRetries=10,
            retry={"initialDelayMs": 400, "backoffFactor": 1},
        ),
    )
    # like the AI SDK: the timeout comes back as it is, not wrapped in a RetryError
    assert (env["code"], env["error"]["name"]) == (12, "AI_TimeoutError"), env["error"]["name"]
    attempts = server.count("t-dl")
    assert 1 <= attempts < 11
    assert [e["error"]["statusCode"] for e in env["error"]["errors"]] == [503] * attempts


# -- HTTP errors ---------------------------------------------------------------------------------


def test_500_json_body_retried_to_max(server: FaultServer) -> None:
    env = fail(
        "generate_text",
        params(server, "mode=status;status=500;message=boom", scenario="t-500", maxRetries=2),
    )
    assert server.count("t-500") == 3
    assert env["error"]["name"] == "AI_RetryError"
    assert env["error"]["reason"] == "maxRetriesExceeded"
    last = env["error"]["errors"][-1]
    assert last["message"] == "boom"
    assert last["error"]["statusCode"] == 500 and last["error"]["isRetryable"] is True
    assert last["error"]["data"]["error"]["message"] == "boom"
    assert last["error"]["responseHeaders"]["content-type"] == "application/json"
    assert "boom" in last["error"]["responseBody"]
    assert env["retryable"] is True


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_4xx_not_retried_and_unwrapped(server: FaultServer, status: int) -> None:
    scenario = f"t-{status}"
    env = fail(
        "generate_text",
        params(server, f"mode=status;status={status}", scenario=scenario, maxRetries=2),
    )
    assert server.count(scenario) == 1
    assert env["error"]["name"] == "AI_APICallError"
    assert env["error"]["statusCode"] == status and env["error"]["isRetryable"] is False
    assert env["retryable"] is False


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504])
def test_retryable_statuses_then_success(server: FaultServer, status: int) -> None:
    scenario = f"t-ok-after-{status}"
    result, env = run(
        "generate_text",
        params(server, f"mode=status;status={status};times=1", scenario=scenario, maxRetries=2),
    )
    assert env is None and result is not None and result["text"] == "Hello!"
    assert server.count(scenario) == 2


def test_max_retries_zero_unwrapped(server: FaultServer) -> None:
    env = fail(
        "generate_text", params(server, "mode=status;status=503", scenario="t-m0", maxRetries=0)
    )
    assert env["error"]["name"] == "AI_APICallError" and env["error"]["statusCode"] == 503
    assert server.count("t-m0") == 1


def test_error_not_retryable_after_a_retry(server: FaultServer) -> None:
    env = fail(
        "generate_text", params(server, "statuses=500,400", scenario="t-500-400", maxRetries=3)
    )
    assert server.count("t-500-400") == 2
    assert env["error"]["name"] == "AI_RetryError"
    assert env["error"]["reason"] == "errorNotRetryable"
    assert [e["error"]["statusCode"] for e in env["error"]["errors"]] == [500, 400]
    assert env["message"].startswith("Failed after 2 attempts with non-retryable error:")
    assert env["retryable"] is False


def test_non_json_error_body(server: FaultServer) -> None:
    env = fail("generate_text", params(server, "mode=status;status=502;body=text", maxRetries=0))
    assert env["message"] == "Bad Gateway"
    assert env["error"]["statusCode"] == 502 and env["error"]["isRetryable"] is True
    assert "Bad things happened" in env["error"]["responseBody"]
    assert "data" not in env["error"]


def test_other_json_error_body_uses_reason_phrase(server: FaultServer) -> None:
    env = fail(
        "generate_text", params(server, "mode=status;status=400;body=json-other", maxRetries=0)
    )
    assert env["message"] == "Bad Request"
    assert env["error"]["responseBody"] == '{"detail": "something else"}'


def test_huge_error_body_is_bounded_and_marked(server: FaultServer) -> None:
    env = fail("generate_text", params(server, "mode=status;status=500;body=big", maxRetries=0))
    body = env["error"]["responseBody"]
    assert len(body.encode()) <= 16 * 1024 and body.endswith("…[truncated]")
    assert "error.responseBody" in env["truncated"]


def test_invalid_json_200(server: FaultServer) -> None:
    env = fail("generate_text", params(server, "mode=badjson", scenario="t-badjson", maxRetries=2))
    assert server.count("t-badjson") == 1
    assert env["error"]["name"] == "AI_APICallError" and env["message"] == "Invalid JSON response"
    assert env["error"]["statusCode"] == 200 and env["error"]["isRetryable"] is False
    assert links(env) == ["AI_APICallError", "AI_JSONParseError", "orjson.JSONDecodeError"]
    assert env["cause"]["error"]["text"].startswith('{"id": "chatcmpl-1"')


def test_wrong_shape_200(server: FaultServer) -> None:
    env = fail("generate_text", params(server, "mode=shape", maxRetries=2))
    assert links(env) == ["AI_APICallError", "AI_TypeValidationError", "ValueError"]
    assert env["cause"]["code"] == 3
    assert env["cause"]["error"]["value"]["choices"] == "none"
    assert "choices" in env["cause"]["message"]


def test_echoed_key_never_leaves(server: FaultServer) -> None:
    env = fail("generate_text", params(server, "mode=echo", maxRetries=0))
    assert env["error"]["statusCode"] == 401
    assert "[REDACTED]" in env["message"]
    assert env["error"]["responseHeaders"]["x-echo-key"] == "[REDACTED]"
    assert env["error"]["responseHeaders"]["set-cookie"] == "[REDACTED]"
    assert "https://" not in env["message"]
    # and the decoded native exception carries no key either
    import aimux_ops

    with pytest.raises(aimux_ops.AimuxError) as info:
        aimux_ops.call("generate_text", params(server, "mode=echo", maxRetries=0))
    assert CANARY not in str(info.value) and CANARY not in repr(info.value.raw)


# -- retry timing --------------------------------------------------------------------------------


#: the backoff a test's server hint must win over, and the whole call's deadline: the call
#: succeeds only when the hint was taken (the backoff would run into the deadline: a timeout)
LONG_BACKOFF: dict[str, Any] = {"retry": {"initialDelayMs": 60_000}, "timeoutMs": 20_000}


def test_retry_after_ms_overrides_backoff(server: FaultServer) -> None:
    result, env = run(
        "generate_text",
        params(
            server,
            "mode=status;status=429;times=2;retry_after_ms=200",
            scenario="t-ra-ms",
            maxRetries=2,
            **LONG_BACKOFF,
        ),
    )
    assert env is None and result is not None, env
    assert server.count("t-ra-ms") == 3
    assert all(g >= 0.2 * AT_LEAST for g in gaps(server, "t-ra-ms")), gaps(server, "t-ra-ms")


def test_retry_after_seconds(server: FaultServer) -> None:
    result, env = run(
        "generate_text",
        params(
            server,
            "mode=status;status=503;times=1;retry_after=1",
            scenario="t-ra-s",
            maxRetries=1,
            **LONG_BACKOFF,
        ),
    )
    assert env is None and result is not None, env
    assert server.count("t-ra-s") == 2
    assert gaps(server, "t-ra-s")[0] >= 1.0 * AT_LEAST, gaps(server, "t-ra-s")


def test_retry_after_http_date(server: FaultServer) -> None:
    # an HTTP date has whole seconds: "now + 2 s" is 1 to 2 s after the answer that names it
    result, env = run(
        "generate_text",
        params(
            server,
            "mode=status;status=503;times=1;retry_after=date+2",
            scenario="t-ra-d",
            maxRetries=1,
            **LONG_BACKOFF,
        ),
    )
    assert env is None and result is not None, env
    assert server.count("t-ra-d") == 2
    assert gaps(server, "t-ra-d")[0] >= 1.0 * AT_LEAST, gaps(server, "t-ra-d")


def test_retry_after_over_60s_is_ignored(server: FaultServer) -> None:
    # the backoff (50 ms) is taken; the hint (2 min) would run into the 20 s deadline
    result, env = run(
        "generate_text",
        params(
            server,
            "mode=status;status=503;times=1;retry_after_ms=120000",
            scenario="t-ra-big",
            maxRetries=1,
            timeoutMs=20_000,
            retry={"initialDelayMs": 50},
        ),
    )
    assert env is None and result is not None, env
    assert server.count("t-ra-big") == 2
    assert gaps(server, "t-ra-big")[0] >= 0.05 * AT_LEAST


def test_exponential_backoff(server: FaultServer) -> None:
    env = fail(
        "generate_text",
        params(
            server,
            "mode=status;status=500",
            scenario="t-exp",
            maxRetries=2,
            retry={"initialDelayMs": 150, "backoffFactor": 2},
        ),
    )
    assert server.count("t-exp") == 3
    assert env["error"]["reason"] == "maxRetriesExceeded"
    first, second = gaps(server, "t-exp")
    assert first >= 0.15 * AT_LEAST and second >= 0.30 * AT_LEAST, (first, second)


def test_retry_after_ms_on_root_only_when_observed(server: FaultServer) -> None:
    env = fail(
        "generate_text", params(server, "mode=status;status=429;retry_after_ms=5", maxRetries=0)
    )
    assert env["retryAfterMs"] == 5
    env = fail("generate_text", params(server, "mode=status;status=429", maxRetries=0))
    assert "retryAfterMs" not in env


# -- concurrency ---------------------------------------------------------------------------------


def test_concurrent_calls_overlap(server: FaultServer) -> None:
    """The GIL is released while waiting: the server answers none of 4 calls until all 4 are in
    flight at once (calls that did not overlap get its 409 "barrier not reached" after 20 s)."""
    results: list[Any] = []

    def one() -> None:
        spec = "mode=ok;barrier=4;barrier_ms=20000"
        results.append(run("generate_text", params(server, spec, scenario="t-overlap")))

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [env for _, env in results] == [None] * 4, results
    assert server.wait_for("barrier", "t-overlap", 4) == 4


# -- tools ---------------------------------------------------------------------------------------

WEATHER = {
    "weather": {
        "description": "Weather in a city",
        "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
}


def test_tool_call(server: FaultServer) -> None:
    result, env = run(
        "generate_text", params(server, "mode=tool", tools=WEATHER, toolChoice="auto")
    )
    assert env is None and result is not None
    assert result["finishReason"] == "tool-calls"
    assert result["toolCalls"] == [
        {"toolCallId": "call_1", "toolName": "weather", "input": {"city": "Paris"}}
    ]
    sent = server.bodies[-1]
    assert sent["tools"][0]["function"]["name"] == "weather"
    assert sent["tools"][0]["function"]["parameters"]["required"] == ["city"]
    assert sent["tool_choice"] == "auto"


def test_tool_input_not_json(server: FaultServer) -> None:
    result, env = run("generate_text", params(server, "mode=tool;args=badjson", tools=WEATHER))
    assert env is None and result is not None
    call = result["toolCalls"][0]
    assert call["invalid"] is True and call["input"] == '{"city": "Par'
    err = call["error"]
    assert links(err) == ["AI_InvalidToolInputError", "AI_JSONParseError", "orjson.JSONDecodeError"]
    assert err["error"]["toolName"] == "weather" and err["error"]["toolInput"] == '{"city": "Par'


def test_tool_input_fails_schema(server: FaultServer) -> None:
    result, env = run("generate_text", params(server, 'mode=tool;args={"city":42}', tools=WEATHER))
    assert env is None and result is not None
    call = result["toolCalls"][0]
    assert call["invalid"] is True and call["input"] == {"city": 42}
    assert links(call["error"]) == [
        "AI_InvalidToolInputError",
        "AI_TypeValidationError",
        "jsonschema.ValidationError",
    ]


def test_unknown_tool(server: FaultServer) -> None:
    result, env = run("generate_text", params(server, "mode=tool;tool=launch", tools=WEATHER))
    assert env is None and result is not None
    call = result["toolCalls"][0]
    assert call["invalid"] is True and call["toolName"] == "launch"
    err = call["error"]
    assert (err["code"], err["error"]["name"]) == (15, "AI_NoSuchToolError")
    assert err["error"]["availableTools"] == ["weather"]


# -- generate_object ------------------------------------------------------------------------------

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def test_generate_object(server: FaultServer) -> None:
    result, env = run(
        "generate_object", params(server, "mode=object", schema=PERSON, schemaName="person")
    )
    assert env is None and result is not None
    assert result["object"] == {"name": "Ada", "age": 36}
    assert result["finishReason"] == "stop"
    fmt = server.bodies[-1]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "person"
    assert fmt["json_schema"]["schema"] == PERSON


def test_generate_object_accepts_tools(server: FaultServer) -> None:
    tools = {
        "lookup": {
            "description": "Look a person up.",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
        }
    }
    result, env = run("generate_object", params(server, "mode=object", schema=PERSON, tools=tools))
    assert env is None and result is not None
    assert result["object"] == {"name": "Ada", "age": 36} and result["toolCalls"] == []
    sent = server.bodies[-1]
    assert sent["tools"][0]["function"]["name"] == "lookup"
    assert sent["response_format"]["json_schema"]["schema"] == PERSON


def test_generate_object_not_json(server: FaultServer) -> None:
    env = fail("generate_object", params(server, "mode=object;json=not json {", schema=PERSON))
    assert (env["code"], env["error"]["name"]) == (21, "AI_NoObjectGeneratedError")
    assert env["error"]["text"] == "not json {" and env["error"]["finishReason"] == "stop"
    assert env["error"]["usage"]["totalTokens"] == 14
    assert links(env) == [
        "AI_NoObjectGeneratedError",
        "AI_JSONParseError",
        "orjson.JSONDecodeError",
    ]


def test_generate_object_fails_schema(server: FaultServer) -> None:
    env = fail("generate_object", params(server, 'mode=object;json={"name":5}', schema=PERSON))
    assert env["error"]["name"] == "AI_NoObjectGeneratedError"
    assert links(env) == [
        "AI_NoObjectGeneratedError",
        "AI_TypeValidationError",
        "jsonschema.ValidationError",
    ]
    assert env["cause"]["error"]["value"] == {"name": 5}


@pytest.mark.parametrize("base_url", ["ftp://127.0.0.1/v1", "not a url"])
def test_bad_base_url_is_invalid_argument(server: FaultServer, base_url: str) -> None:
    p = params(server, maxRetries=2)
    p["model"]["baseURL"] = base_url
    env = fail("generate_text", p)
    assert (env["code"], env["error"]["name"]) == (5, "AI_InvalidArgumentError"), env
    assert env["error"]["argument"] == "model.baseURL"
    assert links(env) == ["AI_InvalidArgumentError"]  # refused before any request is built


def test_key_passed_as_a_header_is_scrubbed_too(server: FaultServer) -> None:
    other = "hdr-secret-0123456789abcdef"
    p = params(
        server, "mode=status;status=400;message=bad key hdr-secret-0123456789abcdef", maxRetries=0
    )
    p["model"]["headers"]["x-api-key"] = other
    _, env = call_json("generate_text", orjson.dumps(p))
    assert env is not None and other.encode() not in env


def test_no_cookie_is_carried_between_calls(server: FaultServer) -> None:
    fail("generate_text", params(server, "mode=echo", maxRetries=0))  # answers with set-cookie
    result, env = run("generate_text", params(server))
    assert env is None and result is not None
    assert "cookie" not in server.headers[-1]
    assert server.headers[-1]["authorization"] == f"Bearer {CANARY}"
    assert server.headers[-1]["content-type"] == "application/json"


def test_http_logs_carry_no_secret(server: FaultServer) -> None:
    """httpx logged the URL (userinfo included) at INFO and httpcore the raw response headers
    (an echoed key among them) at DEBUG; the core's own client writes no log line at all, so a
    call with the key in its URL's userinfo and echoed back logs nothing that carries it."""
    import logging

    lines: list[str] = []
    http_records: list[str] = []

    class Grab(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage() + repr(record.args))
            if record.name.startswith(("aimux_ops.http", "httpx", "httpcore", "h11")):
                http_records.append(record.name)

    handler = Grab(logging.DEBUG)
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        p = params(server, "mode=echo", maxRetries=0)
        p["model"]["baseURL"] = server.base_url.replace("http://", f"http://u:{CANARY}@")
        fail("generate_text", p)
    finally:
        root.removeHandler(handler)
        root.setLevel(old)
    text = "\n".join(lines)
    assert http_records == []
    assert CANARY not in text


@pytest.mark.parametrize("op", ["generate_text", "generate_object"])
def test_invalid_json_schema_is_invalid_argument(server: FaultServer, op: str) -> None:
    bad = {"type": "no-such-type"}
    extra: dict[str, Any] = (
        {"schema": bad} if op == "generate_object" else {"tools": {"weather": {"inputSchema": bad}}}
    )
    env = fail(op, params(server, scenario=f"t-badschema-{op}", **extra))
    assert (env["code"], env["error"]["name"]) == (5, "AI_InvalidArgumentError")
    assert env["error"]["argument"] == (
        "schema" if op == "generate_object" else "tools.weather.inputSchema"
    )
    assert links(env)[1] == "jsonschema.SchemaError"
    assert server.count(f"t-badschema-{op}") == 0  # before any network


@pytest.mark.parametrize("headers", [{"x-note": "caf\u00e9"}, {"x-note": "a\nb"}])
def test_unsendable_header_is_invalid_argument(
    server: FaultServer, headers: dict[str, str]
) -> None:
    p = params(server, maxRetries=2)
    p["model"]["headers"].update(headers)
    env = fail("generate_text", p)
    assert (env["code"], env["error"]["argument"]) == (5, "model.headers"), env


def test_base_url_query_is_kept(server: FaultServer) -> None:
    p = params(server)
    p["model"]["baseURL"] = server.base_url + "/?api-version=2024-10-21"
    result, env = run("generate_text", p)
    assert env is None and result is not None and result["text"] == "Hello!"
    assert server.paths[-1] == "/v1/chat/completions?api-version=2024-10-21"


@pytest.mark.parametrize("hint", ["retry_after=date-30", "retry_after_ms=-5;retry_after=0"])
def test_unusable_hint_keeps_the_backoff(server: FaultServer, hint: str) -> None:
    """Like the AI SDK: a date in the past, or a negative retry-after-ms (which still wins over
    retry-after), leaves the exponential backoff in charge."""
    scenario = f"t-hint-{hint}"
    result, env = run(
        "generate_text",
        params(
            server,
            f"mode=status;status=503;times=1;{hint}",
            scenario=scenario,
            maxRetries=1,
            retry={"initialDelayMs": 400},
        ),
    )
    assert env is None and result is not None
    assert server.count(scenario) == 2
    assert gaps(server, scenario)[0] >= 0.4 * AT_LEAST, gaps(server, scenario)
