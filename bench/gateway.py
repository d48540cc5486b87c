"""The gateway section of `make bench` (issue 30's aims): aimux-gateway beside LiteLLM's proxy, in
front of one local upstream, each measured against the upstream reached directly (the floor).

  python bench/gateway.py [--seconds 3] [--out bench/build/gateway.md]   (or run.py --only gateway)
  python bench/gateway.py --from-json bench/build/only.json --out FILE     (render a run again)

One upstream, bench/server.py (prebuilt answers, 20-delta streams in one write), and one slow
one, tests/trickle_server.py (for the open streams); three targets, all driven by the same load
generator (bench/gateway_load.py, its own process): *direct* (the floor), *aimux-gateway*
(``--workers 1``), *LiteLLM* (``litellm --num_workers 1``, from its own venv: ``make -C bench
peers-gateway``, pinned in bench/litellm-requirements.txt). For 1, 64 and 512 concurrent clients,
non-stream and stream: latency p50/p99 (the whole answer) and time to first token; added =
the target's figure minus the floor's, measured in the same run, interleaved target by target.
Throughput per core: requests answered per CPU second of the target's processes (64 clients,
non-stream). RSS per open stream: the target's RSS with 1,000 streams open minus its RSS before,
over 1,000. A floor p50 far from its usual value (``FLOOR_USUAL_MS``) makes the run invalid.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLIENTS = (1, 64, 512)
OPEN_STREAMS = 1000
#: the floor's p50 at one client, non-stream (bench/server.py over loopback)
FLOOR_USUAL_MS = (0.01, 0.5)
LITELLM = Path(
    os.environ.get("AIMUX_BENCH_LITELLM", Path.home() / ".cache/aimux-bench/litellm/bin/litellm")
)
CLIENT_KEY = "sk-bench-client-5c1d"
UPSTREAM_KEY = "sk-bench-upstream-9e2a"
TARGETS = ("direct", "aimux-gateway", "LiteLLM")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def body(model: str, stream: bool) -> str:
    return json.dumps(
        {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": stream},
        separators=(",", ":"),
    )


def rss_kib(pid: int) -> int:
    """VmRSS of ``pid`` and all its descendants, KiB."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            continue
        try:
            tasks = list(Path(f"/proc/{p}/task").iterdir())
        except OSError:
            continue
        for task in tasks:  # a thread exiting during the walk is skipped alone
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
    return total


@contextlib.contextmanager
def process(
    cmd: list[str],
    ready: str,
    env: dict[str, str] | None = None,
    stream: str = "stdout",
    timeout: float = 120.0,
) -> Iterator[tuple[int, str]]:
    """A server subprocess: (pid, its first output line holding ``ready``; "": no wait)."""
    with tempfile.TemporaryFile("w+") as errf:
        out = subprocess.PIPE if stream == "stdout" else subprocess.DEVNULL
        err = subprocess.PIPE if stream == "stderr" else errf
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            text=True,
            env={**os.environ, **(env or {})},
            cwd=ROOT,
        )
        try:
            pipe = proc.stdout if stream == "stdout" else proc.stderr
            assert pipe is not None
            deadline = time.monotonic() + timeout
            line = ""
            while ready and time.monotonic() < deadline:
                line = pipe.readline()
                if not line or ready in line:
                    break
            if ready not in line:
                errf.seek(0)
                raise RuntimeError(f"{cmd[0]} did not start: {line!r} {errf.read()[-1500:]}")
            # keep draining the pipe (LiteLLM logs there), so the server never blocks on it
            threading.Thread(target=pipe.read, daemon=True).start()
            yield proc.pid, line.strip()
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def wait_ready(url: str, timeout: float, pid: int) -> None:
    """Poll ``url`` until it answers 200 (LiteLLM prints nothing once it listens at ERROR)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            raise RuntimeError("it exited during its start-up")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        time.sleep(0.5)
    raise RuntimeError(f"{url} not ready after {timeout:g} s")


def run_load(
    url: str, payload: str, clients: int, seconds: float, pid: int | None, key: str
) -> dict[str, Any]:
    cmd = [
        sys.executable,
        str(HERE / "gateway_load.py"),
        "load",
        url,
        payload,
        "--key",
        key,
        "--clients",
        str(clients),
        "--seconds",
        str(seconds),
        "--warmup",
        str(min(1.0, seconds / 3)),
        "--pids",
        str(pid or ""),
    ]
    if '"stream":true' in payload:
        cmd.append("--stream")
    res = subprocess.run(
        cmd, capture_output=True, text=True, timeout=seconds * 60 + 300, check=False
    )
    if res.returncode != 0:
        raise RuntimeError(f"load generator failed: {res.stderr[-1500:]}")
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def hold_streams(url: str, payload: str, pid: int, key: str) -> dict[str, Any]:
    """RSS of the target before and with OPEN_STREAMS streams open (each past its first token)."""
    before = rss_kib(pid)
    proc = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "gateway_load.py"),
            "hold",
            url,
            payload,
            "--key",
            key,
            "--clients",
            str(OPEN_STREAMS),
            "--seconds",
            "60",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline()
    opened = int(line.split()[1]) if line.startswith("open ") else 0
    during = rss_kib(pid)
    proc.stdin.close()
    proc.wait(120)
    time.sleep(1.0)  # the target frees the streams its clients dropped
    return {
        "open": opened,
        "rssBeforeKiB": before,
        "rssOpenKiB": during,
        "perStreamKiB": (during - before) / max(1, opened),
    }


def litellm_config(path: Path, fast: str, slow: str) -> None:
    models = []
    for name, base in (("m", fast), ("slow", slow)):
        models.append(
            f"  - model_name: {name}\n    litellm_params:\n      model: openai/ok\n"
            f"      api_base: {base}\n      api_key: os.environ/BENCH_UP_KEY\n"
        )
    path.write_text(
        "model_list:\n" + "".join(models) + f"general_settings:\n  master_key: {CLIENT_KEY}\n"
    )


def bench_gateway(seconds: float = 3.0) -> dict[str, Any]:
    res: dict[str, Any] = {
        "clients": list(CLIENTS),
        "seconds": seconds,
        "runs": {},
        "floorUsualMs": list(FLOOR_USUAL_MS),
        "openStreams": OPEN_STREAMS,
    }
    py = sys.executable
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        up_pid, up = stack.enter_context(
            process(
                [
                    py,
                    str(HERE / "server.py"),
                    "--port",
                    "0",
                    "--chunks",
                    "20",
                    "--max-seconds",
                    "900",
                ],
                "PORT ",
            )
        )
        fast = f"http://127.0.0.1:{up.split()[1]}/v1"
        _, tr = stack.enter_context(
            process(
                [
                    py,
                    str(ROOT / "tests" / "trickle_server.py"),
                    "--events",
                    "60",
                    "--interval-ms",
                    "3000",
                ],
                "port ",
            )
        )
        slow = f"http://127.0.0.1:{tr.split()[1]}/v1"
        env = {"BENCH_CLIENT_KEYS": CLIENT_KEY, "BENCH_UP_KEY": UPSTREAM_KEY}
        cfg = tmp / "gateway.json"
        cfg.write_text(
            json.dumps(
                {
                    "clientKeysEnv": "BENCH_CLIENT_KEYS",
                    "models": {
                        n: {
                            "provider": "openai",
                            "modelId": "ok",
                            "baseURL": b,
                            "apiKeyEnv": "BENCH_UP_KEY",
                        }
                        for n, b in (("m", fast), ("slow", slow))
                    },
                    "limits": {"maxInFlight": 2048},
                }
            )
        )
        gw_pid, gw = stack.enter_context(
            process(
                [
                    str(Path(py).parent / "aimux-gateway"),
                    "--config",
                    str(cfg),
                    "--port",
                    "0",
                    "--quiet",
                    "--workers",
                    "1",
                ],
                "listening on",
                env=env,
            )
        )
        gw_url = gw.rsplit(" ", 1)[1]
        targets: dict[str, tuple[str, int | None, str]] = {
            "direct": (fast, up_pid, "gpt-4o-mini"),
            "aimux-gateway": (gw_url + "/v1", gw_pid, "m"),
        }
        res["litellm"] = None
        if LITELLM.exists():
            version = subprocess.run(
                [
                    str(LITELLM.parent / "python"),
                    "-c",
                    "import importlib.metadata as m; print(m.version('litellm'))",
                ],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.strip()
            res["litellm"] = version
            ll_cfg = tmp / "litellm.yaml"
            litellm_config(ll_cfg, fast, slow)
            log(f"  starting LiteLLM {version} (its start-up takes a while)")
            port = free_port()
            ll_pid, _ = stack.enter_context(
                process(
                    [
                        str(LITELLM),
                        "--config",
                        str(ll_cfg),
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        "--num_workers",
                        "1",
                    ],
                    "",
                    env={**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"},
                    stream="stderr",
                )
            )
            ll_url = f"http://127.0.0.1:{port}"
            try:
                wait_ready(ll_url + "/health/liveliness", 180, ll_pid)
                targets["LiteLLM"] = (ll_url + "/v1", ll_pid, "m")
            except RuntimeError as exc:  # the section runs on; the aims say why
                res["litellmMissing"] = f"LiteLLM {version} did not start: {exc}"
                log(f"  {res['litellmMissing']}")
        else:
            res["litellmMissing"] = (
                f"{LITELLM} is not there: `make -C bench peers-gateway` installs it"
            )
        for stream in (False, True):
            mode = "stream" if stream else "nonStream"
            res["runs"][mode] = {}
            for clients in CLIENTS:
                row: dict[str, Any] = {}
                for name, (base, pid, model) in targets.items():
                    key = CLIENT_KEY if name != "direct" else UPSTREAM_KEY
                    row[name] = run_load(
                        base + "/chat/completions", body(model, stream), clients, seconds, pid, key
                    )
                    r = row[name]
                    log(
                        f"  {mode:9s} {clients:3d} clients {name:13s}: p50 {_fmt(r['p50'])} ms "
                        f"p99 {_fmt(r['p99'])} ms ttft p50 {_fmt(r['ttftP50'])} ms "
                        f"{r['rps']:8.0f} req/s, target CPU {r['targetCpu']:.2f} s, "
                        f"non-200 {r['non200']}"
                    )
                res["runs"][mode][str(clients)] = row
        res["open"] = {}
        for name, (base, pid, _) in targets.items():
            if name == "direct" or pid is None:
                continue
            res["open"][name] = hold_streams(
                base + "/chat/completions", body("slow", True), pid, CLIENT_KEY
            )
            o = res["open"][name]
            log(
                f"  {OPEN_STREAMS} open streams {name}: {o['open']} open, RSS "
                f"{o['rssBeforeKiB'] / 1024:.0f} → {o['rssOpenKiB'] / 1024:.0f} MiB, "
                f"{o['perStreamKiB']:.1f} KiB/stream"
            )
    return res


def _fmt(x: float | None) -> str:
    return "–" if x is None or x != x else f"{x:.2f}"


def _sub(a: float | None, b: float | None) -> float:
    """a - b, NaN when either is missing (a target with no sample: JSON null)."""
    return float("nan") if a is None or b is None else a - b


def render_gateway(g: dict[str, Any], L: list[str], aims: list[tuple[str, str, bool]]) -> None:
    runs = g["runs"]
    floor = runs["nonStream"]["1"]["direct"]["p50"]
    low, high = g["floorUsualMs"]
    valid = low <= floor <= high
    ll = "LiteLLM" in runs["nonStream"]["1"]
    L.append("## Gateway: aimux-gateway vs LiteLLM's proxy, added over a direct connection")
    L.append("")
    L.append(
        "`bench/gateway.py` (issue 30): one local upstream (`bench/server.py`, a 20-delta "
        "stream in one write), reached directly (the floor), through `aimux-gateway "
        "--workers 1` and through LiteLLM "
        + (
            f"{g['litellm']} (`litellm --num_workers 1`, its own venv)"
            if ll
            else "(**not run**: " + g.get("litellmMissing", "?") + ")"
        )
        + f", each driven by the same load generator (`bench/gateway_load.py`: uvloop, "
        f"one keep-alive connection per client) for {g['seconds']:g} s per figure after a "
        "warm-up; *added* = the target's figure minus the floor's at the same concurrency. "
        "Every process shares the machine's 2 cores (the load generator and the upstream "
        "too), so at 64 and 512 clients the figures include queueing."
    )
    L.append("")
    L.append(
        f"Floor: **{floor:.3f} ms** p50 at one client (usual {low:g}–{high:g} ms): "
        + (
            "the run is valid."
            if valid
            else "**the run is invalid** (the floor is far from its usual value)."
        )
    )
    L.append("")
    L.append(
        "| mode | clients | target | p50 ms | p99 ms | TTFT p50 ms | TTFT p99 ms | "
        "added p50 ms | added p99 ms | req/s | non-200 |"
    )
    L.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode, label in (("nonStream", "non-stream"), ("stream", "stream")):
        for c in g["clients"]:
            row = runs[mode][str(c)]
            d = row["direct"]
            for name, r in row.items():
                lat = "ttft" if mode == "stream" else ""
                p50k, p99k = ("ttftP50", "ttftP99") if lat else ("p50", "p99")
                added = (
                    ("–", "–")
                    if name == "direct"
                    else (_fmt(_sub(r[p50k], d[p50k])), _fmt(_sub(r[p99k], d[p99k])))
                )
                L.append(
                    f"| {label} | {c} | {name} | {_fmt(r['p50'])} | {_fmt(r['p99'])} | "
                    f"{_fmt(r['ttftP50'])} | {_fmt(r['ttftP99'])} | {added[0]} | "
                    f"{added[1]} | {r['rps']:,.0f} | {r['non200']} |"
                )
    L.append("")
    L.append(
        "Added figures are of the whole answer (non-stream) and of the time to first token "
        "(stream). Throughput per core (64 clients, non-stream): requests answered per CPU "
        "second of the target's own processes (their threads and children). At 64 and 512 "
        "clients every target is saturated: its p50 is about clients / throughput (queueing), "
        "so there the latency ratio follows the throughput ratio."
    )
    L.append("")
    tp = {}
    row64 = runs["nonStream"]["64"]
    L.append("| target | req/s | CPU s | req per CPU second |")
    L.append("|---|---:|---:|---:|")
    for name, r in row64.items():
        per = r["answered"] / r["targetCpu"] if r["targetCpu"] > 0 else float("nan")
        tp[name] = per
        L.append(f"| {name} | {r['rps']:,.0f} | {r['targetCpu']:.2f} | {per:,.0f} |")
    L.append("")
    if g.get("open"):
        L.append(
            f"{g['openStreams']:,} streams open at once (`tests/trickle_server.py`, a delta "
            "every 3 s; a stream counts as open once its 200 head has arrived and until it "
            "ends):"
        )
        L.append("")
        L.append("| target | open | RSS before MiB | RSS open MiB | KiB per open stream |")
        L.append("|---|---:|---:|---:|---:|")
        for name, o in g["open"].items():
            L.append(
                f"| {name} | {o['open']} | {o['rssBeforeKiB'] / 1024:.0f} | "
                f"{o['rssOpenKiB'] / 1024:.0f} | {o['perStreamKiB']:.1f} |"
            )
        L.append("")
    note = f" (floor {floor:.3f} ms" + (")" if valid else ", run INVALID)")
    for mode, label in (("nonStream", "non-stream"), ("stream", "stream TTFT")):
        for c in g["clients"]:
            row = runs[mode][str(c)]
            k = "ttftP50" if mode == "stream" else "p50"
            who = f"{c} client" + ("s" if c > 1 else "")
            aim = f"30. gateway added p50 ≤ 1/10 of LiteLLM's ({label}, {who})"
            a_gw = _sub(row["aimux-gateway"][k], row["direct"][k])
            if not ll:
                aims.append(
                    (
                        aim,
                        f"{a_gw:.2f} ms, LiteLLM not run",
                        False,
                    )
                )
                continue
            a_ll = _sub(row["LiteLLM"][k], row["direct"][k])
            aims.append(
                (
                    aim,
                    f"{a_gw:.2f} ms vs {a_ll:.2f} ms ({a_gw / a_ll:.2f}×){note}",
                    valid and a_gw <= a_ll / 10,
                )
            )
    if ll:
        ratio = tp["aimux-gateway"] / tp["LiteLLM"]
        aims.append(
            (
                "30. gateway throughput per core ≥ 5× LiteLLM's (64 clients, non-stream)",
                f"{tp['aimux-gateway']:,.0f} vs {tp['LiteLLM']:,.0f} req/CPU-s ({ratio:.1f}×)",
                valid and ratio >= 5,
            )
        )
    else:
        aims.append(
            (
                "30. gateway throughput per core ≥ 5× LiteLLM's (64 clients, non-stream)",
                f"{tp['aimux-gateway']:,.0f} req/CPU-s, LiteLLM not run",
                False,
            )
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--out", default=str(HERE / "build" / "gateway.md"))
    ap.add_argument("--from-json", help="render a run's JSON again (this file's, or run.py's)")
    args = ap.parse_args()
    if args.from_json:
        data = json.loads(Path(args.from_json).read_text())
        data = data.get("gateway", data)
    else:
        data = bench_gateway(args.seconds)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).with_suffix(".json").write_text(json.dumps(data, indent=1))
    L: list[str] = []
    aims: list[tuple[str, str, bool]] = []
    render_gateway(data, L, aims)
    L += ["| aim | measured | |", "|---|---:|---|"]
    L += [f"| {n} | {got} | {'met' if ok else '**missed**'} |" for n, got, ok in aims]
    Path(args.out).write_text("\n".join(L) + "\n")
    print("\n".join(L))
    return 0


if __name__ == "__main__":
    sys.exit(main())
