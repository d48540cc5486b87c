"""A local OpenAI-compatible server that trickles stream events slowly, for holding many
concurrent streams (tests/test_node_streams, native/tests/test_events.c, bench/run.py).

One asyncio thread serves every connection. ``POST .../chat/completions`` with ``"stream":
true`` answers ``--events`` text deltas ("e0 ", "e1 ", ...) ``--interval-ms`` apart (after a first
role chunk; with 0, all in one write), then the finish chunk and ``[DONE]``; the prompt ``refuse`` answers a 400. Prints
``port <n>`` on stdout once listening on 127.0.0.1 (ephemeral port), runs until stdin closes or
it is killed.

    python tests/trickle_server.py --events 20 --interval-ms 50
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-trickle",
        "object": "chat.completion.chunk",
        "model": "trickle",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


async def _handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, args: argparse.Namespace
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await reader.readexactly(length) if length else b""
            if b'"refuse"' in body:
                msg = b'{"error":{"message":"refused","type":"invalid_request_error"}}'
                writer.write(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(msg), msg)
                )
                await writer.drain()
                continue
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
            )
            writer.write(_chunk({"role": "assistant", "content": ""}))
            await writer.drain()
            if not args.interval_ms:  # as fast as possible: every event in one write
                writer.write(args.all_events)
            for i in range(args.events if args.interval_ms else 0):
                await asyncio.sleep(args.interval_ms / 1000.0)
                writer.write(args.deltas[i])
                await writer.drain()
                if i == 0 and args.hold:
                    await args.released.wait()
            writer.write(_chunk({}, "stop") + b"data: [DONE]\n\n")
            await writer.drain()
            break
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def _main(args: argparse.Namespace) -> None:
    server = await asyncio.start_server(
        lambda r, w: _handle(r, w, args), "127.0.0.1", 0, backlog=4096
    )
    port = server.sockets[0].getsockname()[1]
    print(f"port {port}", flush=True)
    loop = asyncio.get_running_loop()
    args.released = asyncio.Event()

    def read_stdin() -> None:  # until EOF; a line "release" lets every held stream go on
        for line in sys.stdin:
            if line.strip() == "release":
                loop.call_soon_threadsafe(args.released.set)

    stdin_closed = loop.run_in_executor(None, read_stdin)
    async with server:
        await asyncio.wait(
            [asyncio.ensure_future(server.serve_forever()), stdin_closed],
            return_when=asyncio.FIRST_COMPLETED,
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20)
    ap.add_argument("--interval-ms", type=float, default=50)
    ap.add_argument(
        "--hold", action="store_true", help="hold streams after one delta until 'release'"
    )
    parsed = ap.parse_args()
    parsed.deltas = [_chunk({"content": f"e{i} "}) for i in range(parsed.events)]
    parsed.all_events = b"".join(parsed.deltas)
    asyncio.run(_main(parsed))
