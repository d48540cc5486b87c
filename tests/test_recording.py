"""Record / replay against the real fault server: round trips of calls, streams, retries and
failures; replay with no network; every recording failure in the recording domain with its OS or
parse error as the cause; concurrent appends; no secret in any recorded byte."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fault_server import FaultServer, serve
from helpers import (
    ANTHROPIC_HELLO_METADATA,
    CANARY,
    ROOT,
    assert_no_canary,
    closed_port,
    demo_replay_params,
)
from op_calls import chain_names as names
from op_calls import wait_blocked_reader

import aimux_ops
from aimux_ops.boundary.dispatch import call_json, stream_free, stream_json, stream_next_json


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with serve() as srv:
        yield srv


def params(
    base_url: str, path: Path, mode: str, fault: str | None = None, **extra: Any
) -> dict[str, Any]:
    model: dict[str, Any] = {
        "provider": "openai",
        "modelId": "gpt-4o-mini",
        "baseURL": base_url,
        "headers": {"x-api-key": CANARY, "x-scenario": "rec"},
    }
    if fault is not None:
        model["headers"]["x-fault"] = fault
    if mode == "record":
        model["apiKey"] = CANARY
    p: dict[str, Any] = {
        "model": model,
        "prompt": "Say hello in one word.",
        "recording": {"mode": mode, "path": str(path)},
        "retry": {"initialDelayMs": 1},
    }
    p.update(extra)
    return p


def replay_of(p: dict[str, Any]) -> dict[str, Any]:
    """The same call in replay mode: no key, a closed port (so any network use would fail)."""
    q = orjson.loads(orjson.dumps(p))
    q["model"].pop("apiKey", None)
    q["model"]["baseURL"] = f"http://127.0.0.1:{closed_port()}/v1"
    q["recording"]["mode"] = "replay"
    return q  # type: ignore[no-any-return]


def call(op: str, p: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    result, env = call_json(op, orjson.dumps(p))
    assert_no_canary(result or b"", env or b"")
    return (orjson.loads(result) if result else None, orjson.loads(env) if env else None)


def stream(p: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    handle, env = stream_json("stream_text", orjson.dumps(p))
    assert_no_canary(env or b"")
    if handle is None:
        return [], orjson.loads(env or b"null")
    events: list[dict[str, Any]] = []
    try:
        while True:
            event, env = stream_next_json(handle)
            assert env is None
            if event is None:
                return events, None
            assert_no_canary(event)
            events.append(orjson.loads(event))
    finally:
        stream_free(handle)


def records(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    assert_no_canary(data)
    assert b"Bearer" not in data
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


# -- round trips ---------------------------------------------------------------------------------


def test_generate_text_round_trip(server: FaultServer, tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    p = params(server.base_url, path, "record")
    live, env = call("generate_text", p)
    assert env is None
    (rec,) = records(path)
    assert rec["schemaVersion"] == 1 and rec["op"] == "generate_text"
    assert rec["outcome"] == "ok" and rec["result"] == live
    assert "apiKey" not in rec["params"]["model"] and "recording" not in rec["params"]
    assert rec["params"]["model"]["headers"]["x-api-key"] == "[REDACTED]"
    (ex,) = rec["exchanges"]
    assert ex["request"]["method"] == "POST" and ex["request"]["path"] == "/v1/chat/completions"
    assert ex["request"]["headers"]["authorization"] == "[REDACTED]"
    assert ex["response"]["status"] == 200
    before = server.count("rec")
    replayed, env = call("generate_text", replay_of(p))
    assert env is None and replayed == live
    assert server.count("rec") == before  # no network


def test_base_url_userinfo_and_query_secrets_are_redacted(
    server: FaultServer, tmp_path: Path
) -> None:
    path = tmp_path / "rec.jsonl"
    base = server.base_url.replace("http://", f"http://user:{CANARY}@") + "?api_key=" + CANARY
    p = params(base, path, "record")
    call("generate_text", p)  # the result does not matter; nothing secret may be written
    (rec,) = records(path)
    assert "user" not in rec["params"]["model"]["baseURL"]


def test_stream_round_trip(server: FaultServer, tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    p = params(server.base_url, path, "record")
    live, env = stream(p)
    assert env is None and live[-1]["type"] == "finish"
    (rec,) = records(path)
    assert rec["op"] == "stream_text" and rec["outcome"] == "ok"
    assert rec["result"] == live[-1]
    datas = [e["data"] for e in rec["exchanges"][0]["response"]["events"]]
    assert datas[-1] == "[DONE]" and len(datas) == 6
    replayed, env = stream(replay_of(p))
    assert env is None and replayed == live


@pytest.mark.parametrize(
    "fault", ["mode=cut", "mode=badchunk", "mode=errframe;code=503", "mode=nodone"]
)
def test_stream_failure_round_trip(server: FaultServer, tmp_path: Path, fault: str) -> None:
    path = tmp_path / "rec.jsonl"
    p = params(server.base_url, path, "record", fault)
    live, env = stream(p)
    assert env is None and live[-1]["type"] == "error"
    (rec,) = records(path)
    assert rec["outcome"] == "error" and rec["error"] == live[-1]["error"]
    replayed, env = stream(replay_of(p))
    assert env is None
    assert [e["type"] for e in replayed] == [e["type"] for e in live]
    assert replayed[-1]["error"]["code"] == live[-1]["error"]["code"]
    assert replayed[-1]["error"]["error"]["statusCode"] == live[-1]["error"]["error"]["statusCode"]
    assert names(replayed[-1]["error"]) == names(live[-1]["error"])


def test_retries_are_recorded_and_replayed_in_order(server: FaultServer, tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    p = params(server.base_url, path, "record", "statuses=503,429,ok", maxRetries=3)
    p["model"]["headers"]["x-scenario"] = "rec-retry"
    live, env = call("generate_text", p)
    assert env is None and live["text"] == "Hello!"
    (rec,) = records(path)
    assert [e["response"]["status"] for e in rec["exchanges"]] == [503, 429, 200]
    replayed, env = call("generate_text", replay_of(p))
    assert env is None and replayed == live
    q = replay_of(p)
    q["maxRetries"] = 1
    _, env = call("generate_text", q)
    assert env is not None and env["error"]["name"] == "AI_RetryError"
    assert [e["error"]["statusCode"] for e in env["error"]["errors"]] == [503, 429]


def test_transport_failure_is_recorded_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    p = params(f"http://127.0.0.1:{closed_port()}/v1", path, "record", maxRetries=0)
    _, live = call("generate_text", p)
    assert live is not None
    (rec,) = records(path)
    assert rec["outcome"] == "error" and rec["error"] == live
    assert rec["exchanges"][0]["error"]["error"]["name"] == "AI_APICallError"
    _, replayed = call("generate_text", replay_of(p))
    assert replayed == live
    assert names(replayed)[-1] == "ConnectionRefusedError"


def test_error_outcome_is_the_envelope(server: FaultServer, tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    p = params(server.base_url, path, "record", "mode=echo", maxRetries=0)
    _, live = call("generate_text", p)
    (rec,) = records(path)  # the echoed key is scrubbed from the recorded body too
    assert rec["error"] == live
    assert "[REDACTED]" in rec["exchanges"][0]["response"]["body"]["error"]["message"]


def test_shipped_demo_recording_replays_as_promised() -> None:
    base = demo_replay_params()
    result = aimux_ops.call("generate_text", base)
    (rec_call, _) = records(Path(base["recording"]["path"]))
    # the recorded (redacted) response headers, as the live call had them
    assert result["response"].pop("headers") == rec_call["exchanges"][0]["response"]["headers"]
    assert result == {
        "text": "Hello!",
        "content": [{"type": "text", "text": "Hello!"}],
        "finishReason": "stop",
        "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
        "toolCalls": [],
        "response": {"id": "chatcmpl-demo-1", "modelId": "gpt-4o-mini"},
    }
    events = list(aimux_ops.stream("stream_text", base))
    assert [(e["type"], e.get("text")) for e in events] == [
        ("text-delta", "Hel"),
        ("text-delta", "lo!"),
        ("finish", None),
    ]
    assert events[-1]["finishReason"] == "stop"


def test_relative_path_is_relative_to_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = aimux_ops.call(
        "generate_text",
        {
            "model": {
                "provider": "openai",
                "modelId": "gpt-4o-mini",
                "baseURL": "http://127.0.0.1:1/v1",
            },
            "prompt": "Say hello in one word.",
            "recording": {"mode": "replay", "path": "recordings/demo.jsonl"},
        },
    )
    assert result["text"] == "Hello!"


# -- recording failures ----------------------------------------------------------------------------


def test_replay_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    _, env = call("generate_text", params("http://127.0.0.1:1/v1", path, "replay"))
    assert env is not None
    assert (env["kind"], env["code"], env["error"]["path"]) == ("recording", 101, str(path))
    assert names(env) == ["RecordingOpenFileError", "FileNotFoundError"]


def test_replay_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "dir.jsonl"
    path.mkdir()
    _, env = call("generate_text", params("http://127.0.0.1:1/v1", path, "replay"))
    assert env is not None and env["code"] == 101
    assert names(env) == ["RecordingOpenFileError", "IsADirectoryError"]


def test_replay_corrupt_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    shutil.copy(ROOT / "recordings" / "demo.jsonl", path)
    with path.open("ab") as fh:
        fh.write(b'{"schemaVersion": 1, "exchanges": [tru\n')
    _, env = call("generate_text", params("http://127.0.0.1:1/v1", path, "replay"))
    assert env is not None
    assert (env["code"], env["error"]["line"]) == (103, 3)
    assert names(env) == ["RecordingCorruptError", "orjson.JSONDecodeError"]


def test_replay_record_of_the_wrong_shape(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"schemaVersion": 1, "exchanges": [{"request": {"method": "POST"}}]}\n')
    _, env = call("generate_text", params("http://127.0.0.1:1/v1", path, "replay"))
    assert env is not None and (env["code"], env["error"]["line"]) == (103, 1)
    assert names(env) == ["RecordingCorruptError", "ValueError"]


def test_replay_unknown_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "v9.jsonl"
    path.write_bytes(b"\n" + b'{"schemaVersion": 9, "exchanges": []}\n')
    _, env = call("generate_text", params("http://127.0.0.1:1/v1", path, "replay"))
    assert env is not None
    assert (env["code"], env["error"]["schemaVersion"], env["error"]["line"]) == (104, 9, 2)


def test_replay_no_match(tmp_path: Path) -> None:
    path = tmp_path / "demo.jsonl"
    shutil.copy(ROOT / "recordings" / "demo.jsonl", path)
    p = params("http://127.0.0.1:1/v1", path, "replay", maxRetries=2)
    p["prompt"] = "Something never recorded"
    _, env = call("generate_text", p)
    assert env is not None
    assert (env["kind"], env["code"]) == ("recording", 102)
    assert env["error"] == {
        "name": "RecordingNoMatchError",
        "method": "POST",
        "path": "/v1/chat/completions",
    }


def test_record_unwritable_path(server: FaultServer, tmp_path: Path) -> None:
    path = tmp_path / "missing-dir" / "rec.jsonl"
    before = server.count("rec")
    _, env = call("generate_text", params(server.base_url, path, "record"))
    assert env is not None and env["code"] == 101
    assert names(env) == ["RecordingOpenFileError", "FileNotFoundError"]
    assert server.count("rec") == before  # failed before any network


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_record_write_failure(server: FaultServer) -> None:
    _, env = call("generate_text", params(server.base_url, Path("/dev/full"), "record"))
    assert env is not None
    assert (env["kind"], env["code"], env["error"]["path"]) == ("recording", 105, "/dev/full")
    assert names(env) == ["RecordingWriteError", "OSError"]
    assert "No space left on device" in env["cause"]["message"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_stream_record_write_failure_is_the_terminal_event(server: FaultServer) -> None:
    events, env = stream(params(server.base_url, Path("/dev/full"), "record"))
    assert env is None
    assert [e["type"] for e in events] == ["text-delta", "text-delta", "error"]
    assert events[-1]["error"]["code"] == 105


def test_concurrent_appends_never_interleave(server: FaultServer, tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    errors: list[Any] = []

    def worker(i: int) -> None:
        for j in range(5):
            p = params(server.base_url, path, "record", f"mode=ok;text=t{i}-{j}")
            if j % 2:
                _, env = stream(p)
            else:
                _, env = call("generate_text", p)
            if env is not None:
                errors.append(env)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    recs = records(path)
    assert len(recs) == 40
    texts = sorted(r["result"].get("text", "") for r in recs if r["op"] == "generate_text")
    assert len(texts) == 24


def test_stream_open_failure_is_recorded(server: FaultServer, tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    p = params(server.base_url, path, "record", "mode=status;status=503", maxRetries=1)
    events, live = stream(p)
    assert events == [] and live is not None and live["error"]["name"] == "AI_RetryError"
    (rec,) = records(path)
    assert rec["outcome"] == "error" and rec["error"] == live
    assert [e["response"]["status"] for e in rec["exchanges"]] == [503, 503]
    events, replayed = stream(replay_of(p))
    assert events == [] and replayed == live


def test_generate_object_round_trip(server: FaultServer, tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    p = params(server.base_url, path, "record", "mode=object", schema=schema)
    live, env = call("generate_object", p)
    assert env is None and live["object"] == {"name": "Ada", "age": 36}
    (rec,) = records(path)
    assert rec["op"] == "generate_object" and rec["params"]["schema"] == schema
    replayed, env = call("generate_object", replay_of(p))
    assert env is None and replayed == live


def test_cancelled_stream_is_recorded_as_cancelled(server: FaultServer, tmp_path: Path) -> None:
    from aimux_ops.boundary.dispatch import stream_cancel

    path = tmp_path / "rec.jsonl"
    p = params(server.base_url, path, "record", "mode=stall;stall_ms=60000")
    handle, env = stream_json("stream_text", orjson.dumps(p))
    assert handle is not None and env is None
    first, _ = stream_next_json(handle)
    assert first is not None
    # the cancel comes once this read waits on the stalled stream
    canceller = threading.Thread(
        target=lambda: (wait_blocked_reader(handle), stream_cancel(handle))
    )
    canceller.start()
    assert stream_next_json(handle) == (None, None)
    canceller.join()
    stream_free(handle)
    (rec,) = records(path)
    assert rec["outcome"] == "cancelled" and "error" not in rec
    assert len(rec["exchanges"][0]["response"]["events"]) == 2  # the role chunk and "Hel"


def test_shipped_anthropic_recording_replays_through_python_and_the_c_abi() -> None:
    """``recordings/anthropic.jsonl`` (``make recordings``): the Messages API exchange replays
    with no key and no network, in-process and through libaimux.so."""
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    from cabi import Lib

    path = ROOT / "recordings" / "anthropic.jsonl"
    base = {
        "model": {
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
            "baseURL": "http://127.0.0.1:1/v1",
        },
        "prompt": "Say hello in one word.",
        "recording": {"mode": "replay", "path": str(path)},
    }
    expected = {
        "text": "Hello!",
        "content": [{"type": "text", "text": "Hello!"}],
        "finishReason": "stop",
        "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
        "toolCalls": [],
        "response": {"id": "msg_01QC4g3HwBThD4BaNtBckFDJ", "modelId": "claude-sonnet-4-5"},
        "providerMetadata": ANTHROPIC_HELLO_METADATA,
    }
    (rec_call, rec_stream) = records(path)
    assert rec_call["exchanges"][0]["request"]["path"] == "/v1/messages"
    assert rec_call["exchanges"][0]["request"]["headers"]["x-api-key"] == "[REDACTED]"
    assert [e.get("event") for e in rec_stream["exchanges"][0]["response"]["events"]][:2] == [
        "message_start",
        "content_block_start",
    ]
    expected["response"]["headers"] = rec_call["exchanges"][0]["response"]["headers"]
    assert expected["response"]["headers"]["request-id"]  # replayed as recorded
    assert aimux_ops.call("generate_text", base) == expected
    lib = Lib()
    assert orjson.loads(lib.call(b"generate_text", orjson.dumps(base))) == expected
    for events in (
        list(aimux_ops.stream("stream_text", base)),
        [orjson.loads(e) for e in lib.stream_events(b"stream_text", orjson.dumps(base))],
    ):
        assert [(e["type"], e.get("text")) for e in events] == [
            ("text-delta", "Hel"),
            ("text-delta", "lo!"),
            ("finish", None),
        ]
        assert events[-1]["finishReason"] == "stop"
