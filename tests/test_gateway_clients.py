"""aimux-gateway against the real Python clients (openai-python, the anthropic SDK), the gateway a
real subprocess, the upstream the fault server speaking each provider's wire format: success,
stream, a 429 with retry-after (the client's RateLimitError, the header readable), a 529 through
the Anthropic ingress (OverloadedError), a cut stream (the client's stream error, not a normal
end), translation both ways, the gateway's own errors in each format, observations apart from
errors, a disconnect cancelling upstream, a graceful shutdown, and the upstream key nowhere."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import orjson
import pytest
from fault_server import FaultServer
from gateway_proc import CLIENT_KEY, UPSTREAM_KEY, GatewayProc, model

CUT = "fault:mode=cut;after=1"
STALL = "fault:mode=stall;after=1;stall_ms=600000"
COUNTED = "fault:mode=ok;text=counted"
HDRS = "fault:mode=ok;headers=1"  # a success with a request id, a rate limit, a cookie, the key


def _models(base: str) -> dict[str, dict[str, Any]]:
    return {
        "oa-ok": model("openai", "ok", base),
        "an-ok": model("anthropic", "ok", base),
        "oa-429": model("openai", "fault:mode=status;status=429;retry_after=7", base),
        "an-429": model("anthropic", "fault:mode=status;status=429;retry_after=7", base),
        "an-529": model("anthropic", "fault:mode=status;status=529", base),
        "oa-cut": model("openai", CUT, base),
        "an-cut": model("anthropic", "fault:mode=cut;after=1;x=an", base),
        "oa-tool": model("openai", "fault:mode=tool;tool=weather", base),
        "an-tool": model("anthropic", "fault:mode=tool;tool=weather", base),
        "oa-stall": model("openai", STALL, base),
        "oa-counted": model("openai", COUNTED, base),
        "oa-echo": model("openai", "fault:mode=echoall;status=401", base),
        "an-echo": model("anthropic", "fault:mode=echoall;status=200", base),
        "an-blocks": model("anthropic", "fault:mode=blocks", base),
        "oa-hdrs": model("openai", HDRS, base),
        "an-hdrs": model("anthropic", HDRS, base),
        "an-errframe": model("anthropic", "fault:mode=errframe;after=1", base),
        "oa-code": model(
            "openai", "fault:mode=status;status=400;code=context_length_exceeded", base
        ),
    }


@pytest.fixture(scope="module")
def gw(server: FaultServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProc]:
    with GatewayProc(
        tmp_path_factory.mktemp("gw"),
        _models(server.base_url),
        limits={"maxBodyBytes": 64 * 1024, "maxHeaderBytes": 8 * 1024, "bodyTimeoutMs": 2000},
    ) as proc:
        yield proc


@pytest.fixture
def oa(gw: GatewayProc) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key=CLIENT_KEY, max_retries=0)


@pytest.fixture
def an(gw: GatewayProc) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key=CLIENT_KEY, max_retries=0)


HI = [{"role": "user", "content": "hi"}]

# -- openai-python ---------------------------------------------------------------------------------


def test_openai_success_and_stream(oa: openai.OpenAI) -> None:
    r = oa.chat.completions.create(model="oa-ok", messages=HI)  # type: ignore[arg-type]
    assert r.choices[0].message.content == "Hello!"
    assert r.choices[0].finish_reason == "stop"
    assert r.usage is not None and r.usage.total_tokens == 14
    chunks = list(
        oa.chat.completions.create(
            model="oa-ok",
            messages=HI,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello!"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 12


def test_openai_429_is_its_rate_limit_error_with_retry_after(oa: openai.OpenAI) -> None:
    for stream in (False, True):
        with pytest.raises(openai.RateLimitError) as info:
            oa.chat.completions.create(model="oa-429", messages=HI, stream=stream)  # type: ignore[call-overload]
        assert info.value.status_code == 429
        assert info.value.response.headers["retry-after"] == "7"
        assert info.value.message.endswith("Injected fault with status 429")


def test_openai_cut_stream_is_a_stream_error_not_an_end(oa: openai.OpenAI) -> None:
    got: list[str] = []
    with pytest.raises(openai.APIError) as info:
        for chunk in oa.chat.completions.create(model="oa-cut", messages=HI, stream=True):  # type: ignore[arg-type]
            got.append(chunk.choices[0].delta.content or "")
    assert "".join(got) == "Hel"
    assert isinstance(info.value.body, dict) and info.value.body["status"] == 502
    assert "could not be read" in info.value.message


def test_openai_upstream_code_passed_and_never_invented(oa: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oa.chat.completions.create(model="oa-code", messages=HI)  # type: ignore[arg-type]
    assert info.value.code == "context_length_exceeded"
    with pytest.raises(openai.RateLimitError) as info429:
        oa.chat.completions.create(model="oa-429", messages=HI)  # type: ignore[arg-type]
    assert info429.value.code is None  # the upstream gave none


def test_openai_ingress_to_anthropic_upstream(oa: openai.OpenAI, server: FaultServer) -> None:
    r = oa.chat.completions.create(model="an-ok", messages=HI)  # type: ignore[arg-type]
    assert r.choices[0].message.content == "Hello!"
    assert server.paths[-1].endswith("/messages")  # the Messages API's wire, upstream
    assert server.headers[-1]["x-api-key"] == UPSTREAM_KEY  # the gateway's key, not the client's
    assert CLIENT_KEY not in orjson.dumps(server.headers[-1]).decode()
    t = oa.chat.completions.create(
        model="an-tool",
        messages=HI,  # type: ignore[arg-type]
        tools=[{"type": "function", "function": {"name": "weather", "parameters": {}}}],
    )
    call = t.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "weather"  # type: ignore[union-attr]
    assert orjson.loads(call.function.arguments) == {"city": "Paris"}  # type: ignore[union-attr]
    assert t.choices[0].finish_reason == "tool_calls"
    sent = server.bodies[-1]
    assert sent["tools"][0]["name"] == "weather" and "max_tokens" in sent


def test_openai_missing_and_wrong_key_is_401(gw: GatewayProc) -> None:
    for key in ("", "not-a-gateway-key"):
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key=key or "x", max_retries=0)
        if not key:
            client = openai.OpenAI(
                base_url=gw.url + "/v1",
                api_key="x",
                max_retries=0,
                default_headers={"Authorization": ""},
            )
        with pytest.raises(openai.AuthenticationError) as info:
            client.chat.completions.create(model="oa-ok", messages=HI)  # type: ignore[arg-type]
        assert info.value.status_code == 401
        assert info.value.type == "authentication_error"


def test_openai_unknown_model_is_404_and_never_sent(oa: openai.OpenAI, server: FaultServer) -> None:
    before = len(server.paths)
    with pytest.raises(openai.NotFoundError) as info:
        oa.chat.completions.create(model="no-such-model", messages=HI)  # type: ignore[arg-type]
    assert info.value.param == "model"
    assert len(server.paths) == before


def test_openai_observation_is_a_header_and_a_log_line_not_an_error(
    oa: openai.OpenAI, gw: GatewayProc
) -> None:
    raw = oa.chat.completions.with_raw_response.create(
        model="oa-ok",
        messages=HI,  # type: ignore[arg-type]
        logprobs=True,
        user="someone",
        extra_body={"frobnicate\r\nx-injected: 1": True},
    )
    assert raw.status_code == 200
    assert raw.headers["x-aimux-observations"] == (
        "dropped:frobnicatex-injected1,dropped:logprobs,dropped:user"
    )
    assert "x-injected" not in raw.headers
    assert raw.parse().choices[0].message.content == "Hello!"
    want = ["dropped:frobnicatex-injected1", "dropped:logprobs", "dropped:user"]
    lines = gw.wait_log(lambda ls: any(ln.get("observations") == want for ln in ls))
    lines = [ln for ln in lines if ln.get("observations")]
    assert any(ln["observations"] == want for ln in lines)
    assert all("errorType" not in ln for ln in lines if ln["status"] == 200)


def _upstream_headers_kept(headers: httpx.Headers) -> None:
    """A success's safe upstream headers, under their names; the cookie and the echoed key not."""
    assert headers["x-request-id"] == "req_hdrs_1"
    assert headers["x-ratelimit-remaining-requests"] == "99"
    assert "set-cookie" not in headers and "x-echo-key" not in headers
    assert UPSTREAM_KEY not in str(dict(headers)) and "cookie-secret-1" not in str(dict(headers))


def test_openai_success_keeps_the_upstream_request_id_and_rate_limits(oa: openai.OpenAI) -> None:
    raw = oa.chat.completions.with_raw_response.create(model="oa-hdrs", messages=HI)  # type: ignore[arg-type]
    assert raw.parse().choices[0].message.content == "Hello!"
    _upstream_headers_kept(raw.headers)
    with oa.chat.completions.with_streaming_response.create(
        model="oa-hdrs",
        messages=HI,  # type: ignore[arg-type]
        stream=True,
    ) as streamed:
        _upstream_headers_kept(streamed.headers)
        chunks = list(streamed.parse())
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello!"


def test_anthropic_success_keeps_the_upstream_request_id_and_rate_limits(
    an: anthropic.Anthropic,
) -> None:
    raw = an.messages.with_raw_response.create(model="an-hdrs", max_tokens=64, messages=HI)  # type: ignore[arg-type]
    assert raw.parse().content[0].text == "Hello!"  # type: ignore[union-attr]
    _upstream_headers_kept(raw.headers)
    assert raw.headers["anthropic-ratelimit-requests-remaining"] == "49"
    with an.messages.with_streaming_response.create(
        model="an-hdrs",
        max_tokens=64,
        messages=HI,  # type: ignore[arg-type]
        stream=True,
    ) as streamed:
        _upstream_headers_kept(streamed.headers)
        events = list(streamed.parse())
    assert events[-1].type == "message_stop"


# -- the anthropic SDK ----------------------------------------------------------------------------


def test_anthropic_success_and_stream(an: anthropic.Anthropic) -> None:
    m = an.messages.create(model="an-ok", max_tokens=64, messages=HI)  # type: ignore[arg-type]
    assert m.content[0].text == "Hello!"  # type: ignore[union-attr]
    assert m.stop_reason == "end_turn" and m.usage.output_tokens == 2
    with an.messages.stream(model="an-ok", max_tokens=64, messages=HI) as s:  # type: ignore[arg-type]
        assert "".join(s.text_stream) == "Hello!"
        final = s.get_final_message()
    assert final.stop_reason == "end_turn"


def test_anthropic_429_is_its_rate_limit_error_with_retry_after(an: anthropic.Anthropic) -> None:
    for stream in (False, True):
        with pytest.raises(anthropic.RateLimitError) as info:
            an.messages.create(model="an-429", max_tokens=64, messages=HI, stream=stream)  # type: ignore[call-overload]
        assert info.value.status_code == 429
        assert info.value.response.headers["retry-after"] == "7"
        assert info.value.response.headers["request-id"]  # the upstream's, under its own name


def test_anthropic_529_is_overloaded(an: anthropic.Anthropic) -> None:
    for stream in (False, True):
        with pytest.raises(anthropic.OverloadedError) as info:
            an.messages.create(model="an-529", max_tokens=64, messages=HI, stream=stream)  # type: ignore[call-overload]
        assert info.value.status_code == 529
        assert info.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


def test_anthropic_cut_stream_is_a_stream_error_not_message_stop(an: anthropic.Anthropic) -> None:
    for name in ("an-cut", "oa-cut"):
        events: list[str] = []
        with pytest.raises(anthropic.APIStatusError) as info:
            for ev in an.messages.create(model=name, max_tokens=64, messages=HI, stream=True):  # type: ignore[arg-type]
                events.append(ev.type)
        assert "message_stop" not in events and "content_block_delta" in events
        assert info.value.body["error"]["status"] == 502  # type: ignore[index]


def test_anthropic_ingress_to_openai_upstream(an: anthropic.Anthropic, server: FaultServer) -> None:
    m = an.messages.create(
        model="oa-ok",
        max_tokens=64,
        system="be brief",
        messages=HI,  # type: ignore[arg-type]
    )
    assert m.content[0].text == "Hello!"  # type: ignore[union-attr]
    assert server.paths[-1].endswith("/chat/completions")
    assert server.bodies[-1]["messages"][0] == {"role": "system", "content": "be brief"}
    assert server.headers[-1]["authorization"] == f"Bearer {UPSTREAM_KEY}"
    t = an.messages.create(
        model="oa-tool",
        max_tokens=64,
        messages=HI,  # type: ignore[arg-type]
        tools=[{"name": "weather", "input_schema": {"type": "object"}}],
    )
    use = next(b for b in t.content if b.type == "tool_use")
    assert use.name == "weather" and use.input == {"city": "Paris"}  # type: ignore[union-attr]
    assert t.stop_reason == "tool_use"
    with an.messages.stream(model="oa-ok", max_tokens=64, messages=HI) as s:  # type: ignore[arg-type]
        assert "".join(s.text_stream) == "Hello!"


def test_anthropic_missing_key_is_401(gw: GatewayProc) -> None:
    client = anthropic.Anthropic(base_url=gw.url, api_key="wrong-key-123", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as info:
        client.messages.create(model="an-ok", max_tokens=64, messages=HI)  # type: ignore[arg-type]
    assert info.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    r = httpx.post(gw.url + "/v1/messages", json={"model": "an-ok"})
    assert r.status_code == 401 and r.json()["type"] == "error"


def test_anthropic_bad_input_is_400_and_never_sent(
    an: anthropic.Anthropic, server: FaultServer
) -> None:
    before = server.count(COUNTED[6:])
    bad = [
        {"role": "user", "content": [{"type": "video", "url": "x"}]},
    ]
    with pytest.raises(anthropic.BadRequestError) as info:
        an.messages.create(model="oa-counted", max_tokens=64, messages=bad)  # type: ignore[arg-type]
    assert info.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    with pytest.raises(anthropic.BadRequestError):
        an.messages.create(
            model="oa-counted",
            max_tokens=64,
            messages=HI,  # type: ignore[arg-type]
            extra_body={"temperature": "hot"},
        )
    assert server.count(COUNTED[6:]) == before
    an.messages.create(model="oa-counted", max_tokens=64, messages=HI)  # type: ignore[arg-type]
    assert server.count(COUNTED[6:]) == before + 1


# -- the gateway's own errors, raw -----------------------------------------------------------------


def _post(gw: GatewayProc, path: str, content: bytes, **headers: str) -> httpx.Response:
    hs = {"authorization": f"Bearer {CLIENT_KEY}", "content-type": "application/json", **headers}
    return httpx.post(gw.url + path, content=content, headers=hs)


def test_own_errors_in_each_format(gw: GatewayProc) -> None:
    for path in ("/v1/chat/completions", "/v1/messages"):
        anthropic_side = path == "/v1/messages"
        bad = _post(gw, path, b"{not json")
        big = _post(gw, path, b'{"model": "oa-ok", "x": "' + b"a" * 70_000 + b'"}')
        fat = _post(gw, path, b"{}", **{"x-filler": "b" * 9000})
        for r, status in ((bad, 400), (big, 413), (fat, 431)):
            assert r.status_code == status, r.text
            body = r.json()
            if anthropic_side:
                assert body["type"] == "error" and set(body["error"]) == {"type", "message"}
            else:
                assert set(body["error"]) == {"message", "type", "param", "code"}
        assert (big.json()["error"]["type"] == "request_too_large") is anthropic_side
    assert httpx.get(gw.url + "/healthz").json()["status"] == "ok"
    listed = httpx.get(gw.url + "/v1/models", headers={"authorization": f"Bearer {CLIENT_KEY}"})
    assert {m["id"] for m in listed.json()["data"]} >= {"oa-ok", "an-ok"}


# -- secrets, disconnects, shutdown ----------------------------------------------------------------


def test_upstream_key_in_no_response_and_no_log(
    oa: openai.OpenAI, an: anthropic.Anthropic, gw: GatewayProc
) -> None:
    seen: list[str] = []
    body_canary = "private-prompt-text-91b7c3"
    oa.chat.completions.create(
        model="oa-ok",
        messages=[{"role": "user", "content": body_canary}],
    )
    with pytest.raises(openai.AuthenticationError) as info:
        oa.chat.completions.with_raw_response.create(model="oa-echo", messages=HI)  # type: ignore[arg-type]
    seen += [info.value.response.text, str(dict(info.value.response.headers))]
    m = an.messages.with_raw_response.create(model="an-echo", max_tokens=64, messages=HI)  # type: ignore[arg-type]
    seen += [m.text(), str(dict(m.headers))]  # type: ignore[attr-defined]
    with an.messages.stream(model="an-echo", max_tokens=64, messages=HI) as s:  # type: ignore[arg-type]
        seen.append("".join(s.text_stream))
    assert seen[0] and seen[2] and seen[4]
    for blob in [*seen, gw.log()]:
        assert UPSTREAM_KEY not in blob
        assert CLIENT_KEY not in blob
    assert body_canary not in gw.log()  # no request body in the log


def test_disconnect_cancels_the_upstream_request(gw: GatewayProc, server: FaultServer) -> None:
    gone = server.wait_for("gone", STALL[6:], 0)
    with httpx.stream(
        "POST",
        gw.url + "/v1/chat/completions",
        json={"model": "oa-stall", "messages": HI, "stream": True},
        headers={"authorization": f"Bearer {CLIENT_KEY}"},
    ) as r:
        for line in r.iter_lines():
            if '"Hel"' in line:
                break  # the first delta: the upstream now stalls for 10 minutes
    # the client went away: the upstream request ends now, not after its stall
    assert server.wait_for("gone", STALL[6:], gone + 1) == gone + 1
    assert gw.wait_idle() == 0


def test_graceful_shutdown_finishes_the_stream_in_flight(
    server: FaultServer, tmp_path: Path
) -> None:
    gate = "fault:mode=ok;text=abcdefgh;parts=4;gate=shutdown"
    models = {"gated": model("openai", gate, server.base_url)}
    with GatewayProc(tmp_path, models, limits={"maxInFlight": 1}) as gw:
        lines: list[str] = []
        first = threading.Event()

        def read() -> None:
            with httpx.stream(
                "POST",
                gw.url + "/v1/chat/completions",
                json={"model": "gated", "messages": HI, "stream": True},
                headers={"authorization": f"Bearer {CLIENT_KEY}"},
                timeout=60,
            ) as r:
                for line in r.iter_lines():
                    lines.append(line)
                    if '"ab"' in line:
                        first.set()

        reader = threading.Thread(target=read)
        reader.start()
        assert first.wait(30)
        # full (maxInFlight 1): the next request is a clear 503 in its format, never sent
        full = httpx.post(
            gw.url + "/v1/messages",
            json={"model": "gated", "max_tokens": 5, "messages": HI},
            headers={"x-api-key": CLIENT_KEY},
        )
        assert full.status_code == 503 and full.json()["error"]["type"] == "overloaded_error"
        assert full.headers["retry-after"] == "1"
        assert server.count(gate[6:]) == 1
        assert gw.proc is not None
        gw.proc.send_signal(15)
        server.release("shutdown")
        reader.join(60)
        assert gw.terminate() == 0
    text = "".join(
        orjson.loads(ln[6:])["choices"][0]["delta"].get("content") or ""
        for ln in lines
        if ln.startswith("data: {")
    )
    assert text == "abcdefgh"
    assert [ln for ln in lines if ln][-1] == "data: [DONE]"


# -- translation details ---------------------------------------------------------------------------


def test_tool_turns_translated_both_ways(
    oa: openai.OpenAI, an: anthropic.Anthropic, server: FaultServer
) -> None:
    oa.chat.completions.create(
        model="an-ok",
        messages=[  # type: ignore[list-item]
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ],
    )
    sent = server.bodies[-1]["messages"]  # the Messages API's blocks, upstream
    assert sent[1]["content"][0] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "weather",
        "input": {"city": "Paris"},
    }
    assert sent[2]["role"] == "user" and sent[2]["content"][0]["type"] == "tool_result"
    assert sent[2]["content"][0]["tool_use_id"] == "call_1"
    an.messages.create(
        model="oa-ok",
        max_tokens=64,
        messages=[  # type: ignore[list-item]
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "weather",
                        "input": {"city": "Rome"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "rainy"}],
            },
        ],
    )
    sent = server.bodies[-1]["messages"]  # Chat Completions' messages, upstream
    call = sent[1]["tool_calls"][0]
    assert call["id"] == "toolu_1" and call["function"]["name"] == "weather"
    assert orjson.loads(call["function"]["arguments"]) == {"city": "Rome"}
    assert sent[2] == {"role": "tool", "tool_call_id": "toolu_1", "content": "rainy"}


def test_a_setting_the_upstream_cannot_take_is_an_observation(an: anthropic.Anthropic) -> None:
    raw = an.messages.with_raw_response.create(
        model="oa-ok",
        max_tokens=64,
        messages=HI,  # type: ignore[arg-type]
        extra_body={"top_k": 5, "metadata": {"user_id": "u1"}},
    )
    assert raw.status_code == 200
    assert raw.headers["x-aimux-observations"] == "dropped:metadata,unsupported:topK"
    assert raw.parse().content[0].text == "Hello!"  # type: ignore[union-attr]


def test_bad_tool_arguments_are_400_and_never_sent(oa: openai.OpenAI, server: FaultServer) -> None:
    before = server.count(COUNTED[6:])
    bad_call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{nope"}}
    with pytest.raises(openai.BadRequestError) as info:
        oa.chat.completions.create(
            model="oa-counted",
            messages=[{"role": "assistant", "tool_calls": [bad_call]}],  # type: ignore[list-item]
        )
    assert info.value.param == "messages[0].tool_calls[0].function.arguments"
    assert server.count(COUNTED[6:]) == before


def test_workers_share_the_port_and_shut_down_cleanly(server: FaultServer, tmp_path: Path) -> None:
    with GatewayProc(tmp_path, {"oa-ok": model("openai", "ok", server.base_url)}, workers=2) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key=CLIENT_KEY, max_retries=0)
        for _ in range(8):
            r = client.chat.completions.create(model="oa-ok", messages=HI)  # type: ignore[arg-type]
            assert r.choices[0].message.content == "Hello!"
        assert gw.terminate() == 0


def test_wrong_method_and_unknown_path_in_the_clients_format(gw: GatewayProc) -> None:
    auth = {"authorization": f"Bearer {CLIENT_KEY}"}
    r = httpx.get(gw.url + "/v1/chat/completions", headers=auth)
    assert r.status_code == 405 and r.json()["error"]["type"] == "invalid_request_error"
    r = httpx.get(gw.url + "/v1/messages", headers=auth)
    assert r.status_code == 405 and r.json()["type"] == "error"
    r = httpx.post(gw.url + "/v1/nothing", headers={**auth, "anthropic-version": "2023-06-01"})
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"


def test_reasoning_translated_both_ways(oa: openai.OpenAI, an: anthropic.Anthropic) -> None:
    m = an.messages.create(model="an-blocks", max_tokens=64, messages=HI)  # type: ignore[arg-type]
    thinking = next(b for b in m.content if b.type == "thinking")
    assert thinking.thinking == "The user greets me."  # type: ignore[union-attr]
    assert thinking.signature.startswith("EqQB")  # type: ignore[union-attr]
    with an.messages.stream(model="an-blocks", max_tokens=64, messages=HI) as s:  # type: ignore[arg-type]
        final = s.get_final_message()
    assert [b.type for b in final.content] == ["thinking", "text"]
    r = oa.chat.completions.create(model="an-blocks", messages=HI)  # type: ignore[arg-type]
    assert r.choices[0].message.content == "Hello!"
    assert r.choices[0].message.reasoning_content == "The user greets me."  # type: ignore[attr-defined]
    chunks = oa.chat.completions.create(model="an-blocks", messages=HI, stream=True)  # type: ignore[arg-type]
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert (
        "".join(getattr(d, "reasoning_content", None) or "" for d in deltas)
        == "The user greets me."
    )


def test_a_tool_call_the_provider_ran_reaches_no_client(
    oa: openai.OpenAI, an: anthropic.Anthropic
) -> None:
    """The upstream ran a server tool (``server_tool_use``: a ``providerExecuted`` tool call in
    the core's events): no client of either protocol, streaming or not, is asked to run it."""
    m = an.messages.create(model="an-blocks", max_tokens=64, messages=HI)  # type: ignore[arg-type]
    assert [b.type for b in m.content] == ["thinking", "text"] and m.stop_reason == "end_turn"
    with an.messages.stream(model="an-blocks", max_tokens=64, messages=HI) as s:  # type: ignore[arg-type]
        starts = [e.content_block.type for e in s if e.type == "content_block_start"]
    assert starts == ["thinking", "text"]
    r = oa.chat.completions.create(model="an-blocks", messages=HI)  # type: ignore[arg-type]
    assert r.choices[0].message.tool_calls is None and r.choices[0].finish_reason == "stop"
    chunks = list(oa.chat.completions.create(model="an-blocks", messages=HI, stream=True))  # type: ignore[arg-type]
    assert not [c for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


def test_the_gateways_retries_and_timeout(server: FaultServer, tmp_path: Path) -> None:
    base = server.base_url
    once = "mode=status;status=429;times=1;retry_after_ms=1;x=retry"
    always = "mode=status;statuses=429,503;retry_after=1;x=retry"
    stall = "mode=stall;stall_ms=20000;x=retry"
    models = {
        "once": model("anthropic", "fault:" + once, base),
        "always": model("openai", "fault:" + always, base),
        "stall": model("openai", "fault:" + stall, base),
    }
    config = {"maxRetries": 1, "timeoutMs": 3000, "retry": {"initialDelayMs": 1}}
    with GatewayProc(tmp_path, models, extra_config=config) as gw:
        client = openai.OpenAI(base_url=gw.url + "/v1", api_key=CLIENT_KEY, max_retries=0)
        r = client.chat.completions.create(model="once", messages=HI)  # type: ignore[arg-type]
        assert r.choices[0].message.content == "Hello!"  # the gateway's own retry
        assert server.count(once) == 2
        # every attempt failed: the client sees the last one (503 here), its headers kept
        with pytest.raises(openai.InternalServerError) as info:
            client.chat.completions.create(model="always", messages=HI)  # type: ignore[arg-type]
        assert info.value.status_code == 503 and info.value.response.headers["retry-after"] == "1"
        assert server.count(always) == 2
        with pytest.raises(openai.APIStatusError) as late:
            client.chat.completions.create(model="stall", messages=HI)  # type: ignore[arg-type]
        assert late.value.status_code == 504
        assert late.value.type == "timeout_error"  # type: ignore[attr-defined]


def test_an_upstream_error_event_keeps_its_meaning_mid_stream(
    oa: openai.OpenAI, an: anthropic.Anthropic
) -> None:
    with pytest.raises(anthropic.APIStatusError) as info:
        for _ev in an.messages.create(model="an-errframe", max_tokens=64, messages=HI, stream=True):  # type: ignore[arg-type]
            pass
    assert info.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]
    assert info.value.body["error"]["status"] == 529  # type: ignore[index]
    with pytest.raises(openai.APIError) as oinfo:
        for _chunk in oa.chat.completions.create(model="an-errframe", messages=HI, stream=True):  # type: ignore[arg-type]
            pass
    assert oinfo.value.body["status"] == 503 and oinfo.value.type == "server_error"  # type: ignore[index]


def test_a_flood_of_header_bytes_is_refused_without_reading_it(gw: GatewayProc) -> None:
    """httptools keeps a header whole before the app sees it: the protocol's bound
    (``gateway/server.py``) answers 431 and stops reading; without it this 32 MB head would be
    read to its end (and held) before the app's own 431."""
    import socket

    host, port = gw.url.removeprefix("http://").rsplit(":", 1)
    conn = socket.create_connection((host, int(port)))
    conn.settimeout(30)  # only keeps a broken bound from hanging the test: the asserts decide
    sent = 0
    piece = b"a" * 65536
    try:
        conn.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-flood: ")
        for _ in range(512):
            conn.sendall(piece)
            sent += len(piece)
    except OSError:
        pass  # the gateway closed the connection: it stopped reading
    answer = b""
    try:
        while chunk := conn.recv(65536):
            answer += chunk
    except OSError:
        pass
    conn.close()
    assert sent < 512 * len(piece)
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]


def test_a_trickled_body_is_408_and_never_sent(gw: GatewayProc, server: FaultServer) -> None:
    import socket

    before = len(server.paths)
    host, port = gw.url.removeprefix("http://").rsplit(":", 1)
    conn = socket.create_connection((host, int(port)))
    conn.settimeout(30)  # only keeps a broken bound from hanging the test
    head = (
        "POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        f"x-api-key: {CLIENT_KEY}\r\ncontent-length: 100\r\n\r\n"
    )
    conn.sendall(head.encode() + b'{"model": "an-ok", ')  # and the rest never comes
    answer = b""
    while b"}}" not in answer and (chunk := conn.recv(65536)):
        answer += chunk
    conn.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
    assert b'"type":"error"' in answer
    assert len(server.paths) == before


def test_anthropic_bearer_token_and_any_version_are_accepted(gw: GatewayProc) -> None:
    client = anthropic.Anthropic(
        base_url=gw.url,
        auth_token=CLIENT_KEY,  # Authorization: Bearer
        max_retries=0,
        default_headers={"anthropic-version": "2099-12-31"},
    )
    m = client.messages.create(model="an-ok", max_tokens=64, messages=HI)  # type: ignore[arg-type]
    assert m.content[0].text == "Hello!"  # type: ignore[union-attr]
