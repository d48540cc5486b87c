"""Before/after in the same minutes: two Python trees (and their Node bindings) alternated on one
library, for the event-driven rows (the C "batch poll" row and the Node binding).

    .venv/bin/python bench/ab.py old=/path/to/old/checkout new=. [rounds]

Each tree is put on ``AIMUX_PYTHONPATH`` (the library's embedded interpreter imports the core
from there) and runs its own ``bench/peers/aimux_node_peer.mjs`` (its own Node binding); both use
this checkout's ``native/build/libaimux.so`` (``AIMUX_LIB``) and ``bench/build/threads``. The
trees take turns going first. An old
checkout made with ``git archive <commit> | tar -x -C <dir>`` needs its Node binding's
``node_modules``: link this checkout's. Prints the median and every round's events/s."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import KEY, bench_server, generate_params  # noqa: E402


def main() -> None:
    trees = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
    rounds = int(next((a for a in sys.argv[1:] if "=" not in a), "8"))
    site = [p for p in sys.path if p.endswith("site-packages")]
    lib = str(HERE.parent / "native" / "build" / "libaimux.so")
    res: dict[str, list[float]] = {}
    with bench_server() as port:
        base = f"http://127.0.0.1:{port}/v1"
        params = orjson.dumps(generate_params(base)).decode()
        for r in range(rounds):
            order = list(trees.items())
            for name, tree in order if r % 2 == 0 else order[::-1]:  # each goes first in turn
                root = str(Path(tree).resolve())
                env = dict(os.environ, AIMUX_PYTHONPATH=":".join([root, *site]), AIMUX_LIB=lib)
                out = subprocess.run(
                    [str(HERE / "build" / "threads"), "stream-batch", "6", params],
                    env=env, capture_output=True, text=True, check=True,
                )
                res.setdefault(f"{name} batch poll", []).append(
                    json.loads(out.stdout)["eventsPerSecond"])
                peer = Path(root) / "bench" / "peers" / "aimux_node_peer.mjs"
                out = subprocess.run(
                    ["node", str(peer), "stream", base, "4", "1", KEY],
                    env=env, capture_output=True, text=True, check=True,
                )
                d = json.loads(out.stdout)
                res.setdefault(f"{name} node", []).append(d["events"] / d["seconds"])
    for k in sorted(res):
        v = res[k]
        print(f"{k:24s} median {statistics.median(v):>10,.0f}  ", [int(x / 1000) for x in v])


if __name__ == "__main__":
    main()
