"""Bench section ``memory`` (issue 32): RSS of a C host (libaimux through ctypes, ``cabi.Lib``)
under the longest retry loop and under many error calls, each in a process of its own.

- *retry loop*: one ``generate_text`` with ``maxRetries`` at its largest allowed value
  (``ops.limits.MAX_RETRIES``) and ``retry.initialDelayMs: 0`` against a closed port; RSS after a
  warm-up call (``maxRetries: 0``) and after the loop. Before issue 32 every attempt was kept
  until the call returned (17 MB → 380 MB at ``maxRetries: 20000``).
- *error calls*: 20,000 ``generate_text`` calls against a closed port (``maxRetries: 0``), RSS
  after the first 1,000 and after the last.

  python bench/memory.py            # both, printed as JSON (what run.py's section reads)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

_CHILD = r"""
import json, socket, sys
sys.path.insert(0, sys.argv[1])
from cabi import Lib, CError

def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1

s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
lib = Lib()
def call(max_retries):
    params = {"model": {"provider": "openai", "modelId": "m", "apiKey": "sk-bench",
                        "baseURL": f"http://127.0.0.1:{port}/v1"},
              "prompt": "hi", "maxRetries": max_retries, "retry": {"initialDelayMs": 0}}
    try:
        lib.call(b"generate_text", json.dumps(params).encode())
    except CError as exc:
        return exc
    raise SystemExit("a call to a closed port succeeded")

what, n = sys.argv[2], int(sys.argv[3])
for _ in range(20):
    call(0)
before = rss_kib()
if what == "retry":
    err = call(n)
    assert err.code == 14 and f"Failed after {n + 1} attempts" in err.message, err.message
    print(json.dumps({"before": before, "after": rss_kib(), "attempts": n + 1}))
else:
    for _ in range(1000):
        call(0)
    warm = rss_kib()
    for _ in range(n - 1000):
        call(0)
    print(json.dumps({"before": before, "warm": warm, "after": rss_kib(), "calls": n}))
"""


def _child(what: str, n: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(HERE), what, str(n)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def bench_memory() -> dict[str, Any]:
    sys.path.insert(0, str(HERE.parent))
    from aimux_ops.ops.limits import MAX_RETRIES

    return {"retry": _child("retry", MAX_RETRIES), "errors": _child("errors", 20_000)}


def render_memory(m: dict[str, Any]) -> list[str]:
    r, e = m["retry"], m["errors"]
    mb = 1024.0
    return [
        "## 7. Memory under a long retry loop and many error calls (issue 32)",
        "",
        "A C host (libaimux through ctypes), each row in a process of its own, against a closed "
        "port (`bench/memory.py`). A failed loop keeps the first and the latest 15 attempts "
        "(what an envelope reports), every other one is dropped as the next one fails; "
        "`maxRetries` above its bound is invalid params.",
        "",
        "| workload | RSS before MB | RSS after MB | growth MB |",
        "|---|---:|---:|---:|",
        f"| one call, `maxRetries: {r['attempts'] - 1:,}` (its largest allowed value), "
        f"`initialDelayMs: 0` | {r['before'] / mb:.1f} | {r['after'] / mb:.1f} | "
        f"{(r['after'] - r['before']) / mb:+.1f} |",
        f"| {e['calls']:,} error calls (`maxRetries: 0`), after the first 1,000 → after all | "
        f"{e['warm'] / mb:.1f} | {e['after'] / mb:.1f} | {(e['after'] - e['warm']) / mb:+.1f} |",
        "",
    ]


if __name__ == "__main__":
    print(json.dumps(bench_memory(), indent=1))
