"""Hardening, load (issue 8): 16 threads × 1,000 mixed calls and streams through the C ABI
(libaimux.so via ctypes; ctypes drops the interpreter lock around every foreign call, so the
threads meet inside the library exactly as C threads would), every answer checked exactly:
results, error codes and native cause chains, event sequences, cancellation, stale handles, and
stream handles unique across all threads (never reused).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import assert_valid_envelope, demo_replay_params, without_headers

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from cabi import CError, Lib

ROOT = Path(__file__).resolve().parent.parent
THREADS = 16
OPS_PER_THREAD = 1_000
CHUNKS = 20

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def bench_server() -> Iterator[int]:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "bench" / "server.py"),
            "--port",
            "0",
            "--chunks",
            str(CHUNKS),
            "--max-seconds",
            "600",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield int(line.split()[1])
    finally:
        proc.terminate()
        proc.wait(10)


HELLO = {
    "text": "Hello!",
    "content": [{"type": "text", "text": "Hello!"}],
    "finishReason": "stop",
    "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
    "toolCalls": [],
    "response": {"id": "chatcmpl-demo-1", "modelId": "gpt-4o-mini"},
}


class Mix:
    """The ten operations one thread cycles through, each checking its own answer."""

    def __init__(self, lib: Lib, port: int) -> None:
        self.lib = lib
        model = {"provider": "openai", "modelId": "gpt-4o-mini", "apiKey": "sk-load"}
        self.live = orjson.dumps(
            {
                "model": {**model, "baseURL": f"http://127.0.0.1:{port}/v1"},
                "prompt": "hi",
                "maxRetries": 0,
            }
        )
        self.replay = orjson.dumps(demo_replay_params())
        self.refused = orjson.dumps(
            {
                "model": {**model, "baseURL": "http://127.0.0.1:1/v1"},
                "prompt": "hi",
                "maxRetries": 0,
            }
        )
        self.handles: list[int] = []
        self.ops: list[Callable[[], None]] = [
            self.version,
            self.live_call,
            self.replay_call,
            self.live_stream,
            self.replay_stream,
            self.unknown_op,
            self.invalid_params,
            self.wrong_mode,
            self.refused_call,
            self.cancelled_stream,
        ]

    def version(self) -> None:
        assert orjson.loads(self.lib.call(b"aimux.version", b"{}"))["abiVersion"] == 1

    def live_call(self) -> None:
        assert without_headers(orjson.loads(self.lib.call(b"generate_text", self.live))) == HELLO

    def replay_call(self) -> None:
        assert without_headers(orjson.loads(self.lib.call(b"generate_text", self.replay))) == HELLO

    def _events(self, params: bytes) -> list[dict[str, Any]]:
        h = self.lib.open_stream(b"stream_text", params)
        self.handles.append(h)
        events = []
        try:
            while (event := self.lib.next_event(h)) is not None:
                events.append(orjson.loads(event))
                assert len(events) <= CHUNKS + 5
        finally:
            self.lib.lib.aimux_stream_free(h)
        return events

    def live_stream(self) -> None:
        events = self._events(self.live)
        assert [e["type"] for e in events] == ["text-delta"] * CHUNKS + ["finish"]
        assert "".join(e["text"] for e in events[:-1]) == "".join(f"w{i} " for i in range(CHUNKS))
        assert events[-1]["finishReason"] == "stop"

    def replay_stream(self) -> None:
        events = self._events(self.replay)
        assert [e.get("text") for e in events] == ["Hel", "lo!", None]
        assert events[-1]["type"] == "finish"

    def _expect_error(self, op: bytes, params: bytes, code: int, name: str) -> CError:
        try:
            self.lib.call(op, params)
        except CError as err:
            assert err.code == code, err
            doc = assert_valid_envelope(err.json)
            assert doc["error"]["name"] == name
            return err
        raise AssertionError(f"{op!r} succeeded; expected {code}")

    def unknown_op(self) -> None:
        self._expect_error(b"no.such.op", b"{}", 300, "UnknownOpError")

    def invalid_params(self) -> None:
        err = self._expect_error(
            b"generate_text", b'{"model": {"provider": "openai"}}', 301, "InvalidParamsError"
        )
        assert "model.modelId" in err.message

    def wrong_mode(self) -> None:
        self._expect_error(b"stream_text", self.replay, 302, "WrongModeError")

    def refused_call(self) -> None:
        err = self._expect_error(b"generate_text", self.refused, 11, "AI_APICallError")
        # the native chain goes down to the OS error, and the source nodes report code 0
        assert err.chain[-1][0] == 0
        assert "Connection refused" in err.chain[-1][1], err.chain

    def cancelled_stream(self) -> None:
        h = self.lib.open_stream(b"stream_text", self.live)
        self.handles.append(h)
        try:
            first = self.lib.next_event(h)
            assert first is not None and orjson.loads(first)["type"] == "text-delta"
            self.lib.lib.aimux_stream_cancel(h)
            assert self.lib.next_event(h) is None  # a cancelled stream reports its end
        finally:
            self.lib.lib.aimux_stream_free(h)
        try:
            self.lib.next_event(h)
        except CError as err:
            assert err.code == 203
        else:
            raise AssertionError("a freed handle still answered")


def test_16_threads_x_1000_mixed_calls_and_streams(bench_server: int) -> None:
    lib = Lib()
    lib.call(b"aimux.version", b"{}")  # start the runtime outside the threads
    mixes = [Mix(lib, bench_server) for _ in range(THREADS)]
    failures: list[str] = []
    counts = [0] * THREADS
    start = threading.Barrier(THREADS)

    def worker(t: int) -> None:
        mix = mixes[t]
        start.wait()
        for i in range(OPS_PER_THREAD):
            op = mix.ops[(i + t) % len(mix.ops)]
            try:
                op()
                counts[t] += 1
            except BaseException as exc:
                failures.append(f"thread {t} op {i} {op.__name__}: {type(exc).__name__}: {exc}")
                if len(failures) > 50:
                    return

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(540)
    assert not any(th.is_alive() for th in threads), "a worker thread hung"
    assert failures == [], "\n".join(failures[:20])
    assert sum(counts) == THREADS * OPS_PER_THREAD
    handles = [h for m in mixes for h in m.handles]
    assert len(handles) == THREADS * OPS_PER_THREAD * 3 // 10
    assert len(set(handles)) == len(handles), "a stream handle was reused"
