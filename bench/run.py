"""make bench: aimux-ops side by side with its peers; every figure a ratio against a baseline
measured in the same run (several rounds, medians). Writes bench/results.md and bench/results.png.

  python bench/run.py [--rounds 7] [--quick] [--out bench/results.md] [--png bench/results.png]

Sections (issue 8):
  1. the C ABI call vs a bare cffi-embedded call: the native engineer's table (make -C native bench)
  2. envelope projection of cause chains 1, 4 and 16 deep, vs orjson.dumps of the same envelope;
     and of varied workloads (1,000 different exceptions in turn: unknown ops, provider errors)
  3. generate_text latency per call vs the transport floor (bare httpx POST + orjson parse)
  4. stream_text events/s on a 5,000-chunk stream vs the parse floor (httpx lines + orjson)
  5. 1-16 C threads calling generate_text on a server answering after 20 ms (bench/threads.c)
  6. concurrent streams held per process (issue 12): 1,000 slow streams in one Node process
     (aimux binding / the AI SDK) and one C thread (bench/held_streams.c): threads, RSS per
     stream, and aggregate events/s at 1,000 streams on a fast server
  0. cold start of a C host (issue 16): first call and RSS, one process each (bench/coldstart.py)
  4b. the stream parsers in memory (bench/parsers.py, moved from the tests)
  7. RSS of a C host under the longest retry loop and 20,000 error calls (bench/memory.py)
  loops. a 10-step tool loop, Node binding vs the AI SDK, and the per-tool-call cost through
     the C ABI (bench/loops.py)
  gateway. aimux-gateway vs LiteLLM's proxy over a direct connection to one local upstream:
     added latency and TTFT at 1/64/512 clients, throughput per core, RSS per open stream
     (issue 30, bench/gateway.py)
``--only concurrency`` (comma-separated, from SECTIONS: native, coldstart, projection, latency,
stream, parsers, threads, profiles, concurrency, memory, loops, gateway) runs those sections only, into bench/build/only.md / only.json unless --out / --json say otherwise.
The server is bench/server.py in its own process (prebuilt responses, TCP_NODELAY); a bare-socket
client measures what the server and the loopback cost alone, to show it is not the bottleneck.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import platform
import pstats
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import httpx  # noqa: E402
import orjson  # noqa: E402

import aimux_ops  # noqa: E402
from aimux_ops.errors import APICallError, JSONParseError, RetryError, TypeValidationError
from aimux_ops.wire.envelope import project  # noqa: E402

PROMPT = "Say hello in one word."
KEY = "sk-bench"
BUILD = HERE / "build"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def loadavg() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def cpu_busy() -> float:
    """Seconds of CPU busy time of the whole machine (all cores) since boot, from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            parts = [int(x) for x in f.readline().split()[1:]]
        ticks = os.sysconf("SC_CLK_TCK")
        idle = parts[3] + (parts[4] if len(parts) > 4 else 0)
        return (sum(parts[:8]) - idle) / ticks
    except (OSError, ValueError, IndexError):
        return float("nan")


def own_cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


# -- the server -----------------------------------------------------------------------------------


@contextlib.contextmanager
def bench_server(chunks: int = 5000) -> Iterator[int]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "server.py"), "--port", "0", "--chunks", str(chunks),
         "--max-seconds", "1200"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"bench server did not start: {line!r}")
        yield int(line.split()[1])
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


# -- 2. projection --------------------------------------------------------------------------------


def chain(depth: int) -> BaseException:
    """A cause chain ``depth`` nodes deep, aimux nodes and source nodes alternating, rooted in an
    APICallError (the shape of a transport failure: APICallError ← httpx ← httpcore ← OSError)."""
    inner: BaseException = ConnectionRefusedError(111, "Connection refused")
    for level in range(depth - 1, 0, -1):
        if level % 2:
            outer: BaseException = OSError(f"layer {level}: the connection failed")
        elif level % 4 == 0:
            outer = JSONParseError(f"JSON parsing failed at layer {level}", text='{"a": 1')
        else:
            outer = TypeValidationError(f"Type validation failed at layer {level}",
                                        value={"choices": "none", "level": level})
        outer.__cause__ = inner
        inner = outer
    root = APICallError(
        "Cannot connect to API: [Errno 111] Connection refused",
        is_retryable=True,
    )
    if depth > 1:
        root.__cause__ = inner
    return root


def time_per_call(fn: Callable[[], Any], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def bench_projection(rounds: int, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for depth in (1, 4, 16):
        exc = chain(depth)
        env = project(exc)
        doc = orjson.loads(env)
        nodes = 0
        node: Any = doc
        while isinstance(node, dict):
            nodes += 1
            node = node.get("cause")
        samples, floors = [], []
        for _ in range(rounds):
            time_per_call(lambda e=exc: project(e), n // 10)  # warm
            samples.append(time_per_call(lambda e=exc: project(e), n))
            floors.append(time_per_call(lambda d=doc: orjson.dumps(d), n))
        out[str(depth)] = {"nodes": nodes, "bytes": len(env), "us": median(samples) * 1e6,
                           "floorUs": median(floors) * 1e6}
    out["varied"] = varied_projection(rounds, n)
    # a RetryError of 3 attempts, each a 4-deep chain: what a failed call with retries projects
    attempts = [chain(4) for _ in range(3)]
    retry = RetryError("Failed after 3 attempts. Last error: Cannot connect to API",
                       reason="maxRetriesExceeded", errors=attempts)
    samples = [time_per_call(lambda: project(retry), n) for _ in range(rounds)]
    out["retry3x4"] = {"bytes": len(project(retry)), "us": median(samples) * 1e6}
    return out


def varied_workloads() -> dict[str, list[BaseException]]:
    """Exceptions that differ on every call (1,000 each, round robin), so no figure is one
    input's: an unknown op (a different name each time, as dispatch raises it), a provider's
    HTTP failure (APICallError with the status, headers, body and parsed data a 4xx / 5xx
    carries), and a provider's transport failure (APICallError ← httpx.ConnectError ←
    httpcore.ConnectError ← ConnectionRefusedError, as the transport wraps it)."""
    import httpcore

    from aimux_ops.errors import UnknownOpError

    names = ["aimux.manifest", "aimux.version", "generate_object", "generate_text",
             "stream_text"]
    unknown = [UnknownOpError(f"unknown op {f'no.such.op.{i}'!r}", op=f"no.such.op.{i}",
                              available_ops=names) for i in range(1000)]
    http = []
    for i in range(1000):
        status = (400, 401, 404, 429, 500, 502, 503)[i % 7]
        body = {"error": {"message": f"request {i} failed with {status}", "type": "api_error",
                          "code": None, "param": None}}
        http.append(APICallError(
            f"request {i} failed with {status}", status_code=status, is_retryable=status >= 429,
            response_headers={"content-type": "application/json", "x-request-id": f"req_{i}",
                              "retry-after": str(i % 5)},
            response_body=orjson.dumps(body).decode(), data=body))
    transport = []
    for i in range(1000):
        refused = ConnectionRefusedError(111, "Connection refused")
        core = httpcore.ConnectError(refused)
        outer = httpx.ConnectError(f"[Errno 111] Connection refused (attempt {i})")
        outer.__cause__ = core
        err = APICallError(f"Cannot connect to API: [Errno 111] Connection refused ({i})",
                           is_retryable=True)
        err.__cause__ = outer
        transport.append(err)
    return {"unknown op, a different name each call": unknown,
            "provider HTTP error (status, headers, body, data), different each call": http,
            "provider transport failure (4 nodes), different each call": transport}


def varied_projection(rounds: int, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, excs in varied_workloads().items():
        docs = [orjson.loads(project(e)) for e in excs]
        size = len(excs)

        def run_project(excs: list[BaseException] = excs) -> None:
            for e in excs:
                project(e)

        def run_floor(docs: list[Any] = docs) -> None:
            for d in docs:
                orjson.dumps(d)

        reps = max(1, n // size)
        samples, floors = [], []
        for _ in range(rounds):
            time_per_call(run_project, 1)  # warm
            samples.append(time_per_call(run_project, reps) / size)
            floors.append(time_per_call(run_floor, reps) / size)
        env = project(excs[0])
        nodes, node = 0, orjson.loads(env)
        while isinstance(node, dict):
            nodes += 1
            node = node.get("cause")
        out[label] = {"nodes": nodes, "bytes": len(env), "us": median(samples) * 1e6,
                      "floorUs": median(floors) * 1e6}
    return out


# -- 3. latency -----------------------------------------------------------------------------------


def generate_params(base: str, model: str = "gpt-4o-mini") -> dict[str, Any]:
    return {"model": {"provider": "openai", "modelId": model, "baseURL": base, "apiKey": KEY},
            "prompt": PROMPT, "maxRetries": 0}


class Peers:
    """Every Python-side peer, each a zero-argument call returning after one checked result."""

    def __init__(self, port: int, lib: Any) -> None:
        import openai

        self.base = f"http://127.0.0.1:{port}/v1"
        self.port = port
        self.url = self.base + "/chat/completions"
        self.body = orjson.dumps({"model": "gpt-4o-mini",
                                  "messages": [{"role": "user", "content": PROMPT}]})
        self.stream_body = orjson.dumps({"model": "gpt-4o-mini", "stream": True,
                                         "messages": [{"role": "user", "content": PROMPT}]})
        self.headers = {"content-type": "application/json", "authorization": f"Bearer {KEY}"}
        self.httpx = httpx.Client()
        self.params = generate_params(self.base)
        self.params_json = orjson.dumps(self.params)
        self.lib = lib
        self.openai = openai.OpenAI(base_url=self.base, api_key=KEY, max_retries=0)
        raw = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(self.body))
        self.raw_request = raw + self.body
        self.sock: socket.socket | None = None

    # the bare socket: server + loopback alone
    def raw_socket(self) -> None:
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port))
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s = self.sock
        s.sendall(self.raw_request)
        data = b""
        while True:
            data += s.recv(65536)
            head, sep, rest = data.partition(b"\r\n\r\n")
            if sep:
                i = head.lower().find(b"content-length:")
                n = int(head[i + 15:].split(b"\r\n", 1)[0])
                if len(rest) >= n:
                    assert b"Hello!" in rest
                    return

    def floor(self) -> None:
        r = self.httpx.post(self.url, content=self.body, headers=self.headers)
        assert orjson.loads(r.content)["choices"][0]["message"]["content"] == "Hello!"

    def aimux_python(self) -> None:
        assert aimux_ops.call("generate_text", self.params)["text"] == "Hello!"

    def aimux_cabi(self) -> None:
        result = self.lib.call(b"generate_text", self.params_json)
        assert orjson.loads(result)["text"] == "Hello!"

    def openai_python(self) -> None:
        r = self.openai.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": PROMPT}])
        assert r.choices[0].message.content == "Hello!"

    # streams: each returns the number of text deltas
    def stream_floor(self) -> int:
        n = 0
        with self.httpx.stream("POST", self.url, content=self.stream_body,
                               headers=self.headers) as r:
            for line in r.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    chunk = orjson.loads(line[6:])
                    choices = chunk["choices"]
                    if choices and choices[0]["delta"].get("content"):
                        n += 1
        return n

    def stream_aimux_python(self) -> int:
        n = 0
        for event in aimux_ops.stream("stream_text", self.params):
            if event["type"] == "text-delta":
                n += 1
            elif event["type"] == "error":
                raise RuntimeError(event)
        return n

    def stream_python_read_ahead(self) -> int:
        """The Python API's consumption of an event-driven stream, read ahead by its reader
        thread (``dispatch.stream_start_json`` + ``stream_next_objects``, a batch per take)."""
        from aimux_ops.boundary.dispatch import stream_free, stream_next_objects, stream_start_json

        handle, env = stream_start_json("stream_text", orjson.dumps(self.params))
        assert handle is not None, env
        n = 0
        try:
            while (batch := stream_next_objects(handle)[0]) is not None:
                for item in batch:
                    # (a dict, or bytes once libaimux is loaded here: its C queue's events)
                    event = item if type(item) is dict else orjson.loads(item)
                    if event["type"] == "text-delta":
                        n += 1
                    elif event["type"] == "error":
                        raise RuntimeError(event)
        finally:
            stream_free(handle)
        return n

    def stream_direct_experiment(self) -> int:
        """Experiment (not a surface): the stream_text op's own event generator iterated in-process,
        with no per-event registry lookup and no JSON round trip — what fix (a) below would give
        the Python API."""
        from aimux_ops.ops.registry import StreamContext, get_op

        spec = get_op("stream_text")
        assert spec is not None
        params = spec.params.model_validate(self.params)
        n = 0
        for event in spec.handler(params, StreamContext()):
            if event["type"] == "text-delta":
                n += 1
        return n

    def stream_aimux_cabi(self) -> int:
        # every event counted; the stream has text deltas + one finish event
        return self.lib.count_stream(b"stream_text", self.params_json) - 1

    def stream_openai_python(self) -> int:
        n = 0
        for chunk in self.openai.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": PROMPT}],
                stream=True):
            if chunk.choices and chunk.choices[0].delta.content:
                n += 1
        return n


def node_peer(mode: str, base: str, count: int, warmup: int) -> dict[str, Any]:
    proc = subprocess.run(
        ["node", str(HERE / "peers" / "ai_sdk_peer.mjs"), mode, base, str(count), str(warmup)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"AI SDK peer failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def node_binding_stream(base: str, streams: int) -> dict[str, Any] | None:
    """stream_text through the aimux Node binding (bench/peers/aimux_node_peer.mjs); None (the
    row reported as not measured, with the reason logged) when it fails or takes over 60 s."""
    try:
        proc = subprocess.run(
            ["node", str(HERE / "peers" / "aimux_node_peer.mjs"), "stream", base, str(streams),
             "1", KEY],
            capture_output=True, text=True, timeout=60, check=False,
        )
    except subprocess.TimeoutExpired:
        log("  aimux Node binding stream: no end within 60 s (not measured)")
        return None
    if proc.returncode != 0:
        log(f"  aimux Node binding stream failed (not measured): {proc.stderr[-500:]}")
        return None
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["events"] == 5000 * streams, out
    return out


def c_caller_latency(base: str, n: int) -> float:
    """µs per generate_text call from a C caller (bench/threads.c, one thread)."""
    params = orjson.dumps(generate_params(base)).decode()
    proc = subprocess.run([str(BUILD / "threads"), "aimux", "1", str(n), params],
                          capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"threads aimux 1: {proc.stderr[-2000:]}")
    return 1e6 / json.loads(proc.stdout)["callsPerSecond"]


def c_caller_stream(base: str, streams: int, mode: str = "stream") -> float:
    """text-delta events/s of stream_text from a C caller (bench/threads.c stream: one
    aimux_stream_next per event; stream-next-batch: aimux_stream_next_batch, every ready event per
    call; stream-batch: aimux_stream_start + poll + aimux_stream_poll)."""
    params = orjson.dumps(generate_params(base)).decode()
    proc = subprocess.run([str(BUILD / "threads"), mode, str(streams), params],
                          capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"threads stream: {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout)
    assert out["events"] == 5000 * streams, out
    return float(out["eventsPerSecond"])


def bench_latency(peers: Peers, rounds: int, n: int, node_ok: bool) -> dict[str, list[float]]:
    fns: dict[str, Callable[[], Any]] = {
        "bare socket (server + loopback)": peers.raw_socket,
        "floor: httpx POST + orjson": peers.floor,
        "aimux Python API": peers.aimux_python,
        "aimux C ABI (ctypes)": peers.aimux_cabi,
        "openai-python": peers.openai_python,
    }
    res: dict[str, list[float]] = {k: [] for k in fns}
    res["aimux C ABI (C caller)"] = []
    if node_ok:
        res["Vercel AI SDK (node)"] = []
    for fn in fns.values():  # warm every pool and import once
        for _ in range(20):
            fn()
    blocks = 6  # each round interleaves the in-process peers in blocks, so drift hits all alike
    for r in range(rounds):
        spent = dict.fromkeys(fns, 0.0)
        for _ in range(blocks):
            for name, fn in fns.items():
                spent[name] += time_per_call(fn, max(1, n // blocks))
        for name in fns:
            res[name].append(spent[name] / blocks * 1e6)
        res["aimux C ABI (C caller)"].append(c_caller_latency(peers.base, n))
        if node_ok:
            out = node_peer("generate", peers.base, n, 20)
            res["Vercel AI SDK (node)"].append(out["seconds"] / out["calls"] * 1e6)
        log(f"  latency round {r + 1}/{rounds}: "
            + ", ".join(f"{k.split(' (')[0]} {v[-1]:.0f}" for k, v in res.items()))
    return res


FLOOR = "floor: httpx lines + orjson"


def bench_stream(
    peers: Peers, rounds: int, node_ok: bool
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """(events/s of every peer per round, the floor's events/s measured right before each of
    those runs). The second pairs each figure with a floor of the same moment: this machine
    moves between two speeds (~0.6× apart) within a run, for every peer alike, so a peer's
    median and the floor's median can come from different speeds."""
    fns: dict[str, Callable[[], int]] = {
        "floor: httpx lines + orjson": peers.stream_floor,
        "aimux Python API": peers.stream_aimux_python,
        "aimux C ABI (ctypes)": peers.stream_aimux_cabi,
        "openai-python": peers.stream_openai_python,
        "experiment: op generator, no JSON round trip": peers.stream_direct_experiment,
        "aimux Python, reader thread + hand-off (event-driven)": peers.stream_python_read_ahead,
    }
    res: dict[str, list[float]] = {k: [] for k in fns}
    res["aimux C ABI (C caller)"] = []
    res["aimux C ABI (C caller, batch poll)"] = []
    res["aimux C ABI (C caller, next_batch)"] = []
    binding_ok = node_ok and (ROOT / "bindings" / "node" / "node_modules" / "koffi").exists()
    if binding_ok:
        res["aimux Node binding"] = []
    if node_ok:
        res["Vercel AI SDK (node)"] = []
    for fn in fns.values():
        assert fn() == 5000, "a peer did not see 5000 text deltas"
    before: dict[str, list[float]] = {k: [] for k in res}

    def floor_now(name: str) -> None:
        t0 = time.perf_counter()
        events = peers.stream_floor()
        before[name].append(events / (time.perf_counter() - t0))

    for r in range(rounds):
        for name, fn in fns.items():
            floor_now(name)
            t0 = time.perf_counter()
            events = fn()
            res[name].append(events / (time.perf_counter() - t0))
        floor_now("aimux C ABI (C caller)")
        res["aimux C ABI (C caller)"].append(c_caller_stream(peers.base, 2))
        floor_now("aimux C ABI (C caller, batch poll)")
        res["aimux C ABI (C caller, batch poll)"].append(
            c_caller_stream(peers.base, 2, "stream-batch"))
        floor_now("aimux C ABI (C caller, next_batch)")
        res["aimux C ABI (C caller, next_batch)"].append(
            c_caller_stream(peers.base, 2, "stream-next-batch"))
        if binding_ok:
            floor_now("aimux Node binding")
            nb = node_binding_stream(peers.base, 2)
            if nb is None:
                binding_ok = False  # one failure: the row is not measured this run
                res.pop("aimux Node binding", None)
            else:
                res["aimux Node binding"].append(nb["events"] / nb["seconds"])
        if node_ok:
            floor_now("Vercel AI SDK (node)")
            out = node_peer("stream", peers.base, 1, 1)
            assert out["events"] == 5000, out
            res["Vercel AI SDK (node)"].append(out["events"] / out["seconds"])
        log(f"  stream round {r + 1}/{rounds}: "
            + ", ".join(f"{k.split(' (')[0]} {v[-1]:.0f}/s" for k, v in res.items()))
    if "aimux Node binding" not in res:
        before.pop("aimux Node binding", None)
    return res, before


@contextlib.contextmanager
def trickle_server(events: int, interval_ms: float) -> Iterator[str]:
    """tests/trickle_server.py (one asyncio thread, 127.0.0.1): its base URL."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "trickle_server.py"), "--events", str(events),
         "--interval-ms", str(interval_ms)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        if not line.startswith("port "):
            raise RuntimeError(f"trickle server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.kill()
        proc.wait()


def held_streams(who: str, base: str, streams: int, events: int) -> dict[str, Any]:
    """One run of bench/peers/held_streams.mjs (aimux | aisdk) or bench/build/held_streams (c)."""
    if who == "c":
        params = orjson.dumps({
            "model": {"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": base,
                      "apiKey": KEY}, "prompt": "hi", "maxRetries": 0, "timeoutMs": 600_000,
        }).decode()
        cmd = [str(BUILD / "held_streams"), params, str(streams), str(events)]
    else:
        cmd = ["node", str(HERE / "peers" / "held_streams.mjs"), who, base, str(streams),
               str(events)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{who} held streams failed: {proc.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


CONCURRENT = 1000
SLOW = (20, 250.0)  # events per stream, ms apart: every stream open for ~5 s
FAST = (200, 0.0)  # events per stream, all at once: the aggregate rate


def bench_concurrency(node_ok: bool) -> dict[str, Any]:
    who = ["aimux", "c"] + (["aisdk"] if node_ok else [])
    res: dict[str, Any] = {"streams": CONCURRENT, "slow": {}, "fast": {}}
    for kind, (events, interval) in (("slow", SLOW), ("fast", FAST)):
        with trickle_server(events, interval) as base:
            for w in who:
                res[kind][w] = held_streams(w, base, CONCURRENT, events)
                r = res[kind][w]
                log(f"  {kind} {w}: all open {r['openSeconds']:.2f} s, done {r['seconds']:.2f} s, "
                    f"{r['eventsPerSecond']:,.0f} ev/s, threads {r['threadsBaseline']}→"
                    f"{r['threadsMax']}, {r['rssPerStreamKiB']:.1f} KiB/stream")
    return res


def render_concurrency(c: dict[str, Any]) -> list[str]:
    names = {"aimux": "aimux Node binding", "aisdk": "Vercel AI SDK (node)",
             "c": "aimux C ABI (one C thread)"}
    L = [f"## 6. Concurrent streams held per process ({c['streams']:,} streams)", ""]
    L.append(f"Every peer opens {c['streams']:,} `stream_text` streams at once in one process and "
             "drains them concurrently (`bench/peers/held_streams.mjs`, `bench/held_streams.c`; "
             "default `UV_THREADPOOL_SIZE`). *Slow*: `tests/trickle_server.py` sends "
             f"{SLOW[0]} deltas {SLOW[1]:.0f} ms apart (each stream open ≈ "
             f"{SLOW[0] * SLOW[1] / 1000:.0f} s); threads and RSS are sampled while all are open "
             f"(RSS per stream = peak − baseline after one warm-up stream, / streams). *Fast*: "
             f"{FAST[0]} deltas per stream sent at once: the aggregate rate at "
             f"{c['streams']:,} streams.")
    L.append("")
    L.append("| peer | all open after s | threads baseline → max | RSS per stream KiB | "
             "slow: done after s | fast: text-delta events/s |")
    L.append("|---|---:|---:|---:|---:|---:|")
    for w, slow in c["slow"].items():
        fast = c["fast"].get(w, {})
        L.append(f"| {names[w]} | {slow['openSeconds']:.2f} | {slow['threadsBaseline']} → "
                 f"{slow['threadsMax']} | {slow['rssPerStreamKiB']:.1f} | {slow['seconds']:.2f} | "
                 f"{fast.get('eventsPerSecond', float('nan')):,.0f} |")
    L.append("")
    return L


def raw_stream_rate(port: int, rounds: int) -> float:
    """Events/s of reading the whole stream off a bare socket (server + loopback alone)."""
    body = orjson.dumps({"model": "gpt-4o-mini", "stream": True,
                         "messages": [{"role": "user", "content": PROMPT}]})
    req = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
           b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
    rates = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(req)
            total = b""
            while not total.endswith(b"0\r\n\r\n"):
                data = s.recv(1 << 20)
                if not data:
                    break
                total += data
        rates.append(5000 / (time.perf_counter() - t0))
    return median(rates)


# -- 5. threads -----------------------------------------------------------------------------------


def bench_threads(port: int, rounds: int, calls: int) -> dict[str, Any]:
    exe = BUILD / "threads"
    base = f"http://127.0.0.1:{port}/v1"
    params = orjson.dumps(generate_params(base, "delay-20")).decode()
    out: dict[str, Any] = {"aimux": {}, "raw": {}}
    for n in (1, 2, 4, 8, 16):
        for mode in ("aimux", "raw"):
            rates = []
            for _ in range(rounds):
                argv = [str(exe), mode, str(n), str(calls)]
                argv += [params] if mode == "aimux" else [str(port), "delay-20"]
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                                      check=False)
                if proc.returncode != 0:
                    raise RuntimeError(f"threads {mode} {n}: {proc.stderr[-2000:]}")
                rates.append(json.loads(proc.stdout)["callsPerSecond"])
            out[mode][str(n)] = median(rates)
        log(f"  threads {n}: aimux {out['aimux'][str(n)]:.0f}/s, raw {out['raw'][str(n)]:.0f}/s")
    return out


# -- profiles -------------------------------------------------------------------------------------


def classify(name: str) -> str:
    """The layer a profiled function belongs to."""
    if name.startswith("aimux_ops/"):
        return name.split("/")[1].split(":")[0].removesuffix(".py").join(["aimux_ops.", ""])
    for pkg in ("httpx", "httpcore", "h11", "pydantic", "jsonschema", "anyio"):
        if name.startswith(pkg + "/"):
            return pkg
    if "recv" in name or "send" in name or "select" in name or "poll" in name:
        return "socket (waiting on the server)"
    if "orjson" in name or "loads" in name or "dumps" in name:
        return "orjson"
    if name.startswith("bench/"):
        return "bench harness"
    return "stdlib / builtins"


PROFILE_DIR = HERE


def profile(fn: Callable[[], Any], n: int, label: str, top: int = 14) -> str:
    """cProfile of n calls: the functions with the most own time, as a Markdown table, and a
    pyinstrument tree written to bench/profile-<label>.txt (when pyinstrument is installed)."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        fn()
    prof.disable()
    stats = pstats.Stats(prof)
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    entries = stats.stats.items()  # type: ignore[attr-defined]
    for (file, line, func), (_cc, nc, tt, ct, _callers) in entries:
        short = file.replace(str(ROOT) + "/", "").replace(sys.prefix + "/", "")
        if "site-packages/" in short:
            short = short.split("site-packages/", 1)[1]
        rows.append((tt, ct, nc, f"{short}:{line}({func})"))
    rows.sort(reverse=True)
    groups: dict[str, float] = {}
    for tt, _ct, _nc, name in rows:
        groups[classify(name)] = groups.get(classify(name), 0.0) + tt
    lines = [f"Own time by layer ({label}, cProfile, {n} iterations): "
             + ", ".join(f"{k} {v / total * 100:.0f}%"
                         for k, v in sorted(groups.items(), key=lambda kv: -kv[1])
                         if v / total >= 0.01) + ".", ""]
    lines += [f"cProfile of {n} × {label} (own time; {total / n * 1e6:.0f} µs per iteration "
             "under the profiler)", "", "| own µs/iter | cum µs/iter | calls/iter | function |",
             "|---:|---:|---:|---|"]
    for tt, ct, nc, name in rows[:top]:
        lines.append(f"| {tt / n * 1e6:.1f} | {ct / n * 1e6:.1f} | {nc / n:.1f} | `{name}` |")
    try:
        from pyinstrument import Profiler

        p = Profiler(interval=0.0002)
        p.start()
        for _ in range(n):
            fn()
        p.stop()
        (PROFILE_DIR / f"profile-{label}.txt").write_text(
            p.output_text(unicode=True, color=False, show_all=False))
        lines.append("")
        where_abs = PROFILE_DIR / f"profile-{label}.txt"
        where = where_abs.relative_to(ROOT) if where_abs.is_relative_to(ROOT) else where_abs
        lines.append(f"pyinstrument tree: `{where}`.")
    except ImportError:
        pass
    return "\n".join(lines)


# -- report ---------------------------------------------------------------------------------------


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "httpx": httpx.__version__,
           "orjson": orjson.__version__, "aimux-ops": aimux_ops.__version__}
    try:  # a peer of sections 3-4 (bench/requirements.txt); --only concurrency runs without it
        import openai

        out["openai-python"] = openai.__version__
    except ImportError:
        pass
    try:
        out["node"] = subprocess.run(["node", "--version"], capture_output=True, text=True,
                                     timeout=30).stdout.strip()
        for pkg in ("ai", "@ai-sdk/openai"):
            meta = json.loads((HERE / "peers" / "node_modules" / pkg / "package.json").read_text())
            out[pkg] = meta["version"]
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return out


def verdict(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def write_png(path: Path, data: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    fig.suptitle("aimux-ops vs peers (ratios to the floor measured in the same run)")
    lat = data["latency"]
    floor = lat["floor: httpx POST + orjson"]
    names = list(lat)
    ax = axes[0][0]
    vals = [lat[k] / floor for k in names]
    colors = ["#999" if k.startswith(("floor", "bare", "experiment")) else
              "#1f77b4" if k.startswith("aimux") else "#ff7f0e" for k in names]
    ax.barh(names, vals, color=colors)
    ax.axvline(1.2, color="red", ls="--", label="aim ≤ 1.2× floor")
    ax.set_title(f"(3) generate_text latency per call, × floor ({floor:.0f} µs)")
    ax.invert_yaxis()
    for i, (v, k) in enumerate(zip(vals, names, strict=True)):
        ax.text(v, i, f" {v:.2f}× ({lat[k]:.0f} µs)", va="center", fontsize=8)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_xlim(0, max(vals) * 1.35)

    st = data["stream"]
    sfloor = st["floor: httpx lines + orjson"]
    names = list(st)
    ax = axes[0][1]
    vals = [st[k] / sfloor for k in names]
    colors = ["#999" if k.startswith(("floor", "bare", "experiment")) else
              "#1f77b4" if k.startswith("aimux") else "#ff7f0e" for k in names]
    ax.barh(names, vals, color=colors)
    ax.axvline(0.5, color="red", ls="--", label="aim ≥ 0.5× floor")
    ax.set_title(f"(4) stream_text events/s, × floor ({sfloor:,.0f}/s)")
    ax.invert_yaxis()
    for i, (v, k) in enumerate(zip(vals, names, strict=True)):
        ax.text(v, i, f" {v:.2f}× ({st[k]:,.0f}/s)", va="center", fontsize=8)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_xlim(0, max(vals) * 1.6)

    th = data["threads"]
    ax = axes[1][0]
    ns = [int(k) for k in th["aimux"]]
    one = th["aimux"]["1"]
    ax.plot(ns, [th["aimux"][str(n)] / one for n in ns], "o-", label="aimux C ABI")
    raw_one = th["raw"]["1"]
    ax.plot(ns, [th["raw"][str(n)] / raw_one for n in ns], "s--", color="#999",
            label="bare sockets (server alone)")
    ax.plot(ns, ns, ":", color="#555", label="linear")
    ax.axhline(6, color="red", ls="--", lw=0.8, label="aim: 8 threads ≥ 6×")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.set_title(f"(5) C threads × generate_text, 20 ms server (1 thread: {one:.0f} calls/s)")
    ax.set_xlabel("threads")
    ax.set_ylabel("throughput × one thread")
    ax.legend(fontsize=8)

    pr = data["projection"]
    ax = axes[1][1]
    depths = ["1", "4", "16"]
    xs = list(range(len(depths)))
    w = 0.38
    shipped = [pr[d]["us"] for d in depths]
    ax.bar(xs, shipped, w, color="#1f77b4", label="project(exc)")
    ax.bar(xs, [pr[d]["floorUs"] for d in depths], w, color="#555",
           label="orjson.dumps(envelope)")
    for x, a in zip(xs, shipped, strict=True):
        ax.text(x, a, f"{a:.1f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(xs, [f"depth {d}" for d in depths])
    ax.set_ylabel("µs per envelope")
    ax.set_title("(2) envelope projection")
    ax.set_ylim(0, max(shipped) * 1.55)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


#: The sections ``--only`` selects from (native = bench/native-results.md, included as written).
SECTIONS = ("native", "coldstart", "projection", "latency", "stream", "parsers", "threads",
            "profiles", "concurrency", "memory", "loops", "gateway")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=300, help="calls per round (latency)")
    ap.add_argument("--quick", action="store_true", help="fewer rounds and calls (a smoke run)")
    ap.add_argument("--out", default=None, help="default bench/results.md")
    ap.add_argument("--png", default=None, help="default bench/results.png")
    ap.add_argument("--json", default=None, help="default bench/results.json")
    ap.add_argument("--only", default="",
                    help="comma-separated sections to run (default all): " + ",".join(SECTIONS)
                    + "; a subset writes bench/build/only.{md,json} unless --out / --json say")
    args = ap.parse_args()
    only = {x.strip() for x in args.only.split(",") if x.strip()} or set(SECTIONS)
    unknown = only - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections {sorted(unknown)}; known: {', '.join(SECTIONS)}")
    # a subset never overwrites the full run's results unless --out / --json / --png say so
    where = BUILD / "only" if args.only else HERE / "results"
    where.parent.mkdir(parents=True, exist_ok=True)
    args.out = args.out or f"{where}.md"
    args.json = args.json or f"{where}.json"
    args.png = args.png or f"{where}.png"
    rounds, calls = (2, 50) if args.quick else (args.rounds, args.calls)
    global PROFILE_DIR
    PROFILE_DIR = Path(args.out).resolve().parent

    from cabi import Lib

    lib = Lib()
    node_ok = shutil.which("node") is not None and (HERE / "peers" / "node_modules" / "ai").exists()
    if not node_ok:
        log("bench: the AI SDK peer is not installed (make -C bench peers): skipped")
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load_before = loadavg()
    busy0, own0, wall0 = cpu_busy(), own_cpu(), time.monotonic()
    log(f"bench: started {started}, load average {load_before}")
    data: dict[str, Any] = {"started": started, "versions": versions(), "rounds": rounds}

    data["sections"] = sorted(only)

    if "coldstart" in only:
        from coldstart import bench_coldstart

        log("(0) cold start")
        data["coldstart"] = bench_coldstart(Path(os.environ["AIMUX_LIB"]), max(3, rounds))
    if "projection" in only:
        log("(2) projection")
        data["projection"] = bench_projection(rounds, 2000 if not args.quick else 200)
    if "parsers" in only:
        from parsers import bench_parsers

        log("(4b) stream parsers")
        data["parsers"] = {k: median(v) for k, v in bench_parsers(max(5, rounds)).items()}

    with bench_server() if only & {"latency", "stream", "threads", "profiles"} else (
        contextlib.nullcontext(0)
    ) as port:  # (the peers need bench/requirements.txt: a section without them runs without)
        peers = Peers(port, lib) if port else None
        if "latency" in only:
            log("(3) generate_text latency")
            lat = bench_latency(peers, rounds, calls, node_ok)
            data["latencyRounds"] = lat
            data["latency"] = {k: median(v) for k, v in lat.items()}
        if "stream" in only:
            log("(4) stream_text events/s")
            st, floor_before = bench_stream(peers, rounds, node_ok)
            data["streamRounds"] = st
            data["streamFloorBefore"] = floor_before
            data["stream"] = {k: median(v) for k, v in st.items()}
            data["rawStream"] = raw_stream_rate(port, rounds)
        if "threads" in only:
            log("(5) threads")
            data["threads"] = bench_threads(port, max(1, rounds - 2), 10 if args.quick else 25)
        if "profiles" in only:
            log("profiles")
            data["profileGenerate"] = profile(peers.aimux_python, 100 if args.quick else 300,
                                              "generate_text")
            data["profileStream"] = profile(peers.stream_aimux_python, 1 if args.quick else 3,
                                            "stream_text")
    if "concurrency" in only:
        log("(6) concurrent streams")
        data["concurrency"] = bench_concurrency(node_ok)
    if "memory" in only:
        from memory import bench_memory

        log("(7) memory under a long retry loop and many error calls")
        data["memory"] = bench_memory()
    if "loops" in only:
        from loops import bench_loops

        log("(loops) the 10-step tool loop and the per-tool-call cost")
        data["loops"] = bench_loops(rounds, node_ok, 0.2 if args.quick else 1.0)
    if "gateway" in only:
        from gateway import bench_gateway

        log("(gateway) aimux-gateway vs LiteLLM's proxy")
        data["gateway"] = bench_gateway(1.0 if args.quick else 3.0)
    wall = time.monotonic() - wall0
    busy, own = cpu_busy() - busy0, own_cpu() - own0
    data["cpu"] = {"wall": wall, "busyCores": busy / wall, "ownCores": own / wall,
                   "otherCores": max(0.0, busy - own) / wall}
    data["loadAfter"] = loadavg()
    data["loadBefore"] = load_before
    data["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())

    native = ROOT / "bench" / "native-results.md"
    data["native"] = native.read_text() if native.exists() and "native" in only else None

    Path(args.json).write_text(json.dumps(data, indent=1, ensure_ascii=False))
    report = render(data)
    Path(args.out).write_text(report)
    try:
        if {"latency", "stream", "projection", "threads"} <= only:
            write_png(Path(args.png), data)
    except ImportError as exc:
        log(f"bench: no PNG ({exc})")
    print(report)
    return 0


ANALYSIS = """## Where the time goes, and what would close each gap

Read with the profiles below (cProfile own time by layer; pyinstrument trees in
`bench/profile-*.txt`), `python -X importtime`, and the native table's own breakdown.

**(0) Cold start.** The floor is the bare runtime started as libaimux starts it (isolated, no
site import, `env -i`: DESIGN.md "Cold start of a call"), 4–10 ms. A C host's
first `aimux.version` costs that plus `import aimux_ops.boundary.dispatch` and a precomputed answer; most
of the difference is orjson's own import (dataclasses with inspect, json, enum, uuid with
platform, datetime) and `typing`, then the core's modules. Next lever: a version path that
loads neither (orjson and typing bound lazily in `aimux_ops/__init__` and `dispatch`). The first
replayed `generate_text` loads only what a replay uses (DESIGN.md "Cold start of a call"): no
httpx, socket, logging, hashlib, stream loop, other provider, jsonschema or projection, and no
pydantic at all: its params pass `ops/precheck.py` (a table codegen derives from the models;
anything it cannot prove goes to pydantic), the errors are declared without pydantic and without
evaluating an annotation, and the providers' neutral records are plain slotted classes (no
dataclass code generation). What is left (`-X importtime` in the embedded interpreter's
conditions) is orjson's own import (dataclasses with inspect, uuid with platform, json, enum,
datetime) and `typing` (about half of the difference), then the core's ~40 modules (dispatch,
errors, redact with urllib.parse, transport, providers, recording), the call itself <1 ms. Next
lever: `typing` off the path (its runtime users: the `Protocol` classes, `TypeVar`s, the error
annotations, read on first use). An installed library ships its
payload byte-compiled (`native/install.py`): without it, a prefix its user cannot write compiled
every module in every process (~560 ms vs ~250 ms for the replay, measured as `nobody`).

**(2) The error path.** One projection, in Python (`envelope.project`, DESIGN.md "The
envelope"): every error, wherever it is raised (the dispatch boundary's unknown op and wrong
mode included), is built by its constructor, raised, and walked once; the shim then packs the
links `chain_links` decides (the nodes just projected are reused, not parsed again). No
pydantic model is built or validated per error.
The error-path rows (section 1's error round trips, section 2) are plain figures with no aim:
an error follows a failed network call, whose cost they do not approach. The invalid-params row
is mostly pydantic's params validation and the violations built from its `ValidationError`.

**(3) Streams.** (DESIGN.md "Streams")
every layer hands over one batch per network read: the SSE split, the provider's parse, the op,
the producer's queue, and the Python API, which takes every queued event in one step (~36 takes
for a 5,000-event stream, not 5,000 pulls). The producer alone now runs at about the floor (the
"op generator" row). Since branch `pystream` (DESIGN.md "Streams read on the caller's thread")
the Python API runs the op on the thread that iterates: sync httpx read, SSE split, parse and op
there, no loop thread and no hand-off, so it runs at the op generator's rate (the read is
the core's own client since branch `ownhttp`). Since DESIGN.md
"Stream chunks in C" the provider's per-chunk checks of a plain text chunk (OpenAI's content
delta, Anthropic's text delta) run in C (`aimux_ops._speedups._cchunks`; every other chunk goes to the
Python loop, the reference), which lifts every stream row: what is left against the floor is
the floor's own work (one `orjson.loads` per chunk, the per-read httpx/h11 work), the event
dicts and the Python API's per-event generator. The "reader thread + hand-off" row is an
event-driven stream (its reader thread reads ahead, the consumer takes batches): the stream
loop it replaced (its async read and greenlet switches) is gone, every stream runs over the
sync client. Since
branch `cstream` (DESIGN.md "Streams: a C queue per stream") a stream opened through the C ABI
is serialized once per network read on the loop thread, into a C queue that every C ABI read
(`aimux_stream_next`, `aimux_stream_next_batch`, `aimux_stream_poll`, `aimux_ready`,
`aimux_poll_ready` for Node) takes from without the interpreter lock: the C and Node rows no
longer wait for the loop thread to release the GIL, and what is left for them is the producer on
the stream loop (async read, parse, one `orjson.dumps` per read) plus, for Node, its own threads
on the same cores. Those C rows move the most from run to run (0.6–0.9× for the same code on a
machine no other job was using): the consumer mostly waits on the queue's condition variable, so
its rate is the producer's, a thread of another process sharing the 2 cores with the floor's and
the server's. Since DESIGN.md "Streams read on the caller's thread" a stream opened
with `aimux_stream` (the "C caller" and "C caller, next_batch" rows; the C++, Go and Java
bindings) runs on the thread that reads it, with the sync read the Python API uses, into the same
C queue: no loop thread and no hand-off, so those rows run at about the Python API's rate. Since
DESIGN.md "Event-driven streams on reader threads" the event-driven interface
(`aimux_stream_start`: the "batch poll" row and Node) is read by a reader thread of its own, with
the same sync read, while fewer than 8 such threads run (the loop takes the others): one hand-off
between two threads remains (the reader's pushes, the host's polls), no async HTTP layers.

**(4) Latency and threads.** Since branch `ownhttp` (DESIGN.md "HTTP behaviour shared by
both") every request goes through the core's own HTTP/1.1 client (`aimux_ops/http/`: the request
in one write, the head parsed from the bytes a read brought, an O(1) pool checkout), while the
floor is still a bare httpx POST (request building, h11, httpcore's pool bookkeeping): both aimux
surfaces now run under it (~97 µs of CPU per call against httpx's ~280 on the bench server, the
engineer's count). aimux's own work per call is ~100 Python calls (params validation is one
pydantic-core call of ~3 µs). The C threads overlap while they wait on the 20 ms server; what
does not overlap is each call's Python CPU time, serialized by the GIL and shared with the other
processes on this 2-core machine (each round of 16 calls takes 20 ms plus 16 × the per-call CPU).
"""


def render(d: dict[str, Any]) -> str:
    L: list[str] = []
    v = d["versions"]
    L.append("# aimux-ops benchmarks (`make bench`)")
    L.append("")
    L.append(f"Run {d['started']} → {d['finished']}, {os.cpu_count()} cores, "
             f"load average (1/5/15 min) {d['loadBefore']} before, {d['loadAfter']} after; "
             f"over the {d['cpu']['wall']:.0f} s of the run the machine's cores were busy "
             f"{d['cpu']['busyCores']:.2f} of {os.cpu_count()} on average, "
             f"{d['cpu']['otherCores']:.2f} of them by other processes (not this bench). "
             f"{d['rounds']} rounds per figure; each figure is the median of the rounds and every "
             "ratio is against a baseline measured in the same run, interleaved round by round.")
    L.append("")
    L.append("The aims are judged on the medians (the stream aims also on the paired ratio: met "
             "only when both are); the best-round columns are there to read the medians against "
             "the machine's load (other jobs share its 2 cores).")
    L.append("")
    L.append("Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".")
    L.append("")
    aims: list[tuple[str, str, bool]] = []
    L.append(f"Sections in this run: {', '.join(d.get('sections', SECTIONS))}.")
    L.append("")

    # 0
    if "coldstart" in d:
        render_coldstart(d["coldstart"], L, aims)

    # 1
    L.append("## 1. The C ABI call vs a bare cffi-embedded call")
    L.append("")
    if d.get("native"):
        text = d["native"]
        lines = text.splitlines()
        if lines and lines[0].startswith("# "):
            lines = lines[1:]
        L.append("From `make -C native bench` (`bench/native-results.md`, the native engineer's "
                 "bench), included as written:")
        L.append("")
        L.extend(lines)
    else:
        L.append("`bench/native-results.md` is not there: `make -C native bench` did not run.")
    L.append("")

    for line in (d.get("native") or "").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or not cells[-1].endswith("x"):
            continue
        try:
            ratio = float(cells[-1].rstrip("x"))
        except ValueError:
            continue
        if cells[0].startswith('aimux_call("aimux.version")'):
            aims.append(("1. C ABI `aimux.version` ≤ 2× the bare cffi call", f"{ratio:.2f}×",
                         ratio <= 2))

    if "projection" in d:
        render_projection(d["projection"], L, aims)
    if "latency" in d:
        render_latency(d, L, aims)
    if "stream" in d:
        render_stream(d, L, aims)
    if "parsers" in d:
        render_parsers(d["parsers"], L, aims)
    if "threads" in d:
        render_threads(d["threads"], L, aims)
    if "loops" in d:
        from loops import render_loops

        render_loops(d["loops"], L, aims)
    if "gateway" in d:
        from gateway import render_gateway

        render_gateway(d["gateway"], L, aims)
    render_tail(d, L, aims)
    return "\n".join(L) + "\n"


def render_coldstart(cs: dict[str, Any], L: list[str], aims: list[tuple[str, str, bool]]) -> None:
    from coldstart import FLOOR, FLOOR_USUAL_MS

    fms, frss = cs["ms"][FLOOR], cs["rssMB"][FLOOR]
    low, high = cs.get("floorUsualMs", FLOOR_USUAL_MS)
    valid = cs.get("valid", True)
    L.append("## 0. Cold start: a C host's first call (one process per figure)")
    L.append("")
    L.append("`bench/native/cold_start.c` (via `bench/coldstart.py`): a fresh process dlopens "
             "one library and times its first call (the embedded interpreter starts there); "
             "VmRSS read right after. The processes are interleaved round by round, each in an "
             "empty environment (`env -i`, no PYTHONPATH) with the same interpreter; the floor "
             "starts it as libaimux does.")
    L.append("")
    L.append(f"Floor: **{fms:.1f} ms** (usual {low:g}–{high:g} ms): "
             + ("the run is valid." if valid else
                "**the run is invalid** (the floor is far from its usual value); its ratios "
                "say nothing."))
    L.append("")
    L.append("| first call | ms (median) | × floor | best ms | RSS after, MB | × floor RSS |")
    L.append("|---|---:|---:|---:|---:|---:|")
    for k, ms in cs["ms"].items():
        L.append(f"| {k} | {ms:.1f} | {ms / fms:.2f}× | {cs['msBest'][k]:.1f} | "
                 f"{cs['rssMB'][k]:.1f} | {cs['rssMB'][k] / frss:.2f}× |")
    L.append("")
    v = cs["ms"]['aimux_call("aimux.version")'] / fms
    g = cs["ms"]["replayed generate_text"] / fms
    r = cs["rssMB"]['aimux_call("aimux.version")'] / frss
    floor_note = f" (floor {fms:.1f} ms)" + ("" if valid else ", run INVALID")
    aims.append(("0. first `aimux.version` from a C host ≤ 2× the bare library's first call",
                 f"{v:.2f}×{floor_note}", valid and v <= 2))
    aims.append(("0. first replayed `generate_text` ≤ 12× the bare first call",
                 f"{g:.2f}×{floor_note}", valid and g <= 12))
    aims.append(("0. RSS after the first call (`aimux.version`) ≤ 2× the bare runtime",
                 f"{r:.2f}×", r <= 2))


def render_parsers(pa: dict[str, float], L: list[str], aims: list[tuple[str, str, bool]]) -> None:
    from parsers import CHUNKS

    floor = pa["floor: lines + orjson"]
    L.append("## 4b. Stream parsers in memory (5,000 chunks; `bench/parsers.py`)")
    L.append("")
    L.append("Moved from the test suite (no timed assertions in tests). Rates are chunks/s; the "
             "floor is line iteration + `orjson.loads` over the same bytes.")
    L.append("")
    L.append("| parser | chunks/s (median) | × floor |")
    L.append("|---|---:|---:|")
    for k, sec in pa.items():
        L.append(f"| {k} | {CHUNKS / sec:,.0f} | {floor / sec:.2f}× |")
    L.append("")
    se = floor / pa["openai.stream_events"]
    own = pa["httpx-sse decoders"] / pa["transport.iter_sse"]
    aims.append(("4b. openai.stream_events ≥ 0.5× the line-parse floor", f"{se:.2f}×", se >= 0.5))
    aims.append(("4b. transport.iter_sse faster than httpx-sse (≥ 1×)", f"{own:.2f}×", own >= 1))


def render_projection(pr: dict[str, Any], L: list[str], aims: list[tuple[str, str, bool]]) -> None:
    L.append("## 2. Envelope projection (`aimux_ops.wire.envelope.project`)")
    L.append("")
    L.append("A cause chain of aimux nodes and source nodes alternating, rooted in an "
             "APICallError; the floor is `orjson.dumps` of the same envelope already built.")
    L.append("")
    L.append("| workload | nodes in envelope | bytes | project µs | floor µs | × floor |")
    L.append("|---|---:|---:|---:|---:|---:|")
    for depth in ("1", "4", "16"):
        p = pr[depth]
        L.append(f"| chain depth {depth} | {p['nodes']} | {p['bytes']} | {p['us']:.1f} | "
                 f"{p['floorUs']:.2f} | {p['us'] / p['floorUs']:.1f}× |")
    L.append(f"| RetryError, 3 attempts × 4 deep | – | {pr['retry3x4']['bytes']} | "
             f"{pr['retry3x4']['us']:.1f} | – | – |")
    for label, p in pr.get("varied", {}).items():
        L.append(f"| varied: {label} | {p['nodes']} | {p['bytes']} | {p['us']:.1f} | "
                 f"{p['floorUs']:.2f} | {p['us'] / p['floorUs']:.1f}× |")
    L.append("")
    L.append("*Varied* rows project 1,000 different exceptions in turn (the floor dumps their "
             "1,000 envelopes in turn): no figure is a single input's. Plain figures: the error "
             "path has no aim (it follows a failed network call).")
    L.append("")


def render_latency(d: dict[str, Any], L: list[str], aims: list[tuple[str, str, bool]]) -> None:
    lat = d["latency"]
    floor = lat["floor: httpx POST + orjson"]
    L.append("## 3. generate_text latency per call (one local server)")
    L.append("")
    L.append("Sequential calls on one keep-alive connection (the in-process peers interleaved "
             "in 6 blocks per round) against `bench/server.py` "
             "(separate process, prebuilt responses, TCP_NODELAY). Same response bytes for every "
             "peer. The bare-socket row is the server plus the loopback alone.")
    L.append("")
    best = {k: min(v) for k, v in d["latencyRounds"].items()}
    L.append("| peer | µs per call (median of rounds) | × floor | best round µs | × best floor |")
    L.append("|---|---:|---:|---:|---:|")
    for k, val in lat.items():
        L.append(f"| {k} | {val:.0f} | {val / floor:.2f}× | {best[k]:.0f} | "
                 f"{best[k] / best['floor: httpx POST + orjson']:.2f}× |")
    L.append("")
    raw = lat["bare socket (server + loopback)"]
    L.append(f"Server check: the bare socket round trip is {raw:.0f} µs, "
             f"{raw / floor * 100:.0f}% of the floor, so the server is not what the peers wait "
             "on.")
    L.append("")
    for k in ("aimux Python API", "aimux C ABI (ctypes)", "aimux C ABI (C caller)"):
        aims.append((f"4. generate_text {k} ≤ 1.2× floor", f"{lat[k] / floor:.3f}×",
                     lat[k] / floor <= 1.2))


def stream_paired(d: dict[str, Any]) -> dict[str, float]:
    """Per peer: the median over rounds of its figure ÷ the floor measured right before it
    (none in results from before the floor was measured per run)."""
    before = d.get("streamFloorBefore") or {}
    return {k: median([v / f for v, f in zip(d["streamRounds"][k], fl, strict=True)])
            for k, fl in before.items() if k in d["streamRounds"] and fl}


def render_stream(d: dict[str, Any], L: list[str], aims: list[tuple[str, str, bool]]) -> None:
    st = d["stream"]
    sfloor = st["floor: httpx lines + orjson"]
    L.append("## 4. stream_text events per second (5,000-chunk stream)")
    L.append("")
    sbest = {k: max(v) for k, v in d["streamRounds"].items()}
    paired = stream_paired(d)
    L.append("| peer | text-delta events/s (median of rounds) | × floor | × the floor run just "
             "before (median of rounds) | best round /s | × best floor |")
    L.append("|---|---:|---:|---:|---:|---:|")
    for k, val in st.items():
        pair = f"{paired[k]:.2f}×" if k in paired else "–"
        L.append(f"| {k} | {val:,.0f} | {val / sfloor:.2f}× | {pair} | {sbest[k]:,.0f} | "
                 f"{sbest[k] / sbest['floor: httpx lines + orjson']:.2f}× |")
    L.append("")
    if paired:
        L.append("*× the floor run just before*: each round's figure divided by the floor measured "
                 "right before that run (same seconds), then the median over rounds. This machine "
                 "moves between two speeds about 0.6× apart within a run, for the floor and every "
                 "peer alike (the rounds are in `results.json`, `streamRounds`); a peer's median "
                 "and the floor's median can then come from different speeds, which the paired "
                 "ratio does not mix. The aims are judged on both: met only when both are.")
        L.append("")
    L.append(f"Server check: reading the whole stream off a bare socket runs at "
             f"{d['rawStream']:,.0f} chunks/s, {d['rawStream'] / sfloor:.0f}× the floor: the "
             "server is not the bottleneck.")
    L.append("")
    for k, aim in (("aimux Python API", 0.8), ("aimux C ABI (C caller)", 0.8),
                   ("aimux C ABI (C caller, batch poll)", 0.8),
                   ("aimux C ABI (C caller, next_batch)", 0.8), ("aimux Node binding", 0.5)):
        if k in st and k in paired:
            ratio = st[k] / sfloor
            aims.append((f"3. stream {k} ≥ {aim}× floor (medians / paired)",
                         f"{ratio:.3f}× / {paired[k]:.3f}×", ratio >= aim and paired[k] >= aim))
        elif k in st:
            aims.append((f"3. stream {k} ≥ {aim}× floor", f"{st[k] / sfloor:.3f}×",
                         st[k] / sfloor >= aim))
        else:
            aims.append((f"3. stream {k} ≥ {aim}× floor", "not measured", False))


def render_threads(th: dict[str, Any], L: list[str], aims: list[tuple[str, str, bool]]) -> None:
    one = th["aimux"]["1"]
    raw_one = th["raw"]["1"]
    L.append("## 5. C threads calling generate_text, server answering after 20 ms")
    L.append("")
    L.append("`bench/threads.c`: N pthreads, each 25 sequential `aimux_call(\"generate_text\")`; "
             "the bare-socket rows are the same requests from C over keep-alive sockets (the "
             "server and loopback alone).")
    L.append("")
    L.append("| threads | aimux calls/s | × one thread | bare sockets calls/s | × one thread |")
    L.append("|---:|---:|---:|---:|---:|")
    for n, val in th["aimux"].items():
        L.append(f"| {n} | {val:.0f} | {val / one:.2f}× | {th['raw'][n]:.0f} | "
                 f"{th['raw'][n] / raw_one:.2f}× |")
    L.append("")
    ok5 = th["aimux"]["8"] / one >= 6
    aims.append(("4. 8 threads ≥ 6× one thread", f"{th['aimux']['8'] / one:.2f}×", ok5))
    if "16" in th["aimux"]:
        x16 = th["aimux"]["16"] / one
        aims.append(("4. 16 threads ≥ 12× one thread", f"{x16:.2f}×", x16 >= 12))



def render_tail(d: dict[str, Any], L: list[str], aims: list[tuple[str, str, bool]]) -> None:
    if "concurrency" in d:
        L += render_concurrency(d["concurrency"])
    if "memory" in d:
        from memory import render_memory

        L += render_memory(d["memory"])
    L.append("Rows: *ctypes* is the C ABI called from this Python process through ctypes (what a "
             "Python user of the shared library pays, ctypes' own per-call cost included); "
             "*C caller* is `bench/threads.c` calling the same library from C in its own process "
             "(what the C, C++, Go, Java and Node bindings sit on).")
    L.append("")
    L.append("## Aims")
    L.append("")
    L.append("| aim | measured | |")
    L.append("|---|---:|---|")
    for name, got, ok in aims:
        L.append(f"| {name} | {got} | {verdict(ok)} |")
    L.append("")
    L.append(ANALYSIS)
    L.append("")
    if "profileGenerate" in d:
        L.append("## Profiles (aimux Python API)")
        L.append("")
        L.append(d["profileGenerate"])
        L.append("")
        L.append(d["profileStream"])
        L.append("")


if __name__ == "__main__":
    sys.exit(main())
