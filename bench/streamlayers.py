"""Per-layer stream rates in memory (no socket): where a stream_text event's time goes.

Each row runs the same 5,000-chunk OpenAI stream (``parsers.sse_payload``: 64 KiB reads) through
one more layer than the row before:

- floor: line iteration + ``orjson.loads`` over the same bytes (as ``bench/parsers.py``);
- ``transport.iter_sse`` alone, then with ``orjson.loads`` of each data;
- ``openai.stream_events`` (the provider's parser and its event dicts);
- the ``stream_text`` op's generator (``ops.call.run_stream``) over an in-memory transport;
- the Python API (``aimux_ops.stream``: the stream loop's greenlet, the queue, the consumer),
  the in-memory body suspending the greenlet once per 64 KiB read as a network read does;
- Anthropic's parser (``anthropic.stream_batches``, named events) against its own line floor.

Run: ``python bench/streamlayers.py [rounds]``; prints chunks/s per row (median) and × floor.
Not part of ``make bench``'s aims (those are measured over a real socket in ``run.py``).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parsers import CHUNKS, sse_payload


def stream_payload(n: int = CHUNKS) -> list[bytes]:
    """``sse_payload`` with the server's finish chunk before ``[DONE]`` (stream_text needs one)."""
    chunks = sse_payload(n)
    tail = chunks[-1]
    assert tail.endswith(b"data: [DONE]\n\n")
    finish = b"data: " + orjson.dumps(
        {
            "id": "chatcmpl-demo-1",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }
    )
    chunks[-1] = tail[: -len(b"data: [DONE]\n\n")] + finish + b"\n\ndata: [DONE]\n\n"
    return chunks


class MemoryResponse:
    """A 200 SSE response from memory; in a stream greenlet each read suspends it once (as a
    network read does), so the consumer is woken per read."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.status = 200
        self.reason = "OK"
        self.headers = {"content-type": "text/event-stream"}

    def read(self) -> bytes:
        return b"".join(self.chunks)

    def iter_bytes(self) -> Iterator[bytes]:
        import asyncio

        from aimux_ops import aio

        suspend = aio.in_stream()
        for c in self.chunks:
            if suspend:
                aio.await_only(asyncio.sleep(0))
            yield c

    def iter_events(self) -> Iterator[tuple[str | None, bytes]]:
        from aimux_ops.transport import iter_sse

        return iter_sse(self.iter_bytes())

    def iter_event_batches(self) -> Iterator[Any]:
        from aimux_ops.transport import iter_sse_batches

        return iter_sse_batches(self.iter_bytes())

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


class MemoryTransport:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def send(self, request: Any, deadline: Any) -> MemoryResponse:
        return MemoryResponse(self.chunks)


def anthropic_payload(n: int = CHUNKS) -> list[bytes]:
    """An Anthropic Messages stream of ``n`` text deltas (named events), in 64 KiB reads."""

    def event(name: str, payload: dict[str, Any]) -> bytes:
        return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"

    body = event(
        "message_start",
        {
            "type": "message_start",
            "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 5}},
        },
    )
    body += event(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    )
    body += b"".join(
        event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": f"w{i} "},
            },
        )
        for i in range(n)
    )
    body += event("content_block_stop", {"type": "content_block_stop", "index": 0})
    body += event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": n},
        },
    )
    body += event("message_stop", {"type": "message_stop"})
    return [body[i : i + 65536] for i in range(0, len(body), 65536)]


PARAMS = {
    "model": {
        "provider": "openai",
        "modelId": "gpt-4o-mini",
        "baseURL": "http://127.0.0.1:9/v1",
        "apiKey": "sk-bench",
    },
    "prompt": "Say hello",
    "maxRetries": 0,
}


def rows(chunks: list[bytes]) -> dict[str, Callable[[], int]]:
    import aimux_ops
    from aimux_ops.ops import call as call_mod
    from aimux_ops.ops.registry import StreamContext, get_op
    from aimux_ops.providers import openai
    from aimux_ops.transport import iter_sse, iter_sse_batches

    transport = MemoryTransport(chunks)
    call_mod.default_transport = lambda: transport  # type: ignore[assignment,return-value]
    spec = get_op("stream_text")
    assert spec is not None
    params = spec.params.model_validate(PARAMS)

    def floor() -> int:
        n = 0
        for line in b"".join(chunks).decode().splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunk = orjson.loads(line[6:])
                choices = chunk["choices"]
                if choices and choices[0]["delta"].get("content"):
                    n += 1
        return n

    def sse() -> int:
        return sum(1 for _ in iter_sse(iter(chunks))) - 2

    def sse_batches() -> int:
        return sum(len(datas) for _names, datas in iter_sse_batches(iter(chunks))) - 2

    def sse_loads() -> int:
        loads = orjson.loads
        n = 0
        for _event, data in iter_sse(iter(chunks)):
            if data != b"[DONE]":
                loads(data)
                n += 1
        return n - 1

    def stream_events() -> int:
        state = openai.StreamState()
        return sum(1 for _ in openai.stream_events(MemoryResponse(chunks), state))

    def batches() -> int:
        state = openai.StreamState()
        return sum(len(b) for b in openai.stream_batches(MemoryResponse(chunks), state))

    from aimux_ops.providers import anthropic

    anthropic_chunks = anthropic_payload()

    def anthropic_floor() -> int:
        n = 0
        for line in b"".join(anthropic_chunks).decode().splitlines():
            if line.startswith("data: "):
                frame = orjson.loads(line[6:])
                if frame["type"] == "content_block_delta" and frame["delta"].get("text"):
                    n += 1
        return n

    def anthropic_events() -> int:
        state = anthropic.AnthropicStreamState()
        resp = MemoryResponse(anthropic_chunks)
        return sum(len(b) for b in anthropic.stream_batches(resp, state))

    def op_generator() -> int:
        n = 0
        for event in spec.handler(params, StreamContext()):
            if event["type"] == "text-delta":
                n += 1
        return n

    def python_api() -> int:
        n = 0
        for event in aimux_ops.stream("stream_text", PARAMS):
            if event["type"] == "text-delta":
                n += 1
            elif event["type"] == "error":
                raise RuntimeError(event)
        return n

    return {
        "floor: lines + orjson": floor,
        "transport.iter_sse": sse,
        "transport.iter_sse_batches": sse_batches,
        "iter_sse + orjson.loads": sse_loads,
        "openai.stream_events": stream_events,
        "openai.stream_batches": batches,
        "op generator (run_stream)": op_generator,
        "Python API (aimux_ops.stream)": python_api,
        "anthropic floor: lines + orjson": anthropic_floor,
        "anthropic.stream_batches": anthropic_events,
    }


def main(rounds: int) -> None:
    chunks = stream_payload()
    fns = rows(chunks)
    for name, fn in fns.items():
        got = fn()
        assert got == CHUNKS, (name, got)
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    floor = statistics.median(times["floor: lines + orjson"])
    best_floor = min(times["floor: lines + orjson"])
    # the Anthropic rows are read against their own floor (its stream has other bytes)
    own_floor = statistics.median(times["anthropic floor: lines + orjson"])
    own_best = min(times["anthropic floor: lines + orjson"])
    print(
        f"{'row':32s} {'chunks/s (median)':>18s} {'× floor':>8s} {'µs/chunk':>9s}"
        f" {'best × best floor':>18s}"
    )
    for name, ts in times.items():
        med = statistics.median(ts)
        if name.startswith("anthropic"):
            floor, best_floor = own_floor, own_best
        print(
            f"{name:32s} {CHUNKS / med:18,.0f} {floor / med:7.2f}× {med / CHUNKS * 1e6:9.2f}"
            f" {best_floor / min(ts):17.2f}×"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
