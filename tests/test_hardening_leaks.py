"""Hardening, leaks (issue 8): 100,000 mixed calls and 1,000 streams through the C ABI
(libaimux.so via ctypes, in a fresh process, every string / error / handle freed as a user must),
and the process's resident memory stays within a stated bound.

The bound: after a warm-up of 10,000 calls and 100 streams (interpreter caches, the connection
pool, pydantic's and jsonschema's lazily built validators, allocator arenas), the remaining 90,000
calls and 900 streams may grow RSS by at most ``RSS_BOUND_MIB`` MiB — about 90 bytes per
operation, less than the smallest string any call returns, so a leak of one result, one error or
one handle per call cannot hide under it. Open file descriptors and threads must not grow at all
(a leaked connection or watchdog timer shows there), and the core's stream registry must be empty.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RSS_BOUND_MIB = 8

pytestmark = pytest.mark.timeout(600)

CHILD = r"""
import gc, json, os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
from cabi import CError, Lib

root, port = sys.argv[1], int(sys.argv[2])
lib = Lib()
demo = os.path.join(root, "recordings", "demo.jsonl")
live = json.dumps({"model": {"provider": "openai", "modelId": "gpt-4o-mini",
                             "baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "sk-leak"},
                   "prompt": "hi", "maxRetries": 0}).encode()
replay = json.dumps({"model": {"provider": "openai", "modelId": "gpt-4o-mini",
                               "baseURL": "http://127.0.0.1:1/v1"},
                     "prompt": "Say hello in one word.",
                     "recording": {"mode": "replay", "path": demo}}).encode()
refused = json.dumps({"model": {"provider": "openai", "modelId": "gpt-4o-mini",
                                "baseURL": "http://127.0.0.1:1/v1", "apiKey": "sk-leak"},
                      "prompt": "hi", "maxRetries": 0}).encode()
# one cycle of 20 calls: (op, params, expected code or 0 for success)
CYCLE = [
    (b"aimux.version", b"{}", 0), (b"aimux.version", b"{}", 0), (b"aimux.version", b"{}", 0),
    (b"aimux.version", b"{}", 0), (b"aimux.version", b"{}", 0),
    (b"no.such.op", b"{}", 300), (b"aimux.version", b'{"x": 1}', 301),
    (b"generate_text", b"{", 202), (b"generate_text", b'{"prompt": "\xff\xfe"}', 201),
    (b"generate_text", b'{"model": 1, "prompt": 2}', 301), (b"stream_text", b"{}", 302),
    (b"generate_text", replay, 0), (b"generate_text", replay, 0), (b"generate_text", replay, 0),
    (b"generate_text", replay, 0), (b"generate_text", live, 0), (b"generate_text", refused, 11),
    (b"aimux.manifest", b"{}", 0), (None, b"{}", 204), (b"generate_text", None, 204),
]
assert len(CYCLE) == 20
bad = []


def one_call(i):
    op, params, want = CYCLE[i % 20]
    try:
        lib.call(op, params)
        got = 0
    except CError as err:
        got = err.code
    if got != want and len(bad) < 20:
        bad.append((i, op and op.decode(), want, got))


def one_stream(i):
    kind = i % 5
    if kind == 0:  # replayed, drained
        n = sum(1 for _ in lib.stream_events(b"stream_text", replay))
        ok = n == 3
    elif kind == 1:  # live, drained
        n = sum(1 for _ in lib.stream_events(b"stream_text", live))
        ok = n == 21
    elif kind == 2:  # live, freed after the first event without draining
        h = lib.open_stream(b"stream_text", live)
        ok = lib.next_event(h) is not None
        lib.lib.aimux_stream_free(h)
    elif kind == 3:  # live, cancelled after the first event, then drained and freed
        h = lib.open_stream(b"stream_text", live)
        ok = lib.next_event(h) is not None
        lib.lib.aimux_stream_cancel(h)
        ok = ok and lib.next_event(h) is None
        lib.lib.aimux_stream_free(h)
        try:
            lib.next_event(h)
            ok = False
        except CError as err:
            ok = ok and err.code == 203
    else:  # the open fails
        try:
            lib.open_stream(b"stream_text", refused)
            ok = False
        except CError as err:
            ok = err.code == 11
    if not ok and len(bad) < 20:
        bad.append((i, "stream", kind))


def sample():
    gc.collect()
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    with open("/proc/self/status") as f:
        threads = int(next(l for l in f if l.startswith("Threads:")).split()[1])
    return {"rss": rss, "fds": len(os.listdir("/proc/self/fd")), "threads": threads}


samples = {}
calls = streams = 0
for phase, (n_calls, n_streams) in (("warm", (10_000, 100)), ("run", (90_000, 900))):
    per = n_calls // n_streams
    for s in range(n_streams):
        for _ in range(per):
            one_call(calls)
            calls += 1
        one_stream(streams)
        streams += 1
    samples[phase] = sample()
import aimux_ops.streams.registry as d
print(json.dumps({"calls": calls, "streams": streams, "samples": samples, "bad": bad,
                  "openStreams": len(d._streams)}))
"""


@pytest.fixture(scope="module")
def bench_server() -> Iterator[int]:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "bench" / "server.py"),
            "--port",
            "0",
            "--chunks",
            "20",
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


def test_rss_stays_bounded_over_100k_calls_and_1k_streams(bench_server: int) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), str(bench_server)],
        capture_output=True,
        text=True,
        timeout=580,
        env=env,
        cwd="/",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(json.dumps(out, indent=1))
    assert out["calls"] == 100_000 and out["streams"] == 1_000
    assert out["bad"] == [], f"wrong answers: {out['bad']}"
    assert out["openStreams"] == 0, "freed streams are still registered in the core"
    warm, run = out["samples"]["warm"], out["samples"]["run"]
    growth_mib = (run["rss"] - warm["rss"]) / (1 << 20)
    assert growth_mib <= RSS_BOUND_MIB, (
        f"RSS grew {growth_mib:.1f} MiB over 90,000 calls and 900 streams "
        f"(bound {RSS_BOUND_MIB} MiB): {warm} -> {run}"
    )
    assert run["fds"] <= warm["fds"], f"file descriptors grew: {warm['fds']} -> {run['fds']}"
    assert run["threads"] <= warm["threads"], f"threads grew: {warm} -> {run}"
