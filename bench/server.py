"""A fast OpenAI-compatible Chat Completions server for the benchmarks (127.0.0.1 only).

Every response is built once, at start-up, so the server spends its time on the socket and not on
itself: an asyncio protocol with a minimal HTTP/1.1 parser (keep-alive, Content-Length bodies),
TCP_NODELAY, one ``write`` per response. What it answers depends on the request's model id:

- any model id, ``"stream": false``: the completion ``"Hello!"`` (usage 12/2/14, id
  ``chatcmpl-demo-1``), byte for byte what ``tests/fault_server.py`` sends in its ``ok`` mode;
- ``"stream": true``: ``--chunks`` (default 5000) one-word deltas, then finish, usage, ``[DONE]``
  (the fault server's ``chunks`` mode), chunked transfer encoding;
- a model id ``delay-<ms>`` (e.g. ``delay-20``): the same, answered after that many milliseconds.

Run: ``python bench/server.py --port 0`` prints ``PORT <n>`` once it listens. It stops on
SIGTERM / SIGINT, or by itself after ``--max-seconds`` (default 900).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import sys

import orjson

CREATED = 1_700_000_000
MODEL = "gpt-4o-mini"


def completion(model: str) -> bytes:
    return orjson.dumps({
        "id": "chatcmpl-demo-1",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello!"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14},
    })


def chunk(model: str, delta: dict[str, object], finish: str | None = None) -> bytes:
    return b"data: " + orjson.dumps({
        "id": "chatcmpl-demo-1",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }) + b"\n\n"


def stream_body(model: str, n: int) -> bytes:
    events = [chunk(model, {"role": "assistant", "content": ""})]
    events += [chunk(model, {"content": f"w{i} "}) for i in range(n)]
    events.append(chunk(model, {}, "stop"))
    events.append(b"data: " + orjson.dumps({
        "id": "chatcmpl-demo-1", "object": "chat.completion.chunk", "created": CREATED,
        "model": model, "choices": [],
        "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14}}) + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    out = [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n"]
    for start in range(0, len(events), 256):  # 256 events per HTTP chunk, like the fault server
        data = b"".join(events[start:start + 256])
        out.append(b"%x\r\n%s\r\n" % (len(data), data))
    out.append(b"0\r\n\r\n")
    return b"".join(out)


def plain_response(model: str) -> bytes:
    body = completion(model)
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % len(body)) + body


_NOT_FOUND_BODY = b'{"error":{"message":"Unknown path","type":"invalid_request_error"}}'
NOT_FOUND = (b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
             b"\r\n" % len(_NOT_FOUND_BODY)) + _NOT_FOUND_BODY


class Responses:
    def __init__(self, chunks: int) -> None:
        self.chunks = chunks
        self.cache: dict[tuple[str, bool], bytes] = {}

    def get(self, model: str, stream: bool) -> bytes:
        key = (model, stream)
        hit = self.cache.get(key)
        if hit is None:
            if len(self.cache) > 64:
                self.cache.clear()
            hit = stream_body(model, self.chunks) if stream else plain_response(model)
            self.cache[key] = hit
        return hit


class Http(asyncio.Protocol):
    def __init__(self, responses: Responses) -> None:
        self.responses = responses
        self.buf = b""
        self.transport: asyncio.Transport | None = None
        self.busy = False
        self.requests = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.busy:
            self.process()

    def process(self) -> None:
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end]
            length = 0
            lower = head.lower()
            i = lower.find(b"\r\ncontent-length:")
            if i >= 0:
                j = lower.find(b"\r\n", i + 2)
                length = int(head[i + 17:j if j >= 0 else len(head)].strip())
            if len(self.buf) < end + 4 + length:
                return
            body = self.buf[end + 4:end + 4 + length]
            self.buf = self.buf[end + 4 + length:]
            line = head[:head.find(b"\r\n")] if b"\r\n" in head else head
            if b"/chat/completions" not in line:
                self.send(NOT_FOUND)
                continue
            try:
                req = orjson.loads(body)
                model = str(req.get("model", MODEL))
                stream = bool(req.get("stream"))
            except (orjson.JSONDecodeError, AttributeError):
                model, stream = MODEL, False
            resp = self.responses.get(model, stream)
            if model.startswith("delay-"):
                self.busy = True
                delay = float(model[6:] or 0) / 1000.0
                asyncio.get_running_loop().call_later(delay, self.delayed, resp)
                return
            self.send(resp)

    def send(self, data: bytes) -> None:
        self.requests += 1
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def delayed(self, data: bytes) -> None:
        self.busy = False
        self.send(data)
        self.process()


async def main_async(port: int, chunks: int, max_seconds: float) -> None:
    loop = asyncio.get_running_loop()
    responses = Responses(chunks)
    server = await loop.create_server(lambda: Http(responses), "127.0.0.1", port, backlog=256,
                                      reuse_address=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    try:
        await asyncio.wait_for(stop.wait(), max_seconds)
    except TimeoutError:
        print("bench server: --max-seconds reached, stopping", file=sys.stderr)
    server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--max-seconds", type=float, default=900.0)
    args = parser.parse_args()
    asyncio.run(main_async(args.port, args.chunks, args.max_seconds))


if __name__ == "__main__":
    main()
