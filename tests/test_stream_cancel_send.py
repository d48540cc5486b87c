"""A stream cancelled before its request is sent never sends it; one cancelled while its request
waits for the response headers has its connection shut down at once (DESIGN.md "A cancel before
the send"). Through the real libaimux (ctypes) and the fault server, on every path a C-ABI stream
takes: a reader thread (``aimux_stream_start``, read ahead) and the caller's thread
(``aimux_stream``, queued).

"Before the send" is made exact by ``transport.before_guarded_send``: the op calls it on its
sending thread after every check of its own, right before the request goes to the client; the test
cancels (or frees) the stream there, so the cancel happens-before the send and only the
send's attach of its socket to the guard (``SendGuard.attach``) can keep the request from being written.
The server's count is read once the op is over: a client that sent the request waited for its
response headers, which the server sends after counting it, so a count of 0 then is final."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import test_c_stream_queue
from fault_server import FaultServer, serve
from helpers import provider_params as params
from test_c_stream_queue import CError, Queue, wait_until
from test_c_stream_threads import poll_until

from aimux_ops.boundary import dispatch
from aimux_ops.http import transport
from aimux_ops.streams import registry as stream_registry

pytestmark = pytest.mark.timeout(120)

lib = test_c_stream_queue.lib  # the library through ctypes, one per process (a shared fixture)
_empty_ready_list = test_c_stream_queue._empty_ready_list  # (autouse there: here too)


class Gate:
    """``transport.before_guarded_send`` for the requests of one scenario: each waits there
    until ``go`` (the bound only ends a broken run)."""

    def __init__(self, scenario: str) -> None:
        self.scenario = scenario
        self.reached = threading.Event()
        self.go = threading.Event()

    def __call__(self, request: transport.HTTPRequest) -> None:
        if request.headers.get("x-scenario") != self.scenario:
            return
        assert request.guard is not None and not request.guard.cancelled
        self.reached.set()
        self.go.wait(60)


@pytest.fixture()
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    gates: list[Gate] = []

    def make(scenario: str) -> Gate:
        g = Gate(scenario)
        gates.append(g)
        monkeypatch.setattr(transport, "before_guarded_send", g)
        return g

    yield make
    for g in gates:
        g.go.set()  # (a failed test leaves no op waiting)


@pytest.fixture()
def cold_server() -> Iterator[FaultServer]:
    """A server of this test alone: no connection to it is pooled yet (the request would be
    sent on a new connection)."""
    with serve() as srv:
        yield srv


def _op_over(stream: Any) -> None:
    """Until the stream's op is over (its reader thread ended)."""
    assert stream.kind == "read ahead"
    assert stream._pump_thread is not None
    stream._pump_thread.join(60)
    assert not stream._pump_thread.is_alive()
    wait_until(lambda: stream_registry._threads == 0)


def _warm(lib: Queue, server: FaultServer) -> None:
    """Read one stream of ``path`` to its end, so the pool that path sends through keeps an idle
    connection to ``server``: the next request goes out on it (no connect)."""
    h = lib.start(b"stream_text", orjson.dumps(params(server, "mode=ok", scenario="warm")))
    stream = stream_registry._streams[h]
    ended = False
    while not ended:
        _batch, ended = lib.batch(h, 100, blocking=True)
    _op_over(stream)
    lib.lib.aimux_stream_free(h)
    pool = transport.default_transport().pools(stream=True)[("http", "127.0.0.1", server.port)]
    wait_until(lambda: bool(pool.idle()))


@pytest.mark.parametrize("end", ["cancel", "free"])
@pytest.mark.parametrize("pool", ["new", "pooled"])
def test_an_event_driven_stream_cancelled_before_its_send_sends_nothing(
    lib: Queue,
    server: FaultServer,
    cold_server: FaultServer,
    gate: Any,
    pool: str,
    end: str,
) -> None:
    """``aimux_stream_start``, then ``aimux_stream_cancel`` / ``aimux_stream_free`` before the
    request is written: the server sees no request (on a new connection: none is opened; on a
    pooled one: nothing is written on it), and a cancelled stream's reads end as a cancel's do."""
    target = server if pool == "pooled" else cold_server
    if pool == "pooled":
        _warm(lib, server)
    scenario = f"pre-send-{pool}-{end}"
    g = gate(scenario)
    h = lib.start(b"stream_text", orjson.dumps(params(target, "mode=ok", scenario=scenario)))
    stream = stream_registry._streams[h]
    assert stream.kind == "read ahead"
    assert g.reached.wait(60)  # the op is about to send: past each check of its own
    dispatch.ready_handles(1 << 30)
    if end == "cancel":
        lib.lib.aimux_stream_cancel(h)
    else:
        lib.lib.aimux_stream_free(h)
    g.go.set()
    _op_over(stream)
    assert target.count(scenario) == 0
    assert target.times("request", scenario) == []
    if end == "cancel":  # what a cancel's reader gets: the end, no failure
        assert poll_until(lib, h, lambda e: e[1] == 1)[-1] == [h, 1, None, None]
        assert lib.batch(h, 10, blocking=True) == (None, True)
        assert lib.batch(h, 10, blocking=False) == (None, True)
        lib.lib.aimux_stream_free(h)
    with pytest.raises(CError) as info:
        lib.batch(h, 10, blocking=False)
    assert info.value.code == 203


def test_a_blocking_open_cancelled_before_its_send_sends_nothing(
    lib: Queue, server: FaultServer, gate: Any
) -> None:
    """``aimux_stream`` reads on its caller's thread and returns the handle only after the open,
    so a host cannot cancel it before the send; the core can (its exit hook, a guessed handle).
    A cancel before the send: nothing is sent, the open returns a handle whose reads end."""
    scenario = "pre-send-here"
    g = gate(scenario)
    before = set(stream_registry._streams)
    opened: list[int] = []
    p = orjson.dumps(params(server, "mode=ok", scenario=scenario))
    opener = threading.Thread(target=lambda: opened.append(lib.open_stream(b"stream_text", p)))
    opener.start()
    assert g.reached.wait(60)
    (h,) = set(stream_registry._streams) - before
    stream = stream_registry._streams[h]
    assert stream.kind == "queued"
    lib.lib.aimux_stream_cancel(h)
    g.go.set()
    opener.join(60)
    assert opened == [h]
    assert server.count(scenario) == 0
    assert lib.next_event(h) is None
    lib.lib.aimux_stream_free(h)


def test_a_cancel_while_the_headers_are_held_closes_the_connection_at_once(
    lib: Queue, server: FaultServer
) -> None:
    """The server holds the response headers (and never releases them): a cancel shuts the
    request's connection down, the server sees the client go, the op ends without the headers
    and is not retried; the host gets the end. A client that waited for the headers would end
    only when the server gave up holding (``hold_ms``, 60 s): then ``released``, and no ``gone``
    within the wait's bound."""
    scenario = "held-cancel"
    p = orjson.dumps(params(server, f"mode=ok;hold={scenario}", scenario=scenario))
    h = lib.start(b"stream_text", p)
    stream = stream_registry._streams[h]
    assert stream.kind == "read ahead"
    try:
        assert server.wait_for("held", scenario, 1) == 1  # the open waits for the headers
        dispatch.ready_handles(1 << 30)
        lib.lib.aimux_stream_cancel(h)
        assert server.wait_for("gone", scenario, 1) == 1  # the client closed the connection
        _op_over(stream)  # without the headers
        assert server.times("released", scenario) == []
        assert server.count(scenario) == 1  # the cancel's error is not retried
        assert poll_until(lib, h, lambda e: e[1] == 1)[-1] == [h, 1, None, None]
        assert lib.batch(h, 10, blocking=True) == (None, True)
    finally:
        server.release(scenario)
        lib.lib.aimux_stream_free(h)


class _RecordingGuard(transport.SendGuard):
    """A guard that keeps every socket the send attached to it."""

    def __init__(self) -> None:
        super().__init__()
        self.attached: list[Any] = []

    def attach(self, sock: Any) -> None:
        self.attached.append(sock)
        super().attach(sock)


def test_the_stream_clients_connections_are_guarded(server: FaultServer) -> None:
    """A stream's request goes out on a socket attached to its guard, a new connection's and a
    pooled one's alike, which a cancel can stop before its first byte (were it not, a cancel
    would no longer stop a request whose send had begun); the connection is one its pool
    knows (a forked child closes it)."""
    for t in (transport.HttpTransport(), transport.default_transport()):
        for _ in range(2):  # a new connection, then the pooled one
            guard = _RecordingGuard()
            resp = t.send(_guarded_request(server, guard), transport.Deadline(60_000))
            try:
                conn = resp._conn
                assert conn is not None and conn.sock in guard.attached
                pool = t.pools(stream=True)[("http", "127.0.0.1", server.port)]
                assert conn in pool.connections()
            finally:
                resp.read()


def _guarded_request(server: FaultServer, guard: transport.SendGuard) -> transport.HTTPRequest:
    return transport.HTTPRequest(
        "POST",
        server.base_url + "/chat/completions",
        {"content-type": "application/json", "x-fault": "mode=ok"},
        orjson.dumps({"model": "gpt-4o-mini", "stream": True, "messages": []}),
        stream=True,
        guard=guard,
    )


# -- TLS: the shutdown keeps the TLS layer; a cancel during a handshake wakes it -----------------


def test_a_cancel_shuts_a_tls_socket_down_without_dropping_its_tls_layer() -> None:
    """``ssl.SSLSocket.shutdown`` drops the TLS layer (``_sslobj``) before it shuts the socket
    down, and a write racing it on the sending thread then went out as plain text (a request's
    headers, its key among them: a reviewer saw 5 such requests in 1,500 raced connections).
    The cancel's shutdown is socket.socket's own: the TLS layer stays, a racing write fails."""
    import socket
    import ssl

    a, b = socket.socketpair()
    tls = ssl.create_default_context().wrap_socket(
        a, server_hostname="localhost", do_handshake_on_connect=False
    )
    try:
        assert tls._sslobj is not None  # type: ignore[attr-defined]
        transport._shutdown_sock(tls)
        assert tls._sslobj is not None  # type: ignore[attr-defined]
        assert b.recv(16) == b""  # shut down all the same: the peer sees the end
        with pytest.raises((ssl.SSLError, OSError)):
            tls.send(b"Authorization: Bearer sk-canary")  # never as plain text
        assert b.recv(64) == b""
    finally:
        tls.close()
        b.close()


def test_a_cancel_during_a_tls_handshake_wakes_the_reader_thread() -> None:
    """On a reader thread (the sync client) ``ssl.wrap_socket`` takes the connection's
    descriptor away before its handshake: a cancel then shut down nothing, and the handshake
    waited for the server or the deadline. The server here answers no ClientHello; once it has
    one, the cancel must end the send as a cancel (not the deadline's 30 s later) and close the
    connection."""
    import socket

    from aimux_ops.http import TimeoutException

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    hello, gone = threading.Event(), threading.Event()

    def serve_one() -> None:
        conn, _ = srv.accept()
        with conn:
            if conn.recv(4096):  # the ClientHello: the handshake is under way
                hello.set()
            while conn.recv(4096):
                pass
            gone.set()  # the client closed the connection

    threading.Thread(target=serve_one, daemon=True).start()
    guard = transport.SendGuard()
    request = transport.HTTPRequest(
        "POST",
        f"https://127.0.0.1:{srv.getsockname()[1]}/v1/chat/completions",
        {"content-type": "application/json"},
        b"{}",
        stream=True,
        guard=guard,
    )
    outcome: list[BaseException] = []

    def send() -> None:
        try:
            transport.default_transport().send(request, transport.Deadline(30_000))
        except BaseException as exc:  # what the send ended with
            outcome.append(exc)

    sender = threading.Thread(target=send)
    sender.start()
    try:
        assert hello.wait(60), "the client sent no ClientHello"
        guard.cancel()
        sender.join(60)  # a bound for a broken run only: the deadline would end it at 30 s
        assert not sender.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], transport.AbortedError), outcome
        # ended by the cancel's shutdown, not by the deadline (a cancelled send that ends at its
        # deadline is reported as a cancel too: its cause says which it was)
        causes = []
        cause = outcome[0].__cause__
        while cause is not None:
            causes.append(cause)
            cause = cause.__cause__ or cause.__context__
        assert not [c for c in causes if isinstance(c, (TimeoutException, TimeoutError))], [
            repr(c) for c in causes
        ]
        assert gone.wait(60)
    finally:
        guard.cancel()
        sender.join(60)
        srv.close()


def test_a_late_cancel_never_reaches_the_next_request_on_its_connection(
    server: FaultServer,
) -> None:
    """Once a stream's headers are in, its guard lets the connection go (``detach``): read to
    its end, the connection goes back to the pool and carries the next stream's request. A late
    cancel of the first stream must not shut that request's connection down."""
    first, second = transport.SendGuard(), transport.SendGuard()
    t = transport.default_transport()

    def request(guard: transport.SendGuard, fault: str, scenario: str) -> transport.HTTPRequest:
        p = params(server, fault, scenario=scenario)
        return transport.HTTPRequest(
            "POST",
            server.base_url + "/chat/completions",
            {"content-type": "application/json", **p["model"]["headers"]},
            orjson.dumps({"model": "gpt-4o-mini", "stream": True, "messages": []}),
            stream=True,
            guard=guard,
        )

    resp = t.send(request(first, "mode=ok", "late-cancel-first"), transport.Deadline(60_000))
    resp.read()  # to its end: the connection is back in the pool
    outcome: list[Any] = []

    def send_second() -> None:
        try:
            r = t.send(
                request(second, "mode=ok;hold=late-cancel-second", "late-cancel-second"),
                transport.Deadline(60_000),
            )
            outcome.append(r.read())
        except BaseException as exc:  # what the send ended with
            outcome.append(exc)

    sender = threading.Thread(target=send_second)
    sender.start()
    try:
        assert server.wait_for("held", "late-cancel-second", 1) == 1  # waits for its headers
        first.cancel()  # late: the first stream's request is long over
        server.release("late-cancel-second")
        sender.join(60)  # a bound for a broken run only
        assert not sender.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], bytes), outcome
        assert server.times("gone", "late-cancel-second") == []
    finally:
        server.release("late-cancel-second")
        sender.join(60)
