"""HTTP transport: one pooled httpx client, per-call deadlines, SSE parsing, cancellation, and the
transport-failure mapping (CONTRACT §1 "a transport failure keeps every layer as a cause node").

- ``HttpTransport.send`` posts a request and returns an ``HttpResponse`` once the status line and
  headers are in; the body is read with ``read()`` or, for streams, ``iter_events()`` (SSE
  ``(event, data)`` pairs, parsed from raw bytes without per-line decoding).
- ``Deadline``: ``timeoutMs`` spans the whole call (every attempt). Each request gets the remaining
  time as its httpx timeouts, and a watchdog shuts the socket down when the deadline passes while
  a body is being read, so a slow drip cannot outlive it: an entry of the process's one deadline
  thread (``deadlines``). Expiry → ``TimeoutError`` (code 12).
- The httpx / httpcore loggers get a filter that scrubs every record (their DEBUG lines carry raw
  response headers, an echoed key among them; httpx's INFO line the URL with its userinfo).
- Redirects: only a same-origin 307/308 is followed (same method, body and headers, up to
  ``MAX_REDIRECTS`` hops); any other 3xx is the answer (the provider maps it to an error), so a
  request with the API key never reaches another origin.
- ``HttpResponse.abort()`` (any thread) shuts the socket down so a blocked read wakes: used for
  stream cancellation.
- ``SendGuard``: a stream's request until its response headers are in. A cancel before its
  first byte is written keeps it from being sent (the stream clients' connections check the
  guard when they connect and write); a cancel after shuts its connection down, so a wait for
  the headers wakes at once (DESIGN.md "A cancel before the send").
- Failures map to ``APICallError`` raised ``from`` the httpx exception, whose own chain is
  httpcore's exception and the ``OSError`` below it. No message carries a URL (httpx's messages
  do not; the projection scrubs any that slip through).

httpx releases the interpreter lock while it waits on the socket; nothing here holds a lock across
a network wait.

One I/O stack: every request, a stream's too, goes through httpx's sync client on the thread that
runs its op (a caller's, or a stream's reader thread).
"""

from __future__ import annotations

import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from .._lazy import LazyModule

if TYPE_CHECKING:
    import http.cookiejar
    import socket

    import httpx

    from . import decoding as stream_decoding
else:
    # Cold start: a replayed call never touches the network, so httpx (and socket, logging)
    # load on the first live request, not with this module; the HTTP loggers get their filter
    # before httpx first runs.

    class _Httpx(LazyModule):
        __slots__ = ()

        def __getattr__(self, attr: str) -> Any:
            install_log_filters()
            return LazyModule.__getattr__(self, attr)

    httpx = _Httpx("httpx", globals(), "httpx")
    socket = LazyModule("socket", globals(), "socket")
    stream_decoding = LazyModule("aimux_ops.http.decoding", globals(), "stream_decoding")

from ..errors import AbortedError, AimuxError, APICallError, InvalidArgumentError
from ..errors import TimeoutError as AITimeoutError
from ..guest import Limits, on_fork_child
from ..guest import limits as guest_limits
from ..wire.redact import redact_headers, redact_url, scrub_message, scrub_text
from . import deadlines

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
        and (isinstance(exc, httpx.TimeoutException) or deadline.expired())
    ):
        return deadline.error(response.status if response is not None else None)
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return InvalidArgumentError(
            f"Invalid argument for model.baseURL: {_detail(exc)}", argument="model.baseURL"
        )
    if isinstance(exc, (httpx.LocalProtocolError, UnicodeEncodeError)):
        # the request itself cannot be sent as HTTP (a header name or value): not retryable
        return InvalidArgumentError(
            f"Invalid argument for headers: {_detail(exc)}", argument="headers"
        )
    if response is None:
        return APICallError(f"Cannot connect to API: {_detail(exc)}", is_retryable=True)
    return APICallError(
        f"The response body could not be read: {_detail(exc)}",
        status_code=response.status,
        is_retryable=not isinstance(exc, httpx.DecodingError),  # the same bytes would come again
        response_headers=redact_headers(response.headers),
    )


# -- the live transport ----------------------------------------------------------------------------


class HttpResponse:
    """A live httpx response whose body has not been read yet."""

    def __init__(self, raw: httpx.Response, deadline: Deadline) -> None:
        self._raw = raw
        self.status: int = raw.status_code
        self.reason: str = raw.reason_phrase
        self._headers: dict[str, str] | None = None  # ``headers``, made on first read
        self._deadline = deadline
        self._closed = False
        self._lock = threading.Lock()
        #: the deadline's watchdog (one process-wide thread, not a timer thread per response)
        self._timer: deadlines.Entry | None = None
        self._chunks: Any = None  # the body iterator once reading began
        self._eof = False  # the whole body was read
        self._broken = False  # a read failed
        self._aborted = False  # the socket was shut down (a cancel, the deadline)
        #: a stream read on its caller's thread (``HttpTransport.stream_client``): ``close``
        #: drains what is left of the body so its connection is reused
        self._drain_here = False
        rem = deadline.remaining()
        if rem is not None:
            self._timer = deadlines.after(rem, self._on_deadline)

    @property
    def headers(self) -> dict[str, str]:
        """Lower-cased names, raw values: read by error paths and recordings only, so a
        successful call does not build it."""
        headers = self._headers
        if headers is None:
            headers = self._headers = {k.lower(): v for k, v in self._raw.headers.items()}
        return headers

    @headers.setter
    def headers(self, value: dict[str, str]) -> None:
        self._headers = value

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
            if self._closed or self._raw.is_closed:
                return
            self._aborted = True
            _shutdown_socket(self._raw)

    def _raise(self, exc: BaseException) -> NoReturn:
        err = map_transport_error(exc, self._deadline, response=self)
        if self._deadline.fired:
            # the read failed because the watchdog shut the socket down: that error is an
            # artifact of the deadline, not its cause
            raise err from None
        raise err from exc

    def read(self) -> bytes:
        try:
            stream_decoding.check_content_encoding(self._raw.headers.get("content-encoding"))
            return self._raw.read()
        except httpx.HTTPError as exc:
            self._raise(exc)
        finally:
            self.close()

    def iter_bytes(self) -> Iterator[bytes]:
        """The body's bytes as each network read brings them, decoded (``stream_decoding``)."""
        try:
            decoder = stream_decoding.stream_decoder(self._raw.headers.get("content-encoding"))
            if decoder is not None:
                yield from _decoded(self._iter_raw(), decoder)
            else:
                yield from self._iter_raw()
        except httpx.HTTPError as exc:
            self._broken = True
            self._raise(exc)

    def _iter_raw(self) -> Iterator[bytes]:
        try:
            # the iterator is kept (not ``yield from``): closing this generator at the
            # provider's terminal event leaves it open, so ``close`` can drain the body
            body = self._chunks = self._raw.iter_raw()
            read = body.__next__
            h11 = _h11_of(self._raw)
            while True:
                try:
                    chunk = read()
                except StopIteration:
                    self._eof = True
                    return
                # every part the same network read brought comes with this chunk (an HTTP
                # chunk per event is the norm): one batch of events per network read,
                # never a wait for the next network read
                parts = [chunk]
                failed: httpx.HTTPError | None = None
                try:
                    while h11 is not None and _next_part_buffered(h11):
                        parts.append(read())
                except StopIteration:
                    self._eof = True
                except httpx.HTTPError as exc:
                    failed = exc
                yield b"".join(parts)
                if failed is not None:
                    raise failed
                if self._eof:
                    return
        except httpx.HTTPError:
            self._broken = True
            raise

    def iter_events(self) -> Iterator[SSEEvent]:
        return iter_sse(self.iter_bytes())

    def iter_event_batches(self) -> Iterator[SSEBatch]:
        """The events of each network read together (``iter_sse_batches``)."""
        return iter_sse_batches(self.iter_bytes())

    def close(self) -> None:
        with self._lock:
            self._closed = True
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        try:
            chunks = self._chunks
            if (
                chunks is not None
                and self._drain_here
                and not (self._eof or self._broken or self._aborted or self._deadline.fired)
            ):
                # a caller-thread stream stopped at its terminal event: read the body's
                # end here, briefly, so the connection goes back to the pool
                _drain_here(self._raw, chunks)
            self._raw.close()
        except Exception:  # noqa: BLE001 - closing a broken connection is best effort
            pass


def _h11_of(raw: httpx.Response) -> Any:
    """The h11 connection a response of our pools is read through, or None where it cannot be
    found: then each HTTP chunk is a read of its own. httpcore's private stream objects lead
    there (its pool's byte stream, the HTTP/1.1 connection's; versions pinned in
    pyproject.toml, and ``tests/test_c_stream_here.py`` fails should the path go)."""
    body = raw.extensions.get("aimux_body")
    obj: Any = getattr(body, "inner", None)
    for name in ("_stream", "_connection", "_h11_state"):
        obj = getattr(obj, name, None)
    return obj if hasattr(obj, "_receive_buffer") and hasattr(obj, "_reader") else None


_TRAILERS_END = re.compile(rb"\n\r?\n")


def _next_part_buffered(h11: Any) -> bool:
    """Whether h11 can hand over the body's next part (data, or its end) from the bytes it
    already holds, with no network read: h11's own readers' rules (``h11._readers``; h11's
    private state, its version pinned in pyproject.toml). A chunked
    body needs the last chunk's CRLF, a whole size line and then one data byte (or, for the
    last chunk, the end of its trailers); any other body, one byte."""
    try:
        data = h11._receive_buffer._data
        reader = h11._reader
        n = len(data)
        if not n:
            return False
        discard = getattr(reader, "_bytes_to_discard", None)
        if discard is None:  # a Content-Length or close-delimited body: every byte is data
            return True
        if reader._reading_trailer:
            return data[:1] == b"\n" or data[:2] == b"\r\n" or bool(_TRAILERS_END.search(data))
        i = len(discard)
        if reader._bytes_in_chunk > 0:
            return n > i
        eol = data.find(b"\r\n", i)
        if eol < 0:
            return False
        try:
            size = int(bytes(data[i:eol]).split(b";", 1)[0], 16)
        except ValueError:
            return True  # h11 rejects the size line without reading
        if size > 0:
            return bool(n > eol + 2)
        rest = data[eol + 2 :]
        return rest[:1] == b"\n" or rest[:2] == b"\r\n" or bool(_TRAILERS_END.search(rest))
    except (AttributeError, TypeError):
        return False


def _shutdown_socket(raw: httpx.Response) -> None:
    """Shut the socket of ``raw``'s connection down: a blocked read on it wakes with an error."""
    stream = raw.extensions.get("network_stream")
    if stream is not None:
        _shutdown_stream(stream)


def _shutdown_stream(stream: Any) -> None:
    """Shut an httpcore network stream's socket down (any thread): its blocked read wakes."""
    _shutdown_sock(stream.get_extra_info("socket"))


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


class _SocketHolder:
    """A network stream's stand-in while a sync connection's TLS handshake runs: a duplicate of
    the connection's socket (``ssl.wrap_socket`` takes the original's descriptor away before
    the handshake), so that a cancel's shutdown reaches the TCP connection and wakes it."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def get_extra_info(self, info: str) -> Any:
        return self._sock if info == "socket" else None


def _cancelled_send() -> AbortedError:
    return AbortedError("The call was cancelled.")


class SendGuard:
    """A stream's request until its response headers are in, and the stream's cancel racing it
    (DESIGN.md "A cancel before the send"). The op makes one per stream, registers ``cancel``
    with the stream's cancel and puts it on its request (``HTTPRequest.guard``).

    The send checks it before it takes a connection (``check``), and a stream client's
    connection checks it again, atomically with ``attach``, when it is opened and before each
    write (``_GuardedStream``): a cancel that comes before the request's first byte is written
    keeps the request from being written (the send raises ``AbortedError``, which the op takes
    for the cancel it is). A cancel that comes later shuts the attached connection down, so a
    connect's TLS handshake or the wait for the response headers wakes at once (httpcore then
    closes the connection) instead of lasting until the server answers or the deadline.
    """

    __slots__ = ("_lock", "_stream", "cancelled")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stream: Any = None  # the network stream the request is on, while it is sent
        self.cancelled = False

    def check(self) -> None:
        """Raise ``AbortedError`` once the stream is cancelled."""
        if self.cancelled:
            raise _cancelled_send()

    def attach(self, stream: Any) -> None:
        """The request goes out on ``stream`` now (httpcore's network stream): unless the
        stream was cancelled (then ``AbortedError``, nothing written), a cancel shuts it down."""
        with self._lock:
            if not self.cancelled:
                self._stream = stream
                return
        raise _cancelled_send()

    def detach(self) -> None:
        """The send is over (its headers are in, or it failed): the response's own ``abort``
        answers a cancel from now on."""
        with self._lock:
            self._stream = None

    @contextmanager
    def sending(self) -> Iterator[None]:
        """The request goes out in this context (the sending thread): the stream clients'
        connections check this guard (``_sending``); once the send is over, the guard is
        detached."""
        token = _sending.set(self)
        try:
            yield
        finally:
            _sending.reset(token)
            self.detach()

    def release(self, stream: Any) -> None:
        """``stream`` is done with (a TLS handshake's stand-in): detached if it still is."""
        with self._lock:
            if self._stream is stream:
                self._stream = None

    def cancel(self) -> None:
        """The stream is cancelled (any thread): nothing more is written, and the connection
        the request is on is shut down (under the lock: ``detach`` never lets it go back to a
        pool in between)."""
        with self._lock:
            self.cancelled = True
            stream, self._stream = self._stream, None
            if stream is not None:
                _shutdown_stream(stream)


#: the guard of the request being sent in this context (the sending thread's), which the stream
#: clients' connections check (``_GuardedStream``)
_sending: ContextVar[SendGuard | None] = ContextVar("aimux_sending", default=None)

#: tests: called with a guarded request on its sending thread right before it goes to httpx,
#: after the send's own ``check``, so a test can cancel there (the cancel then happens-before the
#: send) and show that the connection's check alone keeps the request from being written. None
#: in production: nothing is called.
before_guarded_send: Callable[[HTTPRequest], None] | None = None


def _attach_new(stream: Any) -> None:
    """A connection just opened (or upgraded to TLS) for the request of this context's guard."""
    guard = _sending.get()
    if guard is not None:
        try:
            guard.attach(stream)
        except BaseException:
            stream.close()
            raise


class _GuardedStream:
    """An httpcore sync network stream whose writes first attach it to the guard of the request
    being sent (``SendGuard.attach``: a cancelled request is never written). Reads go straight
    to the stream (``read`` is its own bound method: no extra call per network read)."""

    def __init__(self, inner: Any, known: weakref.WeakSet[_GuardedStream]) -> None:
        self._inner = inner
        self._known = known  # the backend's streams (a TLS upgrade's joins them)
        self.read = inner.read

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        guard = _sending.get()
        if guard is not None:
            guard.attach(self._inner)
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, *args: Any, **kwargs: Any) -> _GuardedStream:
        guard = _sending.get()
        raw = self._inner.get_extra_info("socket") if guard is not None else None
        if guard is None or not isinstance(raw, socket.socket):
            tls = self._inner.start_tls(*args, **kwargs)
        else:
            # the handshake's socket is the duplicate's too: a cancel during it shuts it down
            holder = _SocketHolder(raw.dup())
            try:
                guard.attach(holder)
                tls = self._inner.start_tls(*args, **kwargs)
            finally:
                guard.release(holder)
                holder._sock.close()
        _attach_new(tls)
        upgraded = _GuardedStream(tls, self._known)
        self._known.add(upgraded)
        return upgraded

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _GuardedBackend:
    """The network backend of every pool of ours (an ``httpcore.NetworkBackend`` over
    httpcore's own ``SyncBackend``): a connection is not opened for a cancelled request, and one
    opened while the request was cancelled is closed at once. It knows the streams it opened
    (``streams``, weakly), so a forked child can close its copies of their sockets."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.streams: weakref.WeakSet[_GuardedStream] = weakref.WeakSet()

    def _open(self, connect: Callable[..., Any], *args: Any, **kwargs: Any) -> _GuardedStream:
        guard = _sending.get()
        if guard is not None:
            guard.check()
        stream = connect(*args, **kwargs)
        _attach_new(stream)
        guarded = _GuardedStream(stream, self.streams)
        self.streams.add(guarded)
        return guarded

    def connect_tcp(self, *args: Any, **kwargs: Any) -> _GuardedStream:
        return self._open(self._inner.connect_tcp, *args, **kwargs)

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> _GuardedStream:
        return self._open(self._inner.connect_unix_socket, *args, **kwargs)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _httpx_error(exc: BaseException) -> type[httpx.HTTPError] | None:
    """The httpx exception class for an httpcore exception (the same name: httpx's own
    mapping), or None for any other exception."""
    for cls in type(exc).__mro__:
        if cls.__module__.startswith("httpcore"):
            mapped = getattr(httpx, cls.__name__, None)
            if isinstance(mapped, type) and issubclass(mapped, httpx.HTTPError):
                return mapped
    return None


def _raise_as_httpx(exc: Exception) -> NoReturn:
    """Raise ``exc`` as httpx raises it: its httpx class, with its message, ``from`` it."""
    mapped = _httpx_error(exc)
    if mapped is None:
        raise exc
    raise mapped(str(exc)) from exc


_transport_class: type[httpx.BaseTransport] | None = None


def _pool_transport(pool: Any) -> httpx.BaseTransport:
    """An ``httpx.BaseTransport`` over ``pool`` (an ``httpcore.ConnectionPool`` of ours):
    httpx's ``HTTPTransport`` in public API, so the pool's network backend is ours to give (its
    class is made on first use: httpx loads with the first live request)."""
    global _transport_class
    if _transport_class is None:

        class _ResponseStream(httpx.SyncByteStream):
            """A response body from our pool, its httpcore errors raised as httpx's."""

            def __init__(self, inner: Any) -> None:
                self.inner = inner  # httpcore's stream (``_h11_of`` reads it)

            def __iter__(self) -> Iterator[bytes]:
                try:
                    yield from self.inner
                except Exception as exc:  # noqa: BLE001 - httpcore's, as httpx's
                    _raise_as_httpx(exc)

            def close(self) -> None:
                close = getattr(self.inner, "close", None)
                if close is not None:
                    close()

        class _PoolTransport(httpx.BaseTransport):
            def __init__(self, pool: Any) -> None:
                self.pool = pool

            def handle_request(self, request: httpx.Request) -> httpx.Response:
                import httpcore

                url = request.url
                req = httpcore.Request(
                    method=request.method,
                    url=httpcore.URL(
                        scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
                    ),
                    headers=request.headers.raw,
                    content=request.stream,
                    extensions=request.extensions,
                )
                try:
                    resp = self.pool.handle_request(req)
                except Exception as exc:  # noqa: BLE001 - httpcore's, as httpx's
                    _raise_as_httpx(exc)
                body = _ResponseStream(resp.stream)
                return httpx.Response(
                    status_code=resp.status,
                    headers=resp.headers,
                    stream=body,
                    extensions={**resp.extensions, "aimux_body": body},
                )

            def close(self) -> None:
                self.pool.close()

        _transport_class = _PoolTransport
    return _transport_class(pool)  # type: ignore[call-arg]


_tls: list[Any] = []  # one TLS context for every pool (making one loads the CA bundle)


def _tls_context() -> Any:
    if not _tls:
        _tls.append(httpx.create_ssl_context())
    return _tls[0]


def _proxies_in_env() -> bool:
    """Whether the environment names a proxy (httpx's own clients then honour it)."""
    import urllib.request

    return any(k != "no" for k in urllib.request.getproxies())


def _pooled_client(
    limits: httpx.Limits, timeout: httpx.Timeout, tls: bool = True
) -> tuple[httpx.Client, _GuardedBackend | None]:
    """A client over a pool of ours with the guarded network backend (``_GuardedBackend``),
    and that backend. With a proxy in the environment: httpx's own client, which honours it
    (its sends still check the guard before they start; only a cancel after that is not seen
    before the headers, and a forked child leaves its copies of the sockets open), and None."""
    if _proxies_in_env():
        client = httpx.Client(
            timeout=timeout, limits=limits, follow_redirects=False, cookies=_no_cookies()
        )
        backend = None
    else:
        import httpcore

        backend = _GuardedBackend(httpcore.SyncBackend())
        pool = httpcore.ConnectionPool(
            # a plain-http origin's pool never touches OpenSSL: a child forked while another
            # thread loaded the CA bundle (OpenSSL's locks held, the GIL released) still calls
            ssl_context=_tls_context() if tls else None,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=backend,  # type: ignore[arg-type]  # (duck-typed: httpcore loads late)
        )
        client = httpx.Client(
            transport=_pool_transport(pool),
            timeout=timeout,
            follow_redirects=False,
            cookies=_no_cookies(),
        )
    # Its jar never stores a cookie: httpx need not wrap every response and its request in
    # urllib's cookie-compatible shapes to offer them to it (~150 Python calls per call).
    client.cookies.extract_cookies = _no_extraction  # type: ignore[method-assign]
    return client, backend


#: what is left of a stream's body after its terminal event is read for at most this long and
#: this many bytes (then the connection is closed as before: its socket shut down)
_DRAIN_S = 1.0
_DRAIN_BYTES = 64 * 1024


def _decoded(chunks: Iterator[bytes], decoder: stream_decoding.StreamDecoder) -> Iterator[bytes]:
    """``chunks`` decoded one by one (a read that completes nothing yields nothing), then what
    the decoder still holds at the end."""
    decode = decoder.decode
    for chunk in chunks:
        try:
            out = decode(chunk)
        except httpx.DecodingError as exc:
            salvaged = getattr(exc, "salvaged", b"")
            if salvaged:  # the events before the corruption are delivered, then the error
                yield salvaged
            raise
        if out:
            yield out
    tail = decoder.flush()
    if tail:
        yield tail


#: a stream read on its caller's thread waits at most this long for its body's end after its
#: terminal event (the end usually came with it: then nothing is waited for)
_DRAIN_HERE_S = 0.05


def _drain_here(raw: httpx.Response, chunks: Iterator[bytes]) -> None:
    """``_drain`` on the caller's thread (a sync response): read what is left of ``raw``'s
    body, at most ``_DRAIN_BYTES`` and ``_DRAIN_HERE_S``; a body read to its end puts the
    connection back in the pool (httpx closes the response then), else ``close`` closes it.

    The time bound is the reads' own socket timeout: for the drain, the connection's network
    stream (httpcore's ``network_stream`` extension) reads on this thread with what is left of
    the bound, so no timer thread is started (the end usually came with the terminal event: no
    read at all). Another thread that meanwhile got the connection from the pool reads as usual.
    """
    stream = raw.extensions.get("network_stream")
    read = getattr(stream, "read", None)
    ends = time.monotonic() + _DRAIN_HERE_S
    me = threading.get_ident()

    def bounded(max_bytes: int, timeout: float | None = None) -> bytes:
        if threading.get_ident() == me:
            timeout = max(ends - time.monotonic(), 0.0)
        data: bytes = read(max_bytes, timeout=timeout)  # type: ignore[misc]
        return data

    guard: deadlines.Entry | None = None
    #: the stream's own ``read`` attribute, if it has one (a guarded stream's: put back after)
    own_read = getattr(stream, "__dict__", {}).get("read")
    try:
        stream.read = bounded  # type: ignore[union-attr]
    except (AttributeError, TypeError):  # not a stream whose reads can be bounded: a deadline
        stream = None
        guard = deadlines.after(_DRAIN_HERE_S, lambda: _shutdown_unless_closed(raw))
    try:
        left = _DRAIN_BYTES
        for chunk in chunks:
            left -= len(chunk)
            if left < 0:
                break  # more than a body's end: not worth keeping the connection for
    except Exception:  # noqa: BLE001 - the connection is closed by the caller either way
        pass
    finally:
        if stream is not None:
            try:
                if own_read is not None:
                    stream.read = own_read
                else:
                    del stream.read
            except AttributeError:
                pass
        if guard is not None:
            guard.cancel()


def _shutdown_unless_closed(raw: httpx.Response) -> None:
    # as ``HttpResponse.abort``: a response closed meanwhile has handed its connection back
    if not raw.is_closed:
        _shutdown_socket(raw)


_no_cookies_class: type[http.cookiejar.CookieJar] | None = None


def _no_cookies() -> http.cookiejar.CookieJar:
    """A jar that never stores: the shared client must not carry one call's cookies (say, a
    provider's session cookie) into another call. (Its class is made with the first client:
    ``http.cookiejar`` loads with httpx, not with this module.)"""
    global _no_cookies_class
    if _no_cookies_class is None:
        import http.cookiejar

        class _NoCookies(http.cookiejar.CookieJar):
            def extract_cookies(self, response: Any, request: Any) -> None:
                return None

            def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
                return None

        _no_cookies_class = _NoCookies
    return _no_cookies_class()


def _no_extraction(response: httpx.Response) -> None:
    """The live clients' ``Cookies.extract_cookies``: their jar (``_no_cookies``) stores nothing."""
    return None


#: same-origin 307/308 hops followed per request (fetch's limit is 20)
MAX_REDIRECTS = 20
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme)


Origin = tuple[str, str, int | None]
#: request URLs parsed, by their text: ``(httpx.URL, origin)``. A call to an endpoint parsed
#: before neither parses its URL for the pool key nor again in ``build_request`` (about 400 of
#: a call's ~2,000 Python function calls; ``httpx.URL`` is immutable, so one parse serves every
#: thread). Bounded (new URLs past ``_URLS_MAX`` are parsed per call, as before); a URL httpx
#: rejects is not kept: each send fails on its own parse as before.
_URLS: dict[str, tuple[httpx.URL, Origin]] = {}
_URLS_MAX = 512
_NO_ORIGIN: Origin = ("", "", None)


def _parsed(url: str) -> tuple[httpx.URL | str, Origin]:
    """``url`` parsed and its origin (the pool key); an unparseable ``url`` as it is, with no
    origin (its send then fails with httpx's own error, as it always did)."""
    hit = _URLS.get(url)
    if hit is not None:
        return hit
    try:
        parsed = httpx.URL(url)
        hit = (parsed, _origin(parsed))
    except (httpx.InvalidURL, TypeError, ValueError):
        return url, _NO_ORIGIN
    if len(_URLS) < _URLS_MAX:
        _URLS[url] = hit
    return hit


def _build_request(
    client: httpx.Client,
    request: HTTPRequest,
    url: str | httpx.URL,
    rem: float | None,
    pool_s: float | None = None,
) -> httpx.Request:
    """``request`` sent to ``url`` (the first hop or a followed redirect's target).

    Its timeout is what is left of the deadline (``rem``; the client's default without one),
    with the wait for a pooled connection capped at ``pool_s`` when given.
    """
    return client.build_request(
        request.method,
        url,
        content=request.body,
        headers=request.headers,
        timeout=(
            httpx.USE_CLIENT_DEFAULT
            if rem is None
            else httpx.Timeout(rem)
            if pool_s is None
            else httpx.Timeout(rem, pool=min(rem, pool_s))
        ),
    )


def _same_origin_target(raw: httpx.Response) -> httpx.URL | None:
    """Where a 307/308 points when that is the request's own origin, else None."""
    location = raw.headers.get("location")
    if not location:
        return None
    try:
        target = raw.request.url.join(location)
    except (httpx.InvalidURL, ValueError):
        return None
    return target if _origin(target) == _origin(raw.request.url) else None


def _send_following(
    client: httpx.Client,
    request: HTTPRequest,
    deadline: Deadline,
    rem: float | None,
    pool_s: float | None,
    send: Callable[[httpx.Request, float | None], httpx.Response],
    close: Callable[[httpx.Response], object],
) -> httpx.Response:
    """Send ``request`` through ``send(req, rem)`` (``rem``: the deadline left for that hop),
    following redirects: a same-origin 307/308 is followed with the same method, body and
    headers (as fetch does), up to ``MAX_REDIRECTS`` hops; any other redirect comes back as
    the answer: the request carries the API key, and another origin never gets it (and the
    same origin is the same pool)."""
    raw = send(_build_request(client, request, _parsed(request.url)[0], rem, pool_s), rem)
    hops = 0
    while raw.status_code in (307, 308) and hops < MAX_REDIRECTS:
        target = _same_origin_target(raw)
        if target is None:
            break
        close(raw)
        hops += 1
        rem = deadline.remaining()
        if rem is not None and rem <= 0:
            raise deadline.error()
        raw = send(_build_request(client, request, target, rem, pool_s), rem)
    return raw


def _pool_limit_error(lim: Limits) -> APICallError:
    """A full per-host pool: no connection became free in time, nothing was sent."""
    return APICallError(
        f"Cannot connect to API: the connection pool for this host is at its limit of "
        f"{lim.pool_max_per_host} connections (AIMUX_POOL_MAX_PER_HOST) and none became free "
        f"within {lim.pool_timeout_ms} ms (AIMUX_POOL_TIMEOUT_MS); the request was not sent",
        is_retryable=True,
    )


class HttpTransport:
    """Pooled sync httpx clients, one per host (thread-safe; shared by every call of the process).

    Each host (scheme, host, port) has its own pool of at most ``AIMUX_POOL_MAX_PER_HOST``
    connections, so streams held open to one server never starve calls to another; waiting for
    a free connection is bounded by ``AIMUX_POOL_TIMEOUT_MS`` (``guest.Limits``). ``client``, when
    given, serves every host (tests)."""

    def __init__(self, client: httpx.Client | None = None) -> None:
        self.limits = guest_limits()
        self._fixed = client
        self._clients: dict[Origin, httpx.Client] = {}
        self._lock = threading.Lock()
        #: the pool of every stream's requests (``stream_client``)
        self._stream_client: httpx.Client | None = None
        #: the network backends of our pools (a forked child closes their sockets)
        self.backends: list[_GuardedBackend] = []

    def _pooled(
        self, limits: httpx.Limits, timeout: httpx.Timeout, tls: bool = True
    ) -> httpx.Client:
        client, backend = _pooled_client(limits, timeout, tls)
        if backend is not None:
            self.backends.append(backend)
        return client

    def _new_client(self, tls: bool = True) -> httpx.Client:
        lim = self.limits
        return self._pooled(
            httpx.Limits(
                max_connections=lim.pool_max_per_host,
                max_keepalive_connections=min(lim.pool_max_idle_per_host, lim.pool_max_per_host),
            ),
            httpx.Timeout(None, connect=60.0, pool=lim.pool_timeout_ms / 1000.0),
            tls,
        )

    def stream_client(self) -> httpx.Client:
        """The pool of every stream's requests: no connection limit (a stream never waits for
        another one's connection, and streams never fill the per-host pools of calls), 8 idle
        keep-alive connections; a cancelled stream's request is never sent (``SendGuard``)."""
        client = self._stream_client
        if client is None:
            with self._lock:
                client = self._stream_client
                if client is None:
                    client = self._stream_client = self._pooled(
                        httpx.Limits(max_connections=None, max_keepalive_connections=8),
                        httpx.Timeout(None, connect=60.0),
                    )
        return client

    def client_for(self, url: str) -> httpx.Client:
        """The pooled client of ``url``'s host (created on first use)."""
        if self._fixed is not None:
            return self._fixed
        key = _parsed(url)[1]  # no origin: the send fails with the URL's own error
        client = self._clients.get(key)
        if client is None:
            with self._lock:
                client = self._clients.get(key)
                if client is None:
                    client = self._clients[key] = self._new_client(tls=key[0] != "http")
        return client

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

        def send_hop(req: httpx.Request, rem: float | None) -> httpx.Response:
            nonlocal hop_rem
            hop_rem = rem
            if guard is None:
                return client.send(req, stream=True)
            with guard.sending():  # this thread's send: its connection checks the guard
                return client.send(req, stream=True)

        here = request.stream and self._fixed is None
        try:
            client = self.stream_client() if here else self.client_for(request.url)
            raw = _send_following(
                client, request, deadline, rem, pool_s, send_hop, lambda raw: raw.close()
            )
        except httpx.PoolTimeout as exc:
            if guard is not None and guard.cancelled:
                raise _cancelled_send() from exc
            if hop_rem is not None and hop_rem < pool_s:
                # the call's own deadline ended the wait for a free connection
                raise deadline.error() from _pool_limit_error(self.limits)
            raise _pool_limit_error(self.limits) from exc
        except (httpx.HTTPError, httpx.InvalidURL, OSError, UnicodeEncodeError) as exc:
            if guard is not None and guard.cancelled:
                # the cancel shut the connection down (a connect, the wait for the headers)
                raise _cancelled_send() from exc
            raise map_transport_error(exc, deadline) from exc
        response = HttpResponse(raw, deadline)
        response._drain_here = here
        return response


# -- logs ------------------------------------------------------------------------------------------

#: every logger httpx and httpcore write to (their DEBUG records carry raw response headers, and
#: httpx's INFO line carries the request URL with any userinfo in it)
HTTP_LOGGERS = (
    "httpx",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
)
_LOG_URL_RE = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,15}://[^\s'\"<>()\[\]{}]+")


def scrub_log_text(text: str) -> str:
    """A log line without secrets: URLs lose userinfo and secret query values, then every
    remembered key and key-shaped token is redacted."""
    return scrub_text(_LOG_URL_RE.sub(lambda m: redact_url(m.group(0)), text))


def _scrubbing_filter() -> Any:
    import logging

    class _ScrubSecrets(logging.Filter):
        """Rewrites each record of the HTTP loggers to its scrubbed text (arguments folded in)."""

        def filter(self, record: logging.LogRecord) -> bool:
            try:
                text = record.getMessage()
            except Exception:  # noqa: BLE001 - a broken record is dropped rather than leaked
                return False
            record.msg = scrub_log_text(text)
            record.args = None
            return True

    return _ScrubSecrets()


#: the filter on every HTTP logger, made (with logging loaded) before httpx first runs
_LOG_FILTER: Any = None


def install_log_filters() -> None:
    """Attach the scrubbing filter to every HTTP logger (idempotent; httpx's stand-in calls it
    on its first read, before httpx runs anything). No lock (fork safety): two threads racing
    here at most put two equal filters on a logger, and scrubbing twice changes nothing."""
    global _LOG_FILTER
    import logging

    if _LOG_FILTER is None:
        _LOG_FILTER = _scrubbing_filter()
    scrubbing = _LOG_FILTER
    for name in HTTP_LOGGERS:
        log = logging.getLogger(name)
        if scrubbing not in log.filters:
            log.addFilter(scrubbing)


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
#: there (finalizers would close the parent's connections through pool locks another thread
#: may have held at fork time)
_abandoned: list[HttpTransport] = []


@on_fork_child
def _reset_after_fork() -> None:
    """In a forked child: a fresh pool (the parent's connections are the parent's) and lock."""
    global _default, _default_lock
    if _default is not None:
        _abandoned.append(_default)
        _close_inherited_sockets(_default)
    _default = None
    _default_lock = threading.Lock()


def _close_inherited_sockets(transport: HttpTransport) -> None:
    """Close the child's copies of the parent's pooled sockets (the fd only: no shutdown, no
    TLS close_notify, so the parent's connections are untouched): every stream our network
    backends opened and still know (``_GuardedBackend.streams``; httpx's own clients, used with
    a proxy in the environment, are left as they are)."""
    for backend in transport.backends:
        for stream in list(backend.streams):
            sock = stream.get_extra_info("socket")
            if isinstance(sock, socket.socket):
                try:
                    os.close(sock.detach())
                except OSError:
                    pass
