"""Cold-start rows (bench/run.py section "coldstart"): a C host's first call, one process each.

``bench/native/cold_start.c`` dlopens one library and times its first call (the interpreter
starts there) and reads VmRSS after it. Three kinds of process, interleaved round by round:

- the floor: ``libaimux_noop.so``'s first call (the bare cffi-embedded runtime: the
  interpreter started as libaimux starts it, cffi's backend, one ``extern "Python"`` callback);
- the first ``aimux_call("aimux.version", "{}")`` of ``libaimux.so``;
- the first replayed ``generate_text`` (recordings/demo.jsonl: no network).

Every process runs as under ``env -i`` (an empty environment, no PYTHONPATH) with the same
interpreter: the floor finds cffi's backend as libaimux finds its payload (the build's package
paths), so floor and library differ only by what the library does. The floor's absolute figure
is reported; a run whose floor is far from its usual value (``FLOOR_USUAL_MS``: a loaded
machine, a floor that pays for something it should not) is invalid, not good.

Aims (issue 26): version ≤ 2× the floor, generate_text ≤ 12×, RSS after the first call ≤ 2×.
"""

from __future__ import annotations

import os
import statistics
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUILD = HERE / "build"

#: the floor's usual first call on the reference machine (2 cores), ms; a run whose floor
#: median is outside [low / 2, high * 2] is invalid
FLOOR_USUAL_MS = (7.0, 10.0)
FLOOR = "floor: bare cffi-embedded library (libaimux_noop)"


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
    empty: dict[str, str] = {}  # env -i, for every kind alike
    kinds = {
        FLOOR: ([str(exe), "noop", str(noop)], empty),
        'aimux_call("aimux.version")': ([str(exe), "version", str(lib)], empty),
        "replayed generate_text": (
            [str(exe), "generate", str(lib), str(ROOT / "recordings" / "demo.jsonl")],
            empty,
        ),
    }
    ms: dict[str, list[float]] = {k: [] for k in kinds}
    rss: dict[str, list[float]] = {k: [] for k in kinds}
    for _ in range(rounds):
        for k, (argv, env) in kinds.items():
            t, r = _run(argv, env)
            ms[k].append(t)
            rss[k].append(r)
    floor_ms = statistics.median(ms[FLOOR])
    low, high = FLOOR_USUAL_MS
    return {
        "ms": {k: statistics.median(v) for k, v in ms.items()},
        "msBest": {k: min(v) for k, v in ms.items()},
        "rssMB": {k: statistics.median(v) for k, v in rss.items()},
        "floorMs": floor_ms,
        "floorUsualMs": list(FLOOR_USUAL_MS),
        "valid": low / 2 <= floor_ms <= high * 2,
    }


if __name__ == "__main__":
    res = bench_coldstart(ROOT / "native" / "build" / "libaimux.so", 7)
    low, high = FLOOR_USUAL_MS
    print(
        f"floor {res['floorMs']:.1f} ms (usual {low:g}-{high:g} ms): run "
        + ("valid" if res["valid"] else "INVALID (the floor is far from its usual value)")
    )
    for k in res["ms"]:
        print(
            f"{k:52s} {res['ms'][k]:7.1f} ms ({res['ms'][k] / res['ms'][FLOOR]:.2f}x, "
            f"best {res['msBest'][k]:.1f}) "
            f"RSS {res['rssMB'][k]:5.1f} MB ({res['rssMB'][k] / res['rssMB'][FLOOR]:.2f}x)"
        )
