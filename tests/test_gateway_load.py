"""aimux-gateway under a bounded load with faults: streams that finish, slow streams, upstream
cuts, a 429 storm, clients that go away mid-stream, on both ingress protocols, many at once.
Every request ends in exactly the outcome its fault calls for (none lost, none silently
normal), every disconnect cancels its upstream request, and after two rounds nothing leaked:
no request in flight, no reader thread, no fd, no upstream connection beyond the idle pool, no
memory growth round over round. Counts only: no timing is asserted."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from fault_server import FaultServer
from gateway_proc import (
    CLIENT_KEY,
    UPSTREAM_KEY,
    GatewayProc,
    model,
    proc_counts,
    tcp_connections_to,
)

TEXT = "abcdefghij"
HANG = "mode=stall;after=1;stall_ms=30000;x=load"
KINDS = ("ok", "ok-anthropic", "slow", "cut", "storm", "storm-stream", "disconnect")
PER_KIND = 30  # per round
CONCURRENCY = 48
ROUNDS = 2


@pytest.fixture(scope="module")
def gw(server: FaultServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProc]:
    base = server.base_url
    models = {
        "ok": model("openai", f"fault:mode=ok;text={TEXT};parts=5;x=load", base),
        "an-ok": model("anthropic", f"fault:mode=ok;text={TEXT};parts=5;x=load", base),
        "slow": model("openai", f"fault:mode=ok;text={TEXT};parts=5;drip_ms=15;x=load", base),
        "cut": model("anthropic", "fault:mode=cut;after=1;x=load", base),
        "storm": model("openai", "fault:mode=status;status=429;retry_after=1;x=load", base),
        "hang": model("openai", "fault:" + HANG, base),
    }
    with GatewayProc(tmp_path_factory.mktemp("gw-load"), models, extra_env={}) as proc:
        yield proc


def _sse_data(raw: bytes) -> list[Any]:
    out = []
    for line in raw.decode().splitlines():
        if line.startswith("data: "):
            payload = line[6:]
            out.append(payload if payload == "[DONE]" else orjson.loads(payload))
    return out


async def _one(client: httpx.AsyncClient, kind: str) -> str:
    """One request of ``kind``; the outcome it saw (named so a wrong one is visible)."""
    oa = "/v1/chat/completions"
    hi = [{"role": "user", "content": "hi"}]
    if kind == "ok":
        r = await client.post(oa, json={"model": "ok", "messages": hi, "stream": True})
        data = _sse_data(r.content)
        text = "".join(d["choices"][0]["delta"].get("content") or "" for d in data[:-1])
        return "done" if r.status_code == 200 and data[-1] == "[DONE]" and text == TEXT else "bad"
    if kind == "ok-anthropic":
        body = {"model": "ok", "max_tokens": 9, "messages": hi}
        r = await client.post("/v1/messages", json=body)
        ok = r.status_code == 200 and r.json()["content"][0]["text"] == TEXT
        return "done" if ok else f"bad {r.status_code}"
    if kind == "slow":
        body = {"model": "an-ok", "max_tokens": 9, "messages": hi, "stream": True}
        r = await client.post("/v1/messages", json={**body, "model": "slow"})
        ok = r.status_code == 200 and r.content.rstrip().endswith(b'{"type":"message_stop"}')
        return "done" if ok else f"bad {r.status_code}"
    if kind == "cut":
        r = await client.post(oa, json={"model": "cut", "messages": hi, "stream": True})
        data = _sse_data(r.content)
        last = data[-1] if data else None
        if isinstance(last, dict) and last.get("error", {}).get("status") == 502:
            return "stream-error"
        return f"bad {data[-1:]!r}"
    if kind in ("storm", "storm-stream"):
        body = {"model": "storm", "messages": hi, "stream": kind == "storm-stream"}
        r = await client.post(oa, json=body)
        ok = r.status_code == 429 and r.headers.get("retry-after") == "1"
        return "rate-limited" if ok else f"bad {r.status_code}"
    assert kind == "disconnect"
    body = {"model": "hang", "messages": hi, "stream": True}
    async with client.stream("POST", oa, json=body) as r:
        async for chunk in r.aiter_bytes():
            if b'"content":"Hel"' in chunk:
                return "went-away"  # the first delta: the client leaves mid-stream
    return "bad: the stream ended"


async def _round(url: str) -> collections.Counter[str]:
    kinds = [k for k in KINDS for _ in range(PER_KIND)]
    sem = asyncio.Semaphore(CONCURRENCY)
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    async with httpx.AsyncClient(
        base_url=url, headers=headers, limits=limits, timeout=60
    ) as client:

        async def run(i: int, kind: str) -> tuple[str, str]:
            async with sem:
                return kind, await _one(client, kind)

        # interleaved: every fault runs beside every other
        order = [kinds[i] for i in sorted(range(len(kinds)), key=lambda i: (i * 7919) % len(kinds))]
        results = await asyncio.gather(*(run(i, k) for i, k in enumerate(order)))
    return collections.Counter(f"{k}:{o}" for k, o in results)


EXPECTED = {
    "ok:done": PER_KIND,
    "ok-anthropic:done": PER_KIND,
    "slow:done": PER_KIND,
    "cut:stream-error": PER_KIND,
    "storm:rate-limited": PER_KIND,
    "storm-stream:rate-limited": PER_KIND,
    "disconnect:went-away": PER_KIND,
}


def test_load_with_faults_loses_nothing_and_leaks_nothing(
    gw: GatewayProc, server: FaultServer
) -> None:
    upstream_port = server.port
    counts: list[dict[str, int]] = []
    before = proc_counts(gw.pid)
    gone0 = server.wait_for("gone", HANG, 0)
    for n in range(1, ROUNDS + 1):
        outcome = asyncio.run(_round(gw.url))
        assert dict(outcome) == EXPECTED
        # every client that went away cancelled its upstream request (the stall never ran out)
        assert server.wait_for("gone", HANG, gone0 + n * PER_KIND) == gone0 + n * PER_KIND
        assert gw.wait_idle() == 0
        counts.append(proc_counts(gw.pid) | {"upstream": tcp_connections_to(gw.pid, upstream_port)})
    first, second = counts
    print("gateway process before and after each round:", before, counts)
    # the idle pool keeps at most AIMUX_POOL_MAX_IDLE_PER_HOST (64) upstream connections, as
    # many as ran at once in the round: the fds beside them do not grow
    assert second["upstream"] <= 64
    assert second["fds"] - second["upstream"] <= first["fds"] - first["upstream"] + 4, counts
    # the reader threads of the streams that ran at once stay parked (10 s) for the next ones,
    # so a round's count is the pool's, not the round before's: a thread left behind per
    # stream (a disconnect's, a cut's: 30 of each per round) outgrows the pool's bound
    pool = CONCURRENCY + 16  # (+ the threads started as others were about to park)
    assert all(c["threads"] <= before["threads"] + pool for c in counts), (before, counts)
    assert second["rss_kb"] <= first["rss_kb"] + 16 * 1024, counts
    # one log line per request, each with the outcome's status; no key anywhere
    total = ROUNDS * len(KINDS) * PER_KIND

    def generations(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [ln for ln in lines if ln.get("event") == "request" and "model" in ln]

    lines = generations(gw.wait_log(lambda ls: len(generations(ls)) >= total))
    assert len(lines) == total
    by_status = collections.Counter(ln["status"] for ln in lines)
    assert by_status[429] == ROUNDS * 2 * PER_KIND
    assert by_status[499] == ROUNDS * PER_KIND  # the clients that went away
    log = gw.log()
    assert UPSTREAM_KEY not in log and CLIENT_KEY not in log
    assert "Traceback" not in log
