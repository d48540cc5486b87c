"""Parse-speed rows (bench/run.py section "parsers"): the stream parser against its floors.

Moved here from the test suite (speed is a benchmark ratio, never a timed test assertion):

- the OpenAI stream parser (``providers.openai.stream_events``: SSE split + orjson + event
  dicts) against the floor of line iteration + ``orjson.loads`` over the same bytes (aim ≥ 0.5×);
- our SSE splitter (``transport.iter_sse``) against httpx-sse's decoders (the reason we keep our
  own: aim ≥ 1×, faster).

Both run in memory (no socket), 5,000 chunks, interleaved round by round.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson

CHUNKS = 5000


def sse_payload(n: int = CHUNKS) -> list[bytes]:
    """``n`` OpenAI chat.completion.chunk SSE events and ``[DONE]``, in 64 KiB reads."""
    data = b"".join(
        b"data: "
        + orjson.dumps(
            {
                "id": "chatcmpl-demo-1",
                "object": "chat.completion.chunk",
                "created": 1700000000,
                "model": "gpt-4o-mini",
                "choices": [{"index": 0, "delta": {"content": f"w{i} "}, "finish_reason": None}],
            }
        )
        + b"\n\n"
        for i in range(n)
    )
    data += b"data: [DONE]\n\n"
    return [data[i : i + 65536] for i in range(0, len(data), 65536)]


class _BytesResponse:
    """A 200 SSE response served from memory (the Response protocol of aimux_ops.http.transport)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.status = 200
        self.reason = "OK"
        self.headers: dict[str, str] = {}

    def read(self) -> bytes:
        return b"".join(self.chunks)

    def iter_events(self) -> Iterator[tuple[str | None, bytes]]:
        from aimux_ops.http.transport import iter_sse

        return iter_sse(iter(self.chunks))

    def iter_event_batches(self) -> Iterator[Any]:
        # what transport.HttpResponse offers: the events of each read together
        from aimux_ops.http.transport import iter_sse_batches

        return iter_sse_batches(iter(self.chunks))

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


def _time(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_parsers(rounds: int) -> dict[str, list[float]]:
    """Seconds per 5,000-chunk parse, per row, one value per round (interleaved)."""
    from httpx_sse._decoders import SSEDecoder, SSELineDecoder

    from aimux_ops.http.transport import iter_sse
    from aimux_ops.providers import openai

    chunks = sse_payload()

    def floor() -> None:
        for line in b"".join(chunks).decode().splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                orjson.loads(line[6:])

    def stream_events() -> None:
        state = openai.StreamState()
        n = sum(1 for _ in openai.stream_events(_BytesResponse(chunks), state))
        if n != CHUNKS or not state.done:
            raise RuntimeError(f"stream_events gave {n} events")

    def httpx_sse() -> None:
        lines, events = SSELineDecoder(), SSEDecoder()
        for chunk in chunks:
            for line in lines.decode(chunk.decode()):
                events.decode(line)

    def own_sse() -> None:
        for _ in iter_sse(iter(chunks)):
            pass

    rows: dict[str, Callable[[], None]] = {
        "floor: lines + orjson": floor,
        "openai.stream_events": stream_events,
        "httpx-sse decoders": httpx_sse,
        "transport.iter_sse": own_sse,
    }
    out: dict[str, list[float]] = {k: [] for k in rows}
    for fn in rows.values():
        fn()  # warm up
    for _ in range(rounds):
        for name, fn in rows.items():
            out[name].append(_time(fn))
    return out


if __name__ == "__main__":
    import statistics

    res = bench_parsers(9)
    med = {k: statistics.median(v) for k, v in res.items()}
    for k, v in med.items():
        print(f"{k:28s} {CHUNKS / v:12,.0f} chunks/s")
    ratio = med["floor: lines + orjson"] / med["openai.stream_events"]
    print(f"stream_events × floor rate: {ratio:.2f}")
    print(f"iter_sse × httpx-sse rate: {med['httpx-sse decoders'] / med['transport.iter_sse']:.2f}")
