"""The tool loop's rows of ``make bench`` (section ``loops``; issue 28's aims), apart from run.py:

- a 10-step loop with a no-op tool against a local loop server: the aimux Node binding's wall
  time beside the AI SDK's ``generateText`` with the same tool and ``stopWhen`` (aim ≤ 0.5×), and
  beside the floor, the same ten exchanges by hand in Node (``fetch`` + ``JSON.parse``);
- the per-tool-call cost of the host-tool protocol through the C ABI, from a C caller
  (``bench/tool_calls.c``): one step whose model answer has ``CALLS`` tool calls, answered at
  once with ``aimux_stream_tool_result``, against the same answer with the calls only reported
  (no ``execute``); the difference per call, in µs; and the same through the core's boundary
  functions in this process (its own share, no crossing).

The loop server (127.0.0.1, in this process, prebuilt answers): a model id ``loop-<n>`` answers
one ``noop`` tool call while the request holds fewer than n−1 tool results, then the text
``done``; ``calls-<n>`` answers n tool calls at once. JSON or an event stream, as asked.

Alone: ``python bench/loops.py [--rounds 5]`` prints the section (run.py calls ``bench_loops`` and
``render_loops``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import median
from typing import Any, ClassVar

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BUILD = HERE / "build"
STEPS = 10
#: tool calls in the one step of the per-call measurement
CALLS = 100
KEY = "sk-bench-not-a-key"


# -- the loop server --------------------------------------------------------------------------


def _completion(message: dict[str, Any], finish: str) -> bytes:
    return orjson.dumps({
        "id": "chatcmpl-loop", "object": "chat.completion", "created": 1_700_000_000,
        "model": "loop", "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14},
    })


def _sse(chunks: list[dict[str, Any]]) -> bytes:
    frames = [b"data: " + orjson.dumps({"id": "chatcmpl-loop", "object": "chat.completion.chunk",
                                        "created": 1_700_000_000, "model": "loop", **c}) + b"\n\n"
              for c in chunks]
    return b"".join(frames) + b"data: [DONE]\n\n"


def answer(kind: str, n: int, step: int, stream: bool) -> bytes:
    """The HTTP response: tool calls (``calls-n``: n of them; ``loop-n``: one while step < n)
    or the final text."""
    count = n if kind == "calls" else (1 if step < n else 0)
    calls = [{"id": f"call_{step}_{i}", "type": "function",
              "function": {"name": "noop", "arguments": "{}"}} for i in range(count)]
    finish = "tool_calls" if calls else "stop"
    usage = {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14}
    if stream:
        chunks: list[dict[str, Any]] = [{"choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
        if calls:
            chunks += [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, **c}]}}]}
                       for i, c in enumerate(calls)]
        else:
            chunks.append({"choices": [{"index": 0, "delta": {"content": "done"}}]})
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        chunks.append({"choices": [], "usage": usage})
        body, ctype = _sse(chunks), b"text/event-stream"
    else:
        message: dict[str, Any] = {"role": "assistant", "content": None if calls else "done"}
        if calls:
            message["tool_calls"] = calls
        body, ctype = _completion(message, finish), b"application/json"
    return (b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
            % (ctype, len(body))) + body


class LoopHttp(asyncio.Protocol):
    """HTTP/1.1 keep-alive, Content-Length bodies (what every peer here sends)."""

    cache: ClassVar[dict[tuple[str, int, int, bool], bytes]] = {}

    def __init__(self) -> None:
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while (end := self.buf.find(b"\r\n\r\n")) >= 0:
            head = self.buf[:end].lower()
            length = 0
            if (i := head.find(b"\r\ncontent-length:")) >= 0:
                j = head.find(b"\r\n", i + 2)
                length = int(head[i + 17:j if j >= 0 else len(head)].strip())
            if len(self.buf) < end + 4 + length:
                return
            req = orjson.loads(self.buf[end + 4:end + 4 + length])
            self.buf = self.buf[end + 4 + length:]
            kind, _, n = str(req["model"]).partition("-")
            step = 1 + sum(1 for m in req["messages"] if m.get("role") == "tool")
            if kind == "calls":
                step = 1
            key = (kind, int(n), step, bool(req.get("stream")))
            resp = self.cache.get(key)
            if resp is None:
                resp = self.cache[key] = answer(*key)
            assert self.transport is not None
            self.transport.write(resp)


@contextmanager
def loop_server() -> Iterator[str]:
    """The loop server on a thread; yields its base URL (``…/v1``)."""
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(
        loop.create_server(LoopHttp, "127.0.0.1", 0, reuse_address=True))
    port = server.sockets[0].getsockname()[1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        server.close()


# -- the runs ---------------------------------------------------------------------------------


def node_loops(who: str, base: str, loops: int) -> float:
    """ms per 10-step loop through ``bench/peers/loops.mjs``."""
    proc = subprocess.run(
        ["node", str(HERE / "peers" / "loops.mjs"), who, base, str(loops), "5", str(STEPS), KEY],
        capture_output=True, text=True, timeout=300, check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"loops.mjs {who} failed: {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["seconds"] / out["loops"] * 1e3


def tool_calls_binary() -> Path:
    """``bench/build/tool_calls`` (built here when missing or older than its source)."""
    exe, src = BUILD / "tool_calls", HERE / "tool_calls.c"
    lib = Path(os.environ.get("AIMUX_LIB", REPO / "native" / "build" / "libaimux.so"))
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        BUILD.mkdir(parents=True, exist_ok=True)
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-Wall", "-Wextra", "-Werror",
                        f"-I{REPO / 'native'}", str(src), "-o", str(exe), f"-L{lib.parent}",
                        "-laimux", f"-Wl,-rpath,{lib.parent}"], check=True)
    return exe


def c_tool_step(base: str, streams: int) -> dict[str, float]:
    """µs per stream of one step with ``CALLS`` tool calls, host tools answered and calls only
    reported, the two kinds alternating stream by stream in one C process."""
    def params(host: bool) -> str:
        tool: dict[str, Any] = {"description": "Does nothing.",
                                "inputSchema": {"type": "object", "properties": {}}}
        if host:
            tool["execute"] = True
        return json.dumps({"model": {"provider": "openai", "modelId": f"calls-{CALLS}",
                                     "baseURL": base, "apiKey": KEY},
                           "prompt": "Call noop.", "tools": {"noop": tool}, "maxRetries": 0})

    proc = subprocess.run([str(tool_calls_binary()), params(True), params(False), str(streams)],
                          capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"tool_calls failed: {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout)
    for kind, results in (("answered", CALLS * streams), ("reported", 0)):
        assert out[kind]["toolCalls"] == CALLS * streams, out
        assert out[kind]["toolResults"] == results, out
    return {kind: out[kind]["seconds"] / streams * 1e6 for kind in ("answered", "reported")}


def py_tool_step(base: str, streams: int) -> dict[str, float]:
    """``c_tool_step`` in this process through the core's boundary functions (what the shim
    calls, no C crossing, no other thread for the host): the core's own share of a call."""
    import orjson

    from aimux_ops.boundary.dispatch import (
        stream_free,
        stream_json,
        stream_next_json,
        stream_tool_result_json,
    )

    def params(host: bool) -> bytes:
        tool: dict[str, Any] = {"description": "Does nothing.",
                                "inputSchema": {"type": "object", "properties": {}}}
        if host:
            tool["execute"] = True
        return orjson.dumps({"model": {"provider": "openai", "modelId": f"calls-{CALLS}",
                                       "baseURL": base, "apiKey": KEY},
                             "prompt": "Call noop.", "tools": {"noop": tool}, "maxRetries": 0})

    def run(p: bytes, host: bool) -> int:
        handle, err = stream_json("stream_text", p)
        assert handle is not None and err is None, err
        calls = 0
        try:
            while True:
                event, err = stream_next_json(handle)
                assert err is None, err
                if event is None:
                    return calls
                e = orjson.loads(event)
                if e["type"] == "tool-call":
                    calls += 1
                    if host:
                        refused = stream_tool_result_json(handle, e["toolCallId"].encode(),
                                                          b'{"output":"ok"}')
                        assert refused is None, refused
        finally:
            stream_free(handle)

    kinds = {"reported": (params(False), False), "answered": (params(True), True)}
    for p, host in kinds.values():
        run(p, host)
    seconds = dict.fromkeys(kinds, 0.0)
    for _ in range(streams):
        for kind, (p, host) in kinds.items():
            t0 = time.perf_counter()
            assert run(p, host) == CALLS
            seconds[kind] += time.perf_counter() - t0
    return {kind: s / streams * 1e6 for kind, s in seconds.items()}


#: loops per run of each Node peer (about a second each: a short run is all scheduler noise)
NODE_LOOPS = {"floor": 400, "aimux": 100, "aisdk": 20}


def bench_loops(
    rounds: int, node_ok: bool, scale: float = 1.0, streams: int = 30
) -> dict[str, Any]:
    """Every figure per round, interleaved round by round; the medians under ``medians``
    (``scale``: a fraction of the runs' lengths, for a smoke run)."""
    runs: dict[str, list[float]] = {}
    with loop_server() as base:
        for _ in range(rounds):
            if node_ok:
                for who, loops in NODE_LOOPS.items():
                    runs.setdefault(f"node:{who}", []).append(
                        node_loops(who, base, max(1, int(loops * scale))))
            for kind, us in c_tool_step(base, max(3, int(streams * scale))).items():
                runs.setdefault(f"c:{kind}", []).append(us)
            for kind, us in py_tool_step(base, max(3, int(streams * scale))).items():
                runs.setdefault(f"core:{kind}", []).append(us)
    out: dict[str, Any] = {"rounds": runs, "medians": {k: median(v) for k, v in runs.items()}}
    per_call = [(a - r) / CALLS for a, r in zip(runs["c:answered"], runs["c:reported"],
                                                strict=True)]
    out["perToolCallUs"] = median(per_call)
    out["perToolCallRounds"] = per_call
    core = [(a - r) / CALLS for a, r in zip(runs["core:answered"], runs["core:reported"],
                                            strict=True)]
    out["corePerToolCallUs"] = median(core)
    return out


LABELS = {
    "node:floor": "floor: node:http keep-alive + JSON.parse by hand",
    "node:aimux": "aimux Node binding (`call` with `tools`)",
    "node:aisdk": "AI SDK `generateText` (`tool`, `stopWhen: stepCountIs(10)`)",
}


def render_loops(d: dict[str, Any], L: list[str], aims: list[tuple[str, str, bool]]) -> None:
    med = d["medians"]
    L.append(f"## The tool loop ({STEPS} steps, a no-op tool; `bench/loops.py`)")
    L.append("")
    L.append(f"One local loop server (prebuilt answers, in the bench's process); each peer a node "
             f"process, {STEPS} model calls and 9 tool calls per loop, warm-up excluded; rounds "
             "interleaved.")
    L.append("")
    if "node:floor" in med:
        floor = med["node:floor"]
        L.append("| peer | ms per loop (median of rounds) | × floor | × AI SDK |")
        L.append("|---|---:|---:|---:|")
        for k in ("node:floor", "node:aimux", "node:aisdk"):
            L.append(f"| {LABELS[k]} | {med[k]:.2f} | {med[k] / floor:.2f}× | "
                     f"{med[k] / med['node:aisdk']:.2f}× |")
        L.append("")
        over = {k: (med[k] - floor) / STEPS * 1e3 for k in ("node:aimux", "node:aisdk")}
        L.append(f"Per step over the floor ({floor / STEPS * 1e3:.0f} µs a step): aimux "
                 f"{over['node:aimux']:.0f} µs, the AI SDK {over['node:aisdk']:.0f} µs.")
        L.append("")
        ratio = med["node:aimux"] / med["node:aisdk"]
        aims.append(("28. 10-step loop: Node binding ≤ 0.5× the AI SDK's generateText",
                     f"{ratio:.3f}× (floor {floor:.2f} ms)", ratio <= 0.5))
    else:
        L.append("The AI SDK peer is not installed (`make -C bench peers`): the Node rows are not "
                 "measured.")
        L.append("")
    L.append(f"Per tool call through the C ABI (a C caller, `bench/tool_calls.c`): one step whose "
             f"answer holds {CALLS} tool calls, answered at once with "
             f"`aimux_stream_tool_result` ({med['c:answered']:.0f} µs per stream) against the "
             f"same answer with the calls only reported ({med['c:reported']:.0f} µs, the floor): "
             f"**{d['perToolCallUs']:.1f} µs per tool call** (median of rounds). The core's own "
             f"share, the same streams through its boundary functions in the bench's process "
             f"(no C crossing): "
             f"{d.get('corePerToolCallUs', float('nan')):.1f} µs per tool call; the rest comes "
             "with the crossing (the C host's thread and the stream's reader handing over; a "
             "plain answer is taken in C, without the GIL: `native/src/aimux_answers.c`).")
    L.append("")
    aims.append(("28. per-tool-call overhead through the C ABI (reported)",
                 f"{d['perToolCallUs']:.1f} µs", True))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    node_ok = (HERE / "peers" / "node_modules" / "ai").exists()
    d = bench_loops(args.rounds, node_ok)
    lines: list[str] = []
    aims: list[tuple[str, str, bool]] = []
    render_loops(d, lines, aims)
    print("\n".join(lines))
    for name, value, ok in aims:
        print(f"- {name}: {value} {'met' if ok else 'NOT met'}")
    print(json.dumps(d["rounds"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
