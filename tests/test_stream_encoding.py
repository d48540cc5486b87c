"""Compressed bodies (``aimux_ops/http/decoding.py``) against the real fault server: event
streams of both providers sent ``gzip`` / ``deflate`` (zlib-wrapped or raw) as real servers send
them, chunked and flushed per event, read on the stream loop and on the caller's thread, with the
C chunk reader and without it; the first event delivered while the server still holds the rest;
a corrupt body and an unknown encoding as clear errors; the ``Accept-Encoding`` sent names only
what is decoded."""

from __future__ import annotations

import base64
import importlib.util
import os
import zlib
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from fault_server import FaultServer
from helpers import ANTHROPIC_HELLO_METADATA, assert_no_canary, closed_port, without_headers
from helpers import provider_params as params
from op_calls import chain_names as names
from op_calls import drain

from aimux_ops import _speedups as _cext
from aimux_ops.boundary.dispatch import call_json, stream_free, stream_json, stream_next_json
from aimux_ops.http import decoding as stream_decoding
from aimux_ops.providers import anthropic, openai

PROVIDERS = {"openai": openai, "anthropic": anthropic}
MODEL = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}
RESPONSE = {
    "openai": {"id": "chatcmpl-demo-1", "modelId": "gpt-4o-mini"},
    "anthropic": {"id": "msg_01QC4g3HwBThD4BaNtBckFDJ", "modelId": "claude-3-5-haiku-latest"},
}


def _params(server: FaultServer, provider: str, fault: str, **extra: Any) -> dict[str, Any]:
    p = params(server, fault, **extra)
    p["model"]["provider"] = provider
    p["model"]["modelId"] = MODEL[provider]
    return p


def _open(p: dict[str, Any], here: bool) -> tuple[int | None, dict[str, Any] | None]:
    """``stream_text`` read on the stream loop, or on the caller's thread (``here``)."""
    handle, env = stream_json("stream_text", orjson.dumps(p), native=here)
    assert_no_canary(env or b"")
    return handle, (orjson.loads(env) if env else None)


def _run(p: dict[str, Any], here: bool) -> list[dict[str, Any]]:
    handle, env = _open(p, here)
    assert env is None and handle is not None, env
    events = drain(handle)
    finish = events[-1]
    if finish["type"] == "finish":  # the response's own headers, then the answer without them
        assert "event-stream" in finish["response"]["headers"]["content-type"]
    return without_headers(events)  # type: ignore[no-any-return]


def _hello(provider: str) -> list[dict[str, Any]]:
    finish: dict[str, Any] = {
        "type": "finish",
        "finishReason": "stop",
        "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
        "response": RESPONSE[provider],
    }
    if provider == "anthropic":
        finish["providerMetadata"] = ANTHROPIC_HELLO_METADATA
    return [{"type": "text-delta", "text": "Hel"}, {"type": "text-delta", "text": "lo!"}, finish]


class _Spy:
    """A provider's ``_cchunks`` that records the data of every read the C reader is offered."""

    def __init__(self, module: Any) -> None:
        self._module = module
        self.UNPARSED = module.UNPARSED
        self.seen: list[bytes] = []

    def read_openai(self, datas: list[bytes], *args: Any) -> Any:
        self.seen.extend(datas)
        return self._module.read_openai(datas, *args)

    def read_anthropic(self, datas: list[bytes], *args: Any) -> Any:
        self.seen.extend(datas)
        return self._module.read_anthropic(datas, *args)


#: the C reader is off under ``AIMUX_PURE_PYTHON`` (then only the Python loop runs)
READERS = ["python"] if _cext.PURE_PYTHON else ["c-reader", "python"]


@pytest.fixture(params=READERS)
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Both readers of both providers: the C chunk reader (spied on) and the Python loop alone."""
    spies: list[_Spy] = []
    for module in PROVIDERS.values():
        if request.param == "python":
            monkeypatch.setattr(module, "_cchunks", None)
            continue
        cchunks = module._cchunks_module()
        if cchunks is None:
            pytest.fail(
                "aimux_ops._speedups._cchunks is not loaded (AIMUX_PURE_PYTHON, or run make native)"
            )
        spy = _Spy(cchunks)
        spies.append(spy)
        monkeypatch.setattr(module, "_cchunks", spy)
    yield request.param
    if spies:  # the C reader read the stream, given decoded JSON (never compressed bytes)
        seen = [d for spy in spies for d in spy.seen]
        assert seen and all(d[:1] == b"{" or d == b"[DONE]" for d in seen), seen[:3]


@pytest.mark.parametrize("here", [False, True], ids=["loop", "caller-thread"])
@pytest.mark.parametrize("encoding", ["gzip", "deflate", "deflate-raw"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_compressed_stream_reads_as_the_plain_one(
    server: FaultServer, reader: str, provider: str, encoding: str, here: bool
) -> None:
    scenario = f"enc-{provider}-{encoding}-{here}-{reader}"
    p = _params(server, provider, f"mode=ok;encoding={encoding}", scenario=scenario, maxRetries=2)
    assert _run(p, here) == _hello(provider)
    assert server.count(scenario) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_compressed_tool_call_stream(server: FaultServer, reader: str, provider: str) -> None:
    p = _params(server, provider, "mode=tool;encoding=gzip", maxRetries=0)
    p["tools"] = {"weather": {"description": "w", "inputSchema": {"type": "object"}}}
    events = _run(p, False)
    calls = [e for e in events if e["type"] == "tool-call"]
    assert [(c["toolName"], c["input"]) for c in calls] == [("weather", {"city": "Paris"})]
    assert events[-1]["type"] == "finish" and events[-1]["finishReason"] == "tool-calls"


@pytest.mark.parametrize("here", [False, True], ids=["loop", "caller-thread"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_first_event_arrives_before_the_rest_is_sent(
    server: FaultServer, provider: str, here: bool
) -> None:
    """The server sends the first delta, then holds the rest until released: the first event
    is delivered while it holds (a decoder that waited for more bytes would wait for the
    release, which only comes after)."""
    gate = f"gate-{provider}-{here}"
    p = _params(server, provider, f"mode=ok;encoding=gzip;gate={gate}", scenario=gate)
    handle, env = _open(p, here)
    assert env is None and handle is not None, env
    try:
        first, err = stream_next_json(handle)
        assert err is None and first is not None
        assert orjson.loads(first) == {"type": "text-delta", "text": "Hel"}
        assert server.wait_for("held", gate) == 1  # the server holds the rest (after "Hel")
        assert not server.times("released", gate)  # and has sent none of it yet
        server.release(gate)
        rest = []
        while True:
            event, err = stream_next_json(handle)
            assert err is None
            if event is None:
                break
            rest.append(orjson.loads(event))
    finally:
        stream_free(handle)
    assert without_headers(rest) == _hello(provider)[1:]


@pytest.mark.parametrize("here", [False, True], ids=["loop", "caller-thread"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_corrupt_body_mid_stream_is_one_terminal_error(
    server: FaultServer, provider: str, here: bool
) -> None:
    # the writes before the corruption: OpenAI's role chunk and "Hel"; Anthropic's
    # message_start, content_block_start, ping and "Hel"
    after = 2 if provider == "openai" else 4
    scenario = f"corrupt-{provider}-{here}"
    p = _params(
        server,
        provider,
        f"mode=ok;encoding=corrupt;corrupt_after={after}",
        scenario=scenario,
        maxRetries=2,
    )
    events = _run(p, here)
    assert events[0] == {"type": "text-delta", "text": "Hel"}
    assert [e["type"] for e in events[1:]] == ["error"], events
    env = events[-1]["error"]
    assert env["error"]["name"] == "AI_APICallError" and env["error"]["statusCode"] == 200
    assert env["error"]["isRetryable"] is False
    assert "gzip encoding could not be decoded" in env["message"]
    assert names(env) == ["AI_APICallError", "aimux_ops.http.DecodingError", "zlib.error"]
    assert server.count(scenario) == 1  # after the first event: never retried


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_corrupt_body_before_any_event_fails_the_open(server: FaultServer, provider: str) -> None:
    scenario = f"corrupt0-{provider}"
    p = _params(server, provider, "mode=ok;encoding=corrupt", scenario=scenario, maxRetries=2)
    handle, env = _open(p, False)
    assert handle is None and env is not None
    assert names(env) == ["AI_APICallError", "aimux_ops.http.DecodingError", "zlib.error"]
    assert env["error"]["statusCode"] == 200 and env["error"]["isRetryable"] is False
    assert server.count(scenario) == 1  # never resent: the same bytes would come again


@pytest.mark.parametrize("here", [False, True], ids=["loop", "caller-thread"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_unknown_encoding_is_a_clear_error_not_retried(
    server: FaultServer, provider: str, here: bool
) -> None:
    scenario = f"bogus-{provider}-{here}"
    p = _params(server, provider, "mode=ok;encoding=bogus", scenario=scenario, maxRetries=2)
    handle, env = _open(p, here)
    assert handle is None and env is not None
    assert env["error"]["name"] == "AI_APICallError" and env["error"]["isRetryable"] is False
    assert env["error"]["statusCode"] == 200
    assert "Content-Encoding 'bogus' is not one aimux decodes" in env["message"]
    assert names(env) == ["AI_APICallError", "aimux_ops.http.UnsupportedContentEncoding"]
    assert server.count(scenario) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_single_bodies(server: FaultServer, provider: str) -> None:
    """A compressed JSON body reads as before; an unknown encoding is the same clear error."""
    result, env = call_json(
        "generate_text", orjson.dumps(_params(server, provider, "encoding=gzip"))
    )
    assert env is None and orjson.loads(result or b"")["text"] == "Hello!"
    scenario = f"bogus-gen-{provider}"
    p = _params(server, provider, "mode=ok;encoding=bogus", scenario=scenario, maxRetries=2)
    result, raw = call_json("generate_text", orjson.dumps(p))
    assert result is None and raw is not None
    env = orjson.loads(raw)
    assert env["error"]["name"] == "AI_APICallError" and env["error"]["isRetryable"] is False
    assert "Content-Encoding 'bogus'" in env["message"]
    assert server.count(scenario) == 1


def test_accept_encoding_names_only_what_is_decoded(server: FaultServer) -> None:
    _run(_params(server, "openai", "mode=ok", scenario="accept"), False)
    sent = server.headers[-1]["accept-encoding"]
    assert sent == stream_decoding.ACCEPT_ENCODING
    advertised = {e.strip() for e in sent.split(",")}
    assert {"gzip", "deflate"} <= advertised
    for name in advertised:  # every encoding asked for can be decoded
        assert stream_decoding.stream_decoder(name) is not None
    if not any(importlib.util.find_spec(m) for m in ("brotli", "brotlicffi")):
        assert "br" not in advertised  # never asked for what could not be read


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_compressed_error_body_of_a_stream_request(server: FaultServer, provider: str) -> None:
    p = _params(server, provider, "mode=status;status=400;encoding=gzip", maxRetries=0)
    handle, env = _open(p, False)
    assert handle is None and env is not None
    assert env["error"]["statusCode"] == 400 and env["error"]["data"] is not None  # parsed body


def test_recorded_compressed_stream_replays(server: FaultServer, tmp_path: Any) -> None:
    """A recording holds the decoded events (never compressed bytes) and replays them."""
    path = tmp_path / "rec.jsonl"
    p = _params(server, "anthropic", "mode=ok;encoding=gzip", maxRetries=0)
    p["recording"] = {"mode": "record", "path": str(path)}
    live = _run(p, False)
    assert live == _hello("anthropic")
    (rec,) = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    datas = [e["data"] for e in rec["exchanges"][0]["response"]["events"]]
    assert datas and all(orjson.loads(d)["type"] for d in datas)
    q = orjson.loads(orjson.dumps(p))
    q["model"].pop("apiKey")
    q["model"]["baseURL"] = f"http://127.0.0.1:{closed_port()}/v1"  # any dial would fail
    q["recording"]["mode"] = "replay"
    assert _run(q, False) == live


def test_decoder_of_each_content_encoding_value() -> None:
    """The header as servers write it: no encoding or ``identity`` (none), any case, a list of
    encodings (applied in order, so decoded last first), an unknown one refused."""
    assert stream_decoding.stream_decoder(None) is None
    assert stream_decoding.stream_decoder("identity") is None
    gz = zlib.compressobj(6, zlib.DEFLATED, 31)
    body = gz.compress(b"data: {}\n\n") + gz.flush()
    decoder = stream_decoding.stream_decoder(" GZIP ")
    assert decoder is not None and decoder.decode(body) + decoder.flush() == b"data: {}\n\n"
    inner = zlib.compress(b"twice")  # deflate first, then gzip over it
    gz = zlib.compressobj(6, zlib.DEFLATED, 31)
    both = gz.compress(inner) + gz.flush()
    decoder = stream_decoding.stream_decoder("deflate, gzip")
    assert decoder is not None
    assert (
        b"".join(decoder.decode(both[i : i + 3]) for i in range(0, len(both), 3))
        + (decoder.flush())
        == b"twice"
    )
    with pytest.raises(stream_decoding.UnsupportedContentEncoding, match="'compress'"):
        stream_decoding.stream_decoder("gzip, compress")


@pytest.mark.parametrize("encoding", ["br", "zstd"])
def test_brotli_and_zstd_streams_decode_as_they_arrive(encoding: str) -> None:
    """With brotli / zstandard installed (the dev lock has both), ``br`` and ``zstd`` are asked
    for and a stream compressed with either, each event flushed as a real server writes it, reads
    as the plain one."""
    from scenario_server import serve_scenarios, sse_reply

    assert encoding in {e.strip() for e in stream_decoding.ACCEPT_ENCODING.split(",")}
    chunks = [
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hel"}}]},
        {"id": "c1", "choices": [{"index": 0, "delta": {"content": "lo!"}}]},
        {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    with serve_scenarios() as srv:
        plain = srv.add(f"plain-{encoding}", sse_reply(chunks))
        packed = srv.add(encoding, sse_reply(chunks, encoding=encoding))  # a piece per event
        outs = []
        for url in (plain, packed):
            p = {
                "model": {"provider": "openai", "modelId": "m", "baseURL": url, "apiKey": "k"},
                "prompt": "hi",
                "maxRetries": 0,
            }
            outs.append(_run(p, False))
        assert outs[0] == outs[1]
        assert [e.get("text") for e in outs[1]][:2] == ["Hel", "lo!"]
        assert (
            srv.requests[encoding][0]["headers"]["accept-encoding"]
            == stream_decoding.ACCEPT_ENCODING
        )


# -- decompression bombs (``AIMUX_MAX_DECODED_BYTES``) -------------------------------------------

BOUND = 1024 * 1024
BOMB_ENCODINGS = ["gzip", "deflate", "br", "zstd"]


@pytest.fixture
def small_bound(monkeypatch: pytest.MonkeyPatch) -> int:
    from aimux_ops import guest

    monkeypatch.setattr(guest, "_limits", guest.limits().replace(max_decoded_bytes=BOUND))
    return BOUND


@pytest.mark.parametrize("encoding", BOMB_ENCODINGS)
def test_a_body_that_decodes_past_the_bound_is_a_clear_error(
    small_bound: int, encoding: str
) -> None:
    """A small compressed JSON body that expands to 4x the bound (whitespace: valid JSON) is
    refused, not retried; one just under the bound reads as before."""
    from scenario_server import Reply, encoded, serve_scenarios

    def answer(pad: int) -> bytes:
        return (
            orjson.dumps(
                {
                    "id": "c1",
                    "model": "m",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
                }
            )[:-1]
            + b" " * pad
            + b"}"
        )

    with serve_scenarios() as srv:
        bomb = srv.add(f"bomb-{encoding}", encoded(Reply(200, answer(4 * small_bound)), encoding))
        fine = srv.add(f"fine-{encoding}", encoded(Reply(200, answer(small_bound - 200)), encoding))
        p: dict[str, Any] = {
            "model": {"provider": "openai", "modelId": "m", "baseURL": fine, "apiKey": "k"},
            "prompt": "hi",
            "maxRetries": 2,
        }
        result, env = call_json("generate_text", orjson.dumps(p))
        assert env is None and orjson.loads(result or b"")["text"] == "hi"
        p["model"]["baseURL"] = bomb
        result, raw = call_json("generate_text", orjson.dumps(p))
        assert result is None and raw is not None
        err = orjson.loads(raw)
        assert err["error"]["name"] == "AI_APICallError" and err["error"]["statusCode"] == 200
        assert err["error"]["isRetryable"] is False
        assert f"past the bound of {small_bound} decoded bytes" in err["message"]
        assert "AIMUX_MAX_DECODED_BYTES" in err["message"]
        assert names(err) == ["AI_APICallError", "aimux_ops.http.DecodedSizeError"]
        assert srv.count(f"bomb-{encoding}") == 1  # the same bytes would come again


@pytest.mark.parametrize("here", [False, True], ids=["loop", "caller-thread"])
@pytest.mark.parametrize("encoding", BOMB_ENCODINGS)
def test_a_stream_read_that_decodes_past_the_bound_ends_after_its_events(
    small_bound: int, encoding: str, here: bool
) -> None:
    """A stream whose third write holds the event "lo!" and then a bomb (one ``data:`` line
    expanding to 4x the bound): "Hel" and "lo!" are delivered, then one terminal error; each
    read of a stream that stays under the bound (many of them, more than the bound in all)
    reads as before."""
    from scenario_server import Reply, encoded, serve_scenarios

    def chunk(text: str) -> bytes:
        delta = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": text}}]}
        return b"data: " + orjson.dumps(delta) + b"\n\n"

    pieces = [chunk("Hel"), chunk("lo!") + b"data: " + b"x" * (4 * small_bound)]
    # 2.3 MiB in all that barely compresses: no read of it decodes to more than ~100 KiB
    filler = [chunk(base64.b64encode(os.urandom(45_000)).decode()) for _ in range(40)]
    headers = {"cache-control": "no-cache"}
    with serve_scenarios() as srv:
        bomb = srv.add(
            f"sbomb-{encoding}-{here}",
            encoded(Reply(200, pieces, headers, "text/event-stream"), encoding),
        )
        long = srv.add(
            f"long-{encoding}-{here}",
            encoded(
                Reply(200, [*filler, b"data: [DONE]\n\n"], headers, "text/event-stream"), encoding
            ),
        )
        p: dict[str, Any] = {
            "model": {"provider": "openai", "modelId": "m", "baseURL": long, "apiKey": "k"},
            "prompt": "hi",
            "maxRetries": 2,
        }
        events = _run(p, here)
        assert [e["type"] for e in events] == ["text-delta"] * 40 + ["finish"], (
            events[-1].get("error", {}).get("message")
        )
        p["model"]["baseURL"] = bomb
        events = _run(p, here)
        assert [e.get("text") for e in events[:2]] == ["Hel", "lo!"]
        assert [e["type"] for e in events[2:]] == ["error"], events[2:]
        env = events[-1]["error"]
        assert env["error"]["name"] == "AI_APICallError" and env["error"]["statusCode"] == 200
        assert env["error"]["isRetryable"] is False
        assert "AIMUX_MAX_DECODED_BYTES" in env["message"]
        assert names(env) == ["AI_APICallError", "aimux_ops.http.DecodedSizeError"]
        assert srv.count(f"sbomb-{encoding}-{here}") == 1


def test_each_decoder_stops_just_past_the_bound() -> None:
    """A 64 MiB bomb of each encoding decoded with a 1 MiB bound: the error, with at most the
    bound salvaged, and no decoder expanded the whole bomb (each salvages the bound's bytes,
    the zeros before it)."""
    import brotli
    import zstandard

    plain = b"\0" * (64 * 1024 * 1024)
    bombs = {
        "gzip": zlib.compress(plain, 9, wbits=31),
        "deflate": zlib.compress(plain, 9),
        "br": brotli.compress(plain),
        "zstd": zstandard.ZstdCompressor().compress(plain),
    }
    for encoding, bomb in bombs.items():
        assert len(bomb) < 200_000
        decoder = stream_decoding.stream_decoder(encoding, BOUND)
        assert decoder is not None
        with pytest.raises(stream_decoding.DecodedSizeError) as info:
            decoder.decode(bomb)
        assert info.value.salvaged == b"\0" * BOUND, encoding  # type: ignore[attr-defined]


def test_a_corrupt_zstd_read_keeps_what_it_decoded_before_the_corruption() -> None:
    import zstandard

    good = zstandard.ZstdCompressor().compress(b"data: {}\n\n")
    decoder = stream_decoding.stream_decoder("zstd")
    assert decoder is not None
    with pytest.raises(stream_decoding.DecodingError) as info:
        decoder.decode(good + b"\x28\xb5\x2f\xfd" + b"\xff" * 32)  # a frame, then a bad one
    assert info.value.salvaged == b"data: {}\n\n"  # type: ignore[attr-defined]
