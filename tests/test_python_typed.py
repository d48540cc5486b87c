"""The typed Python API (#29, CONTRACT §4.1): ``aimux_ops.generate_text`` / ``stream_text`` /
``generate_object`` with keyword arguments and typed results and events (generated from the op
models, ``api/_generated.py``), and its asyncio twin ``aimux_ops.aio`` — against local servers
speaking OpenAI's wire format, and the shared call fixtures through both."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
from typing import Any

import pytest
from helpers import ROOT
from scenario_server import json_reply, serve_scenarios, sse_reply

import aimux_ops
from aimux_ops import aio
from aimux_ops.api import _generated as typed_api
from aimux_ops.api.typed import NOT_GIVEN, UnknownEvent, given
from aimux_ops.errors import ToolExecutionError
from aimux_ops.ops.models import GenerateObjectParams, GenerateTextParams

sys.path.insert(0, str(ROOT / "contract-tests"))

import make_recordings as rec
from make_calls import resolve, subset

USAGE = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}


def _completion(text: str | None = "Hello", tool_calls: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "c1",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": USAGE,
    }


def _frames(*texts: str, tool_calls: Any = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": t}}]}
        for t in texts
    ]
    if tool_calls:
        out.append(
            {
                "id": "c1",
                "model": "m",
                "choices": [{"index": 0, "delta": {"tool_calls": tool_calls}}],
            }
        )
    reason = "tool_calls" if tool_calls else "stop"
    out.append(
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}
    )
    out.append({"id": "c1", "model": "m", "choices": [], "usage": USAGE})
    return out


def _call(call_id: str, city: str, index: int = 0) -> dict[str, Any]:
    return {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": "weather", "arguments": json.dumps({"city": city})},
    }


def _model(url: str) -> typed_api.ModelSpec:
    return {"provider": "openai", "modelId": "m", "baseURL": url, "apiKey": "k"}


WEATHER: dict[str, typed_api.ToolSpec] = {
    "weather": {
        "description": "the weather of a city",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
}


# -- sync --------------------------------------------------------------------------------------


def test_generate_text_is_typed_and_sends_only_what_is_given() -> None:
    with serve_scenarios() as server:
        url = server.add("ok", json_reply(_completion("Hello")))
        result = aimux_ops.generate_text(
            model=_model(url), prompt="hi", temperature=0.5, max_retries=0
        )
        sent = json.loads(server.requests["ok"][0]["body"])
    assert isinstance(result, aimux_ops.GenerateTextResult)
    assert result.text == "Hello" and result.finish_reason == "stop"
    assert result.usage.input_tokens == 3 and result.usage.total_tokens == 4
    assert result.tool_calls == [] and result.response.model_id == "m"
    assert sent["temperature"] == 0.5 and "top_p" not in sent and "seed" not in sent
    # absent is told apart from null; the raw JSON stays readable
    assert "reasoningText" not in result and result.reasoning_text is None
    assert result["text"] == "Hello" and result.raw["finishReason"] == "stop"


def test_given_tells_absent_from_null_and_passes_extra_params_on() -> None:
    assert given(None, [("a", NOT_GIVEN), ("b", None), ("c", 1)]) == {"b": None, "c": 1}
    assert given({"newField": [1]}, [("c", 1)]) == {"c": 1, "newField": [1]}
    assert not NOT_GIVEN and repr(NOT_GIVEN) == "NOT_GIVEN"
    # a field this version does not know reaches the core as it was given (which refuses it)
    with pytest.raises(aimux_ops.AimuxError) as caught:
        aimux_ops.generate_text(
            model=_model("http://127.0.0.1:1/v1"), prompt="hi", extra_params={"newField": 1}
        )
    assert caught.value.code == 301 and "newField" in str(caught.value)


def test_results_keep_fields_this_version_does_not_know() -> None:
    result = typed_api.GenerateTextResult(
        {
            "text": "x",
            "finishReason": "a-new-reason",
            "usage": {"inputTokens": 1, "futureTokens": 9},
            "toolCalls": [],
            "response": {},
            "newField": {"deep": True},
        }
    )
    assert result.finish_reason == "a-new-reason"  # no closed enum
    assert result["newField"] == {"deep": True} and result.usage["futureTokens"] == 9
    event = typed_api.EVENT_CLASSES.get("a-new-event", UnknownEvent)({"type": "a-new-event"})
    assert isinstance(event, UnknownEvent) and event.type == "a-new-event"


def test_every_params_field_is_a_keyword() -> None:
    import inspect

    for fn, model in (
        (aimux_ops.generate_text, GenerateTextParams),
        (aimux_ops.generate_object, GenerateObjectParams),
        (aio.generate_text, GenerateTextParams),
    ):
        keywords = set(inspect.signature(fn).parameters)
        assert {name.rstrip("_") for name in model.model_fields} <= keywords, fn


def test_stream_text_yields_typed_events() -> None:
    with serve_scenarios() as server:
        url = server.add("s", sse_reply(_frames("Hel", "lo")))
        with aimux_ops.stream_text(model=_model(url), prompt="hi") as stream:
            events = list(stream)
    assert [type(e).__name__ for e in events] == ["TextDeltaEvent", "TextDeltaEvent", "FinishEvent"]
    deltas = [e for e in events if isinstance(e, typed_api.TextDeltaEvent)]
    assert "".join(e.text for e in deltas) == "Hello"
    finish = events[-1]
    assert isinstance(finish, typed_api.FinishEvent) and finish.usage.output_tokens == 1


def test_a_streams_error_event_is_a_decoded_error() -> None:
    frames: list[Any] = [
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hel"}}]},
        {"error": {"message": "overloaded", "type": "server_error"}},
    ]
    with serve_scenarios() as server:
        url = server.add("e", sse_reply(frames, done=False))
        events = list(aimux_ops.stream_text(model=_model(url), prompt="hi"))
    last = events[-1]
    assert isinstance(last, typed_api.ErrorEvent), events
    assert isinstance(last.error, aimux_ops.AimuxError) and "overloaded" in str(last.error)
    assert last["error"]["code"] == last.error.code  # the envelope stays readable


def test_generate_text_with_execute_runs_the_loop_and_keeps_the_tools_exception() -> None:
    with serve_scenarios() as server:
        url = server.add(
            "loop",
            sse_reply(_frames(tool_calls=[_call("call_1", "Oslo")])),
            sse_reply(_frames("Sunny.")),
        )
        result = aimux_ops.generate_text(
            model=_model(url),
            prompt="weather?",
            tools=WEATHER,
            stop_when={"stepCount": 3},
            execute={"weather": lambda args: f"sunny in {args['city']}"},
        )
        url2 = server.add("fail", sse_reply(_frames(tool_calls=[_call("call_1", "Oslo")])))

        def missing(args: Any) -> Any:
            with open("/nonexistent/aimux-typed-test") as fh:
                return fh.read()

        with pytest.raises(ToolExecutionError) as caught:
            aimux_ops.generate_text(
                model=_model(url2), prompt="weather?", tools=WEATHER, execute={"weather": missing}
            )
    assert result.text == "Sunny." and result.steps is not None and len(result.steps) == 2
    assert result.steps[0].tool_results[0].output == "sunny in Oslo"
    assert result.steps[0].tool_calls[0].tool_name == "weather"
    assert isinstance(caught.value.__cause__, FileNotFoundError)


# -- asyncio -----------------------------------------------------------------------------------


def test_aio_generate_and_stream() -> None:
    async def main(url: str, stream_url: str) -> tuple[Any, list[Any]]:
        result = await aio.generate_text(model=_model(url), prompt="hi")
        async with aio.stream_text(model=_model(stream_url), prompt="hi") as stream:
            events = [e async for e in stream]
        return result, events

    with serve_scenarios() as server:
        url = server.add("g", json_reply(_completion("Hello")))
        stream_url = server.add("s", sse_reply(_frames("a", "b")))
        result, events = asyncio.run(main(url, stream_url))
        sent = json.loads(server.requests["g"][0]["body"])
    assert result.text == "Hello" and result.usage.total_tokens == 4
    assert result.finish_reason == "stop" and "stream" not in sent  # the call op's own request
    assert [e.type for e in events] == ["text-delta", "text-delta", "finish"]


def test_aio_a_failed_open_raises_the_decoded_error() -> None:
    from helpers import closed_port

    async def main() -> None:
        await aio.generate_text(
            model=_model(f"http://127.0.0.1:{closed_port()}/v1"), prompt="hi", max_retries=0
        )

    with pytest.raises(aimux_ops.AimuxError) as caught:
        asyncio.run(main())
    assert caught.value.code == 11


def test_aio_async_tools_run_concurrently_and_a_raise_reaches_the_caller() -> None:
    both = [_call("call_1", "Oslo", 0), _call("call_2", "Paris", 1)]

    async def main(url: str, url2: str) -> Any:
        oslo_started = asyncio.Event()

        async def weather(args: dict[str, Any]) -> str:
            if args["city"] == "Oslo":
                oslo_started.set()
            else:  # returns only once the other call started: only concurrent calls finish
                await asyncio.wait_for(oslo_started.wait(), 30)
            return f"sunny in {args['city']}"

        result = await aio.generate_text(
            model=_model(url),
            prompt="w",
            tools=WEATHER,
            stop_when={"stepCount": 2},
            execute={"weather": weather},
        )

        async def broken(args: Any) -> Any:
            raise KeyError("no city")

        with pytest.raises(ToolExecutionError) as caught:
            await aio.generate_text(
                model=_model(url2), prompt="w", tools=WEATHER, execute={"weather": broken}
            )
        return result, caught.value

    with serve_scenarios() as server:
        url = server.add(
            "par", sse_reply(_frames(tool_calls=both)), sse_reply(_frames("Both sunny."))
        )
        url2 = server.add("broken", sse_reply(_frames(tool_calls=[_call("call_1", "Oslo")])))
        result, error = asyncio.run(main(url, url2))
        sent = json.loads(server.requests["par"][1]["body"])
    assert result.text == "Both sunny."
    assert sorted(r.output for r in result.steps[0].tool_results) == [
        "sunny in Oslo",
        "sunny in Paris",
    ]
    assert [m.get("content") for m in sent["messages"] if m["role"] == "tool"] == [
        "sunny in Oslo",
        "sunny in Paris",
    ]
    assert isinstance(error.__cause__, KeyError)


def test_aio_cancel_reaches_a_running_execute_and_frees_the_stream() -> None:
    from aimux_ops.streams import registry

    async def main(url: str) -> tuple[bool, bool]:
        started = asyncio.Event()
        cancelled = asyncio.Event()

        async def weather(args: Any) -> str:
            started.set()
            try:
                await asyncio.Event().wait()  # never answers
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return "unreachable"

        before = set(registry._streams)
        task = asyncio.ensure_future(
            aio.generate_text(
                model=_model(url), prompt="w", tools=WEATHER, execute={"weather": weather}
            )
        )
        await asyncio.wait_for(started.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(cancelled.wait(), 30)
        return cancelled.is_set(), set(registry._streams) - before == set()

    with serve_scenarios() as server:
        url = server.add("hang", sse_reply(_frames(tool_calls=[_call("call_1", "Oslo")])))
        tool_cancelled, freed = asyncio.run(main(url))
    assert tool_cancelled and freed


def test_aio_cancel_wakes_a_blocked_open() -> None:
    """A server that accepts and never answers: the open waits for its headers; a cancel of
    the task cancels the stream, whose socket is shut down (the server sees the end)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    closed = threading.Event()
    asked = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)  # the request
            asked.set()
            conn.settimeout(60)
            try:
                while conn.recv(65536):
                    pass
            except OSError:
                pass
            closed.set()

    threading.Thread(target=serve, daemon=True).start()

    async def main() -> None:
        stream = aio.stream_text(model=_model(f"http://127.0.0.1:{port}/v1"), prompt="hi")
        task = asyncio.ensure_future(stream.__anext__())
        assert await asyncio.get_running_loop().run_in_executor(None, asked.wait, 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(main())
        assert closed.wait(30), "the cancelled open did not close its connection"
    finally:
        listener.close()


# -- the shared call fixtures through the typed API -----------------------------------------------

DOC = json.loads((ROOT / "contract-tests" / "calls" / "cases.json").read_text(encoding="utf-8"))
LOOPS = json.loads((ROOT / "contract-tests" / "calls" / "loops.json").read_text(encoding="utf-8"))
TYPED_OPS = {"generate_text": "call", "generate_object": "call", "stream_text": "stream"}
TYPED_CASES = [
    c for c in DOC["cases"] + LOOPS["cases"] if "params" in c and TYPED_OPS.get(c["op"]) == c["api"]
]


def _lacks_a_required_field(case: dict[str, Any]) -> bool:
    model = {"generate_object": GenerateObjectParams}.get(case["op"], GenerateTextParams)
    required = {(f.alias or n) for n, f in model.model_fields.items() if f.is_required()}
    return not required <= set(case["params"])


#: a case without a required field cannot be called through the typed API (a TypeError, below)
FIXTURES = [c for c in TYPED_CASES if not _lacks_a_required_field(c)]
UNTYPABLE = [c for c in TYPED_CASES if _lacks_a_required_field(c)]


def _keywords(op: str, params: dict[str, Any]) -> dict[str, Any]:
    """A case's params as the typed function's keywords (a key no field has: extra_params)."""
    model = {"generate_object": GenerateObjectParams}.get(op, GenerateTextParams)
    by_wire = {(f.alias or n): n.rstrip("_") for n, f in model.model_fields.items()}
    kw: dict[str, Any] = {}
    extra = {}
    for key, value in params.items():
        if key in by_wire:
            kw[by_wire[key]] = value
        else:
            extra[key] = value
    if extra:
        kw["extra_params"] = extra
    return kw


def _run_typed(case: dict[str, Any], asynchronous: bool) -> Any:
    params = resolve(case["params"])
    kw = _keywords(case["op"], params)
    execute = {name: rec.loop_tool(b) for name, b in (case.get("tools") or {}).items()}
    if execute:
        kw["execute"] = execute
    fn = getattr(aio if asynchronous else aimux_ops, case["op"])
    try:
        if case["api"] == "stream":
            if asynchronous:

                async def collect() -> list[Any]:
                    async with fn(**kw) as stream:
                        return [dict(e.raw) async for e in stream]

                return {"events": asyncio.run(collect())}
            with fn(**kw) as stream:
                return {"events": [dict(e.raw) for e in stream]}
        result = asyncio.run(fn(**kw)) if asynchronous else fn(**kw)
        return {"result": result.to_dict()}
    except aimux_ops.AimuxError as exc:
        if case.get("tools", {}).get("weather") == "raise-io":  # the very error raised
            assert isinstance(exc.__cause__, FileNotFoundError), exc.__cause__
        return {"error": {"kind": exc.kind, "code": exc.code, "name": exc.error_name}}


def test_the_fixtures_cover_every_typed_op() -> None:
    assert {c["op"] for c in FIXTURES} >= {"generate_text", "stream_text"}
    assert any(c.get("tools") for c in FIXTURES)
    assert UNTYPABLE and all(c["expect"]["error"]["code"] == 301 for c in UNTYPABLE)


@pytest.mark.parametrize("case", UNTYPABLE, ids=[c["key"] for c in UNTYPABLE])
def test_a_case_without_a_required_field_is_refused_by_the_signature(case: dict[str, Any]) -> None:
    kw = _keywords(case["op"], resolve(case["params"]))
    with pytest.raises(TypeError, match="required keyword-only argument"):
        getattr(aimux_ops, case["op"])(**kw)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "aio"])
@pytest.mark.parametrize("case", FIXTURES, ids=[c["key"] for c in FIXTURES])
def test_call_fixture_through_the_typed_api(case: dict[str, Any], asynchronous: bool) -> None:
    got = _run_typed(case, asynchronous)
    assert subset(case["expect"], got), got


def test_aio_a_stream_dropped_unfinished_is_freed() -> None:
    import gc

    from aimux_ops.streams import registry

    async def main(url: str) -> tuple[bool, bool]:
        stream = aio.stream_text(model=_model(url), prompt="hi")
        first = await stream.__anext__()
        handle = stream._handle
        assert handle is not None and handle in registry._streams
        del stream
        gc.collect()
        return first.type == "text-delta", handle not in registry._streams

    with serve_scenarios() as server:
        url = server.add("drop", sse_reply(_frames("a", "b")))
        first_ok, freed = asyncio.run(main(url))
    assert first_ok and freed


def test_generate_object_is_typed_sync_and_async() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

    async def later(url: str) -> Any:
        return await aio.generate_object(model=_model(url), prompt="who?", schema=schema)

    with serve_scenarios() as server:
        url = server.add("obj", json_reply(_completion('{"name": "Ada"}')))
        result = aimux_ops.generate_object(model=_model(url), prompt="who?", schema=schema)
        again = asyncio.run(later(url))
        sent = json.loads(server.requests["obj"][0]["body"])
    assert isinstance(result, aimux_ops.GenerateObjectResult)
    assert result.object == {"name": "Ada"} == again.object
    assert result.finish_reason == "stop" and result.usage.input_tokens == 3
    assert "schema" in json.dumps(sent["response_format"])  # the schema keyword reached the wire


def test_the_typed_layer_loads_lazily_and_light() -> None:
    """Cold start: ``import aimux_ops`` (what the shared library does) loads no typed module; the
    sync typed API loads neither pydantic, the errors, nor asyncio (they come with their use)."""
    import subprocess

    probe = (
        "import sys, aimux_ops\n"
        "before = sorted(m for m in sys.modules if m.startswith('aimux_ops.api.'))\n"
        "aimux_ops.generate_text, aimux_ops.stream_text\n"
        "heavy = [m for m in ('pydantic', 'aimux_ops.errors', 'asyncio') if m in sys.modules]\n"
        "print(before, heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[] []", done.stdout  # not even call / stream (cold start)
