"""Cold-start rows (bench/run.py section "coldstart"): a C host's first call, one process each.

``bench/native/cold_start.c`` dlopens one library and times its first call (the interpreter
starts there) and reads VmRSS after it. Three kinds of process, interleaved round by round:

- the floor: ``libaimux_noop.so``'s first call (the bare cffi-embedded runtime: interpreter
  start, cffi's backend, one ``extern "Python"`` callback);
- the first ``aimux_call("aimux.version", "{}")`` of ``libaimux.so``;
- the first replayed ``generate_text`` (recordings/demo.jsonl: no network).

Aims (issue 16): version ≤ 2× the floor, generate_text ≤ 8×, RSS after the first call ≤ 2×.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUILD = HERE / "build"


def build(lib: Path) -> tuple[Path, Path]:
    """The cold_start binary and libaimux_noop.so (built by native/Makefile)."""
    noop = lib.parent / "libaimux_noop.so"
    if not noop.exists():
        subprocess.run(["make", "-s", "-C", str(ROOT / "native"), str(noop)], check=True)
    BUILD.mkdir(exist_ok=True)
    exe = BUILD / "cold_start"
    src = HERE / "native" / "cold_start.c"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-O2", "-Wall", "-Wextra", str(src), "-o", str(exe), "-ldl"], check=True)
    return exe, noop


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd="/")
    parts = out.stdout.split()
    if out.returncode != 0 or len(parts) != 3 or parts[2] != "1":
        raise RuntimeError(f"cold_start {argv[1]} failed: {out.stdout} {out.stderr[-500:]}")
    return float(parts[0]), float(parts[1]) / 1024.0


def bench_coldstart(lib: Path, rounds: int) -> dict[str, Any]:
    """Median first-call ms and RSS MB per kind of process."""
    exe, noop = build(lib)
    site = sysconfig.get_paths()["purelib"]
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    kinds = {
        "floor: bare cffi-embedded library (libaimux_noop)": (
            [str(exe), "noop", str(noop)],
            {**base, "PYTHONPATH": site},
        ),
        'aimux_call("aimux.version")': ([str(exe), "version", str(lib)], base),
        "replayed generate_text": (
            [str(exe), "generate", str(lib), str(ROOT / "recordings" / "demo.jsonl")],
            base,
        ),
    }
    ms: dict[str, list[float]] = {k: [] for k in kinds}
    rss: dict[str, list[float]] = {k: [] for k in kinds}
    for _ in range(rounds):
        for k, (argv, env) in kinds.items():
            t, r = _run(argv, env)
            ms[k].append(t)
            rss[k].append(r)
    return {
        "ms": {k: statistics.median(v) for k, v in ms.items()},
        "msBest": {k: min(v) for k, v in ms.items()},
        "rssMB": {k: statistics.median(v) for k, v in rss.items()},
    }


if __name__ == "__main__":
    res = bench_coldstart(ROOT / "native" / "build" / "libaimux.so", 7)
    floor = "floor: bare cffi-embedded library (libaimux_noop)"
    for k in res["ms"]:
        print(
            f"{k:52s} {res['ms'][k]:7.1f} ms ({res['ms'][k] / res['ms'][floor]:.2f}x) "
            f"RSS {res['rssMB'][k]:5.1f} MB ({res['rssMB'][k] / res['rssMB'][floor]:.2f}x)"
        )
