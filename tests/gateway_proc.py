"""``aimux-gateway`` as a real subprocess for the gateway tests: a config naming models on a
fault server (``fault_server``), an ephemeral port (the command prints the URL it bound), its
log (stderr) kept in a file for the canary scans."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import orjson

CLIENT_KEY = "gw-client-key-7f3a9c1e5b"
#: the upstream key: the canary no response, error event or log line may carry
UPSTREAM_KEY = "sk-upstream-canary-4d2e8b6f0a1c9e7d"


def model(provider: str, spec: str, base_url: str) -> dict[str, Any]:
    """A ``models`` entry: ``spec`` is the fault server's model id (``ok`` or ``fault:…``)."""
    return {"provider": provider, "modelId": spec, "baseURL": base_url, "apiKeyEnv": "GW_UP_KEY"}


class GatewayProc:
    """``with GatewayProc(tmp, models) as gw:`` a started gateway; ``gw.url``, ``gw.log()``."""

    def __init__(
        self,
        work: Path,
        models: dict[str, dict[str, Any]],
        *,
        limits: dict[str, int] | None = None,
        workers: int = 1,
        extra_env: dict[str, str] | None = None,
        extra_config: dict[str, Any] | None = None,
    ) -> None:
        self.work = work
        cfg: dict[str, Any] = {
            "clientKeysEnv": "GW_CLIENT_KEYS",
            "models": models,
            **(extra_config or {}),
        }
        if limits:
            cfg["limits"] = limits
        self.config = work / "gateway.json"
        self.config.write_bytes(orjson.dumps(cfg))
        self.log_path = work / "gateway.log"
        self.workers = workers
        self.env = {
            **os.environ,
            "GW_CLIENT_KEYS": f"other-key-00000000,{CLIENT_KEY}",
            "GW_UP_KEY": UPSTREAM_KEY,
            **(extra_env or {}),
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.stdout = b""

    def __enter__(self) -> GatewayProc:
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "aimux_ops.gateway",
                "--config",
                str(self.config),
                "--port",
                "0",
                "--workers",
                str(self.workers),
            ],
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=self.env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        assert line.startswith("aimux-gateway listening on "), line + self.log()
        self.url = line.split()[-1]
        self.wait_ready()
        return self

    def wait_ready(self) -> None:
        """Until every worker answers: /healthz on a fresh connection (bounded tries: 120 s, a
        loaded machine starts workers slowly)."""
        for _ in range(4800):
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert self.proc is not None and self.proc.poll() is None, self.log()
            import time

            time.sleep(0.025)
        raise AssertionError("the gateway never answered /healthz\n" + self.log())

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def terminate(self, timeout: float = 60) -> int:
        """SIGTERM (a graceful shutdown); its exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout)
        assert self.proc.stdout is not None
        self.stdout += self.proc.stdout.read()
        return rc

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_idle(self) -> int:
        """``inFlight`` of /healthz once it is 0 (a request leaves it just after its upstream
        request ended: what a test waits on is seen first); bounded (60 s), the caller asserts."""
        import time

        for _ in range(2400):
            in_flight = int(httpx.get(self.url + "/healthz").json()["inFlight"])
            if in_flight == 0:
                break
            time.sleep(0.025)
        return in_flight

    def wait_log(self, until: Any, tries: int = 2400) -> list[dict[str, Any]]:
        """The log lines once ``until(lines)`` holds (a request's line is written just after
        its response is sent); bounded, the caller asserts."""
        import time

        lines = self.log_lines()
        for _ in range(tries):
            if until(lines):
                break
            time.sleep(0.025)
            lines = self.log_lines()
        return lines

    def log_lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log().splitlines():
            if line.startswith("{"):
                out.append(orjson.loads(line))
        return out


def proc_counts(pid: int) -> dict[str, int]:
    """A process's open fds, sockets and threads (Linux /proc)."""
    fds = os.listdir(f"/proc/{pid}/fd")
    sockets = 0
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                sockets += 1
        except OSError:
            pass
    threads = 0
    rss_kb = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            threads = int(line.split()[1])
        elif line.startswith("VmRSS:"):
            rss_kb = int(line.split()[1])
    return {"fds": len(fds), "sockets": sockets, "threads": threads, "rss_kb": rss_kb}


def tcp_connections_to(pid: int, port: int) -> int:
    """Established TCP connections of ``pid`` to 127.0.0.1:``port`` (its upstream pool)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    n = 0
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        cols = line.split()
        remote, state, inode = cols[2], cols[3], cols[9]
        if state == "01" and inode in inodes and int(remote.split(":")[1], 16) == port:
            n += 1
    return n
