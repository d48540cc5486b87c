"""A Python host's exit with event-driven streams (docs/DESIGN.md "The host's exit" → "A Python
host's exit"): a Python process that runs libaimux in its own interpreter (ctypes) and streams
with ``aimux_stream_start`` (each stream on a reader thread of the core) must exit as it chose,
however its streams stand: every one read to its end, still producing, or blocked (at the
high-water mark, on a held request with a host thread blocked reading it).

Each case runs fresh host processes (a crash at the exit needs an interpreter's end):
``running`` several times, the others fewer times, as checks of what a host sees."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import orjson
import pytest
from fault_server import FaultServer
from helpers import ROOT

pytestmark = pytest.mark.timeout(300)

#: host runs per case
RUNS = {"running": 8, "finished": 2, "blocked": 2}

HOST = textwrap.dedent("""
    import atexit, ctypes, sys, threading, urllib.parse, urllib.request
    import orjson
    case, base_url, run = sys.argv[1], sys.argv[2], sys.argv[3]
    late = {}

    def after_the_core():
        # registered before the library's first call: runs after the core's own exit hook
        late["reader"].join()  # the blocked reader got its end (a hang fails the test)
        small = []
        ended = False
        while not ended:
            events, ended = batch(late["small"])
            small += events
        big_ended = False
        while not big_ended:
            _, big_ended = batch(late["big"])
        print(orjson.dumps({"held": late["held"], "small": len(small),
                            "last": small[-1]["type"], "big": big_ended}).decode())

    if case == "blocked":
        atexit.register(after_the_core)
    sys.path[:0] = [ROOT, ROOT + "/bench"]
    from cabi import Lib
    from aimux_ops.streams import cqueue
    from aimux_ops.streams import registry as stream_registry

    P = ctypes.c_void_p
    lib = Lib()
    c = lib.lib
    c.aimux_stream_start.restype = P
    c.aimux_stream_start.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)]
    c.aimux_stream_next_batch.restype = P
    c.aimux_stream_next_batch.argtypes = [
        ctypes.c_uint64, ctypes.c_size_t, ctypes.POINTER(P), ctypes.POINTER(ctypes.c_int32)]

    def start(spec):
        h = ctypes.c_uint64(0)
        params = orjson.dumps({"model": {"provider": "openai", "modelId": "gpt-4o-mini",
            "baseURL": base_url, "apiKey": "sk-exit", "headers": {"x-fault": spec}},
            "prompt": "hi", "maxRetries": 0})
        assert not c.aimux_stream_start(b"stream_text", params, ctypes.byref(h))
        return h.value

    def batch(h):
        out, ended = P(), ctypes.c_int32(-1)
        err = c.aimux_stream_next_batch(h, 1024, ctypes.byref(out), ctypes.byref(ended))
        if err:
            raise lib.take_error(err)
        data = lib.take_string(out.value)
        return (orjson.loads(data) if data else []), ended.value == 1

    def until(check):  # waits on the core's state (the bound only ends a broken run)
        for _ in range(6000):
            if check():
                return
            threading.Event().wait(0.01)
        raise AssertionError("never: " + check.__doc__)

    if case == "finished":  # every stream read to its end, then the exit
        counts = []
        for h in [start("mode=chunks;n=2000") for _ in range(8)]:
            n, ended = 0, False
            while not ended:
                events, ended = batch(h)
                n += len(events)
            counts.append(n)
        assert counts == [2001] * 8, counts
        print("finished")
    elif case == "running":  # a host thread still reads them: the readers are busy at the exit
        hs = [start("mode=chunks;n=30000") for _ in range(6)]
        batches = dict.fromkeys(hs, 0)
        busy = threading.Event()

        def drain():
            while True:
                for h in hs:
                    batch(h)
                    batches[h] += 1
                if min(batches.values()) >= 5:
                    busy.set()

        threading.Thread(target=drain, daemon=True).start()
        busy.wait()
        print("running")
    else:  # blocked: at the high-water mark, a held request with a reader, an unread end
        big = start("mode=chunks;n=100000")
        assert len(batch(big)[0]) > 0  # partly read
        stream = stream_registry._streams[big]

        def waits_for_room():
            "the big stream's reader thread waits for room"
            return stream.waits_for_room

        until(waits_for_room)
        spec = "mode=chunks;n=10;hold=exit-" + run
        held = start(spec)
        query = urllib.parse.urlencode(
            {"event": "held", "scenario": spec, "n": 1, "timeout_ms": 60000})
        with urllib.request.urlopen(base_url.rsplit("/", 1)[0] + "/__wait?" + query) as r:
            assert r.status == 200

        def read_held():
            events, ended = batch(held)
            late["held"] = [len(events), ended]

        late["reader"] = reader = threading.Thread(target=read_held, daemon=True)
        reader.start()
        q = stream_registry._streams[held]._q

        def reader_blocked():
            "a reader blocked on the held stream"
            return cqueue.lib._aimux_cq_readers(q) > 0

        until(reader_blocked)
        small = start("mode=chunks;n=5")

        def small_ended():
            "the small stream's producer ended"
            return stream_registry._streams[small]._ended

        until(small_ended)
        late["big"], late["small"] = big, small
        print("blocked")
""")


def _host(server: FaultServer, case: str, run: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", f"ROOT = {str(ROOT)!r}\n" + HOST, case, server.base_url, run],
        capture_output=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )


@pytest.mark.parametrize("case", sorted(RUNS))
def test_a_python_host_exits_cleanly_whatever_its_streams_do(
    server: FaultServer, case: str
) -> None:
    outcomes = []
    runs = RUNS[case]
    for run in range(runs):
        proc = _host(server, case, str(run))
        outcomes.append(proc.returncode)
        if proc.returncode != 0:
            continue
        lines = proc.stdout.decode().splitlines()
        assert lines[0] == case, proc.stdout.decode() + proc.stderr.decode()[-3000:]
        if case == "blocked":
            # the blocked reader got the end (its stream cancelled by the exit), the stream that
            # had ended keeps its events for a later exit handler, the big one ends
            assert orjson.loads(lines[1]) == {
                "held": [0, True],
                "small": 6,
                "last": "finish",
                "big": True,
            }, proc.stderr.decode()[-3000:]
        assert not proc.stderr, proc.stderr.decode()[-3000:]
    assert outcomes == [0] * runs, f"exit codes of the {runs} hosts: {outcomes}"
