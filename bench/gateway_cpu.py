"""A quick A/B driver for the gateway's CPU per request (not a `make bench` section).

  python bench/gateway_cpu.py [--src DIR[+NAME=VALUE,...] ...] [--clients 64,512]
                              [--modes nonStream,stream] [--seconds 3] [--rounds 2]

One upstream (bench/server.py, 20-delta streams) and one ``aimux-gateway --workers 1`` per
``--src`` (a checkout whose ``aimux_ops`` runs that gateway, by ``PYTHONPATH``, with the
environment variables after ``+``; default: this checkout), all driven by
bench/gateway_load.py; the sources alternate figure by figure (the machine is shared). Per
figure: answers/s, p50, the gateway's CPU µs per answer (user + system), split into its event
loop's thread and all the other threads (the core's reader threads), from /proc.
``GW_PERF=1``: context switches per answer too (``perf stat``). ``--py-spy FILE``: a py-spy
profile (raw, ``--gil``: of the lock's holder only) of the last source's gateway.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gateway import CLIENT_KEY, UPSTREAM_KEY, body, process, run_load  # noqa: E402


def _cpu(stat: Path) -> tuple[float, float]:
    fields = stat.read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def thread_cpu(pid: int) -> tuple[float, float, float, float]:
    """(user, system CPU s of the main thread; of all the others, the exited ones too)."""
    mu, ms = _cpu(Path(f"/proc/{pid}/task/{pid}/stat"))
    au, as_ = _cpu(Path(f"/proc/{pid}/stat"))
    return mu, ms, au - mu, as_ - ms


@contextlib.contextmanager
def gateway(src: Path, cfg: Path, env: dict[str, str]) -> Iterator[tuple[int, str]]:
    # -P: the gateway's aimux_ops is the one on PYTHONPATH, not the current directory's
    cmd = [sys.executable, "-P", "-m", "aimux_ops.gateway", "--config", str(cfg), "--port", "0"]
    cmd += ["--quiet", "--workers", "1"]
    src, _, extra = str(src).partition("+")  # DIR+NAME=VALUE,...: that gateway's environment
    env = {**env, "PYTHONPATH": src}
    env.update(kv.split("=", 1) for kv in extra.split(",") if kv)
    with process(cmd, "listening on", env=env) as (pid, line):
        yield pid, line.rsplit(" ", 1)[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", action="append", default=[])
    ap.add_argument("--clients", default="64,512")
    ap.add_argument("--modes", default="nonStream,stream")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--py-spy", default="")
    ap.add_argument("--py-spy-gil", action="store_true", help="sample the GIL's holder only")
    args = ap.parse_args()
    srcs = [Path(s) for s in args.src] or [HERE.parent]
    py = sys.executable
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        _, up = stack.enter_context(
            process([py, str(HERE / "server.py"), "--port", "0", "--chunks", "20"], "PORT ")
        )
        fast = f"http://127.0.0.1:{up.split()[1]}/v1"
        cfg = tmp / "gateway.json"
        model = {"provider": "openai", "modelId": "ok", "baseURL": fast, "apiKeyEnv": "UP_KEY"}
        cfg.write_text(
            json.dumps(
                {
                    "clientKeysEnv": "CLIENT_KEYS",
                    "models": {"m": model},
                    "limits": {"maxInFlight": 2048},
                }
            )
        )
        env = {"CLIENT_KEYS": CLIENT_KEY, "UP_KEY": UPSTREAM_KEY}
        gws = [stack.enter_context(gateway(s, cfg, env)) for s in srcs]
        spy = None
        if args.py_spy:
            spy = subprocess.Popen(
                [
                    os.environ.get("PY_SPY", "py-spy"),
                    "record",
                    "-p",
                    str(gws[-1][0]),
                    "-o",
                    args.py_spy,
                ]
                + ["-f", "raw", "-r", "250", "--threads", "--nonblocking"]
                + (["--gil"] if args.py_spy_gil else []),
                stdout=subprocess.DEVNULL,
                stderr=open(args.py_spy + ".log", "w"),
            )
        load0 = os.getloadavg()
        # warm-up: each gateway's reader threads and imports
        for pid, url in gws:
            run_load(url + "/v1/chat/completions", body("m", False), 64, 1.0, pid, CLIENT_KEY)
        for rnd in range(args.rounds):
            for mode in args.modes.split(","):
                for clients in [int(c) for c in args.clients.split(",")]:
                    for src, (pid, url) in zip(srcs, gws, strict=True):
                        perf = None
                        if os.environ.get("GW_PERF"):
                            perf = subprocess.Popen(
                                [
                                    "perf",
                                    "stat",
                                    "-e",
                                    "context-switches,cpu-migrations",
                                    "-p",
                                    str(pid),
                                    "-x",
                                    ",",
                                ],
                                stderr=subprocess.PIPE,
                                text=True,
                            )
                        c0 = thread_cpu(pid)
                        res = run_load(
                            url + "/v1/chat/completions",
                            body("m", mode == "stream"),
                            clients,
                            args.seconds,
                            pid,
                            CLIENT_KEY,
                        )
                        c1 = thread_cpu(pid)
                        if perf is not None:
                            perf.send_signal(2)
                            for ln in perf.communicate()[1].splitlines():
                                f = ln.split(",")
                                if len(f) > 2 and f[0].isdigit():
                                    per = int(f[0]) / max(1, res["answered"])
                                    print(f"   {f[2]}: {per:.1f} per answer")
                        n = max(1, res["answered"])
                        d = [(b - a) / n * 1e6 for a, b in zip(c0, c1, strict=True)]
                        print(
                            f"r{rnd} {mode:9s} {clients:4d} {src.name[-16:]:16s} "
                            f"{res['rps']:7.0f} req/s  p50 {res['p50']:7.1f} ms  "
                            f"ttft {res['ttftP50'] or 0:7.1f}  "
                            f"CPU/req {res['targetCpu'] / n * 1e6:6.0f} µs"
                            f" (loop {d[0]:4.0f}u+{d[1]:4.0f}s, others {d[2]:4.0f}u+{d[3]:4.0f}s)"
                            f"  non200 {res['non200']}",
                            flush=True,
                        )
        if spy is not None:
            spy.send_signal(2)
            spy.wait(30)
        print(f"load average at start {load0}, at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
