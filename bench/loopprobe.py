"""Where a C-ABI stream's producer spends its time: the stream loop thread of a C host.

Runs ``bench/build/threads stream <streams>`` (one warm-up stream, then ``streams`` streams read
with ``aimux_stream_next``) against ``bench/server.py`` with a probe loaded into the library's
embedded interpreter (a ``.pth`` file in a temporary directory on ``AIMUX_PYTHONPATH``: the
library's ``site.addsitedir`` runs it before the core loads). The probe reads the loop thread's
CPU time at every ``aimux_stream_free``, so each stream's producer cost is known apart from the
C consumer's; it changes nothing the streams do.

    python bench/loopprobe.py [--streams N] [--lib PATH] [--mode cpu|split|prof]

- ``cpu``: the loop thread's CPU ms per stream (median) and the C caller's events/s;
- ``split``: also the CPU of the stream's waits (``aio.await_only``: httpx's async read, the
  asyncio loop and every other callback while the stream's greenlet is suspended), of the
  provider's per-read parse (``openai._read_events``) and of the pushes (``_NativeStream._put``:
  one ``orjson.dumps`` and one ``_aimux_cq_push`` per network read); the rest is the SSE split,
  the generator layers and the open;
- ``prof``: cProfile of the loop thread over the timed streams (wall-clock times: a C call that
  releases the interpreter lock includes what other threads did meanwhile), top 30 by own time.

Not part of ``make bench``; used for the analysis in ``bench/producer-profile.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

PROBE = r"""
import json, os, threading, time
from aimux_ops import aio, dispatch

MODE, OUT = os.environ["LOOPPROBE_MODE"], os.environ["LOOPPROBE_OUT"]
state = {"n": 0, "cpu": [], "split": []}
acc = {"await": 0.0, "read_events": 0.0, "put": 0.0}
tt = time.thread_time
_run = aio._Loop._run

def run(self):
    state["loop"] = self.loop
    _run(self)

aio._Loop._run = run

def on_loop(fn):
    done, box = threading.Event(), []
    state["loop"].call_soon_threadsafe(lambda: (box.append(fn()), done.set()))
    done.wait(10)
    return box[0] if box else None

def timed(owner, name, key):
    orig = getattr(owner, name)
    def wrapper(*a, **k):
        t = tt()
        try:
            return orig(*a, **k)
        finally:
            acc[key] += tt() - t
    setattr(owner, name, wrapper)

if MODE == "split":
    from aimux_ops.providers import openai
    timed(aio, "await_only", "await")
    timed(openai, "_read_events", "read_events")
    timed(dispatch._NativeStream, "_put", "put")

_free = dispatch.stream_free

def stream_free(handle):
    _free(handle)
    if "loop" not in state:
        return
    state["n"] += 1
    state["cpu"].append(on_loop(tt))
    state["split"].append(dict(acc))
    for k in acc:
        acc[k] = 0.0
    if MODE == "prof":
        if state["n"] == 1:
            state["prof"] = __import__("cProfile").Profile()
            on_loop(state["prof"].enable)
        else:
            on_loop(state["prof"].disable)
            state["prof"].dump_stats(OUT + ".prof")
            on_loop(state["prof"].enable)
    with open(OUT, "w") as f:
        f.write(json.dumps({"cpu": state["cpu"], "split": state["split"]}))

dispatch.stream_free = stream_free
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, default=20)
    ap.add_argument("--lib", default=str(ROOT / "native" / "build" / "libaimux.so"))
    ap.add_argument("--threads", default=str(HERE / "build" / "threads"))
    ap.add_argument("--mode", choices=("cpu", "split", "prof"), default="cpu")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    import orjson
    from run import bench_server, generate_params

    site = [p for p in sys.path if p.endswith("site-packages")]
    with tempfile.TemporaryDirectory() as tmp, bench_server() as port:
        Path(tmp, "loopprobe_hook.py").write_text(PROBE)
        Path(tmp, "zz_loopprobe.pth").write_text("import loopprobe_hook\n")
        out = str(Path(tmp, "out"))
        lib_root = Path(args.lib).resolve().parent.parent.parent  # <repo>/native/build/lib
        env = dict(
            os.environ,
            AIMUX_LIB=args.lib,
            LD_LIBRARY_PATH=str(Path(args.lib).resolve().parent),
            AIMUX_PYTHONPATH=":".join([*site, str(lib_root), tmp]),
            LOOPPROBE_MODE=args.mode,
            LOOPPROBE_OUT=out,
        )
        params = orjson.dumps(generate_params(f"http://127.0.0.1:{port}/v1")).decode()
        proc = subprocess.run(
            [args.threads, "stream", str(args.streams), params],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        rate = json.loads(proc.stdout)["eventsPerSecond"]
        data = json.loads(Path(out).read_text())
        cpu = [(b - a) * 1e3 for a, b in zip(data["cpu"], data["cpu"][1:], strict=False)]
        print(
            f"C caller {rate:,.0f} events/s; loop CPU per stream: median "
            f"{statistics.median(cpu):.2f} ms (min {min(cpu):.2f}, {len(cpu)} streams)"
        )
        if args.mode == "split":
            timed = data["split"][1:]
            for key in ("await", "read_events", "put"):
                ms = statistics.median(s[key] * 1e3 for s in timed)
                print(f"  {key:12s} {ms:6.2f} ms per stream")
        if args.mode == "prof":
            import pstats

            pstats.Stats(out + ".prof").sort_stats("tottime").print_stats(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
