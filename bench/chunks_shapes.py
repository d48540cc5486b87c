"""The stream chunk reader in C (``aimux_ops._speedups._cchunks``, DESIGN.md "Stream chunks in C") on and
off, end to end, for each chunk shape: the Python API's ``stream_text`` over local HTTP (a
server on 127.0.0.1 writing each 5,000-chunk stream in 16 KiB writes), the C reader on and off in
turn in one process (which goes first alternates), the median of the rounds after two warm-up
ones. The rule it checks: the C reader makes no shape slower than the Python loop.

    .venv/bin/python bench/chunks_shapes.py [rounds]      # default 12

Shapes: OpenAI content-only deltas (taken), "role" in every delta (Ollama; taken),
"reasoning_content": null beside the content (taken), tool-call argument deltas (handed back:
the rest of each read goes to the Python loop); Anthropic text deltas, thinking deltas (taken,
nothing to append), a tool's input_json deltas (taken, added to the tool call)."""

from __future__ import annotations

import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

import aimux_ops
from aimux_ops.providers import anthropic, openai

N = 5000


def _o(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def _openai(body: dict[str, Any], finish: str = "stop", first: bytes = b"") -> bytes:
    return first + _o(body) * N + _o({}, finish) + b"data: [DONE]\n\n"


def _a(body: dict[str, Any]) -> bytes:
    return b"event: " + body["type"].encode() + b"\ndata: " + orjson.dumps(body) + b"\n\n"


def _anthropic(block: dict[str, Any], delta: dict[str, Any], stop: str = "end_turn") -> bytes:
    message = {"id": "m", "model": "c", "usage": {"input_tokens": 1}}
    end = {"stop_reason": stop}
    return (
        _a({"type": "message_start", "message": message})
        + _a({"type": "content_block_start", "index": 0, "content_block": block})
        + _a({"type": "content_block_delta", "index": 0, "delta": delta}) * N
        + _a({"type": "content_block_stop", "index": 0})
        + _a({"type": "message_delta", "delta": end, "usage": {"output_tokens": 5}})
        + _a({"type": "message_stop"})
    )


CALL = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
ARGS = {"tool_calls": [{"index": 0, "function": {"arguments": "ab"}}]}
TOOL = {"type": "tool_use", "id": "t", "name": "f", "input": {}}
SHAPES: dict[str, tuple[str, bytes]] = {
    "openai content only": (
        "openai", _openai({"content": "w "}, first=_o({"role": "assistant", "content": ""}))
    ),
    "openai role in every delta": ("openai", _openai({"role": "assistant", "content": "w "})),
    "openai reasoning_content null": (
        "openai", _openai({"content": "w ", "reasoning_content": None})
    ),
    "openai tool-call deltas": (
        "openai", _openai(ARGS, "tool_calls", _o({"tool_calls": [CALL]}))
    ),
    "anthropic text_delta": (
        "anthropic", _anthropic({"type": "text", "text": ""}, {"type": "text_delta", "text": "w "})
    ),
    "anthropic thinking_delta": (
        "anthropic",
        _anthropic(
            {"type": "thinking", "thinking": ""}, {"type": "thinking_delta", "thinking": "h"}
        ),
    ),
    "anthropic input_json_delta": (
        "anthropic", _anthropic(TOOL, {"type": "input_json_delta", "partial_json": " "}, "tool_use")
    ),
}  # fmt: skip
BODIES = {f"/{i}": body for i, (_, body) in enumerate(SHAPES.values())}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = BODIES["/" + self.path.split("/")[1]]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        for i in range(0, len(body), 16384):
            self.wfile.write(body[i : i + 16384])


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    modules = {"openai": openai, "anthropic": anthropic}
    loaded = {name: mod._cchunks_module() for name, mod in modules.items()}
    if None in loaded.values():
        raise SystemExit("aimux_ops._speedups._cchunks is not loaded (make native; AIMUX_PURE_PYTHON unset)")

    def run(provider: str, index: int) -> float:
        params = {"model": {"provider": provider, "modelId": "m", "apiKey": "k",
                            "baseURL": f"http://127.0.0.1:{port}/{index}/v1"},
                  "prompt": "hi", "maxRetries": 0}  # fmt: skip
        start = time.perf_counter()
        for event in aimux_ops.stream("stream_text", params):
            if event["type"] == "error":
                raise RuntimeError(event)
        return time.perf_counter() - start

    print(
        f"{'shape':32s} {'C off ms':>9s} {'C on ms':>9s} {'on/off':>7s}   (median of {rounds - 2})"
    )
    for index, (name, (provider, _)) in enumerate(SHAPES.items()):
        module = modules[provider]
        times: dict[str, list[float]] = {"on": [], "off": []}
        for r in range(rounds):
            for side in ("on", "off") if r % 2 else ("off", "on"):
                module._cchunks = loaded[provider] if side == "on" else None
                times[side].append(run(provider, index))
        module._cchunks = loaded[provider]
        on, off = (statistics.median(times[s][2:]) for s in ("on", "off"))
        print(f"{name:32s} {off * 1000:9.2f} {on * 1000:9.2f} {on / off:7.2f}")
    server.shutdown()


if __name__ == "__main__":
    main()
