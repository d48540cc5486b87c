"""Deadlines of reads on a caller's thread (``aimux_ops.http.deadlines``): one watchdog thread per
process fires them in deadline order, never a cancelled one, an earlier one first even while it
waits for a later one, and goes on after a callback that raises. Against a real server that drips
a byte at a time (so only the watchdog can end a read: every socket read succeeds before its own
timeout), 50 calls and 50 streams held at once with ``timeoutMs`` each end in the usual timeout
envelope while the process has at most two threads more, not one per response; a forked child's
first deadline starts its own watchdog.

No assertion times anything: waits are bounded only to end a broken run.
"""

from __future__ import annotations

import os
import select
import selectors
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest

import aimux_ops
from aimux_ops.boundary import dispatch
from aimux_ops.http import deadlines, transport

pytestmark = pytest.mark.timeout(120)

BOUND_S = 60.0  # only ends a broken run
N = 50


# -- the watchdog ----------------------------------------------------------------------------------


def _recorder() -> tuple[list[str], Callable[[str], Callable[[], None]], threading.Condition]:
    fired: list[str] = []
    cond = threading.Condition()

    def make(name: str) -> Callable[[], None]:
        def callback() -> None:
            with cond:
                fired.append(name)
                cond.notify_all()

        return callback

    return fired, make, cond


def _wait(cond: threading.Condition, ready: Callable[[], bool]) -> None:
    with cond:
        assert cond.wait_for(ready, BOUND_S), "the watchdog never ran the callbacks"


def test_callbacks_fire_in_deadline_order() -> None:
    wd = deadlines._Watchdog()
    fired, make, cond = _recorder()
    for name, delay in [("c", 0.3), ("a", 0.1), ("d", 0.4), ("b", 0.2), ("now", 0.0)]:
        wd.add(delay, make(name))
    _wait(cond, lambda: len(fired) == 5)
    assert fired == ["now", "a", "b", "c", "d"]


def test_a_cancelled_entry_never_fires() -> None:
    wd = deadlines._Watchdog()
    fired, make, cond = _recorder()
    first = wd.add(0.05, make("cancelled-first"))
    wd.add(0.1, make("kept"))
    last = wd.add(0.15, make("cancelled-last"))
    wd.add(0.2, make("end"))
    first.cancel()
    last.cancel()
    first.cancel()  # twice is harmless
    _wait(cond, lambda: "end" in fired)
    assert fired == ["kept", "end"]
    assert first.callback is None  # the cancel dropped what the callback held


def test_an_earlier_deadline_added_while_the_watchdog_waits_fires_first() -> None:
    wd = deadlines._Watchdog()
    fired, make, cond = _recorder()
    wd.add(3600, make("late"))
    # the thread now waits (on its condition) for the deadline an hour away
    for _ in range(int(BOUND_S * 100)):
        if wd._cond._waiters:  # type: ignore[attr-defined]
            break
        threading.Event().wait(0.01)
    else:
        raise AssertionError("the watchdog never waited")
    wd.add(0.01, make("early"))
    _wait(cond, lambda: "early" in fired)  # without the wake-up: an hour
    assert fired == ["early"]


def test_a_callback_that_raises_does_not_stop_the_others() -> None:
    wd = deadlines._Watchdog()
    fired, make, cond = _recorder()

    def boom() -> None:
        raise RuntimeError("boom")

    def exits() -> None:
        raise SystemExit(3)

    wd.add(0.01, boom)
    wd.add(0.02, exits)
    wd.add(0.03, make("after"))
    _wait(cond, lambda: "after" in fired)
    wd.add(0.0, make("later"))  # the same thread still serves new deadlines
    _wait(cond, lambda: "later" in fired)
    assert fired == ["after", "later"]
    assert wd.thread is not None and wd.thread.is_alive()
    assert wd.thread.name == deadlines.THREAD_NAME and wd.thread.daemon


def test_cancelled_entries_do_not_pile_up() -> None:
    wd = deadlines._Watchdog()
    for _ in range(1000):
        wd.add(3600, lambda: None).cancel()
    # the heap was rebuilt without them as they became the majority
    assert len(wd._heap) <= 2 * deadlines._COMPACT_MIN + 2


# -- a server that drips -------------------------------------------------------------------------


class DripServer:
    """OpenAI-compatible on 127.0.0.1, one thread for every connection: a call gets a 200 with a
    JSON body's headers (a megabyte promised), a stream a 200 with one text delta ("Hel"); then
    each gets one more byte (a space, an SSE comment) every 20 ms, forever. Every socket read of
    the client succeeds long before its own timeout, so only a watchdog ends the read. Counts the
    requests answered and the connections the client closed (``gone``)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.sock.setblocking(False)
        self.port: int = self.sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.cond = threading.Condition()
        self.answered = 0
        self.gone = 0
        self._stop = False
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.sock, selectors.EVENT_READ, None)
        self._buf: dict[socket.socket, bytes] = {}
        self._drip: dict[socket.socket, bytes] = {}  # connection → its drip bytes
        self.thread = threading.Thread(target=self._serve, name="drip-server", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop:
            for key, _ in self._sel.select(0.02):
                if key.fileobj is self.sock:
                    try:
                        conn, _addr = self.sock.accept()
                    except OSError:
                        continue
                    conn.setblocking(False)
                    self._buf[conn] = b""
                    self._sel.register(conn, selectors.EVENT_READ, None)
                else:
                    self._readable(key.fileobj)  # type: ignore[arg-type]
            for conn, drip in list(self._drip.items()):
                try:
                    conn.send(drip)
                except BlockingIOError:
                    pass
                except OSError:
                    self._drop(conn)

    def _readable(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop(conn)
            return
        if conn in self._drip:
            return
        buf = self._buf[conn] = self._buf[conn] + data
        head, sep, body = buf.partition(b"\r\n\r\n")
        if not sep:
            return
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        if len(body) < length:
            return
        if orjson.loads(body[:length]).get("stream"):
            delta = orjson.dumps(
                {
                    "id": "chatcmpl-drip",
                    "object": "chat.completion.chunk",
                    "created": 1_700_000_000,
                    "model": "gpt-4o-mini",
                    "choices": [
                        {"index": 0, "delta": {"role": "assistant", "content": "Hel"}},
                    ],
                }
            )
            event = b"data: " + delta + b"\n\n"
            out = (
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n" % (len(event), event)
            )
            drip = b"2\r\n:\n\r\n"  # a chunk holding an SSE comment line
        else:
            out = (
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000000\r\n\r\n{"
            )
            drip = b" "
        conn.setblocking(True)
        conn.sendall(out)
        conn.setblocking(False)
        self._drip[conn] = drip
        with self.cond:
            self.answered += 1
            self.cond.notify_all()

    def _drop(self, conn: socket.socket) -> None:
        answered = self._drip.pop(conn, None) is not None
        self._buf.pop(conn, None)
        try:
            self._sel.unregister(conn)
        except (KeyError, ValueError):
            pass
        conn.close()
        if answered:
            with self.cond:
                self.gone += 1
                self.cond.notify_all()

    def wait_gone(self, n: int) -> int:
        """Return once ``n`` answered connections were closed by the client (bounded)."""
        with self.cond:
            self.cond.wait_for(lambda: self.gone >= n, BOUND_S)
            return self.gone

    def close(self) -> None:
        self._stop = True
        self.thread.join(5)
        for conn in list(self._buf):
            self._drop(conn)
        self._sel.close()
        self.sock.close()


@pytest.fixture
def drip() -> Iterator[DripServer]:
    server = DripServer()
    try:
        yield server
    finally:
        server.close()


def _params(server: DripServer, timeout_ms: int) -> dict[str, Any]:
    return {
        "model": {
            "provider": "openai",
            "modelId": "gpt-4o-mini",
            "baseURL": server.base_url,
            "apiKey": "sk-deadlines",
        },
        "prompt": "hi",
        "maxRetries": 0,
        "timeoutMs": timeout_ms,
    }


def assert_timeout(env: dict[str, Any] | None, timeout_ms: int) -> None:
    """The envelope every deadline gives (as tests/test_hardening_faults.py asserts it)."""
    assert env is not None, "the call came back without an error"
    assert (env["kind"], env["code"], env["error"]["name"]) == ("aimux", 12, "AI_TimeoutError"), env
    assert env["error"]["timeoutMs"] == timeout_ms
    assert env["message"] == f"The call did not complete within {timeout_ms} ms."


def _os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


#: the thread counts each behaviour test saw (printed with ``-s``; the report's numbers)
SEEN: dict[str, tuple[int, int]] = {}


def test_many_streams_held_at_once_share_one_watchdog(drip: DripServer) -> None:
    timeout_ms = 4000
    base = (_os_threads(), threading.active_count())
    # one thread holds N open streams: each has read its first delta, and its deadline waits
    streams = [aimux_ops.stream("stream_text", _params(drip, timeout_ms)) for _ in range(N)]
    held = (_os_threads(), threading.active_count())
    SEEN["streams"] = (held[0] - base[0], held[1] - base[1])
    print(f"\n{N} streams held: OS threads {base[0]} -> {held[0]}, Python {base[1]} -> {held[1]}")
    for it in streams:
        events = list(it)
        assert [e["type"] for e in events] == ["text-delta", "error"], events
        assert events[0]["text"] == "Hel"
        assert_timeout(events[1]["error"], timeout_ms)
    assert drip.wait_gone(N) == N  # every deadline shut its socket down
    assert held[0] - base[0] <= 2, f"{held[0] - base[0]} OS threads more for {N} deadlines"
    assert held[1] - base[1] <= 2, f"{held[1] - base[1]} Python threads more for {N} deadlines"


def test_many_calls_blocked_at_once_share_one_watchdog(
    drip: DripServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    timeout_ms = 3000
    # observe (not replace) each response's construction: its deadline is registered then
    made = threading.Condition()
    count = [0]
    init = transport.HttpResponse.__init__

    def counting_init(self: transport.HttpResponse, *args: Any) -> None:
        init(self, *args)
        with made:
            count[0] += 1
            made.notify_all()

    monkeypatch.setattr(transport.HttpResponse, "__init__", counting_init)
    base = (_os_threads(), threading.active_count())
    results: list[tuple[bytes | None, bytes | None]] = []
    lock = threading.Lock()

    def call() -> None:
        out = dispatch.call_json("generate_text", orjson.dumps(_params(drip, timeout_ms)))
        with lock:
            results.append(out)

    workers = [threading.Thread(target=call) for _ in range(N)]
    for w in workers:
        w.start()
    with made:
        assert made.wait_for(lambda: count[0] == N, BOUND_S), f"{count[0]} of {N} responses"
    held = (_os_threads(), threading.active_count())
    for w in workers:
        w.join(BOUND_S)
    # the N callers themselves are N threads; the deadlines may add the watchdog
    SEEN["calls"] = (held[0] - base[0] - N, held[1] - base[1] - N)
    print(f"\n{N} calls blocked: OS threads {base[0]} -> {held[0]}, Python {base[1]} -> {held[1]}")
    assert len(results) == N
    for result, env in results:
        assert result is None
        assert_timeout(orjson.loads(env or b"null"), timeout_ms)
    assert drip.wait_gone(N) == N
    extra = held[0] - base[0] - N
    assert extra <= 2, f"{extra} OS threads more than the {N} callers"
    assert held[1] - base[1] - N <= 2


def test_a_forked_child_starts_its_own_watchdog(drip: DripServer) -> None:
    # the parent's watchdog runs, waiting on a pending deadline, when the process forks
    pending = deadlines.after(3600, lambda: None)
    assert deadlines.THREAD_NAME in [t.name for t in threading.enumerate()]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one call whose read only its deadline can end
        try:
            os.close(r)
            _, env = dispatch.call_json("generate_text", orjson.dumps(_params(drip, 500)))
            os.write(w, env or b"null")
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    try:
        while True:
            ready, _, _ = select.select([r], [], [], BOUND_S)
            if not ready:
                break
            chunk = os.read(r, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(r)
        pending.cancel()
        if not data:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert data, "the child's call never ended: its deadline never fired"
    assert_timeout(orjson.loads(data), 500)
    assert drip.wait_gone(1) == 1
