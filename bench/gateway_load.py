"""The gateway section's load generator (bench/gateway.py): one process, uvloop, a minimal
HTTP/1.1 client per connection (prebuilt request bytes, keep-alive, Content-Length and chunked
bodies, TCP_NODELAY), the same for every target (the upstream direct, aimux-gateway, LiteLLM).

  python bench/gateway_load.py load URL BODY_JSON --key K --clients N --seconds S [--pids P,..]
  python bench/gateway_load.py hold URL BODY_JSON --key K --clients N

``load``: N clients, each on its own connection, send the request back to back for a warm-up
then S seconds, all until each has one sample (a request after the warm-up, not its first);
prints one JSON line: latency (whole response) and time to first token (the first bytes holding
a MARKER, the first text delta) percentiles in ms, answers/s after the warm-up, non-200
answers, and the CPU seconds the processes ``--pids`` (and their children) spent meanwhile.
``hold``: N streams opened together, prints ``open <n>`` once each has its response head (or
after a bound: n counts the 200s still streaming), then holds them until stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import orjson

#: the upstream's first text delta (bench/server.py "w0 ", tests/trickle_server.py "e0 ")
MARKERS = (b"w0 ", b"e0 ")


class Conn(asyncio.Protocol):
    """One keep-alive connection; ``request()`` answers (status, seconds, ttft seconds)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[tuple[int, float, float]] | None = None
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("connection lost"))
        if not self.lost.done():
            self.lost.set_result(None)

    def request(self, data: bytes) -> asyncio.Future[tuple[int, float, float]]:
        assert self.transport is not None
        self.buf.clear()
        self.head_end = -1
        self.status = 0
        self.length = -1  # Content-Length, or -1: chunked
        self.pos = 0
        self.seen = 0
        self.ttft = float("nan")
        self.waiter = asyncio.get_running_loop().create_future()
        self.t0 = time.perf_counter()
        self.transport.write(data)
        return self.waiter

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        self.buf += data
        if self.ttft != self.ttft:  # nan: no first token yet
            window = bytes(self.buf[max(0, self.seen - 3) :])
            if any(m in window for m in MARKERS):
                self.ttft = now - self.t0
            self.seen = len(self.buf)
        if self.head_end < 0:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            self.head_end = end + 4
            lines = bytes(self.buf[:end]).split(b"\r\n")
            self.status = int(lines[0].split()[1])
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    self.length = int(value)
            self.pos = self.head_end
        if self.done():
            assert self.waiter is not None
            if not self.waiter.done():
                self.waiter.set_result((self.status, now - self.t0, self.ttft))

    def done(self) -> bool:
        if self.length >= 0:
            return len(self.buf) - self.head_end >= self.length
        while True:  # chunked: walk the chunks received so far
            eol = self.buf.find(b"\r\n", self.pos)
            if eol < 0:
                return False
            size = int(bytes(self.buf[self.pos : eol]).split(b";")[0], 16)
            if size == 0:
                return self.buf.find(b"\r\n", eol + 2) >= 0
            after = eol + 2 + size + 2
            if after > len(self.buf):
                return False
            self.pos = after


def request_bytes(url: str, body: bytes, key: str) -> tuple[str, int, bytes]:
    u = urlsplit(url)
    host, port = u.hostname or "127.0.0.1", u.port or 80
    head = (
        f"POST {u.path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nAccept: */*\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return host, port, head.encode() + body


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of these processes and all their descendants (/proc), in seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo, seen = 0, list(pids), set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, ValueError):
            continue
        todo += children(pid)
    return total / tick


def children(pid: int) -> list[int]:
    """The child processes of every thread of ``pid``. A thread that exits during the walk is
    skipped alone: skipping the rest would leave a worker process out of one sample and not the
    other."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return found


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000


async def load(args: argparse.Namespace) -> dict[str, object]:
    host, port, req = request_bytes(args.url, args.body.encode(), args.key)
    loop = asyncio.get_running_loop()
    conns = [(await loop.create_connection(Conn, host, port))[1] for _ in range(args.clients)]
    pids = [int(p) for p in args.pids.split(",") if p]
    lat: list[float] = []
    ttft: list[float] = []
    bad = [0]
    window = [float("inf"), float("inf")]

    done = [0]
    sampled_clients: set[int] = set()

    async def client(conn: Conn) -> None:
        # a sample: a request started after the warm-up that is not its client's first, in the
        # window or a client's first after it; every client goes on until each has one, so
        # every sample ran under N clients (a slow target at 512 answers seconds later)
        sampled = first_done = False
        while True:
            start = time.perf_counter()
            if start >= window[1] and len(sampled_clients) == len(conns):
                return
            status, seconds, first = await conn.request(req)
            if start + seconds >= window[0]:
                done[0] += 1
            if start >= window[0] and first_done and (start < window[1] or not sampled):
                sampled = True
                sampled_clients.add(id(conn))
                if status != 200:
                    bad[0] += 1
                    continue
                lat.append(seconds)
                if first == first and args.stream:
                    ttft.append(first)
            first_done = True

    tasks = [asyncio.create_task(client(c)) for c in conns]
    await asyncio.sleep(args.warmup)
    cpu0, own0, t0 = cpu_seconds(pids), time.process_time(), time.perf_counter()
    window[0], window[1] = t0, t0 + args.seconds
    await asyncio.gather(*tasks)
    cpu1, own1, t1 = cpu_seconds(pids), time.process_time(), time.perf_counter()
    for c in conns:
        assert c.transport is not None
        c.transport.close()
    return {
        "clients": args.clients,
        "requests": len(lat),
        "answered": done[0],
        "non200": bad[0],
        "rps": done[0] / (t1 - t0),
        "p50": pct(lat, 0.50),
        "p99": pct(lat, 0.99),
        "ttftP50": pct(ttft, 0.50),
        "ttftP99": pct(ttft, 0.99),
        "targetCpu": cpu1 - cpu0,
        "loadCpu": own1 - own0,
        "seconds": t1 - t0,
    }


async def hold(args: argparse.Namespace) -> None:
    host, port, req = request_bytes(args.url, args.body.encode(), args.key)
    loop = asyncio.get_running_loop()
    conns = []
    for _ in range(args.clients):
        conns.append((await loop.create_connection(Conn, host, port))[1])
    waits = [c.request(req) for c in conns]
    deadline = time.perf_counter() + args.seconds
    while time.perf_counter() < deadline:
        if all(c.status or w.done() for c, w in zip(conns, waits, strict=True)):
            break
        await asyncio.sleep(0.05)
    opened = sum(1 for c, w in zip(conns, waits, strict=True) if c.status == 200 and not w.done())
    print(f"open {opened}", flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    for c in conns:
        assert c.transport is not None
        c.transport.abort()
    for w in waits:
        if w.done():
            w.exception()  # retrieved: no "never retrieved" warning
        else:
            w.cancel()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("load", "hold"))
    ap.add_argument("url")
    ap.add_argument("body")
    ap.add_argument("--key", default="none")
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--pids", default="")
    ap.add_argument("--stream", action="store_true", help="time the first token too")
    args = ap.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    if args.mode == "load":
        print(orjson.dumps(asyncio.run(load(args))).decode(), flush=True)
    else:
        asyncio.run(hold(args))


if __name__ == "__main__":
    main()
