"""The core's own HTTP/1.1 client against hostile and unusual servers: real sockets on 127.0.0.1
(``RawServer`` answers each request with scripted bytes), through ``transport.HttpTransport``, the
providers' seam. Each case asserts what the caller gets (the response, or the mapped error with the
client's exception as its cause) and, where it matters, what the server saw (connections opened)."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aimux_ops.errors import APICallError, InvalidArgumentError
from aimux_ops.errors import TimeoutError as AITimeoutError
from aimux_ops.http import (
    ConnectError,
    ProxyError,
    ReadTimeout,
    RemoteProtocolError,
    connection,
    tls,
    transport,
)

#: a whole response: status line, headers, then the body
OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

Script = Callable[[socket.socket, bytes], bool]


def _read_request(conn: socket.socket, buf: bytes) -> tuple[bytes, bytes] | None:
    """One request (head and Content-Length body) from ``conn``: ``(request, rest)``, None at
    the connection's end."""
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        data = conn.recv(65536)
        if not data:
            return None
        rest += data
    return head + b"\r\n\r\n" + rest[:length], rest[length:]


class RawServer:
    """A server whose n-th request (over every connection) is answered by ``answers[n]`` (the
    last repeats): bytes sent at once, a list of bytes each sent apart, or a function of the
    socket and the request returning whether to keep the connection open. ``close_after``:
    close each connection after its answer. Records every request and counts connections;
    ``closed`` is set each time the server closed a connection."""

    def __init__(self, *answers: bytes | list[bytes] | Script, close_after: bool = False) -> None:
        self.answers = list(answers)
        self.close_after = close_after
        self.requests: list[bytes] = []
        self.connections = 0
        self.closed = threading.Semaphore(0)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._threads: list[threading.Thread] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        try:
            while True:
                got = _read_request(conn, buf)
                if got is None:
                    return
                request, buf = got
                self.requests.append(request)
                answer = self.answers[min(len(self.requests), len(self.answers)) - 1]
                if callable(answer):
                    keep = answer(conn, request)
                else:
                    for part in answer if isinstance(answer, list) else [answer]:
                        conn.sendall(part)
                    keep = not self.close_after
                if not keep:
                    return
        except OSError:
            return
        finally:
            conn.close()
            self.closed.release()

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def raw() -> Iterator[Callable[..., RawServer]]:
    servers: list[RawServer] = []

    def make(*answers: Any, **kw: Any) -> RawServer:
        server = RawServer(*answers, **kw)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


def post(url: str, t: transport.HttpTransport | None = None, timeout_ms: int = 10_000) -> Any:
    request = transport.HTTPRequest("POST", url, {"content-type": "application/json"}, b"{}")
    return (t or transport.HttpTransport()).send(request, transport.Deadline(timeout_ms))


def fetch(url: str, t: transport.HttpTransport | None = None, timeout_ms: int = 10_000) -> bytes:
    data: bytes = post(url, t, timeout_ms).read()
    return data


def cause_of(info: pytest.ExceptionInfo[BaseException]) -> BaseException | None:
    return info.value.__cause__


# -- the status line and the head ------------------------------------------------------------


@pytest.mark.parametrize(
    "status_line",
    [b"HTTP/1.1 abc OK", b"HTTP/2 200 OK", b"ICY 200 OK", b"HTTP/1.1 20 OK", b"garbage"],
)
def test_a_malformed_status_line_is_a_protocol_error(
    raw: Callable[..., RawServer], status_line: bytes
) -> None:
    server = raw(status_line + b"\r\nContent-Length: 0\r\n\r\n")
    with pytest.raises(APICallError) as info:
        post(server.url)
    assert info.value.is_retryable and info.value.status_code is None
    assert isinstance(cause_of(info), RemoteProtocolError)
    assert "status line" in str(info.value)


def test_an_oversized_head_is_refused_without_reading_on(raw: Callable[..., RawServer]) -> None:
    """A server that sends header lines forever: the client stops at ``MAX_HEAD`` bytes."""

    def endless(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        line = b"X-Filler: " + b"a" * 1000 + b"\r\n"
        try:
            for _ in range(1024):  # 1 MiB, far over the bound
                conn.sendall(line)
        except OSError:  # the client closed: it stopped reading
            pass
        return False

    server = raw(endless)
    with pytest.raises(APICallError) as info:
        post(server.url, timeout_ms=30_000)
    assert isinstance(cause_of(info), RemoteProtocolError)
    assert f"over {connection.MAX_HEAD} bytes" in str(info.value)


def test_too_many_header_fields_are_refused(raw: Callable[..., RawServer]) -> None:
    fields = b"".join(b"X-%d: v\r\n" % i for i in range(connection.MAX_HEADERS + 1))
    server = raw(b"HTTP/1.1 200 OK\r\n" + fields + b"Content-Length: 0\r\n\r\n")
    with pytest.raises(APICallError) as info:
        post(server.url)
    assert isinstance(cause_of(info), RemoteProtocolError)


@pytest.mark.parametrize("line", [b"No colon here", b": no name", b"Bad Name: v", b" folded"])
def test_a_malformed_header_line_is_refused(raw: Callable[..., RawServer], line: bytes) -> None:
    server = raw(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n" + line + b"\r\n\r\n")
    with pytest.raises(APICallError) as info:
        post(server.url)
    assert isinstance(cause_of(info), RemoteProtocolError)


def test_interim_1xx_answers_are_skipped(raw: Callable[..., RawServer]) -> None:
    server = raw(
        [
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n",
            OK,
        ]
    )
    resp = post(server.url)
    assert resp.status == 200 and "link" not in resp.headers
    assert resp.read() == b"{}"


def test_a_101_switch_is_refused(raw: Callable[..., RawServer]) -> None:
    server = raw(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
    with pytest.raises(APICallError) as info:
        post(server.url)
    assert isinstance(cause_of(info), RemoteProtocolError)


def test_repeated_headers_are_joined_and_names_lower_cased(
    raw: Callable[..., RawServer],
) -> None:
    server = raw(b"HTTP/1.1 200 OK\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 2\r\n\r\n{}")
    resp = post(server.url)
    assert resp.headers["x-a"] == "1, 2"
    assert resp.read() == b"{}"


# -- body framing -------------------------------------------------------------------------------


def test_both_content_length_and_transfer_encoding_are_refused(
    raw: Callable[..., RawServer],
) -> None:
    server = raw(
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\n{}\r\n0\r\n\r\n"
    )
    with pytest.raises(APICallError) as info:
        post(server.url)
    assert isinstance(cause_of(info), RemoteProtocolError)
    assert "both Content-Length and Transfer-Encoding" in str(info.value)


@pytest.mark.parametrize("te", [b"gzip, chunked", b"identity", b"chunked, chunked"])
def test_a_transfer_coding_other_than_chunked_is_refused(
    raw: Callable[..., RawServer], te: bytes
) -> None:
    server = raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: " + te + b"\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
    with pytest.raises(APICallError) as info:
        post(server.url)
    assert isinstance(cause_of(info), RemoteProtocolError)


@pytest.mark.parametrize("cl", [b"-1", b"2, 3", b"abc", b"0x2", b"1e3"])
def test_an_invalid_content_length_is_refused(raw: Callable[..., RawServer], cl: bytes) -> None:
    server = raw(b"HTTP/1.1 200 OK\r\nContent-Length: " + cl + b"\r\n\r\n{}")
    with pytest.raises(APICallError) as info:
        post(server.url)
    assert isinstance(cause_of(info), RemoteProtocolError)


def test_equal_repeated_content_lengths_are_one(raw: Callable[..., RawServer]) -> None:
    server = raw(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}")
    assert fetch(server.url) == b"{}"


@pytest.mark.parametrize(
    "size_line", [b"zz", b"-1", b"0x2", b"+2", b"12345678901234567", b"", b" "]
)
def test_a_bad_chunk_size_is_a_body_read_failure(
    raw: Callable[..., RawServer], size_line: bytes
) -> None:
    server = raw(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + size_line + b"\r\n{}\r\n"
    )
    resp = post(server.url)
    with pytest.raises(APICallError) as info:
        resp.read()
    assert info.value.status_code == 200 and info.value.is_retryable
    assert isinstance(cause_of(info), RemoteProtocolError)
    assert "The response body could not be read" in str(info.value)


def test_a_chunk_size_with_an_extension_is_read(raw: Callable[..., RawServer]) -> None:
    server = raw(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"1;name=value\r\n{\r\n1 \r\n}\r\n0\r\nX-Trailer: t\r\n\r\n"
    )
    assert fetch(server.url) == b"{}"


def test_an_endless_chunk_size_line_is_refused(raw: Callable[..., RawServer]) -> None:
    server = raw(
        [
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"1" + b";x" * (connection.MAX_CHUNK_LINE + 10),
        ]
    )
    resp = post(server.url)
    with pytest.raises(APICallError) as info:
        resp.read()
    assert isinstance(cause_of(info), RemoteProtocolError)
    assert "chunk size line is too long" in str(info.value)


def test_chunk_data_without_its_crlf_is_refused(raw: Callable[..., RawServer]) -> None:
    server = raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n")
    resp = post(server.url)
    with pytest.raises(APICallError) as info:
        resp.read()
    assert isinstance(cause_of(info), RemoteProtocolError)


@pytest.mark.parametrize(
    "answer",
    [
        b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"partial',
        b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{"partial',
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n",
    ],
    ids=["length", "mid-chunk", "no-last-chunk"],
)
def test_a_truncated_body_is_a_body_read_failure(
    raw: Callable[..., RawServer], answer: bytes
) -> None:
    server = raw(answer, close_after=True)
    resp = post(server.url)
    with pytest.raises(APICallError) as info:
        resp.read()
    assert info.value.status_code == 200 and info.value.is_retryable
    assert isinstance(cause_of(info), RemoteProtocolError)
    assert "closed the connection before the whole body was sent" in str(info.value)


def test_a_connection_closed_before_any_answer(raw: Callable[..., RawServer]) -> None:
    server = raw(b"", close_after=True)
    with pytest.raises(APICallError) as info:
        post(server.url)
    assert info.value.is_retryable and info.value.status_code is None
    assert isinstance(cause_of(info), RemoteProtocolError)


@pytest.mark.parametrize("status", [204, 304])
def test_204_and_304_have_no_body_whatever_their_headers_say(
    raw: Callable[..., RawServer], status: int
) -> None:
    """No body is read (a Content-Length there describes another representation), and the
    connection carries the next request."""
    head = b"HTTP/1.1 %d Nothing\r\nContent-Length: 5\r\n\r\n" % status
    server = raw(head, OK)
    t = transport.HttpTransport()
    resp = post(server.url, t, timeout_ms=5_000)
    assert resp.status == status and resp.read() == b""
    assert fetch(server.url, t) == b"{}"
    assert server.connections == 1


def test_an_http10_close_delimited_body_is_read_to_the_end_and_not_reused(
    raw: Callable[..., RawServer],
) -> None:
    server = raw(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{}", close_after=True)
    t = transport.HttpTransport()
    assert fetch(server.url, t) == b"{}"
    assert fetch(server.url, t) == b"{}"
    assert server.connections == 2


def test_an_http10_response_with_a_length_is_not_reused(raw: Callable[..., RawServer]) -> None:
    """An HTTP/1.0 server that said nothing of keep-alive serves one request per connection (it
    never reads this one again): the next request goes out on a new connection."""

    def once(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        while conn.recv(65536):  # nothing more is answered here, until the client closes
            pass
        return False

    server = raw(once)
    t = transport.HttpTransport()
    assert fetch(server.url, t, timeout_ms=5_000) == b"{}"
    assert fetch(server.url, t, timeout_ms=5_000) == b"{}"
    assert server.connections == 2


def test_connection_close_is_honoured(raw: Callable[..., RawServer]) -> None:
    server = raw(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}")
    t = transport.HttpTransport()
    assert fetch(server.url, t) == b"{}"
    assert fetch(server.url, t) == b"{}"
    assert server.connections == 2


def test_keep_alive_reuses_one_connection(raw: Callable[..., RawServer]) -> None:
    server = raw(OK)
    t = transport.HttpTransport()
    for _ in range(5):
        assert fetch(server.url, t) == b"{}"
    assert server.connections == 1
    pool = t.pools()[("http", "127.0.0.1", server.port)]
    assert pool.connections() == pool.idle() and len(pool.idle()) == 1


def test_an_idle_connection_past_its_keep_alive_is_not_used(
    raw: Callable[..., RawServer],
) -> None:
    server = raw(OK)
    t = transport.HttpTransport()
    assert fetch(server.url, t) == b"{}"
    pool = t.pools()[("http", "127.0.0.1", server.port)]
    pool.keepalive_s = -1.0  # every idle connection has expired
    assert fetch(server.url, t) == b"{}"
    assert server.connections == 2
    assert server.closed.acquire(timeout=30)  # the expired one was closed, not leaked
    assert len(pool.connections()) == 1


def test_an_idle_connection_the_server_closed_is_not_used(raw: Callable[..., RawServer]) -> None:
    """The server answers keep-alive, then closes the idle connection: the next request finds it
    stale at checkout and goes out on a new connection (never an error)."""
    server = raw(OK, close_after=True)  # no Connection: close said: the client keeps it
    t = transport.HttpTransport()
    assert fetch(server.url, t) == b"{}"
    assert server.closed.acquire(timeout=30)  # the server has closed its end
    assert fetch(server.url, t) == b"{}"
    assert server.connections == 2 and len(server.requests) == 2


def test_unasked_bytes_on_an_idle_connection_make_it_stale(raw: Callable[..., RawServer]) -> None:
    server = raw(OK + b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]", OK)
    t = transport.HttpTransport()
    assert fetch(server.url, t) == b"{}"  # the extra response is never taken for the next one
    assert fetch(server.url, t) == b"{}"
    assert server.connections == 2


def test_every_part_one_read_brought_comes_as_one(raw: Callable[..., RawServer]) -> None:
    """Three HTTP chunks in one write arrive in one network read: ``iter_bytes`` yields them
    as one part (one batch of SSE events per read), the last chunk's end included."""
    events = b"".join(b"data: %d\n\n" % i for i in range(3))
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events.split(b"\n\n")[:-1])
    gate = threading.Event()

    def answer(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        gate.wait(30)
        conn.sendall(chunks + b"0\r\n\r\n")
        return True

    server = raw(answer)
    resp = post(server.url)
    gate.set()
    parts = list(resp.iter_bytes())
    resp.close()
    assert parts == [events.replace(b"\n\n", b"")]


def test_a_read_timeout_maps_to_the_deadline(raw: Callable[..., RawServer]) -> None:
    release = threading.Event()

    def stall(conn: socket.socket, request: bytes) -> bool:
        release.wait(30)
        return False

    server = raw(stall)
    try:
        with pytest.raises(AITimeoutError) as info:
            post(server.url, timeout_ms=300)
        assert isinstance(info.value.__cause__, ReadTimeout)
    finally:
        release.set()


# -- the request ---------------------------------------------------------------------------------


def test_the_request_on_the_wire(raw: Callable[..., RawServer]) -> None:
    server = raw(OK)
    request = transport.HTTPRequest(
        "POST",
        f"http://user:pw@127.0.0.1:{server.port}/v1/a%20b?x=1&y=#frag",
        {"content-type": "application/json", "X-Extra": "1"},
        b'{"a":1}',
    )
    transport.HttpTransport().send(request, transport.Deadline(10_000)).read()
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/a%20b?x=1&y= HTTP/1.1"
    assert lines[1] == b"Host: 127.0.0.1:%d" % server.port
    fields = dict(line.split(b": ", 1) for line in lines[1:])
    assert fields[b"Content-Length"] == b"7" and body == b'{"a":1}'
    assert b"Authorization" not in fields and b"Cookie" not in fields  # no userinfo sent
    assert fields[b"Accept-Encoding"].startswith(b"gzip, deflate")


def test_an_answer_before_the_whole_body_was_read_is_the_response() -> None:
    """A server that answers 413 after the head and closes without reading the body (the
    client's write then fails): its answer is the response, not a failed write."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        conn.sendall(b"HTTP/1.1 413 Too Large\r\nContent-Length: 8\r\n\r\ntoo big!")
        conn.close()  # the unread body: a reset for the client's write

    threading.Thread(target=serve, daemon=True).start()
    request = transport.HTTPRequest(
        "POST", f"http://127.0.0.1:{port}/v1/x", {}, b"x" * (32 * 1024 * 1024)
    )
    try:
        resp = transport.HttpTransport().send(request, transport.Deadline(30_000))
        assert (resp.status, resp.read()) == (413, b"too big!")
    finally:
        listener.close()


@pytest.mark.parametrize(
    ("headers", "argument"),
    [
        ({"x-a": "v\r\nInjected: 1"}, "headers"),
        ({"x-a\r\nInjected": "v"}, "headers"),
        ({"bad name": "v"}, "headers"),
        ({"x-a": "caf\u00e9"}, "headers"),
    ],
)
def test_an_unsendable_header_is_refused_before_anything_is_written(
    raw: Callable[..., RawServer], headers: dict[str, str], argument: str
) -> None:
    server = raw(OK)
    request = transport.HTTPRequest("POST", server.url, headers, b"{}")
    with pytest.raises(InvalidArgumentError) as info:
        transport.HttpTransport().send(request, transport.Deadline(10_000))
    assert info.value.argument == argument
    assert "Injected" not in str(info.value) and "caf" not in str(info.value)
    assert server.requests == []


@pytest.mark.parametrize(
    "url", ["ftp://127.0.0.1/v1", "127.0.0.1/v1", "http:///v1", "http://h:99999/", "http://a b/"]
)
def test_an_unusable_url_is_an_invalid_base_url(url: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        post(url)
    assert info.value.argument == "model.baseURL"
    assert "127.0.0.1" not in str(info.value)


def test_a_cross_origin_307_is_the_answer_and_a_same_origin_one_is_followed(
    raw: Callable[..., RawServer],
) -> None:
    server = raw(
        b"HTTP/1.1 307 Moved\r\nLocation: /v2/x\r\nContent-Length: 3\r\n\r\nabc",
        OK,
        b"HTTP/1.1 308 Moved\r\nLocation: http://localhost:1/v2\r\nContent-Length: 0\r\n\r\n",
    )
    t = transport.HttpTransport()
    assert fetch(server.url, t) == b"{}"
    assert server.requests[1].startswith(b"POST /v2/x HTTP/1.1\r\n")
    assert server.requests[1].endswith(b"\r\n\r\n{}")  # the same body
    resp = post(server.url, t)
    assert resp.status == 308 and resp.read() == b""
    assert server.connections == 1  # the redirect's body was read: one connection all along


# -- the pool ------------------------------------------------------------------------------------


def test_a_full_pool_waits_boundedly_then_fails_with_nothing_sent(
    raw: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIMUX_POOL_MAX_PER_HOST", "1")
    monkeypatch.setenv("AIMUX_POOL_TIMEOUT_MS", "200")
    from aimux_ops import guest

    monkeypatch.setattr(guest, "_limits", None, raising=False)
    t = transport.HttpTransport()
    assert t.limits.pool_max_per_host == 1
    server = raw(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n{}", OK)  # the first held
    held = post(server.url, t)
    try:
        with pytest.raises(APICallError) as info:
            post(server.url, t)
        assert "AIMUX_POOL_MAX_PER_HOST" in str(info.value) and info.value.is_retryable
        assert len(server.requests) == 1
    finally:
        held.close()
    assert fetch(server.url.replace("/v1", "/v2"), t) == b"{}"  # the slot is free again


# -- proxies -------------------------------------------------------------------------------------


def test_an_http_origin_goes_through_the_env_proxy_in_absolute_form(
    raw: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = raw(OK)
    monkeypatch.setenv("HTTP_PROXY", f"http://us%40er:p%3Ass@127.0.0.1:{proxy.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert fetch("http://api.example.test:8080/v1/chat?x=1") == b"{}"
    lines = proxy.requests[0].split(b"\r\n")
    assert lines[0] == b"POST http://api.example.test:8080/v1/chat?x=1 HTTP/1.1"
    assert b"Host: api.example.test:8080" in lines
    # base64 of "us@er:p:ss"
    assert b"Proxy-Authorization: Basic dXNAZXI6cDpzcw==" in lines


def test_no_proxy_bypasses_the_proxy(
    raw: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = raw(OK)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:1")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    assert fetch(server.url) == b"{}"


def test_an_https_origin_is_tunnelled_with_connect(
    raw: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proxy gets ``CONNECT host:443`` with the credentials; its refusal is a
    ``ProxyError`` naming the status (no URL)."""
    proxy = raw(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
    monkeypatch.setenv("HTTPS_PROXY", f"http://u:secret-pw@127.0.0.1:{proxy.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with pytest.raises(APICallError) as info:
        post("https://api.example.test/v1/chat")
    assert isinstance(cause_of(info), ProxyError) and "407" in str(info.value)
    assert "secret-pw" not in str(info.value) and "example" not in str(info.value)
    lines = proxy.requests[0].split(b"\r\n")
    assert lines[0] == b"CONNECT api.example.test:443 HTTP/1.1"
    assert b"Host: api.example.test:443" in lines
    assert b"Proxy-Authorization: Basic dTpzZWNyZXQtcHc=" in lines


# -- TLS -----------------------------------------------------------------------------------------


def _self_signed(d: Path, name: str, san: str) -> tuple[Path, Path]:
    """A self-signed certificate made by the openssl CLI."""
    key, crt = d / f"{name}.key.pem", d / f"{name}.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key)),
            *("-out", str(crt), "-days", "1", "-subj", f"/CN={name}"),
            *("-addext", f"subjectAltName={san}"),
        ],
        check=True,
        capture_output=True,
    )
    return crt, key


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A certificate for localhost and 127.0.0.1."""
    return _self_signed(tmp_path_factory.mktemp("tls"), "localhost", "DNS:localhost,IP:127.0.0.1")


@pytest.fixture(scope="module")
def other_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A certificate for another host only."""
    return _self_signed(tmp_path_factory.mktemp("tls"), "other.test", "DNS:other.test")


def _tls_server(
    cert: tuple[Path, Path], raw: Callable[..., RawServer], sni: list[str | None] | None = None
) -> RawServer:
    """A RawServer whose connections are TLS (its ``_serve`` sees the wrapped socket); ``sni``
    gets the server name each handshake named."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    if sni is not None:

        def named(_sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
            sni.append(name)

        ctx.sni_callback = named  # type: ignore[assignment]
    server = raw(OK)
    plain_serve = server._serve

    def serve(conn: socket.socket) -> None:
        try:
            wrapped = ctx.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError):
            conn.close()
            server.closed.release()
            return
        plain_serve(wrapped)

    server._serve = serve  # type: ignore[method-assign]
    return server


def test_tls_is_verified_against_ssl_cert_file(
    cert: tuple[Path, Path], raw: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = _tls_server(cert, raw)
    url = f"https://localhost:{server.port}/v1/chat"
    monkeypatch.setattr(tls, "_context", [])
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with pytest.raises(APICallError) as info:  # certifi's bundle: the certificate is unknown
        post(url)
    assert isinstance(cause_of(info), ConnectError)
    assert isinstance(cause_of(info).__cause__, ssl.SSLCertVerificationError)  # type: ignore[union-attr]
    monkeypatch.setattr(tls, "_context", [])
    monkeypatch.setenv("SSL_CERT_FILE", str(cert[0]))
    t = transport.HttpTransport()
    assert fetch(url, t) == b"{}"
    assert fetch(url, t) == b"{}"
    assert server.connections == 2  # the failed handshake, then one kept-alive connection


def test_tls_checks_the_hostname(
    other_cert: tuple[Path, Path], raw: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trusted certificate for another name is refused (SNI and the check use the URL's host)."""
    server = _tls_server(other_cert, raw)
    monkeypatch.setattr(tls, "_context", [])
    monkeypatch.setenv("SSL_CERT_FILE", str(other_cert[0]))
    with pytest.raises(APICallError) as info:
        post(f"https://localhost:{server.port}/v1/chat")
    assert isinstance(cause_of(info), ConnectError)
    verify = cause_of(info).__cause__  # type: ignore[union-attr]
    assert isinstance(verify, ssl.SSLCertVerificationError)
    assert "localhost" in verify.verify_message


# -- https:// proxies (TLS in TLS) ---------------------------------------------------------------


class TlsProxy:
    """An ``https://`` proxy on 127.0.0.1: TLS with its own certificate, then ``CONNECT
    host:port`` tunnelled to 127.0.0.1:port (bytes piped both ways on one thread, so the TLS
    socket is never used by two at once), or a request in absolute form answered ``OK``.
    Records every request head and counts connections."""

    def __init__(self, cert: tuple[Path, Path]) -> None:
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(str(cert[0]), str(cert[1]))
        self.heads: list[bytes] = []
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, userinfo: str = "") -> str:
        return f"https://{userinfo}127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, raw_conn: socket.socket) -> None:
        try:
            conn = self.ctx.wrap_socket(raw_conn, server_side=True)
        except (ssl.SSLError, OSError):
            raw_conn.close()
            return
        try:
            got = _read_request(conn, b"")
            if got is None:
                return
            head, rest = got
            self.heads.append(head)
            if not head.startswith(b"CONNECT "):
                conn.sendall(OK)
                return
            port = int(head.split(b" ")[1].rsplit(b":", 1)[1])
            upstream = socket.create_connection(("127.0.0.1", port))
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                upstream.sendall(rest)
            self._pipe(conn, upstream)
        except OSError:
            return
        finally:
            conn.close()

    @staticmethod
    def _pipe(tls_conn: ssl.SSLSocket, upstream: socket.socket) -> None:
        import select

        with upstream:
            while True:
                if not tls_conn.pending():
                    select.select([tls_conn, upstream], [], [])
                ready, _, _ = select.select([tls_conn, upstream], [], [], 0)
                if tls_conn.pending() or tls_conn in ready:
                    data = tls_conn.recv(65536)
                    if not data:
                        return
                    upstream.sendall(data)
                if upstream in ready:
                    data = upstream.recv(65536)
                    if not data:
                        return
                    tls_conn.sendall(data)

    def close(self) -> None:
        self._listener.close()


@pytest.fixture(scope="module")
def proxy_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The proxy's certificate: 127.0.0.1 only (the origin's is localhost only: each name is
    checked against its own certificate)."""
    return _self_signed(tmp_path_factory.mktemp("tls"), "proxy", "IP:127.0.0.1")


@pytest.fixture(scope="module")
def origin_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _self_signed(tmp_path_factory.mktemp("tls"), "localhost", "DNS:localhost")


@pytest.fixture
def tls_proxy(
    proxy_cert: tuple[Path, Path],
    origin_cert: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[TlsProxy]:
    """A TLS proxy named by ``HTTPS_PROXY`` / ``HTTP_PROXY`` (with credentials), both
    certificates trusted (``SSL_CERT_FILE``), nothing in ``NO_PROXY``."""
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(proxy_cert[0].read_bytes() + origin_cert[0].read_bytes())
    proxy = TlsProxy(proxy_cert)
    url = proxy.url("u:secret-pw@")
    monkeypatch.setenv("HTTPS_PROXY", url)
    monkeypatch.setenv("HTTP_PROXY", url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    monkeypatch.setattr(tls, "_context", [])
    yield proxy
    proxy.close()


def test_an_https_origin_through_an_https_proxy(
    tls_proxy: TlsProxy, origin_cert: tuple[Path, Path], raw: Callable[..., RawServer]
) -> None:
    """TLS to the proxy, ``CONNECT`` with the credentials, the origin's TLS inside the tunnel:
    the answer reads, and the kept-alive tunnel serves the next request."""
    sni: list[str | None] = []
    origin = _tls_server(origin_cert, raw, sni)
    url = f"https://localhost:{origin.port}/v1/chat"
    t = transport.HttpTransport()
    assert fetch(url, t) == b"{}"
    assert fetch(url, t) == b"{}"
    assert tls_proxy.connections == 1 and origin.connections == 1  # one tunnel, reused
    assert sni == ["localhost"]  # the origin's name, inside the proxy's session
    lines = tls_proxy.heads[0].split(b"\r\n")
    assert lines[0] == f"CONNECT localhost:{origin.port} HTTP/1.1".encode()
    assert b"Proxy-Authorization: Basic dTpzZWNyZXQtcHc=" in lines
    assert origin.requests[0].startswith(b"POST /v1/chat HTTP/1.1\r\n")  # never absolute
    assert b"Proxy-Authorization" not in origin.requests[0]  # the proxy's, not the origin's
    (conn,) = t.pools()[("https", "localhost", origin.port)].connections()
    assert isinstance(conn.sock.outer, ssl.SSLSocket)  # the origin's session inside the proxy's


def test_an_http_origin_through_an_https_proxy(tls_proxy: TlsProxy) -> None:
    assert fetch("http://api.example.test:8080/v1/chat?x=1") == b"{}"
    lines = tls_proxy.heads[0].split(b"\r\n")
    assert lines[0] == b"POST http://api.example.test:8080/v1/chat?x=1 HTTP/1.1"
    assert b"Proxy-Authorization: Basic dTpzZWNyZXQtcHc=" in lines


def test_the_proxy_certificate_is_verified(
    tls_proxy: TlsProxy,
    origin_cert: tuple[Path, Path],
    raw: Callable[..., RawServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the origin's certificate trusted: the proxy's handshake fails, a clear
    ``ProxyError`` caused by the verification error, no credential in any message."""
    origin = _tls_server(origin_cert, raw)
    monkeypatch.setenv("SSL_CERT_FILE", str(origin_cert[0]))
    monkeypatch.setattr(tls, "_context", [])
    with pytest.raises(APICallError) as info:
        post(f"https://localhost:{origin.port}/v1/chat")
    err = cause_of(info)
    assert isinstance(err, ProxyError) and "TLS handshake with the proxy failed" in str(err)
    assert isinstance(err.__cause__, ssl.SSLCertVerificationError)
    assert "secret-pw" not in str(info.value) and "dTpzZWNyZXQtcHc" not in str(info.value)
    assert origin.connections == 0 and tls_proxy.heads == []  # nothing was sent


def test_the_origin_certificate_is_verified_inside_the_tunnel(
    tls_proxy: TlsProxy,
    proxy_cert: tuple[Path, Path],
    raw: Callable[..., RawServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The origin presents the proxy's certificate (trusted, but for 127.0.0.1): the name
    checked inside the tunnel is the origin's (SNI and the check), so it is refused."""
    origin = _tls_server(proxy_cert, raw)
    with pytest.raises(APICallError) as info:
        post(f"https://localhost:{origin.port}/v1/chat")
    err = cause_of(info)
    assert isinstance(err, ConnectError)
    assert isinstance(err.__cause__, ssl.SSLCertVerificationError)
    assert "localhost" in err.__cause__.verify_message
    assert len(tls_proxy.heads) == 1 and origin.requests == []


def test_abort_and_the_deadline_wake_a_read_inside_the_tunnel(
    tls_proxy: TlsProxy, origin_cert: tuple[Path, Path], raw: Callable[..., RawServer]
) -> None:
    """A body that stalls after its first part: ``abort()`` from another thread wakes the
    blocked read (the proxy's raw socket shut down), and so does the deadline's watchdog."""
    release = threading.Event()

    def stall(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345")
        release.wait(30)
        return False

    origin = _tls_server(origin_cert, raw)
    origin.answers = [stall]
    url = f"https://localhost:{origin.port}/v1/chat"
    try:
        resp = post(url)
        parts = resp.iter_bytes()
        assert next(parts) == b"12345"
        threading.Timer(0.05, resp.abort).start()
        with pytest.raises(APICallError) as info:
            next(parts)
        assert "could not be read" in str(info.value)
        resp = post(url, timeout_ms=400)
        with pytest.raises(AITimeoutError):
            resp.read()
    finally:
        release.set()


def test_socks_proxies_are_refused_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://u:secret-pw@127.0.0.1:1080")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with pytest.raises(APICallError) as info:
        post("https://api.example.test/v1/chat")
    assert isinstance(cause_of(info), ProxyError)
    assert "Only http:// and https:// proxies are supported, not socks5://" in str(info.value)
    assert "secret-pw" not in str(info.value)


def test_a_forked_child_closes_its_copy_of_a_tunnel_and_the_parent_keeps_it(
    tls_proxy: TlsProxy, origin_cert: tuple[Path, Path], raw: Callable[..., RawServer]
) -> None:
    """After a fork the child's copy of the tunnel's descriptor is closed (no TLS close from
    it: the parent's tunnel still serves its next request, still one connection)."""
    import os

    origin = _tls_server(origin_cert, raw)
    url = f"https://localhost:{origin.port}/v1/chat"
    t = transport.default_transport()
    assert fetch(url, t) == b"{}"
    (conn,) = t.pools()[("https", "localhost", origin.port)].connections()
    fd = conn.sock.fileno()
    assert fd >= 0
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.fstat(fd)
            os._exit(1)  # still open in the child
        except OSError:
            os._exit(0 if transport.default_transport() is not t else 2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert fetch(url, t) == b"{}"
    assert tls_proxy.connections == 1 and origin.connections == 1


def test_a_cancel_wakes_a_send_waiting_for_headers_inside_the_tunnel(
    tls_proxy: TlsProxy, origin_cert: tuple[Path, Path], raw: Callable[..., RawServer]
) -> None:
    """A stream's request sent through the tunnel whose origin never answers: the
    ``SendGuard``'s cancel shuts the proxy's socket down and the send ends ``AbortedError``."""
    from aimux_ops.errors import AbortedError

    got, release = threading.Event(), threading.Event()

    def hold(conn: socket.socket, request: bytes) -> bool:
        got.set()
        release.wait(30)
        return False

    origin = _tls_server(origin_cert, raw)
    origin.answers = [hold]
    guard = transport.SendGuard()
    request = transport.HTTPRequest(
        "POST", f"https://localhost:{origin.port}/v1/chat", {}, b"{}", stream=True, guard=guard
    )
    outcome: list[BaseException | None] = []

    def send() -> None:
        try:
            transport.HttpTransport().send(request, transport.Deadline(30_000))
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    sender = threading.Thread(target=send)
    sender.start()
    try:
        assert got.wait(30)  # the request is at the origin; the send waits for its headers
        guard.cancel()
        sender.join(30)
        assert not sender.is_alive()
        assert isinstance(outcome[0], AbortedError)
    finally:
        release.set()
