"""HTTP transport: the seam between the providers and the core's own HTTP/1.1 client
(``connection``, ``pool``, ``connect``), per-call deadlines, SSE parsing, cancellation, and the
transport-failure mapping (CONTRACT §1 "a transport failure keeps every layer as a cause node").

- ``HttpTransport.send`` posts a request and returns an ``HttpResponse`` once the status line and
  headers are in; the body is read with ``read()`` or, for streams, ``iter_events()`` (SSE
  ``(event, data)`` pairs, parsed from raw bytes without per-line decoding), one batch of events
  per network read (``iter_event_batches``: every complete part of the bytes one read brought).
- ``Deadline``: ``timeoutMs`` spans the whole call (every attempt). Each request's socket timeout
  is the remaining time, and a watchdog shuts the socket down when the deadline passes while a
  body is being read, so a slow drip cannot outlive it: an entry of the process's one deadline
  thread (``deadlines``). Expiry → ``TimeoutError`` (code 12).
- Pools: per origin (scheme, host, port), at most ``AIMUX_POOL_MAX_PER_HOST`` connections and a
  bounded wait for a free one (``guest.Limits``); streams have pools of their own with no limit.
  Environment proxies are honoured (``proxy``); TLS verifies (``tls``).
- Redirects: only a same-origin 307/308 is followed (same method, body and headers, up to
  ``MAX_REDIRECTS`` hops); any other 3xx is the answer (the provider maps it to an error), so a
  request with the API key never reaches another origin. No cookies are kept.
- ``HttpResponse.abort()`` (any thread) shuts the socket down so a blocked read wakes: used for
  stream cancellation. ``close`` of a stream read on its caller's thread drains the body's tail
  (≤ 64 KiB, 50 ms) so its connection is reused.
- ``SendGuard``: a stream's request until its response headers are in. A cancel before its
  first byte is written keeps it from being sent; a cancel after shuts its connection down, so a
  wait for the headers (or a TLS handshake) wakes at once (DESIGN.md "A cancel before the send").
- Failures map to ``APICallError`` raised ``from`` the client's exception (``exceptions``, e.g.
  ``aimux_ops.http.ConnectError``), whose own cause is the ``OSError`` below it. No message
  carries a URL.
- A forked child closes its copies of the parent's sockets (the descriptors only) and starts with
  fresh pools and locks.

Blocking sockets release the interpreter lock while they wait; nothing here holds a lock across a
network wait. One I/O stack: every request, a stream's too, runs on the thread of its op (a
caller's, or a stream's reader thread).
"""

from __future__ import annotations

import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from .._lazy import LazyModule

if TYPE_CHECKING:
    import socket

    from . import connect as http_connect
    from . import connection as http1
    from . import decoding as stream_decoding
    from . import pool as http_pool
    from . import proxy as http_proxy
else:
    # Cold start: a replayed call never touches the network, so the client (and socket) load
    # on the first live request, not with this module.
    socket = LazyModule("socket", globals(), "socket")
    http1 = LazyModule("aimux_ops.http.connection", globals(), "http1")
    http_connect = LazyModule("aimux_ops.http.connect", globals(), "http_connect")
    http_pool = LazyModule("aimux_ops.http.pool", globals(), "http_pool")
    http_proxy = LazyModule("aimux_ops.http.proxy", globals(), "http_proxy")
    stream_decoding = LazyModule("aimux_ops.http.decoding", globals(), "stream_decoding")

from ..errors import AbortedError, AimuxError, APICallError, InvalidArgumentError
from ..errors import TimeoutError as AITimeoutError
from ..guest import Limits, on_fork_child
from ..guest import limits as guest_limits
from ..wire.redact import redact_headers, scrub_message
from . import deadlines
from .exceptions import (
    DecodingError,
    HTTPError,
    InvalidURL,
    LocalProtocolError,
    PoolTimeout,
    TimeoutException,
    UnsupportedProtocol,
    WriteError,
)

__all__ = [
    "Deadline",
    "HTTPRequest",
    "HttpResponse",
    "HttpTransport",
    "Response",
    "SendGuard",
    "Transport",
    "default_transport",
    "event_batches",
    "iter_sse",
    "iter_sse_batches",
]

SSEEvent = tuple[str | None, bytes]


class Deadline:
    """The per-call deadline of ``timeoutMs`` (None: no deadline)."""

    __slots__ = ("expires_at", "fired", "timeout_ms")

    def __init__(self, timeout_ms: int | None) -> None:
        self.timeout_ms = timeout_ms
        self.expires_at = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000.0
        #: Set by a watchdog that aborted a read because the deadline passed.
        self.fired = False

    def remaining(self) -> float | None:
        if self.expires_at is None:
            return None
        return self.expires_at - time.monotonic()

    def expired(self) -> bool:
        rem = self.remaining()
        return rem is not None and rem <= 0

    def error(self, status_code: int | None = None) -> AITimeoutError:
        """The timeout; ``status_code`` when a response had already begun (a stream's status was
        sent before the deadline passed mid-body)."""
        return AITimeoutError(
            f"The call did not complete within {self.timeout_ms} ms.",
            timeout_ms=self.timeout_ms,
            status_code=status_code,
        )


@dataclass
class HTTPRequest:
    """One request: the URL is only used to connect, never put in a message."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes
    stream: bool = False
    #: The parsed JSON body (for recording / replay matching), when the caller has it.
    json_body: Any = None
    #: a stream's cancel, told to the send (``SendGuard``); None: nothing cancels the send
    guard: SendGuard | None = field(default=None, repr=False, compare=False)


class Response(Protocol):
    """What a provider reads from: a live response, or one served from a recording."""

    status: int
    reason: str
    #: lower-cased header names, raw values (redact before they leave the core)
    headers: dict[str, str]

    def read(self) -> bytes: ...

    def iter_events(self) -> Iterator[SSEEvent]: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


class Transport(Protocol):
    def send(self, request: HTTPRequest, deadline: Deadline) -> Response: ...


# -- SSE -------------------------------------------------------------------------------------------


def _parse_event(block: bytes) -> SSEEvent | None:
    """The general path: one event block (LF line endings) → (event, data), or None."""
    data: list[bytes] = []
    event: str | None = None
    for line in block.split(b"\n"):
        if line[:5] == b"data:":
            value = line[5:]
            data.append(value[1:] if value[:1] == b" " else value)
        elif line[:6] == b"event:":
            event = line[6:].strip().decode("utf-8", "replace")
    if not data:
        return None
    return event, data[0] if len(data) == 1 else b"\n".join(data)


#: SSE events of one network read: ``(names, datas)``, the ``data`` of each event in order and
#: ``names`` None when no event of the read is named, else each event's name (or None)
SSEBatch = tuple[list[str | None] | None, list[bytes]]


def iter_sse_batches(chunks: Iterator[bytes]) -> Iterator[SSEBatch]:
    """Server-sent events from raw byte chunks, one batch per chunk that completed any (see
    ``SSEBatch``; never an empty one): what ``iter_sse`` yields one by one.

    Lines end in LF, CRLF or CR (a CRLF split across chunks too); a leading UTF-8 BOM is
    dropped; ``data:`` lines of one event are joined by LF; comments, ``id:`` and
    ``retry:`` are ignored; an event still pending at EOF is delivered too. The common case
    (every event of the read one ``data: …`` line) is one C-level ``bytes.split``: no per-event
    Python work at all."""
    buf = b""
    first = True
    cr_pending = False  # the buffer ends in CR: it may be the first half of a CRLF
    for chunk in chunks:
        if not chunk:
            continue
        if first:
            first = False
            if chunk.startswith(b"\xef\xbb\xbf"):  # a UTF-8 BOM before the stream (SSE spec)
                chunk = chunk[3:]
        buf = buf + chunk if buf else chunk
        if cr_pending or b"\r" in chunk:
            cr_pending = buf.endswith(b"\r")
            body = buf[:-1] if cr_pending else buf
            body = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            buf = body + b"\r" if cr_pending else body
        end = buf.rfind(b"\n\n")
        if end < 0:
            continue
        block = buf[:end]
        buf = buf[end + 2 :]
        if block[:6] == b"data: ":
            datas = block.split(b"\n\ndata: ")
            if b"\n" not in b"".join(datas):
                # every event one "data: " line: the separators were the only newlines
                datas[0] = datas[0][6:]
                yield None, datas
                continue
        batch = _parse_block(block)
        if batch is not None:
            yield batch
    buf = buf.replace(b"\r", b"\n")
    if buf.strip():
        parsed = _parse_event(buf.strip(b"\n"))
        if parsed is not None:
            name, data = parsed
            yield (None if name is None else [name]), [data]


#: event names as their raw bytes were seen (a stream repeats a handful of names)
_EVENT_NAMES: dict[bytes, str] = {}


def _parse_block(block: bytes) -> SSEBatch | None:
    """The general path: the events of one block of ``\\n\\n``-separated events, or None."""
    names: list[str | None] = []
    datas: list[bytes] = []
    for ev in block.split(b"\n\n"):
        if ev[:6] == b"data: " and b"\n" not in ev:
            names.append(None)
            datas.append(ev[6:])
        elif (
            ev[:7] == b"event: "
            and (nl := ev.find(b"\n")) > 0
            and ev[nl + 1 : nl + 7] == b"data: "
            and ev.find(b"\n", nl + 1) < 0
        ):
            # "event: NAME" then one "data: …" line (Anthropic's stream)
            raw = ev[6:nl]
            name = _EVENT_NAMES.get(raw)
            if name is None:
                name = raw.strip().decode("utf-8", "replace")
                if len(_EVENT_NAMES) < 256:
                    _EVENT_NAMES[raw] = name
            names.append(name)
            datas.append(ev[nl + 7 :])
        elif ev:
            parsed = _parse_event(ev.lstrip(b"\n"))
            if parsed is not None:
                names.append(parsed[0])
                datas.append(parsed[1])
    if not datas:
        return None
    return (names if any(n is not None for n in names) else None), datas


def iter_sse(chunks: Iterator[bytes]) -> Iterator[SSEEvent]:
    """Server-sent events from raw byte chunks: ``(event name or None, data)`` per event (the
    events of ``iter_sse_batches``, one by one)."""
    for names, datas in iter_sse_batches(chunks):
        if names is None:
            for data in datas:
                yield None, data
        else:
            yield from zip(names, datas, strict=True)


def event_batches(resp: Response) -> Iterator[SSEBatch]:
    """The SSE events of ``resp`` one network read at a time when it can tell them apart
    (``HttpResponse``), else one event per batch (a recording or replay wraps ``iter_events``)."""
    batches = getattr(resp, "iter_event_batches", None)
    if batches is not None:
        it: Iterator[SSEBatch] = batches()
        return it
    return ((None if name is None else [name], [data]) for name, data in resp.iter_events())


# -- failure mapping -------------------------------------------------------------------------------


def _detail(exc: BaseException) -> str:
    text = str(exc).strip()
    if not text:
        inner = exc.__cause__ or exc.__context__
        text = str(inner).strip() if inner is not None else ""
    return scrub_message(text) if text else type(exc).__name__


def map_transport_error(
    exc: BaseException,
    deadline: Deadline,
    *,
    response: HttpResponse | None = None,
) -> AimuxError:
    """The aimux error for a failure of the transport (the caller raises it ``from exc``).

    Before a response: ``APICallError("Cannot connect to API: …", isRetryable=True)`` without a
    status (the AI SDK's ``handleFetchError``). While reading a body: the same, with the status and
    headers that were observed; not retryable when the body cannot be decoded (its
    ``Content-Encoding``: the AI SDK's "Failed to process successful response"). A passed
    deadline: ``TimeoutError``."""
    if deadline.fired or (
        deadline.expires_at is not None
        and (isinstance(exc, TimeoutException) or deadline.expired())
    ):
        return deadline.error(response.status if response is not None else None)
    if isinstance(exc, (UnsupportedProtocol, InvalidURL)):
        return InvalidArgumentError(
            f"Invalid argument for model.baseURL: {_detail(exc)}", argument="model.baseURL"
        )
    if isinstance(exc, (LocalProtocolError, UnicodeEncodeError)):
        # the request itself cannot be sent as HTTP (a header name or value): not retryable
        return InvalidArgumentError(
            f"Invalid argument for headers: {_detail(exc)}", argument="headers"
        )
    if response is None:
        return APICallError(f"Cannot connect to API: {_detail(exc)}", is_retryable=True)
    return APICallError(
        f"The response body could not be read: {_detail(exc)}",
        status_code=response.status,
        is_retryable=not isinstance(exc, DecodingError),  # the same bytes would come again
        response_headers=redact_headers(response.headers),
    )


# -- URLs ------------------------------------------------------------------------------------------

Origin = tuple[str, str, int]
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: characters kept as they are in a request target (the rest percent-encoded, as httpx does)
_TARGET_SAFE = "/%:@!$&'()*+,;=-._~?"


@dataclass(frozen=True)
class URL:
    """A request URL taken apart: where to connect and what to send (never in a message)."""

    scheme: str
    host: str  # for the socket and SNI (IDNA-encoded, no brackets)
    port: int
    target: str  # path and query, percent-encoded
    host_header: str
    text: str = field(repr=False)

    @property
    def origin(self) -> Origin:
        return (self.scheme, self.host, self.port)


def parse_url(text: str) -> URL:
    """``text`` taken apart; ``UnsupportedProtocol`` / ``InvalidURL`` (no URL in the message)."""
    if not isinstance(text, str):
        raise InvalidURL("The URL is not a string")
    if any(c in text for c in "\r\n\t\0 "):
        raise InvalidURL("The URL has whitespace or control characters")
    try:
        parts = urllib.parse.urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            raise UnsupportedProtocol(
                "Request URL is missing an 'http://' or 'https://' protocol."
                if not scheme
                else f"Request URL has an unsupported protocol '{scheme}://'."
            )
        host = parts.hostname
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError as exc:
        raise InvalidURL("The URL's port or host is invalid") from exc
    if not host:
        raise InvalidURL("The URL has no host")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise InvalidURL("The URL's host is not a valid domain name") from exc
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if port == _DEFAULT_PORTS[scheme] else f"{shown}:{port}"
    # the path and query as written (an empty query's "?" too), without the fragment
    rest = text[text.find("//") + 2 + len(parts.netloc) :].partition("#")[0]
    target = urllib.parse.quote(rest if rest[:1] == "/" else "/" + rest, safe=_TARGET_SAFE)
    return URL(scheme, host, port, target, host_header, text)


#: request URLs parsed, by their text (a call to an endpoint parsed before parses nothing).
#: Bounded: new URLs past ``_URLS_MAX`` are parsed per call; a rejected URL is not kept.
_URLS: dict[str, URL] = {}
_URLS_MAX = 512


def _parsed(text: str) -> URL:
    hit = _URLS.get(text)
    if hit is None:
        hit = parse_url(text)
        if len(_URLS) < _URLS_MAX:
            _URLS[text] = hit
    return hit


#: same-origin 307/308 hops followed per request (fetch's limit is 20)
MAX_REDIRECTS = 20


def _same_origin_target(url: URL, location: str | None) -> URL | None:
    """Where a 307/308 points when that is the request's own origin, else None."""
    if not location:
        return None
    try:
        target = parse_url(urllib.parse.urljoin(url.text, location))
    except (HTTPError, InvalidURL, ValueError):
        return None
    return target if target.origin == url.origin else None


# -- the live transport ----------------------------------------------------------------------------


class HttpResponse:
    """A live response whose body has not been read yet."""

    def __init__(
        self,
        conn: http1.Connection,
        head: http1.Head,
        body: http1.Body,
        pool: http_pool.Pool,
        deadline: Deadline,
    ) -> None:
        self.status: int = head.status
        self.reason: str = head.reason
        #: lower-cased names, raw values (redact before they leave the core)
        self.headers: dict[str, str] = head.headers
        self._conn: http1.Connection | None = conn  # None once it went back or was closed
        self._body = body
        self._pool = pool
        self._deadline = deadline
        self._closed = False
        self._lock = threading.Lock()
        #: the deadline's watchdog (one process-wide thread, not a timer thread per response)
        self._timer: deadlines.Entry | None = None
        self._started = False  # reading began
        self._broken = False  # a read failed
        self._aborted = False  # the socket was shut down (a cancel, the deadline)
        #: a stream read on its caller's thread: ``close`` drains what is left of the body so
        #: its connection is reused
        self._drain_here = False
        rem = deadline.remaining()
        if rem is not None and not body.done:
            self._timer = deadlines.after(rem, self._on_deadline)

    def _on_deadline(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._deadline.fired = True
        self.abort()

    def abort(self) -> None:
        """Shut the socket down (any thread): a blocked read wakes with an error. A no-op once
        the response is closed (its connection may already serve another request)."""
        with self._lock:
            conn = self._conn
            if self._closed or conn is None:
                return
            self._aborted = True
            _shutdown_sock(conn.sock)

    def _raise(self, exc: BaseException) -> NoReturn:
        self._broken = True
        err = map_transport_error(exc, self._deadline, response=self)
        if self._deadline.fired:
            # the read failed because the watchdog shut the socket down: that error is an
            # artifact of the deadline, not its cause
            raise err from None
        raise err from exc

    def read(self) -> bytes:
        try:
            encoding = self.headers.get("content-encoding")
            decoder = (
                stream_decoding.stream_decoder(encoding, guest_limits().max_decoded_bytes)
                if encoding
                else None
            )
            self._started = True
            data = self._body.read_all()
            if decoder is not None:
                data = decoder.decode(data) + decoder.flush()
            return data
        except (HTTPError, OSError) as exc:
            self._raise(exc)
        finally:
            self.close()

    def iter_bytes(self) -> Iterator[bytes]:
        """The body's bytes as each network read brings them, decoded (``stream_decoding``)."""
        try:
            encoding = self.headers.get("content-encoding")
            decoder = (
                stream_decoding.stream_decoder(encoding, guest_limits().max_decoded_bytes)
                if encoding
                else None
            )
            if decoder is not None:
                yield from _decoded(self._iter_raw(), decoder)
            else:
                yield from self._iter_raw()
        except (HTTPError, OSError) as exc:
            self._raise(exc)

    def _iter_raw(self) -> Iterator[bytes]:
        """Every complete part of the bytes each network read brought, joined: one batch of
        events per read, never a wait for the next one."""
        self._started = True
        body = self._body
        while True:
            data = body.parts()
            if data:
                yield data
            if body.done:
                return
            body.fill()

    def iter_events(self) -> Iterator[SSEEvent]:
        return iter_sse(self.iter_bytes())

    def iter_event_batches(self) -> Iterator[SSEBatch]:
        """The events of each network read together (``iter_sse_batches``)."""
        return iter_sse_batches(self.iter_bytes())

    def close(self) -> None:
        with self._lock:
            self._closed = True
            timer, self._timer = self._timer, None
            conn, self._conn = self._conn, None
        if timer is not None:
            timer.cancel()
        if conn is None:
            return
        body = self._body
        try:
            if (
                not body.done
                and self._started
                and self._drain_here
                and not (self._broken or self._aborted or self._deadline.fired)
            ):
                _drain(body)
        except Exception:  # noqa: BLE001 - a failed drain closes the connection
            pass
        if body.end_clean() and not (self._aborted or self._deadline.fired):
            self._pool.checkin(conn)
        else:
            self._pool.discard(conn)


#: what is left of a stream's body after its terminal event is read on its caller's thread for
#: at most this long and this many bytes (its end usually came with it: then nothing is read)
_DRAIN_HERE_S = 0.05
_DRAIN_BYTES = 64 * 1024


def _drain(body: http1.Body) -> None:
    """Read what is left of ``body``, at most ``_DRAIN_BYTES`` within ``_DRAIN_HERE_S`` (the
    socket's own timeout: no timer thread); its end lets the connection go back to the pool."""
    ends = time.monotonic() + _DRAIN_HERE_S
    left = _DRAIN_BYTES - len(body.parts())
    conn = body.conn
    while not body.done and left >= 0:
        wait = ends - time.monotonic()
        if wait <= 0:
            return
        conn.settimeout(wait)
        if not body.fill():
            return
        left -= len(body.parts())


def _decoded(chunks: Iterator[bytes], decoder: stream_decoding.StreamDecoder) -> Iterator[bytes]:
    """``chunks`` decoded one by one (a read that completes nothing yields nothing), then what
    the decoder still holds at the end."""
    decode = decoder.decode
    for chunk in chunks:
        try:
            out = decode(chunk)
        except DecodingError as exc:
            salvaged = getattr(exc, "salvaged", b"")
            if salvaged:  # the events before the corruption are delivered, then the error
                yield salvaged
            raise
        if out:
            yield out
    tail = decoder.flush()
    if tail:
        yield tail


def _shutdown_sock(sock: Any) -> None:
    """Shut ``sock`` down (a socket.socket, or any object with a ``shutdown`` method).
    A socket.socket, an ``ssl.SSLSocket`` too, is shut down by socket.socket's own method:
    ``SSLSocket.shutdown`` first drops its TLS layer, and a write on another thread that raced
    it would then go out unencrypted (a request's headers, its key among them)."""
    try:
        if isinstance(sock, socket.socket):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        elif sock is not None and hasattr(sock, "shutdown"):
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _cancelled_send() -> AbortedError:
    return AbortedError("The call was cancelled.")


class SendGuard:
    """A stream's request until its response headers are in, and the stream's cancel racing it
    (DESIGN.md "A cancel before the send"). The op makes one per stream, registers ``cancel``
    with the stream's cancel and puts it on its request (``HTTPRequest.guard``).

    The send checks it before it takes a connection (``check``), again before it opens one, and
    ``attach``-es every socket the request is on (a new connection's, a TLS handshake's
    duplicate, the one the request is written to): attached after a cancel, a socket is not
    written to (``AbortedError``, which the op takes for the cancel it is); a cancel after the
    attach shuts it down, so a handshake or the wait for the response headers wakes at once
    instead of lasting until the server answers or the deadline.
    """

    __slots__ = ("_lock", "_sock", "cancelled")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: Any = None  # the socket the request is on, while it is sent
        self.cancelled = False

    def check(self) -> None:
        """Raise ``AbortedError`` once the stream is cancelled."""
        if self.cancelled:
            raise _cancelled_send()

    def attach(self, sock: Any) -> None:
        """The request goes on over ``sock`` now: unless the stream was cancelled (then
        ``AbortedError``, nothing written), a cancel shuts it down."""
        with self._lock:
            if not self.cancelled:
                self._sock = sock
                return
        raise _cancelled_send()

    def detach(self) -> None:
        """The send is over (its headers are in, or it failed): the response's own ``abort``
        answers a cancel from now on."""
        with self._lock:
            self._sock = None

    def cancel(self) -> None:
        """The stream is cancelled (any thread): nothing more is written, and the socket the
        request is on is shut down (under the lock: ``detach`` never lets it go back to a pool
        in between)."""
        with self._lock:
            self.cancelled = True
            sock, self._sock = self._sock, None
            if sock is not None:
                _shutdown_sock(sock)


#: tests: called with a guarded request on its sending thread right before it goes to the
#: client, after the send's own ``check``, so a test can cancel there (the cancel then
#: happens-before the send) and show that the attach alone keeps the request from being written.
#: None in production: nothing is called.
before_guarded_send: Callable[[HTTPRequest], None] | None = None


def _pool_limit_error(lim: Limits) -> APICallError:
    """A full per-host pool: no connection became free in time, nothing was sent."""
    return APICallError(
        f"Cannot connect to API: the connection pool for this host is at its limit of "
        f"{lim.pool_max_per_host} connections (AIMUX_POOL_MAX_PER_HOST) and none became free "
        f"within {lim.pool_timeout_ms} ms (AIMUX_POOL_TIMEOUT_MS); the request was not sent",
        is_retryable=True,
    )


#: a connection is established within this long at most (httpx's connect timeout as before)
CONNECT_TIMEOUT_S = 60.0
#: idle connections of every stream pool
_STREAM_IDLE = 8


class _Route:
    """An origin's pool and the proxy its connections go through (None: direct)."""

    __slots__ = ("pool", "proxy", "proxy_header")

    def __init__(self, pool: http_pool.Pool, proxy: http_proxy.Proxy | None) -> None:
        self.pool = pool
        self.proxy = proxy
        self.proxy_header = (
            f"Proxy-Authorization: {proxy.authorization}\r\n"
            if proxy is not None and proxy.authorization
            else ""
        )


class HttpTransport:
    """The core's HTTP/1.1 client over pools per origin (thread-safe; shared by every call of
    the process).

    Each origin (scheme, host, port) has its own pool of at most ``AIMUX_POOL_MAX_PER_HOST``
    connections, so streams held open to one server never starve calls to another; waiting for
    a free connection is bounded by ``AIMUX_POOL_TIMEOUT_MS`` (``guest.Limits``). Streams have
    pools of their own, with no connection limit (a stream never waits for another one's
    connection, and streams never fill the calls' pools), 8 idle connections each."""

    def __init__(self) -> None:
        self.limits = guest_limits()
        self._routes: dict[Origin, _Route] = {}
        self._stream_routes: dict[Origin, _Route] = {}
        self._lock = threading.Lock()

    def _route(self, url: URL, stream: bool) -> _Route:
        routes = self._stream_routes if stream else self._routes
        route = routes.get(url.origin)
        if route is None:
            with self._lock:
                route = routes.get(url.origin)
                if route is None:
                    lim = self.limits
                    pool = (
                        http_pool.Pool(None, _STREAM_IDLE)
                        if stream
                        else http_pool.Pool(
                            lim.pool_max_per_host,
                            min(lim.pool_max_idle_per_host, lim.pool_max_per_host),
                        )
                    )
                    proxy = http_proxy.proxy_for(url.scheme, url.host)
                    route = routes[url.origin] = _Route(pool, proxy)
        return route

    def pools(self, stream: bool = False) -> dict[Origin, http_pool.Pool]:
        """The pools of calls (or of streams) by origin."""
        routes = self._stream_routes if stream else self._routes
        return {origin: route.pool for origin, route in list(routes.items())}

    def send(self, request: HTTPRequest, deadline: Deadline) -> HttpResponse:
        rem = deadline.remaining()
        if rem is not None and rem <= 0:
            raise deadline.error()
        guard = request.guard
        if guard is not None:
            guard.check()  # a cancelled stream's request: not even a connection is taken
            hook = before_guarded_send
            if hook is not None:
                hook(request)
        pool_s = self.limits.pool_timeout_ms / 1000.0
        hop_rem = rem  # the deadline left when the last hop was sent
        try:
            url = _parsed(request.url)
            hops = 0
            while True:
                hop_rem = rem
                response = self._exchange(request, url, deadline, rem, pool_s)
                if response.status not in (307, 308) or hops >= MAX_REDIRECTS:
                    return response
                target = _same_origin_target(url, response.headers.get("location"))
                if target is None:
                    return response
                _drain(response._body)
                response.close()
                hops += 1
                url = target
                rem = deadline.remaining()
                if rem is not None and rem <= 0:
                    raise deadline.error()
        except PoolTimeout as exc:
            if guard is not None and guard.cancelled:
                raise _cancelled_send() from exc
            if hop_rem is not None and hop_rem < pool_s:
                # the call's own deadline ended the wait for a free connection
                raise deadline.error() from _pool_limit_error(self.limits)
            raise _pool_limit_error(self.limits) from exc
        except (HTTPError, InvalidURL, OSError, UnicodeEncodeError) as exc:
            if guard is not None and guard.cancelled:
                # the cancel shut the connection down (a connect, the wait for the headers)
                raise _cancelled_send() from exc
            raise map_transport_error(exc, deadline) from exc

    def _exchange(
        self,
        request: HTTPRequest,
        url: URL,
        deadline: Deadline,
        rem: float | None,
        pool_s: float,
    ) -> HttpResponse:
        """One hop: a connection from ``url``'s pool (or a new one), the request written, the
        response's head read."""
        route = self._route(url, request.stream)
        pool = route.pool
        guard = request.guard
        conn = pool.checkout(
            None if pool.max_connections is None else pool_s if rem is None else min(rem, pool_s)
        )
        if conn is None:
            try:
                if guard is not None:
                    guard.check()
                conn = http_connect.open_connection(
                    url.scheme,
                    url.host,
                    url.port,
                    CONNECT_TIMEOUT_S if rem is None else min(rem, CONNECT_TIMEOUT_S),
                    route.proxy,
                    guard.attach if guard is not None else None,
                )
            except BaseException:
                pool.discard(None)
                raise
            pool.opened(conn)
        try:
            proxied = route.proxy is not None and url.scheme == "http"
            head_bytes = http1.request_head(
                request.method,
                f"http://{url.host_header}{url.target}" if proxied else url.target,
                url.host_header,
                request.headers,
                len(request.body),
                route.proxy_header if proxied else "",
                stream_decoding.ACCEPT_ENCODING,
            )
        except BaseException:
            pool.checkin(conn)  # nothing was written: the connection is as it was
            raise
        try:
            conn.settimeout(rem)
            if guard is not None:
                try:
                    guard.attach(conn.sock)
                except AbortedError:
                    pool.checkin(conn)  # nothing was written
                    conn = None
                    raise
            body = request.body
            try:
                conn.send(head_bytes + body if len(body) < 65536 else head_bytes)
                if len(body) >= 65536:
                    conn.send(body)
            except WriteError as failed:
                # a server may answer (say, 413) and close before it read the whole body:
                # its answer is the response, else the write's failure is the error
                try:
                    head = conn.read_head()
                except HTTPError:
                    raise failed from failed.__cause__
                reader = http1.Body(conn, head, request.method)
                reader.reusable = False
            else:
                head = conn.read_head()
                reader = http1.Body(conn, head, request.method)
        except BaseException:
            if conn is not None:
                pool.discard(conn)
            raise
        finally:
            if guard is not None:
                guard.detach()
        response = HttpResponse(conn, head, reader, pool, deadline)
        response._drain_here = request.stream
        if reader.done:
            response.close()  # no body: the connection goes back now
        return response


_default: HttpTransport | None = None
_default_lock = threading.Lock()


def default_transport() -> HttpTransport:
    """The process-wide live transport (created on first use)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = HttpTransport()
    return _default


#: the parent's transports, kept reachable in a forked child so that nothing of theirs runs
#: there (no finalizer closes the parent's connections from the child)
_abandoned: list[HttpTransport] = []


@on_fork_child
def _reset_after_fork() -> None:
    """In a forked child: fresh pools (the parent's connections are the parent's) and lock."""
    global _default, _default_lock
    if _default is not None:
        _abandoned.append(_default)
        _close_inherited_sockets(_default)
    _default = None
    _default_lock = threading.Lock()


def _close_inherited_sockets(transport: HttpTransport) -> None:
    """Close the child's copies of the parent's sockets (the descriptor only: no shutdown, no
    TLS close_notify, so the parent's connections are untouched)."""
    for pools in (transport.pools(), transport.pools(stream=True)):
        for pool in pools.values():
            for conn in pool.connections():
                try:
                    fd = conn.sock.detach()
                    if fd >= 0:
                        os.close(fd)
                except OSError:
                    pass
