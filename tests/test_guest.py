"""The core as a guest in a Python host's process (DESIGN.md "The library as a guest"): a SIGINT
the host handles, a full per-host pool, an os.fork() with a warm pool. Each case is a real Python
host process (the limits are read once per process) against the fault server; the C hosts are
in native/tests/test_guest.c. A host waits on what the fault server saw (a request held, N
requests held), never on a sleep."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
from fault_server import FaultServer
from helpers import ROOT


def _host(script: str, server: FaultServer, env: dict[str, str] | None = None) -> dict:
    prelude = textwrap.dedent(f"""
        import os, sys, orjson
        sys.path.insert(0, {str(ROOT)!r})
        from aimux_ops.boundary import dispatch
        BASE = {server.base_url!r}
        def server_wait(event, scenario, n=1):  # until the fault server saw n such events
            import urllib.parse, urllib.request
            url = BASE[:-3] + "/__wait?" + urllib.parse.urlencode(
                {{"event": event, "scenario": scenario, "n": n}})
            with urllib.request.urlopen(url, timeout=60) as r:  # 408 (an HTTPError) if not
                assert orjson.loads(r.read())["count"] >= n
        def server_release(hold):
            import urllib.request
            urllib.request.urlopen(urllib.request.Request(BASE[:-3] + "/__release?hold=" + hold,
                                                          data=b"", method="POST"), timeout=60)
        def params(spec, timeout_ms=20000, **extra):
            return orjson.dumps({{"model": {{"provider": "openai", "modelId": "fault:" + spec,
                "baseURL": BASE, "apiKey": "sk-guest"}}, "prompt": "hi", "maxRetries": 0,
                "timeoutMs": timeout_ms, **extra}})
        """)
    proc = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(script)],
        capture_output=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return orjson.loads(proc.stdout.splitlines()[-1])


def test_a_sigint_in_a_python_host_is_the_hosts_keyboard_interrupt(server: FaultServer) -> None:
    """In-process (the Python binding's path): the interrupt propagates as in any library."""
    out = _host(
        """
        import signal, threading
        # the host's own disposition, set here: a shell, nohup or a CI runner may have started
        # this process with SIGINT ignored, and then Python installs no handler of its own
        signal.signal(signal.SIGINT, signal.default_int_handler)
        def interrupt():  # once the call is waiting on the server (it holds it for a minute)
            server_wait("held", "mode=ok;hold=py-sigint")
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=interrupt).start()
        try:
            dispatch.call_json(b"generate_text", params("mode=ok;hold=py-sigint", 90000,
                               maxRetries=0))
            print(orjson.dumps({"raised": None}).decode())
        except KeyboardInterrupt:
            res, _ = dispatch.call_json(b"generate_text", params("mode=ok;text=next"))
            print(orjson.dumps({"raised": "KeyboardInterrupt", "next": orjson.loads(res)}).decode())
        """,
        server,
    )
    assert out["raised"] == "KeyboardInterrupt", out
    assert out["next"]["text"] == "next"


def test_a_sigint_in_a_python_host_calling_the_c_abi_is_aborted_then_handed_back(
    server: FaultServer,
) -> None:
    """The same interpreter through ctypes: a KeyboardInterrupt raised inside the core ends the
    call as 13 (never 208), and the host's handler sees the interrupt again once the foreign call
    has returned."""
    lib = ROOT / "native" / "build" / "libaimux.so"
    out = _host(
        f"""
        import ctypes, signal, threading
        lib = ctypes.CDLL({str(lib)!r})
        lib.aimux_call.restype = ctypes.c_void_p
        lib.aimux_call.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                   ctypes.POINTER(ctypes.c_void_p)]
        lib.aimux_error_code.argtypes = [ctypes.c_void_p]
        lib.aimux_error_free.argtypes = [ctypes.c_void_p]
        out = ctypes.c_void_p()
        calls = []
        def on_sigint(signum, frame):   # raises the first time (inside the core), then counts
            calls.append(signum)
            if len(calls) == 1:
                raise KeyboardInterrupt
        signal.signal(signal.SIGINT, on_sigint)
        def interrupt():  # once the call is waiting on the server (it holds it for a minute)
            server_wait("held", "mode=ok;hold=c-sigint")
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=interrupt).start()
        err = lib.aimux_call(b"generate_text", params("mode=ok;hold=c-sigint", 90000),
                             ctypes.byref(out))
        code = lib.aimux_error_code(err) if err else 0
        lib.aimux_error_free(err)
        for _ in range(1000):
            pass
        print(orjson.dumps({{"code": code, "handler_calls": len(calls)}}).decode())
        """,
        server,
    )
    assert out == {"code": 13, "handler_calls": 2}


def test_a_full_pool_is_a_clear_error_and_a_deadline_wait_is_a_timeout_caused_by_it(
    server: FaultServer,
) -> None:
    out = _host(
        """
        # two calls held by the server fill the host's pool of 2 (streams do not: they run on
        # the stream loop's own pool, so they never starve calls)
        import threading
        holders = [threading.Thread(target=dispatch.call_json, args=(b"generate_text",
                   params("mode=drop;hold=pool", 60000))) for _ in range(2)]
        for t in holders:
            t.start()
        server_wait("held", "mode=drop;hold=pool", 2)
        _, full = dispatch.call_json(b"generate_text", params("mode=ok;text=x"))
        _, short = dispatch.call_json(b"generate_text", params("mode=ok;text=x", 100))
        server_release("pool")
        for t in holders:
            t.join(30)
        res, _ = dispatch.call_json(b"generate_text", params("mode=ok;text=after"))
        print(orjson.dumps({"full": orjson.loads(full), "short": orjson.loads(short),
                            "after": orjson.loads(res)}).decode())
        """,
        server,
        {"AIMUX_POOL_MAX_PER_HOST": "2", "AIMUX_POOL_TIMEOUT_MS": "1500"},
    )
    full, short = out["full"], out["short"]
    assert full["code"] == 11 and full["retryable"] is True, full
    assert "statusCode" not in full["error"]
    assert "limit of 2 connections (AIMUX_POOL_MAX_PER_HOST)" in full["message"]
    assert "within 1500 ms (AIMUX_POOL_TIMEOUT_MS)" in full["message"]
    assert "not sent" in full["message"]
    assert short["code"] == 12, short
    assert short["cause"]["code"] == 11 and "limit of 2" in short["cause"]["message"]
    assert out["after"]["text"] == "after"


def test_after_os_fork_each_process_gets_its_own_answers_and_no_parent_stream(
    server: FaultServer,
) -> None:
    out = _host(
        """
        def text(t):
            res, env = dispatch.call_json(b"generate_text", params("mode=ok;text=" + t))
            return orjson.loads(res)["text"] if res else orjson.loads(env)["code"]
        assert text("warm") == "warm"
        h, _ = dispatch.stream_json(b"stream_text", params("mode=ok;text=abcdef;parts=3"))
        from aimux_ops.http import transport
        t = transport.default_transport()
        pools = [*t.pools().values(), *t.pools(stream=True).values()]
        fds = [c.sock.fileno() for p in pools for c in p.connections()]
        assert fds and all(fd >= 0 for fd in fds)
        pid = os.fork()
        if pid == 0:
            def is_open(fd):
                try:
                    os.fstat(fd)
                    return True
                except OSError:
                    return False
            if any(is_open(fd) for fd in fds):  # the child's copies of the parent's pool
                os._exit(2)
            ok = all(text(f"c{i}") == f"c{i}" for i in range(20))
            _, env = dispatch.stream_next_json(h)
            stale = env is not None and orjson.loads(env)["code"] == 203
            os._exit(0 if ok and stale else 1)
        mine = all(text(f"p{i}") == f"p{i}" for i in range(20))
        ev, _ = dispatch.stream_next_json(h)
        _, status = os.waitpid(pid, 0)
        print(orjson.dumps({"parent": mine, "stream": ev is not None,
                            "child": os.waitstatus_to_exitcode(status)}).decode())
        """,
        server,
    )
    assert out == {"parent": True, "stream": True, "child": 0}


def test_after_a_fork_during_an_import_the_child_imports_that_module_whole(tmp_path: Path) -> None:
    """A thread half-way through an import when the process forks: that module's import lock
    and its half-run module are the parent's, and that thread does not exist in the child
    (aimux_ops.guest resets both after every fork). Without the reset the child's import of the
    same module waits forever (killed by the timeout here) or gets the half module."""
    (tmp_path / "slow_to_import.py").write_text(
        textwrap.dedent("""
        import os
        if os.getpid() == int(os.environ["PARENT"]):  # the parent's import: held half-way
            os.write(int(os.environ["HALFWAY"]), b"x")
            os.read(int(os.environ["GO_ON"]), 1)
        WHOLE = True
        """)
    )
    script = textwrap.dedent(f"""
        import os, sys, threading
        sys.path[:0] = [{str(ROOT)!r}, {str(tmp_path)!r}]
        import aimux_ops.guest  # noqa: F401 - its after-fork reset
        halfway_r, halfway_w = os.pipe()
        go_on_r, go_on_w = os.pipe()
        os.environ.update(PARENT=str(os.getpid()), HALFWAY=str(halfway_w), GO_ON=str(go_on_r))
        importer = threading.Thread(target=lambda: __import__("slow_to_import"))
        importer.start()
        os.read(halfway_r, 1)  # the thread holds the module's import lock, the module half run
        pid = os.fork()
        if pid == 0:
            import slow_to_import
            os._exit(0 if slow_to_import.WHOLE else 1)
        os.write(go_on_w, b"x")
        importer.join()
        import signal, time
        for _ in range(3000):  # 30 s at most: a child that hangs is killed, a failure
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print(os.waitstatus_to_exitcode(status))
                break
            time.sleep(0.01)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            print("hung")
        """)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    assert proc.stdout.split() == [b"0"], proc.stdout


def test_a_child_forked_while_a_model_builds_validates_its_own() -> None:
    """A deferred op model is built on its first use under pydantic's rebuild lock (a private
    module RLock pydantic does not reset at a fork): a child forked while a parent thread held it
    validates anyway (``ops/_model.py`` gives the child a fresh one). Before the reset the child
    waited forever (``test_guest fork-anytime``: one child in about eight runs)."""
    script = textwrap.dedent(
        """
        import os, signal, sys, threading, time
        import pydantic.main
        from aimux_ops.ops import _model

        assert isinstance(pydantic.main._rebuild_lock, type(threading.RLock())), "pydantic moved it"
        held, release = threading.Event(), threading.Event()

        def builder():  # a thread building a deferred model, as the core's threads do
            with pydantic.main._rebuild_lock:
                held.set()
                release.wait()

        threading.Thread(target=builder, daemon=True).start()
        held.wait()
        pid = os.fork()
        if pid == 0:
            signal.alarm(20)
            class M(_model.Model):
                some_field: int
            os._exit(0 if M.model_validate({"someField": 1}).some_field == 1 else 3)
        release.set()
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0", (done.stdout, done.stderr)


#: a thread validating a model whose field validator waits inside pydantic (a pydantic frame,
#: ``model_validate``, below it) until the main thread's fork waits for it (``_before_fork`` on
#: the main thread's stack) or has forked without waiting
_INSIDE_PYDANTIC = """
    import os, signal, sys, threading, time
    from pydantic import BaseModel, field_validator
    from aimux_ops import guest

    main = threading.main_thread().ident
    entered, forked, leave = threading.Event(), threading.Event(), threading.Event()
    inside = [False]

    def fork_waits():
        frame = sys._current_frames().get(main)
        while frame is not None:
            if frame.f_code is guest._before_fork.__code__:
                return True
            frame = frame.f_back
        return False

    class M(BaseModel):
        x: int

        @field_validator("x")
        @classmethod
        def held(cls, v):
            inside[0] = True
            entered.set()
            while not (forked.is_set() or leave.is_set() or fork_waits()):
                time.sleep(0.001)  # polls what it waits for: the fork waiting, or done
            inside[0] = False
            return v

    validator = threading.Thread(target=lambda: M.model_validate({"x": 1}))
    validator.start()
    entered.wait()
    """


def _run(script: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_a_fork_waits_until_no_other_thread_is_inside_pydantic() -> None:
    """A thread inside pydantic at a fork may hold what the child can never free (pydantic_core's
    Rust one-time cells, PyO3's ``PyOnceLock``, give up the interpreter lock inside their first
    initialisation: a child forked then waited forever in ``import pydantic_core`` or in a
    ``SchemaSerializer`` of its own, ``test_guest fork-anytime`` one child in about ten runs), so
    the fork waits until that thread has left pydantic: the child never copies it inside.
    Before the wait the child copied the thread inside its validator (status 1)."""
    out = _run(
        _INSIDE_PYDANTIC
        + """
    pid = os.fork()
    if pid == 0:
        os._exit(1 if inside[0] else 0)
    forked.set()
    validator.join()
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status))
    """
    )
    assert out == "0"


def test_a_fork_waits_for_a_thread_inside_pydantic_only_so_long() -> None:
    """A thread that stays inside pydantic, waiting on the forking thread, does not deadlock the
    fork: after ``_FORK_WAIT_S`` (shortened here) the fork goes on as before, and the child
    works (it validates a model of its own)."""
    out = _run(
        _INSIDE_PYDANTIC.replace("or fork_waits()", "")
        + """
    guest._FORK_WAIT_S = 0.2
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)
        class N(BaseModel):
            y: int
        os._exit(0 if N.model_validate({"y": 2}).y == 2 and inside[0] else 1)
    leave.set()
    validator.join()
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status))
    """
    )
    assert out == "0"


def test_a_child_forked_while_another_thread_registers_an_error_class_has_the_whole_catalogue() -> (
    None
):
    """Another thread stopped (a fork can take the interpreter lock between any two bytecodes)
    after an error class was registered by name and before it had its place in the catalogue's
    order: the child imports the half-run module again, and the catalogue is whole. Before, the
    child's first failure was a 208 (``ValueError: ... is not in list``, ``test_guest
    fork-anytime``)."""
    out = _run(
        """
        import json, os, sys, threading
        from pathlib import Path
        from aimux_ops import guest  # noqa: F401 - its after-fork reset

        base = Path(guest.__file__).parent / "errors" / "_base.py"
        lines = base.read_text().splitlines()
        start = next(i for i, text in enumerate(lines) if "def __init_subclass__(" in text)
        line_of_append = 1 + next(i for i in range(start, len(lines))
                                  if lines[i].strip() == "_ORDER.append(cls)")
        stopped, go_on = threading.Event(), threading.Event()
        parent = os.getpid()

        def tracer(frame, event, arg):  # in the catalogue's registration of UnknownOpError
            code = frame.f_code
            if code.co_name != "__init_subclass__" or code.co_filename != str(base):
                return None
            if frame.f_locals["cls"].__name__ != "UnknownOpError" or os.getpid() != parent:
                return None

            def line(frame, event, arg):  # stopped just before its place in the order
                if frame.f_lineno == line_of_append and not stopped.is_set():
                    stopped.set()
                    go_on.wait()
                return line

            return line

        def importer():
            sys.settrace(tracer)
            import aimux_ops.errors  # noqa: F401 - the catalogue

        thread = threading.Thread(target=importer)
        thread.start()
        stopped.wait()
        pid = os.fork()
        if pid == 0:
            import signal
            signal.alarm(20)
            from aimux_ops.boundary import dispatch
            from aimux_ops import errors
            result, envelope = dispatch.call_json("no.such.op", b"{}")
            names = [(c.kind, c.error_name) for c in errors.catalogue()]
            ok = (json.loads(envelope)["error"]["name"] == "UnknownOpError"
                  and len(names) == len(set(names))
                  and errors.UnknownOpError in errors.catalogue())
            os._exit(0 if ok else 1)
        go_on.set()
        thread.join()
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """
    )
    assert out == "0"


def test_a_fork_waits_for_a_thread_calling_pydantic_core_directly() -> None:
    """The core's own calls of pydantic_core's methods (no pydantic frame above them: an error
    payload's serializer, a ValidationError's ``errors()``) are marked (``fork_waits_inside``):
    a fork waits for a thread inside one as for one inside pydantic (the child of a fork during
    the payload's first dump waited forever in a ``SchemaValidator`` of its own, ``test_guest
    fork-anytime``). Before the mark the child copied the thread inside (status 1)."""
    out = _run(
        """
        import os, sys, threading, time
        from aimux_ops import guest
        from aimux_ops.boundary import dispatch
        from aimux_ops.errors import _base

        assert {_base._dump_payload.__code__, dispatch._validation_errors.__code__} <= (
            guest._FORK_WAITS_IN), "the core's direct calls of pydantic_core are not marked"
        main = threading.main_thread().ident
        entered, forked = threading.Event(), threading.Event()
        inside = [False]

        def fork_waits():
            frame = sys._current_frames().get(main)
            while frame is not None:
                if frame.f_code is guest._before_fork.__code__:
                    return True
                frame = frame.f_back
            return False

        @guest.fork_waits_inside
        def direct():  # as _dump_payload: pydantic_core's Rust code, no frame of its own
            inside[0] = True
            entered.set()
            while not (forked.is_set() or fork_waits()):
                time.sleep(0.001)  # polls what it waits for: the fork waiting, or done
            inside[0] = False

        caller = threading.Thread(target=direct)
        caller.start()
        entered.wait()
        pid = os.fork()
        if pid == 0:
            os._exit(1 if inside[0] else 0)
        forked.set()
        caller.join()
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """
    )
    assert out == "0"
