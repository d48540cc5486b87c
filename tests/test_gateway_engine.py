"""The gateway's engine (``aimux_ops/gateway/engine.py``) in-process, on a real event loop, over
the core's real event-driven streams and the fault server: a stream is polled only once it is
listed ready (a poll before would find nothing: its reader thread has just started), its
events arrive whole and in order, and a close wakes a waiting consumer without a poll of the
freed handle. Counts only: no timing is asserted."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from fault_server import FaultServer

from aimux_ops.boundary import dispatch
from aimux_ops.gateway import engine as gateway_engine

TEXT = "abcdefghij"


def _params(server: FaultServer, spec: str) -> bytes:
    model = {"provider": "openai", "modelId": spec, "baseURL": server.base_url, "apiKey": "k"}
    return orjson.dumps({"messages": [{"role": "user", "content": "hi"}], "model": model})


@pytest.fixture
def polls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, bool]]:
    """Every poll the engine makes: (it had events, it answered the end)."""
    seen: list[tuple[bool, bool]] = []
    real = dispatch.stream_poll_json

    def counted(handle: int, max_events: int) -> tuple[bytes | None, bool, bytes | None]:
        batch, ended, env = real(handle, max_events)
        seen.append((bool(batch), ended or env is not None))
        return batch, ended, env

    monkeypatch.setattr(gateway_engine.dispatch, "stream_poll_json", counted)
    return seen


def test_a_stream_is_polled_only_once_listed_ready(
    server: FaultServer, polls: list[tuple[bool, bool]]
) -> None:
    async def run() -> list[dict[str, Any]]:
        eng = gateway_engine.Engine(asyncio.get_running_loop())
        try:
            events: list[dict[str, Any]] = []
            for _ in range(20):  # a first poll that finds nothing would show in one of them
                polls.clear()
                stream = eng.open(_params(server, f"fault:mode=ok;text={TEXT};parts=5"))
                try:
                    got: list[dict[str, Any]] = []
                    while (batch := await stream.next_batch()) is not None:
                        got += batch
                finally:
                    stream.close()
                assert polls, "no poll"
                assert polls[0] != (False, False), f"polled before it was listed ready: {polls}"
                assert polls[-1][1], polls  # the last poll answered the end
                events = got
            assert eng.open_streams == 0
            return events
        finally:
            eng.close()

    events = asyncio.run(run())
    text = "".join(ev["text"] for ev in events if ev["type"] == "text-delta")
    assert text == TEXT
    assert events[-1]["type"] == "finish"


def test_a_close_wakes_the_waiting_consumer_without_a_poll(
    server: FaultServer, polls: list[tuple[bool, bool]]
) -> None:
    async def run() -> None:
        eng = gateway_engine.Engine(asyncio.get_running_loop())
        try:
            stream = eng.open(_params(server, "fault:mode=stall;after=1;stall_ms=60000"))
            first = await stream.next_batch()  # the delta before the stall
            assert first and first[0]["type"] == "text-delta", first
            while True:  # until the consumer waits: the stall sends nothing more
                waiting = asyncio.ensure_future(stream.next_batch())
                await asyncio.sleep(0)  # (its first step: a poll, then the wait)
                if not waiting.done():
                    break
                assert waiting.result(), "the stream ended before the stall"
            before = len(polls)
            stream.close()
            assert await waiting is None
            assert len(polls) == before, polls  # the freed handle was never polled
            assert eng.open_streams == 0
        finally:
            eng.close()

    asyncio.run(run())
