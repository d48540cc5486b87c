"""The Python API reads its stream on the caller's thread (``aimux_ops.streams.stream.Stream``): what the stream
loop guarantees holds there too — a cancel from another thread wakes a blocked read and the op's
cleanup has run when the caller hears the end, a reap ends the op without a read, the deadline
ends a stalled read in a timeout event, a recording round-trips, and connections are reused
(the body's end drained briefly on the caller's thread, never waited for long)."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fault_server import FaultServer
from helpers import CANARY
from helpers import provider_params as params
from op_calls import wait_blocked_reader

import aimux_ops
from aimux_ops.boundary import dispatch
from aimux_ops.http import transport
from aimux_ops.streams import registry as stream_registry


def _handle(it: Iterator[dict[str, Any]]) -> int:
    handle: int = it.gi_frame.f_locals["handle"]  # type: ignore[attr-defined]
    return handle


def _recorded(server: FaultServer, path: Path, fault: str, scenario: str) -> dict[str, Any]:
    p = params(server, fault, scenario=scenario)
    p["recording"] = {"mode": "record", "path": str(path)}
    return p


def _records(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    assert CANARY.encode() not in data
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def test_the_python_api_stream_runs_on_the_callers_thread(server: FaultServer) -> None:
    it = aimux_ops.stream("stream_text", params(server, "mode=chunks;n=3"))
    first = next(it)
    assert first["type"] == "text-delta"
    assert stream_registry._streams[_handle(it)].kind == "by its reader"
    assert [e["type"] for e in it] == ["text-delta"] * 2 + ["finish"]


def test_a_cancel_from_another_thread_wakes_a_read_blocked_on_the_callers_thread(
    server: FaultServer, tmp_path: Path
) -> None:
    # the server keeps the stream open a minute after the first delta: only the cancel can end
    # the caller's blocked read early
    path = tmp_path / "rec.jsonl"
    it = aimux_ops.stream(
        "stream_text", _recorded(server, path, "mode=stall;stall_ms=60000", "here-cancel")
    )
    assert next(it)["type"] == "text-delta"
    handle = _handle(it)

    def cancel() -> None:  # once the caller's read waits on the stalled stream
        wait_blocked_reader(handle)
        dispatch.stream_cancel(handle)

    canceller = threading.Thread(target=cancel)
    canceller.start()
    assert list(it) == []  # the end, not the server's close after a minute
    canceller.join()
    assert server.wait_for("gone", "here-cancel") == 1, "the cancel closed the connection"
    # the op's cleanup ran before the caller heard the end
    (rec,) = _records(path)
    assert rec["outcome"] == "cancelled" and "error" not in rec


def test_a_reap_ends_the_op_at_once_without_a_read(server: FaultServer, tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    fault = "mode=stall;stall_ms=60000"
    it = aimux_ops.stream("stream_text", _recorded(server, path, fault, "here-reap"))
    assert next(it)["type"] == "text-delta"
    stream = stream_registry._streams[_handle(it)]
    stream.idle_since -= 1000.0
    assert stream.reap(1) is False  # the event taken from the held batch was a read
    stream.idle_since -= 1000.0
    assert stream.reap(1) is True
    # nobody read since: the reap itself closed the connection and ended the recording
    assert server.wait_for("gone", "here-reap") == 1
    (rec,) = _records(path)
    assert rec["outcome"] == "cancelled"
    rest = list(it)
    assert [e["type"] for e in rest] == ["error"] and rest[0]["error"]["code"] == 12


def test_a_stall_on_the_callers_thread_ends_in_a_timeout_event(server: FaultServer) -> None:
    fault = "mode=stall;stall_ms=60000"
    p = params(server, fault, scenario="here-stall", timeoutMs=1500)
    events = list(aimux_ops.stream("stream_text", p))
    assert [e["type"] for e in events] == ["text-delta", "error"]
    env = events[-1]["error"]
    assert env["code"] == 12 and env["error"]["timeoutMs"] == 1500
    assert server.wait_for("gone", "here-stall") == 1


def test_a_recording_made_on_the_callers_thread_replays(
    server: FaultServer, tmp_path: Path
) -> None:
    path = tmp_path / "rec.jsonl"
    p = _recorded(server, path, "mode=chunks;n=40", "here-rec")
    live = list(aimux_ops.stream("stream_text", p))
    assert [e["type"] for e in live] == ["text-delta"] * 40 + ["finish"]
    p["recording"]["mode"] = "replay"
    p["model"].pop("apiKey")
    assert list(aimux_ops.stream("stream_text", p)) == live
    (rec,) = _records(path)
    assert rec["outcome"] == "ok"


def _stream_pool(port: int) -> list[Any]:
    """The open connections of the stream pool to 127.0.0.1:``port``, each ``(conn, idle)``."""
    pool = transport.default_transport().pools(stream=True).get(("http", "127.0.0.1", port))
    if pool is None:
        return []
    idle = pool.idle()
    return [(conn, conn in idle) for conn in pool.connections()]


def test_caller_thread_streams_one_after_another_reuse_one_connection(
    server: FaultServer,
) -> None:
    """The reader stops at [DONE]; ``close`` reads the chunked body's last chunk on the caller's
    thread, so the connection goes back to the stream pool: 32 streams, one connection."""
    for _ in range(32):
        events = list(aimux_ops.stream("stream_text", params(server, "mode=chunks;n=3")))
        assert [e["type"] for e in events] == ["text-delta"] * 3 + ["finish"]
    pooled = _stream_pool(server.port)
    assert len(pooled) == 1 and pooled[0][1], pooled


@pytest.fixture
def held_open() -> Iterator[tuple[int, threading.Event]]:
    """A raw HTTP/1.1 server on 127.0.0.1 that sends a whole OpenAI stream up to ``[DONE]`` in
    a chunked body and never its last chunk; it reports (the event) when the client closed."""
    listener = socket.create_server(("127.0.0.1", 0))
    closed = threading.Event()
    frames = [
        {"choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    body = b"".join(b"data: " + orjson.dumps(f) + b"\n\n" for f in frames) + b"data: [DONE]\n\n"

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, rest = data.partition(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            while len(rest) < length:
                rest += conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n" % (len(body), body)
            )
            while conn.recv(65536):  # until the client closes (or shuts down) the connection
                pass
            closed.set()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield listener.getsockname()[1], closed
    finally:
        listener.close()


def test_a_body_held_open_after_the_terminal_event_does_not_hold_the_caller(
    held_open: tuple[int, threading.Event],
) -> None:
    port, closed = held_open
    p = {
        "model": {
            "provider": "openai",
            "modelId": "gpt-4o-mini",
            "baseURL": f"http://127.0.0.1:{port}/v1",
            "apiKey": CANARY,
        },
        "prompt": "Say hello",
        "maxRetries": 0,
    }
    got: list[Any] = []
    reader = threading.Thread(
        target=lambda: got.append(list(aimux_ops.stream("stream_text", p))), daemon=True
    )
    reader.start()
    reader.join(60)  # a bound that only ends a broken run: the drain gives up on its own
    assert not reader.is_alive(), "the caller waited for a body end that never came"
    assert [e["type"] for e in got[0]] == ["text-delta", "finish"]
    assert closed.wait(60), "the connection was closed, not kept"
    assert _stream_pool(port) == []


SCENARIOS = [
    "mode=ok",
    "mode=chunks;n=300",
    "mode=status;status=429;times=1",
    "mode=status;status=500",
    "mode=status;status=400",
    "mode=errframe",
    "mode=badchunk",
    "mode=cut;after=2",
    "mode=nodone",
    "mode=drop",
    "mode=tool",
    "mode=tool;args=badjson",
]


#: The fault server's Date header (in an error's ``responseHeaders``): the one thing that may
#: differ between two streams a second apart.
_DATE = re.compile(rb'"date":"[^"]*"')


def _undated(blob: bytes) -> bytes:
    return _DATE.sub(b'"date":"-"', blob)


def _loop_stream(p: dict[str, Any]) -> tuple[list[bytes], bytes | None]:
    handle, env = dispatch.stream_json("stream_text", orjson.dumps(p))
    if handle is None:
        return [], env
    events = []
    while (event := dispatch.stream_next_json(handle)[0]) is not None:
        events.append(event)
    dispatch.stream_free(handle)
    return events, None


@pytest.mark.parametrize("fault", SCENARIOS)
def test_the_callers_thread_gives_the_loops_events_and_envelopes(
    server: FaultServer, fault: str
) -> None:
    """Retries before the first event, open failures, mid-stream failures and the terminal
    events: byte for byte what a stream on the loop gives (each side its own scenario, so each
    sees a fresh ``times=`` count)."""
    loop_events, loop_env = _loop_stream(params(server, fault, scenario=f"loop {fault}"))
    p = params(server, fault, scenario=f"here {fault}")
    handle, env = dispatch.stream_json("stream_text", orjson.dumps(p))
    here_events = []
    if handle is not None:
        while (event := dispatch.stream_next_json(handle)[0]) is not None:
            here_events.append(event)
        dispatch.stream_free(handle)
    assert here_events or env  # every scenario gives something
    here_events = [_undated(e) for e in here_events]
    loop_events = [_undated(e) for e in loop_events]
    assert (here_events, env and _undated(env)) == (loop_events, loop_env and _undated(loop_env))
    # the Python API on the caller's thread: the same events, or the open's failure raised
    api_p = params(server, fault, scenario=f"api {fault}")
    try:
        api_events = list(aimux_ops.stream("stream_text", api_p))
    except aimux_ops.AimuxError as exc:
        assert loop_env is not None and exc.code == orjson.loads(loop_env)["code"]
    else:
        assert [orjson.loads(_undated(orjson.dumps(e))) for e in api_events] == [
            orjson.loads(e) for e in loop_events
        ]


def test_takes_and_batches_smaller_than_a_read_keep_every_event_in_order(
    server: FaultServer,
) -> None:
    p = orjson.dumps(params(server, "mode=chunks;n=500"))
    handle, env = dispatch.stream_json("stream_text", p)
    assert handle is not None and env is None
    seen: list[Any] = []
    while True:  # alternately: 3 objects, a JSON batch of up to 7, one event
        batch = dispatch.stream_next_objects(handle, 3)[0]
        if batch is None:
            break
        taken = list(batch)
        assert 1 <= len(taken) <= 3
        seen += taken
        raw, ended, err = dispatch.stream_next_batch_json(handle, 7)
        assert err is None
        if raw is not None:
            assert 1 <= len(orjson.loads(raw)) <= 7
            seen += orjson.loads(raw)
        if ended:
            break
        one = dispatch.stream_next_object(handle)[0]
        if one is None:
            break
        seen.append(one)
    dispatch.stream_free(handle)
    texts = [e["text"] for e in seen if e["type"] == "text-delta"]
    assert len(texts) == 500 and seen[-1]["type"] == "finish"
    assert texts == [f"w{i} " for i in range(500)]
