"""Before/after in the same minutes for the stream chunks read in C (``aimux_ops._speedups._cchunks``,
DESIGN.md "Stream chunks in C"): the Python API's ``stream_text`` on the bench server's
5,000-chunk stream, in one process, with the C reader on and off in turn (which goes first
alternates), each run right after a run of the floor (httpx lines + orjson, as bench/run.py's
section 4) so that every rate has a floor of the same moment.

    .venv/bin/python bench/chunks_ab.py [rounds]      # default 10

Prints, for each side, the median events/s, the median of its ratios to the paired floor, and
every round."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import KEY, PROMPT, bench_server, generate_params  # noqa: E402

import aimux_ops  # noqa: E402
from aimux_ops.providers import openai  # noqa: E402


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    cchunks = openai._cchunks_module()
    if cchunks is None:
        raise SystemExit("aimux_ops._speedups._cchunks is not loaded (make native; AIMUX_PURE_PYTHON unset)")
    with bench_server() as port:
        base = f"http://127.0.0.1:{port}/v1"
        params = generate_params(base)
        client = httpx.Client()
        body = orjson.dumps({"model": "gpt-4o-mini", "stream": True,
                             "messages": [{"role": "user", "content": PROMPT}]})
        headers = {"content-type": "application/json", "authorization": f"Bearer {KEY}"}

        def floor() -> int:
            n = 0
            with client.stream("POST", base + "/chat/completions", content=body,
                               headers=headers) as r:
                for line in r.iter_lines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        chunk = orjson.loads(line[6:])
                        choices = chunk["choices"]
                        if choices and choices[0]["delta"].get("content"):
                            n += 1
            return n

        def api() -> int:
            n = 0
            for event in aimux_ops.stream("stream_text", params):
                if event["type"] == "text-delta":
                    n += 1
                elif event["type"] == "error":
                    raise RuntimeError(event)
            return n

        def rate(fn: Callable[[], int]) -> float:
            t0 = time.perf_counter()
            n = fn()
            assert n == 5000, n
            return n / (time.perf_counter() - t0)

        sides = {"C reader on": cchunks, "C reader off": None}
        for module in sides.values():  # warm up both
            openai._cchunks = module
            api()
        floor()
        rates: dict[str, list[float]] = {k: [] for k in sides}
        ratios: dict[str, list[float]] = {k: [] for k in sides}
        for r in range(rounds):
            order = list(sides.items())
            for name, module in order if r % 2 == 0 else order[::-1]:
                openai._cchunks = module
                f = rate(floor)
                a = rate(api)
                rates[name].append(a)
                ratios[name].append(a / f)
        openai._cchunks = cchunks
    for name in sides:
        print(f"{name:14s} median {statistics.median(rates[name]):>8,.0f} ev/s  "
              f"× floor {statistics.median(ratios[name]):.2f}  rounds",
              [int(x / 1000) for x in rates[name]], [round(x, 2) for x in ratios[name]])


if __name__ == "__main__":
    main()
