"""The OpenAI stream chunks read in C (``aimux_ops._speedups._cchunks``, DESIGN.md "Stream chunks in C")
against the Python loop (``providers/openai.py:_read_events``), the reference.

Every case is one event stream served byte for byte over real HTTP by the scenario server and
read through the dispatcher twice, with the C reader and without it: the events (text, tool
calls, finish with usage, response id and model id) and the error envelopes must be the same
bytes. Then what the C reader itself takes and hands back, and a seeded fuzz of random chunk
shapes."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, ClassVar

import orjson
import pytest
from helpers import CANARY
from scenario_server import ScenarioServer, serve_scenarios, sse_reply

from aimux_ops._speedups import PACE_MAX, new_pace, pace_after
from aimux_ops.boundary.dispatch import stream_free, stream_json, stream_next_json
from aimux_ops.providers import anthropic, openai

_CCHUNKS = openai._cchunks_module()
_MODULES = {"openai": openai, "anthropic": anthropic}


@pytest.fixture(scope="module")
def srv() -> Iterator[ScenarioServer]:
    with serve_scenarios() as server:
        yield server


@pytest.fixture(autouse=True)
def _require_c() -> None:
    if _CCHUNKS is None and os.environ.get("AIMUX_PURE_PYTHON", "") in ("", "0"):
        pytest.fail(
            "aimux_ops._speedups._cchunks is not loaded (not built or stale: run make native)"
        )


#: the server's Date header (an envelope's responseHeaders): it may change between two reads
_DATE = re.compile(rb'"date":"[^"]*"')


def _same_second(answer: bytes | None) -> bytes | None:
    return None if answer is None else _DATE.sub(b'"date":"-"', answer)


def _read(url: str, provider: str = "openai") -> list[tuple[bytes | None, bytes | None]]:
    """Every answer of ``stream_next_json`` until the end (or the open's envelope), the Date
    header left out."""
    params = {
        "model": {"provider": provider, "modelId": "m-1", "baseURL": url, "apiKey": CANARY},
        "prompt": "hi",
        "maxRetries": 0,
    }
    handle, env = stream_json("stream_text", orjson.dumps(params))
    if handle is None:
        return [(None, _same_second(env))]
    answers: list[tuple[bytes | None, bytes | None]] = []
    try:
        while True:
            event, err = stream_next_json(handle)
            answers.append((_same_second(event), _same_second(err)))
            if event is None:
                return answers
    finally:
        stream_free(handle)


def both(
    srv: ScenarioServer,
    name: str,
    frames: list[Any],
    monkeypatch: pytest.MonkeyPatch,
    provider: str = "openai",
    **kw: Any,
) -> list[dict[str, Any]]:
    """The stream of ``frames`` read with the C reader and without: the same answers, byte for
    byte; the events (an error as its envelope)."""
    url = srv.add(name, sse_reply(frames, **kw))
    module = _MODULES[provider]
    results = []
    for cchunks in (_CCHUNKS, None):
        monkeypatch.setattr(module, "_cchunks", cchunks)
        results.append(_read(url, provider))
    monkeypatch.setattr(module, "_cchunks", _CCHUNKS)
    with_c, python = results
    assert with_c == python
    events = []
    for event, err in python:
        if event is not None:
            events.append(orjson.loads(event))
        elif err is not None:
            events.append({"type": "envelope", "error": orjson.loads(err)})
    return events


def chunk(delta: Any = None, finish: Any = None, **top: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "system_fingerprint": "fp_1",
        "service_tier": "default",
        "choices": [{"index": 0, "delta": {} if delta is None else delta, "logprobs": None,
                     "finish_reason": finish}],
    }  # fmt: skip
    out.update(top)
    return out


def text(content: str, **top: Any) -> dict[str, Any]:
    return chunk({"content": content}, obfuscation="xyz", **top)


FIRST = chunk({"role": "assistant", "content": ""})
END = chunk({}, "stop")
USAGE = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [],
    "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
}
RUN = [text(f"w{i} ") for i in range(5)]
TOOL_CALL = {
    "index": 0,
    "id": "c1",
    "type": "function",
    "function": {"name": "f", "arguments": "{}"},
}


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in events if e["type"] == "text-delta"]


def last(events: list[dict[str, Any]]) -> dict[str, Any]:
    return events[-1]


# -- shapes the C reader takes, and hands back --------------------------------------------------


def test_plain_stream_with_extra_keys_at_every_level(srv: ScenarioServer, monkeypatch: Any) -> None:
    events = both(srv, "plain", [FIRST, *RUN, END, USAGE], monkeypatch)
    assert texts(events) == [f"w{i} " for i in range(5)]
    fin = last(events)
    assert fin["type"] == "finish" and fin["finishReason"] == "stop"
    assert fin["usage"]["inputTokens"] == 7


def test_plain_stream_split_across_writes_and_crlf(srv: ScenarioServer, monkeypatch: Any) -> None:
    frames = [FIRST, *RUN, text('é ✓ \u2028 "q"'), END, USAGE]
    for split, crlf in ((7, False), (1, True), (0, True)):
        events = both(srv, f"split-{split}-{crlf}", frames, monkeypatch, split=split, crlf=crlf)
        assert texts(events)[-1] == 'é ✓ \u2028 "q"'


@pytest.mark.parametrize(
    "odd",
    [
        pytest.param(chunk({"role": "assistant", "content": "R"}), id="role-and-content"),
        pytest.param(chunk({"content": ""}), id="empty-content"),
        pytest.param(chunk({"content": None}), id="null-content"),
        pytest.param(chunk({"content": 12}), id="content-a-number"),
        pytest.param(chunk({"content": ["a"]}), id="content-a-list"),
        pytest.param(chunk({"content": {"a": 1}}), id="content-a-dict"),
        pytest.param(chunk({"refusal": "no"}), id="refusal"),
        pytest.param(chunk({"content": "c", "refusal": "no"}), id="content-and-refusal"),
        pytest.param(chunk({"content": None, "refusal": 3}), id="refusal-a-number"),
        pytest.param(chunk({"tool_calls": [TOOL_CALL]}), id="tool-calls"),
        pytest.param(chunk({"content": "c", "tool_calls": "x"}), id="content-and-bad-tool-calls"),
        pytest.param(chunk({"content": "done"}, "stop"), id="finish-on-a-content-chunk"),
        pytest.param(chunk({"content": "c"}, "length"), id="length-on-a-content-chunk"),
        pytest.param(chunk({"content": "c"}, 7), id="finish-a-number"),
        pytest.param(text("u", usage={"prompt_tokens": 1, "completion_tokens": 2}), id="usage"),
        pytest.param(text("u", usage={}), id="usage-empty"),
        pytest.param(text("u", usage=0), id="usage-zero"),
        pytest.param(text("u", usage=[1]), id="usage-a-list"),
        pytest.param(text("u", usage=None), id="usage-null"),
        pytest.param(text("e", error=None), id="error-null"),
        pytest.param(text("e", error=False), id="error-false"),
        pytest.param(text("e", error={}), id="error-empty"),
        pytest.param({"error": {"message": "overloaded", "type": "server_error"}}, id="error"),
        pytest.param({"error": "plain words", "choices": []}, id="error-a-string"),
        pytest.param(b'{"choices": [', id="invalid-json"),
        pytest.param(b"\xff\xfe", id="invalid-utf8"),
        pytest.param(b"[1, 2]", id="a-list"),
        pytest.param(b"42", id="a-number"),
        pytest.param(b'"text"', id="a-string"),
        pytest.param(b"null", id="null"),
        pytest.param(b"true", id="true"),
        pytest.param(b"event: error\ndata: " + orjson.dumps(text("x")), id="named-error"),
        pytest.param(b"event: message\ndata: " + orjson.dumps(text("x")), id="named-message"),
        pytest.param(b'event: error\ndata: {"message": "m"}', id="named-error-message"),
        pytest.param(b"data: [DONE]", id="done-mid-batch"),
        pytest.param(b"data: [DONE] ", id="done-with-a-space"),
        pytest.param(chunk(choices=[]), id="choices-empty"),
        pytest.param(chunk(choices={"0": {}}), id="choices-a-dict"),
        pytest.param(chunk(choices="x"), id="choices-a-string"),
        pytest.param(chunk(choices=None), id="choices-null"),
        pytest.param(chunk(choices=[None]), id="choice-null"),
        pytest.param(chunk(choices=["x"]), id="choice-a-string"),
        pytest.param(chunk(choices=[[1]]), id="choice-a-list"),
        pytest.param(chunk(choices=[{"delta": {"content": "a"}}, {"x": 1}]), id="two-choices"),
        pytest.param(
            chunk(choices=[{"delta": {"role": "assistant"}}, {"delta": {"content": "b"}}]),
            id="text-in-the-second-choice",
        ),
        pytest.param(chunk(choices=[{"delta": None}]), id="delta-null"),
        pytest.param(chunk(choices=[{"delta": "x"}]), id="delta-a-string"),
        pytest.param(chunk(choices=[{"delta": ["content"]}]), id="delta-a-list"),
        pytest.param(chunk(choices=[{"delta": {}}]), id="delta-empty"),
        pytest.param(chunk(choices=[{}]), id="no-delta"),
        pytest.param({"choices": [{"delta": {"content": "bare"}}]}, id="no-metadata"),
        pytest.param(
            {"choices": [{"delta": {"content": "c"}}], "id": "other", "model": "m2"},
            id="other-metadata",
        ),
        pytest.param(b'{"choices":[{"delta":{"content":"a","content":"b"}}]}', id="duplicate-key"),
        pytest.param(b'{"choices":[{"delta":{"content":"a"}}],"choices":[]}', id="duplicate-top"),
    ],
)
def test_an_odd_chunk_in_a_run_of_plain_ones(
    srv: ScenarioServer, monkeypatch: Any, odd: Any, request: pytest.FixtureRequest
) -> None:
    """The odd chunk in the middle of a run (one read, and one write per event), and as the
    stream's first chunk: the same events, state and error either way."""
    name = request.node.callspec.id
    for where, frames in (
        ("mid", [FIRST, *RUN, odd, *RUN, END, USAGE]),
        ("first", [odd, *RUN, END, USAGE]),
    ):
        both(srv, f"odd-{name}-{where}", frames, monkeypatch)
        both(srv, f"odd-{name}-{where}-split", frames, monkeypatch, split=40)


def test_events_before_an_error_frame_are_delivered(srv: ScenarioServer, monkeypatch: Any) -> None:
    frames = [FIRST, *RUN, {"error": {"message": "overloaded", "type": "server_error"}}, *RUN]
    events = both(srv, "error-mid-run", frames, monkeypatch)
    assert texts(events) == [f"w{i} " for i in range(5)]
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["message"] == "overloaded"


def test_events_before_invalid_json_are_delivered(srv: ScenarioServer, monkeypatch: Any) -> None:
    events = both(srv, "json-mid-run", [FIRST, *RUN, b'{"choices": [', *RUN], monkeypatch)
    assert texts(events) == [f"w{i} " for i in range(5)]
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["message"] == "Invalid JSON in stream chunk"


def test_done_mid_batch_ends_the_stream(srv: ScenarioServer, monkeypatch: Any) -> None:
    events = both(srv, "done-mid", [FIRST, *RUN, b"data: [DONE]", *RUN, END], monkeypatch)
    assert texts(events) == [f"w{i} " for i in range(5)]
    assert last(events)["type"] == "finish"


def test_metadata_after_plain_chunks(srv: ScenarioServer, monkeypatch: Any) -> None:
    """No id / model / created at first: the chunk that first carries one sets them (the C reader
    hands it back), the stream's first state is kept after."""
    bare = [{"choices": [{"delta": {"content": f"b{i}"}}], "id": ""} for i in range(3)]
    frames = [*bare, text("x", id="first-id", model="m1"), text("y", id="second", model="m2"), END]
    events = both(srv, "late-metadata", frames, monkeypatch)
    fin = last(events)
    assert fin["response"]["id"] == "first-id" and fin["response"]["modelId"] == "m1"


def test_a_tool_call_stream(srv: ScenarioServer, monkeypatch: Any) -> None:
    def call(**fields: Any) -> dict[str, Any]:
        return chunk({"tool_calls": [{"index": 0, **fields}]})

    frames = [
        FIRST,
        text("thinking "),
        call(id="c1", type="function", function={"name": "f", "arguments": ""}),
        call(function={"arguments": '{"a"'}),
        text("mid "),
        call(function={"arguments": ": 1}"}),
        chunk({}, "tool_calls"),
        USAGE,
    ]
    events = both(srv, "tool-calls", frames, monkeypatch)
    calls = [e for e in events if e["type"] == "tool-call"]
    assert [(c["toolName"], c["input"]) for c in calls] == [("f", {"a": 1})]
    assert last(events)["finishReason"] == "tool-calls"


def test_role_in_every_delta_and_long_tool_call_runs(srv: ScenarioServer, monkeypatch: Any) -> None:
    """Ollama repeats "role" in every delta (taken in C); a long run of tool-call deltas, then
    text, then a bad chunk inside a run (the rest of the read is the Python loop's): the same
    events and errors, and the events before the error are delivered."""
    role = [chunk({"role": "assistant", "content": f"r{i} "}) for i in range(6)]
    events = both(srv, "ollama-role", [*role, END, USAGE], monkeypatch)
    assert texts(events) == [f"r{i} " for i in range(6)]

    def call(arguments: str) -> dict[str, Any]:
        return chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]})

    run = [call(str(i)) for i in range(8)]
    frames = [FIRST, chunk({"tool_calls": [TOOL_CALL]}), *run, *RUN, chunk({}, "tool_calls")]
    for split in (0, 50):
        events = both(srv, f"long-tool-run-{split}", [*frames, USAGE], monkeypatch, split=split)
        calls = [e for e in events if e["type"] == "tool-call"]
        assert [c["input"] for c in calls] == ["{}01234567"]
        bad = [*frames[:5], b'{"choices": [', *frames[5:]]
        events = both(srv, f"bad-in-tool-run-{split}", bad, monkeypatch, split=split)
        assert events[-1]["error"]["message"] == "Invalid JSON in stream chunk"


def test_stream_without_a_terminal_event(srv: ScenarioServer, monkeypatch: Any) -> None:
    events = both(srv, "no-end", [FIRST, *RUN], monkeypatch, done=False)
    assert events[-1]["type"] == "error"
    assert "terminal event" in events[-1]["error"]["message"]


# -- the C reader itself -------------------------------------------------------------------------


def _fast(datas: list[Any], seen: bool = True, names: Any = None, start: int = 0) -> Any:
    out: list[dict[str, Any]] = []
    index, parsed = _CCHUNKS.read_openai(datas, names, out, orjson.loads, start, seen)
    return index, (None if parsed is _CCHUNKS.UNPARSED else parsed), out


def _d(obj: Any) -> bytes:
    return orjson.dumps(obj)


@pytest.mark.skipif(_CCHUNKS is None, reason="the C reader is off (AIMUX_PURE_PYTHON)")
def test_the_c_reader_takes_real_openai_text_chunks() -> None:
    """The chunks real streams send between the first and the last (extra keys in the chunk and
    the choice, "usage": null, a non-error event name) are taken in C, in order."""
    datas = [_d(text(f"t{i}", usage=None, error=None)) for i in range(4)]
    index, parsed, out = _fast(datas)
    assert (index, parsed) == (4, None)
    assert out == [{"type": "text-delta", "text": f"t{i}"} for i in range(4)]
    assert [list(e) for e in out] == [["type", "text"]] * 4
    index, _, out = _fast(datas, names=[None, "message", None, "delta"])
    assert index == 4 and len(out) == 4
    assert _fast(datas, start=3)[2] == [{"type": "text-delta", "text": "t3"}]
    # before the metadata is seen: chunks without any are taken, the first with some is not
    bare = _d({"choices": [{"delta": {"content": "b"}}], "id": "", "created": 0})
    index, parsed, out = _fast([bare, bare, datas[0]], seen=False)
    assert index == 2 and parsed == text("t0", usage=None, error=None) and len(out) == 2


@pytest.mark.skipif(_CCHUNKS is None, reason="the C reader is off (AIMUX_PURE_PYTHON)")
@pytest.mark.parametrize(
    ("data", "parsed"),
    [
        (b"[DONE]", False),
        (b"{", False),
        (b"[1]", True),
        (_d(chunk({"content": ""})), True),
        (_d(chunk({"content": 1})), True),
        (_d(chunk({"content": "x"}, "stop")), True),
        (_d(text("x", usage={"a": 1})), True),
        (_d(text("x", usage=0)), True),
        (_d(text("x", error={"message": "m"})), True),
        (_d(text("x", error=False)), True),
        (_d(chunk(choices=[])), True),
        (_d(chunk(choices={})), True),
        (_d(chunk(choices=[1])), True),
        (_d(chunk(choices=[{"delta": None}])), True),
        (_d(chunk({"role": "assistant", "content": "x", "refusal": "no"})), True),
        (_d(chunk({"role": "assistant", "content": "x", "refusal": 0.5})), True),
        (_d(chunk({"content": "x", "tool_calls": [TOOL_CALL]})), True),
        (_d(chunk({"content": "x", "tool_calls": "x"})), True),
        (_d(chunk({"role": "assistant", "content": None})), True),
        (_d(chunk({"role": "assistant"})), True),
    ],
)
def test_the_c_reader_hands_back_everything_else(data: bytes, parsed: bool) -> None:
    plain = _d(text("p"))
    index, got, out = _fast([plain, data, plain])
    assert index == 1 and out == [{"type": "text-delta", "text": "p"}]
    assert got == (orjson.loads(data) if parsed else None)


@pytest.mark.skipif(_CCHUNKS is None, reason="the C reader is off (AIMUX_PURE_PYTHON)")
@pytest.mark.parametrize(
    "delta",
    [
        {"role": "assistant", "content": "x"},
        {"content": "x", "role": "assistant"},
        {"content": "x", "reasoning_content": None},
        {"content": "x", "reasoning_content": "", "reasoning": None},
        {"content": "x", "annotations": []},
        {"content": "x", "refusal": None, "tool_calls": None},
        {"content": "x", "refusal": "", "tool_calls": []},
        {"content": "x", "refusal": False, "tool_calls": {}, "function_call": {"name": "f"}},
        {"content": "x", "refusal": 0, "tool_calls": 0, "audio": {"id": "a"}},
    ],
)
def test_the_c_reader_takes_deltas_with_other_keys(delta: dict[str, Any]) -> None:
    """Keys besides "content" the Python loop does not act on ("role" in every delta, as Ollama
    sends; "reasoning_content": null; a falsy "refusal" or "tool_calls") are taken in C."""
    datas = [_d(chunk(delta)), _d(text("p"))]
    index, parsed, out = _fast(datas)
    assert (index, parsed) == (2, None)
    assert out == [{"type": "text-delta", "text": "x"}, {"type": "text-delta", "text": "p"}]


@pytest.mark.skipif(_CCHUNKS is None, reason="the C reader is off (AIMUX_PURE_PYTHON)")
def test_the_c_reader_hands_back_an_error_name_and_odd_inputs() -> None:
    plain = _d(text("p"))
    assert _fast([plain, plain], names=[None, "error"])[:2] == (1, None)
    assert _fast([plain, "text"])[:2] == (1, None)  # not bytes
    assert _fast([plain, plain], names=[None])[:2] == (1, None)  # names shorter than datas

    def boom(_data: bytes) -> Any:
        raise KeyError("not a ValueError")

    out: list[dict[str, Any]] = []
    with pytest.raises(KeyError):
        _CCHUNKS.read_openai([plain], None, out, boom, 0, True)
    with pytest.raises(TypeError):
        _CCHUNKS.read_openai((plain,), None, out, orjson.loads, 0, True)


@pytest.mark.skipif(_CCHUNKS is None, reason="the C reader is off (AIMUX_PURE_PYTHON)")
def test_the_c_reader_does_not_parse_done() -> None:
    """``[DONE]`` is handed back before it is parsed (not parsed, failed and handed back)."""
    seen: list[bytes] = []

    def loads(data: bytes) -> Any:
        seen.append(data)
        return orjson.loads(data)

    plain = _d(text("p"))
    out: list[dict[str, Any]] = []
    index, parsed = _CCHUNKS.read_openai([plain, b"[DONE]", plain], None, out, loads, 0, True)
    assert (index, parsed, seen) == (1, _CCHUNKS.UNPARSED, [plain])


@pytest.mark.parametrize(
    ("before", "after", "on"),
    [("", "1", True), ("1", "", False), ("1", "0", False)],
)
def test_pure_python_is_read_once_for_every_extension(before: str, after: str, on: bool) -> None:
    """AIMUX_PURE_PYTHON as the process first read it decides for both providers' stream
    readers, whatever it says by the first stream: they never disagree."""
    code = (
        "import os, aimux_ops\n"
        "from aimux_ops import _speedups as _cext\n"
        "from aimux_ops.providers import anthropic, openai\n"
        f"os.environ['AIMUX_PURE_PYTHON'] = {after!r}\n"
        "o = openai._cchunks_module() is not None\n"
        "os.environ['AIMUX_PURE_PYTHON'] = '1' if o else ''\n"
        "print(o, anthropic._cchunks_module() is not None)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "AIMUX_PURE_PYTHON": before},
        check=True,
    )
    if on and _CCHUNKS is None:  # this process runs pure Python: built is all we can expect
        assert len(set(out.stdout.split())) == 1, out.stdout
    else:
        assert out.stdout.split() == [str(on)] * 2


# -- fuzz: random chunk shapes -------------------------------------------------------------------


def _random_value(rng: random.Random) -> Any:
    return rng.choice([None, "", "s", "é", 0, 1, 1.5, True, False, [], [1], {}, {"a": 1}])


def _random_chunk(rng: random.Random) -> Any:
    if rng.random() < 0.05:
        return rng.choice([b"[DONE]", b"{", b"[]", b"3", b"null", b'"x"'])
    delta: Any = {}
    if rng.random() < 0.9:
        delta["content"] = rng.choice(["a", "bc", "", None, 1, "é✓", ["x"]])
    for key in ("role", "refusal", "tool_calls"):
        if rng.random() < 0.08:
            delta[key] = rng.choice(
                ["assistant", "no", None, [{"index": 0, "function": {"name": "f"}}], 2]
            )
    if rng.random() < 0.05:
        delta = _random_value(rng)
    choice: Any = {"index": 0, "delta": delta}
    if rng.random() < 0.3:
        choice["logprobs"] = None
    if rng.random() < 0.15:
        choice["finish_reason"] = rng.choice([None, "stop", "length", 1])
    choices: Any = [choice]
    roll = rng.random()
    if roll < 0.05:
        choices = _random_value(rng)
    elif roll < 0.08:
        choices = [_random_value(rng)]
    top: dict[str, Any] = {"choices": choices}
    for key, values in (
        ("id", ["chatcmpl-1", "", None, "x2"]),
        ("model", ["gpt-4o-mini", "", None]),
        ("created", [1, 0, None]),
        ("system_fingerprint", ["fp", None]),
        ("usage", [None, {}, 0, {"prompt_tokens": 1}]),
        ("error", [None, None, None, {"message": "m"}, False]),
    ):
        if rng.random() < (0.5 if key in ("id", "model", "created") else 0.1):
            top[key] = rng.choice(values)
    order = list(top.items())
    rng.shuffle(order)
    frame: Any = dict(order)
    if rng.random() < 0.03:
        frame = b"event: " + rng.choice([b"error", b"message"]) + b"\ndata: " + orjson.dumps(frame)
    return frame


def test_random_chunk_shapes_read_the_same(srv: ScenarioServer, monkeypatch: Any) -> None:
    rng = random.Random(1612)
    for case in range(150):
        frames = [_random_chunk(rng) for _ in range(rng.randint(1, 12))]
        if rng.random() < 0.5:
            frames.insert(0, FIRST)
        both(
            srv,
            f"fuzz-{case}",
            frames,
            monkeypatch,
            done=rng.random() < 0.8,
            split=rng.choice([0, 0, 13, 64]),
        )


# -- Anthropic's text deltas ---------------------------------------------------------------------


def ev(kind: str, body: Any = None, name: str | None = None) -> bytes:
    """One Anthropic frame: ``event: <name or kind>`` and its data (a dict of ``kind`` when
    ``body`` is a dict or None, else the raw bytes)."""
    data = body if isinstance(body, bytes) else orjson.dumps({"type": kind, **(body or {})})
    return b"event: " + (name or kind).encode() + b"\ndata: " + data


def td(piece: Any, **extra: Any) -> bytes:
    return ev(
        "content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": piece}, **extra}
    )


A_START = [
    ev("message_start", {"message": {"id": "msg_1", "type": "message", "role": "assistant",
                                     "model": "claude-x", "content": [], "stop_reason": None,
                                     "usage": {"input_tokens": 9, "output_tokens": 1}}}),
    ev("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
    ev("ping"),
]  # fmt: skip
A_RUN = [td(f"a{i} ") for i in range(5)]
A_END = [
    ev("content_block_stop", {"index": 0}),
    ev("message_delta", {"delta": {"stop_reason": "end_turn", "stop_sequence": None},
                         "usage": {"output_tokens": 12}}),
    ev("message_stop"),
]  # fmt: skip


def test_anthropic_plain_stream(srv: ScenarioServer, monkeypatch: Any) -> None:
    frames = [*A_START, *A_RUN, td("é ✓", extra="x"), *A_END]
    for split in (0, 9):
        events = both(
            srv, f"a-plain-{split}", frames, monkeypatch, "anthropic", done=False, split=split
        )
        assert texts(events) == [*(f"a{i} " for i in range(5)), "é ✓"]
        fin = last(events)
        assert fin["type"] == "finish" and fin["finishReason"] == "stop"
        assert fin["response"]["id"] == "msg_1" and fin["usage"]["outputTokens"] == 12


def test_anthropic_thinking_and_tool_input_streams(srv: ScenarioServer, monkeypatch: Any) -> None:
    """A thinking block (thinking and signature deltas, handed back to Python), then text, then a tool's
    input in input_json deltas (taken in C, added to the tool call's input)."""

    def delta(index: int, body: dict[str, Any]) -> bytes:
        return ev("content_block_delta", {"index": index, "delta": body})

    frames = [
        A_START[0],
        ev("content_block_start", {"index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        *(delta(0, {"type": "thinking_delta", "thinking": f"h{i}"}) for i in range(6)),
        delta(0, {"type": "signature_delta", "signature": "sig"}),
        ev("content_block_stop", {"index": 0}),
        ev("content_block_start", {"index": 1, "content_block": {"type": "text", "text": ""}}),
        *(delta(1, {"type": "text_delta", "text": f"t{i} "}) for i in range(3)),
        ev("content_block_stop", {"index": 1}),
        ev("content_block_start", {"index": 2, "content_block": {"type": "tool_use", "id": "tu",
                                                                 "name": "f", "input": {}}}),
        *(delta(2, {"type": "input_json_delta", "partial_json": p}) for p in ('{"a"', ": ", "1}")),
        ev("content_block_stop", {"index": 2}),
        ev("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        ev("message_stop"),
    ]  # fmt: skip
    for split in (0, 30):
        events = both(srv, f"a-think-{split}", frames, monkeypatch, "anthropic", done=False,
                      split=split)  # fmt: skip
        assert texts(events) == ["t0 ", "t1 ", "t2 "]
        calls = [e for e in events if e["type"] == "tool-call"]
        assert [(c["toolName"], c["input"]) for c in calls] == [("f", {"a": 1})]


@pytest.mark.parametrize(
    "odd",
    [
        pytest.param(td(""), id="empty-text"),
        pytest.param(td(None), id="null-text"),
        pytest.param(td(5), id="text-a-number"),
        pytest.param(td("x", name="error"), id="named-error"),
        pytest.param(td("x", name="other"), id="named-other"),
        pytest.param(
            ev("content_block_delta", {"index": 0, "delta": {"type": "text_delta"}}), id="no-text"
        ),
        pytest.param(ev("content_block_delta", {"index": 0, "delta": None}), id="delta-null"),
        pytest.param(ev("content_block_delta", {"index": 0, "delta": ["x"]}), id="delta-a-list"),
        pytest.param(ev("content_block_delta", {"index": 0}), id="no-delta"),
        pytest.param(
            ev(
                "content_block_delta",
                {"index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}},
            ),
            id="thinking-delta",
        ),
        pytest.param(
            ev(
                "content_block_delta",
                {"index": 0, "delta": {"type": "input_json_delta", "partial_json": "{"}},
            ),
            id="input-json-delta",
        ),
        pytest.param(
            ev(
                "x",
                b'{"type":"content_block_delta","delta":{"type":"text_delta",'
                b'"text":"a","text":"b"}}',
            ),
            id="duplicate-key",
        ),
        pytest.param(ev("x", b'{"delta":{"type":"text_delta","text":"a"}}'), id="no-type"),
        pytest.param(
            ev("x", b'{"type":"Content_block_delta","delta":{"type":"text_delta","text":"a"}}'),
            id="other-type",
        ),
        pytest.param(
            ev("x", b'{"type":1,"delta":{"type":"text_delta","text":"a"}}'), id="type-a-number"
        ),
        pytest.param(
            ev("error", {"error": {"type": "overloaded_error", "message": "busy"}}), id="error"
        ),
        pytest.param(ev("message_stop"), id="stop-mid-batch"),
        pytest.param(ev("x", b"{"), id="invalid-json"),
        pytest.param(
            ev(
                "content_block_delta",
                {"index": 0, "delta": {"type": "citations_delta", "text": "c"}},
            ),
            id="other-delta-with-text",
        ),
        pytest.param(ev("x", b"[DONE]"), id="done"),
        pytest.param(ev("x", b"[1]"), id="a-list"),
        pytest.param(ev("x", b"7"), id="a-number"),
        pytest.param(
            b"data: "
            + orjson.dumps(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "unnamed"},
                }
            ),
            id="unnamed",
        ),
    ],
)
def test_anthropic_odd_frame_in_a_run(
    srv: ScenarioServer, monkeypatch: Any, odd: bytes, request: pytest.FixtureRequest
) -> None:
    name = request.node.callspec.id
    frames = [*A_START, *A_RUN, odd, *A_RUN, *A_END]
    both(srv, f"a-odd-{name}", frames, monkeypatch, "anthropic", done=False)
    both(srv, f"a-odd-{name}-split", frames, monkeypatch, "anthropic", done=False, split=40)


def test_anthropic_events_before_an_error_are_delivered(
    srv: ScenarioServer, monkeypatch: Any
) -> None:
    frames = [*A_START, *A_RUN, ev("x", b"{"), *A_RUN, *A_END]
    events = both(srv, "a-json-mid-run", frames, monkeypatch, "anthropic", done=False)
    assert texts(events) == [f"a{i} " for i in range(5)]
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["message"] == "Invalid JSON in stream chunk"


@pytest.mark.skipif(_CCHUNKS is None, reason="the C reader is off (AIMUX_PURE_PYTHON)")
def test_the_c_reader_takes_anthropic_text_deltas() -> None:
    def data(frame: bytes) -> bytes:
        return frame.split(b"\ndata: ", 1)[1]

    datas = [data(td("x", extra=1)), data(td("")), data(td("y")), data(A_END[0])]
    out: list[dict[str, Any]] = []
    index, parsed = _CCHUNKS.read_anthropic(datas, out, orjson.loads, 0)
    assert (index, parsed) == (3, orjson.loads(datas[3]))
    assert out == [{"type": "text-delta", "text": "x"}, {"type": "text-delta", "text": "y"}]
    assert _CCHUNKS.read_anthropic([b"{"], out, orjson.loads, 0) == (0, _CCHUNKS.UNPARSED)


@pytest.mark.skipif(_CCHUNKS is None, reason="the C reader is off (AIMUX_PURE_PYTHON)")
def test_the_c_reader_hands_back_every_delta_but_text_and_tool_input() -> None:
    """Text deltas (and, with the stream's tool state, input_json_delta) are read in C; every
    other delta — reasoning, signature, citations (sources), compaction, an unknown type, a type
    of another JSON type — and an input_json_delta without the tool state is handed back."""

    def delta(body: Any) -> bytes:
        return orjson.dumps({"type": "content_block_delta", "index": 0, "delta": body})

    text = delta({"type": "text_delta", "text": "t"})
    for other in (
        {"type": "thinking_delta", "thinking": "hm"},
        {"type": "signature_delta", "signature": "s"},
        {"type": "citations_delta", "citation": {"type": "x"}},
        {"type": "compaction_delta", "content": "summary"},
        {"type": ""},
        {"type": "input_json_delta", "partial_json": "{"},
        {"type": 1},
        {"type": None},
        {"thinking": "no type"},
    ):
        out: list[dict[str, Any]] = []
        got = _CCHUNKS.read_anthropic([text, delta(other)], out, orjson.loads, 0)
        assert got == (1, orjson.loads(delta(other))), other
        assert out == [{"type": "text-delta", "text": "t"}]


def data_of(frame: bytes) -> bytes:
    return frame.split(b"\ndata: ", 1)[1]


def _counted(module: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the calls of ``module._read_events`` (the Python loop)."""
    calls = {"python": 0}
    real = module._read_events

    def counting(*args: Any, **kw: Any) -> Any:
        calls["python"] += 1
        return real(*args, **kw)

    monkeypatch.setattr(module, "_read_events", counting)
    return calls


@pytest.mark.skipif(_CCHUNKS is None, reason="the C reader is off (AIMUX_PURE_PYTHON)")
def test_after_two_hand_backs_in_a_row_the_rest_of_the_read_is_python(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run of chunks the C reader hands back (tool-call deltas, content block starts) costs two
    C calls and three calls of the Python loop per read, not one of each per chunk; the events and
    state are the Python loop's."""

    class Resp:
        status = 200
        headers: ClassVar[dict[str, str]] = {}

    def call(arguments: str) -> bytes:
        return _d(chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}))

    first = _d(chunk({"tool_calls": [TOOL_CALL]}))
    datas = [_d(text("a")), first, *(call(str(i)) for i in range(8)), _d(text("b"))]
    results = []
    for fast in (True, False):
        calls = _counted(openai, monkeypatch)
        state = openai.StreamState()
        out: list[dict[str, Any]] = []
        if fast:
            openai._read_fast(
                Resp, state, None, datas, out, orjson.loads, _CCHUNKS.read_openai, _CCHUNKS.UNPARSED
            )
        else:
            openai._read_events(Resp, state, None, datas, out, orjson.loads)
        results.append((out, state.calls, calls["python"]))
    (fast_out, fast_calls, fast_python), (out, calls_, _) = results
    assert (fast_out, fast_calls) == (out, calls_)
    assert fast_calls[0][2] == "{}01234567"
    assert fast_python == 3  # first alone, call("0") alone, then the rest in one call

    def block(i: int) -> bytes:
        return orjson.dumps(
            {"type": "content_block_start", "index": i,
             "content_block": {"type": "text", "text": f"s{i}"}}
        )  # fmt: skip

    frames = [*(block(i) for i in range(8)), _d({"type": "ping"}), data_of(td("t"))]
    results = []
    for fast in (True, False):
        calls = _counted(anthropic, monkeypatch)
        out = []
        a_state = anthropic.AnthropicStreamState()
        if fast:
            anthropic._read_fast(
                Resp, a_state, False, None, frames, out, _CCHUNKS.read_anthropic,
                _CCHUNKS.UNPARSED,
            )  # fmt: skip
        else:
            anthropic._read_events(Resp, a_state, False, None, frames, out)
        results.append((out, calls["python"]))
    assert results[0][0] == results[1][0] and len(results[0][0]) == 9
    assert results[0][1] == 3


@pytest.mark.skipif(_CCHUNKS is None, reason="the C reader is off (AIMUX_PURE_PYTHON)")
def test_reads_where_the_c_reader_takes_nothing_pace_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream's reads of one odd chunk each (tool-call deltas): after a read where the C reader
    took nothing, the next 1, 2, 4, ... (up to PACE_MAX) reads go straight to the Python loop;
    a read it takes resets that. The events and state are the Python loop's throughout."""

    class Resp:
        status = 200
        headers: ClassVar[dict[str, str]] = {}

    seen: list[int] = []  # the reads the C reader saw (once each)
    now = [0]

    def fast(*args: Any) -> Any:
        if not seen or seen[-1] != now[0]:
            seen.append(now[0])
        return _CCHUNKS.read_openai(*args)

    def call(arguments: str) -> bytes:
        return _d(chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}))

    reads = [[_d(chunk({"tool_calls": [TOOL_CALL]}))], *([call(str(i))] for i in range(20))]
    reads += [[_d(text(f"t{i}"))] for i in range(20)]  # reads 21-40
    reads += [[call("x"), call("y"), _d(text("d"))], [call("z")], [_d(text("e"))]]  # 41-43
    results = []
    for paced in (True, False):
        state, out, pace = openai.StreamState(), [], new_pace()
        seen.clear()
        for now[0], datas in enumerate(reads):
            if paced:
                openai._read_fast(
                    Resp, state, None, datas, out, orjson.loads, fast, _CCHUNKS.UNPARSED, pace
                )
            else:
                openai._read_events(Resp, state, None, datas, out, orjson.loads)
        results.append((out, state.calls, list(seen)))
    assert results[0][:2] == results[1][:2]
    assert results[0][0][-1] == {"type": "text-delta", "text": "e"}
    # took nothing at 0, 2, 5, 10, 19 (then 1, 2, 4, 8, 16 reads skipped); took 36-40; nothing at
    # 41 (the two calls first: the rest of the read was Python's), 42 skipped, took 43
    assert results[0][2] == [0, 2, 5, 10, 19, 36, 37, 38, 39, 40, 41, 43]

    def fast_a(*args: Any) -> Any:
        if not seen or seen[-1] != now[0]:
            seen.append(now[0])
        return _CCHUNKS.read_anthropic(*args)

    def start(index: int) -> bytes:
        block = {"type": "text", "text": f"s{index}"}
        return orjson.dumps({"type": "content_block_start", "index": index, "content_block": block})

    frames = [[start(i)] for i in range(21)] + [[data_of(td(f"t{i}"))] for i in range(20)]
    results = []
    for paced in (True, False):
        a_state, out, pace = anthropic.AnthropicStreamState(), [], new_pace()
        seen.clear()
        for now[0], datas in enumerate(frames):
            if paced:
                anthropic._read_fast(
                    Resp, a_state, False, None, datas, out, fast_a, _CCHUNKS.UNPARSED, pace
                )
            else:
                anthropic._read_events(Resp, a_state, False, None, datas, out)
        results.append((out, list(seen)))
    assert results[0][0] == results[1][0] and len(results[0][0]) == 41
    assert results[0][1] == [0, 2, 5, 10, 19, 36, 37, 38, 39, 40]

    pace = new_pace()
    for _ in range(10):
        pace_after(pace, False)
    assert pace == [PACE_MAX, PACE_MAX]


def _random_tool_frame(rng: random.Random) -> bytes:
    roll = rng.random()
    if roll < 0.15:
        name = rng.choice([anthropic.JSON_TOOL, "f", "", None])
        block = {"type": "tool_use", "id": "tu", "name": name, "input": rng.choice([{}, {"a": 1}])}
        return orjson.dumps(
            {"type": "content_block_start", "index": rng.choice([0, 1, 2]), "content_block": block}
        )
    if roll < 0.2:
        return rng.choice([b'{"type":"ping"}', b"{", b'{"type":"message_stop"}', b"[1]"])
    delta: Any = {"type": rng.choice(["input_json_delta"] * 6 + ["text_delta", "thinking_delta"])}
    if rng.random() < 0.95:
        delta["partial_json"] = rng.choice(['{"a', "", ": 1}", None, 3, "é"])
    if rng.random() < 0.3:
        delta["text"] = rng.choice(["t", ""])
    frame: dict[str, Any] = {"type": "content_block_delta", "delta": delta}
    if rng.random() < 0.95:
        frame["index"] = rng.choice([0, 1, 2, 1, 2, "1", None, True, 1.0, -(2**63), [1], {}])
    if rng.random() < 0.03:
        frame["delta"] = rng.choice([None, [], "x"])
    return orjson.dumps(frame)


@pytest.mark.skipif(_CCHUNKS is None, reason="the C reader is off (AIMUX_PURE_PYTHON)")
def test_random_tool_input_frames_read_the_same() -> None:
    """input_json_delta read in C (a JSON tool's block appends its text, another tool's adds to
    its input, a server tool's is dropped) against the Python loop, frame runs of random shapes
    and states: the same events, tool state, result and error."""

    class Resp:
        status = 200
        headers: ClassVar[dict[str, str]] = {}

    def run(fast: bool, json_tool: bool, datas: list[bytes]) -> Any:
        state = anthropic.AnthropicStreamState()
        out: list[dict[str, Any]] = []
        try:
            if fast:
                done = anthropic._read_fast(
                    Resp, state, json_tool, None, datas, out, _CCHUNKS.read_anthropic,
                    _CCHUNKS.UNPARSED,
                )  # fmt: skip
            else:
                done = anthropic._read_events(Resp, state, json_tool, None, datas, out)
            error = None
        except Exception as exc:
            done, error = None, (type(exc), str(exc), str(exc.__cause__))
        return done, error, out, state.tool_calls, state.json_blocks

    rng = random.Random(1614)
    taken = 0
    for _ in range(3000):
        datas = [_random_tool_frame(rng) for _ in range(rng.randint(1, 10))]
        json_tool = rng.random() < 0.5
        assert run(True, json_tool, datas) == run(False, json_tool, datas)
        taken += _CCHUNKS.read_anthropic(datas, [], orjson.loads, 0, set(), {})[0]
    assert taken > 500  # the C reader took a good share (reasoning deltas are handed back)


def _random_frame(rng: random.Random) -> bytes:
    roll = rng.random()
    if roll < 0.7:
        delta: Any = {"type": rng.choice(["text_delta"] * 6 + ["thinking_delta", 1, None])}
        if rng.random() < 0.95:
            delta["text"] = rng.choice(["a", "bc", "", None, 3, "é"])
        if rng.random() < 0.05:
            delta = rng.choice([None, [], "x", {}])
        body: dict[str, Any] = {"index": 0, "delta": delta}
        if rng.random() < 0.03:
            del body["delta"]
        kind = rng.choice(["content_block_delta"] * 10 + ["content_block_deltaX", "error"])
        return ev(kind, body, name=rng.choice([None, None, None, "error", "x"]))
    if roll < 0.8:
        return rng.choice([ev("ping"), ev("content_block_stop", {"index": 0}), ev("x", b"{")])
    if roll < 0.9:
        return rng.choice(A_START)
    return rng.choice(A_END)


def test_random_anthropic_frames_read_the_same(srv: ScenarioServer, monkeypatch: Any) -> None:
    rng = random.Random(1613)
    for case in range(120):
        frames = [_random_frame(rng) for _ in range(rng.randint(1, 12))]
        if rng.random() < 0.6:
            frames[:0] = A_START
        if rng.random() < 0.6:
            frames += A_END
        both(
            srv,
            f"a-fuzz-{case}",
            frames,
            monkeypatch,
            "anthropic",
            done=False,
            split=rng.choice([0, 0, 11, 64]),
        )


@pytest.mark.skipif(_CCHUNKS is None, reason="the C reader is off (AIMUX_PURE_PYTHON)")
@pytest.mark.parametrize(
    "delta",
    [
        {"content": "x", "reasoning_content": "why"},
        {"content": "x", "reasoning": "why"},
        {"content": "x", "role": "assistant", "reasoning_content": "why"},
        {"content": "x", "annotations": [{"type": "url_citation", "url_citation": {"url": "u"}}]},
    ],
)
def test_the_c_reader_hands_back_a_text_delta_with_reasoning(delta: dict[str, Any]) -> None:
    """A chunk whose delta holds reasoning or annotations (sources) beside its text is the
    Python loop's (its reasoning-delta / source event), never read as plain text in C."""
    datas = [_d(text("p")), _d(chunk(delta))]
    index, parsed, out = _fast(datas)
    assert index == 1 and parsed == orjson.loads(datas[1])
    assert out == [{"type": "text-delta", "text": "p"}]
