"""One HTTP/1.1 connection over a blocking socket: write a request, read the response's head, then
its body (``Content-Length``, chunked or close-delimited), every line and header block bounded.

- ``request_head`` builds a request's head; a header name that is not a token, or a name or value
  with CR, LF or NUL, is a ``LocalProtocolError`` (nothing is written).
- ``Connection.read_head`` skips interim 1xx answers (101 is an error: nothing here switches
  protocols) and parses the status line and headers of at most ``MAX_HEAD`` bytes
  (``MAX_HEADERS`` fields). Its framing (RFC 9112 §6.3): no body for a HEAD request, 204 or 304;
  ``Transfer-Encoding: chunked``; else ``Content-Length`` (every value one number); else the
  body ends when the server closes. A response with both ``Transfer-Encoding`` and
  ``Content-Length`` or any other transfer coding is refused (a smuggling vector).
- ``Body.parts`` hands over every complete part of the bytes held (no I/O) and ``Body.fill`` does
  one network read: a reader gets all that one read brought at once. A chunk size line is at
  most ``MAX_CHUNK_LINE`` bytes of hex; a chunk's data must end in CRLF; trailers count against
  ``MAX_HEAD``. A body cut short is a ``RemoteProtocolError``.
- A connection is reusable when its response was HTTP/1.1 without ``Connection: close``, framed
  by length or chunks and read to its end with no byte left over.

Socket errors become this package's exceptions (``exceptions``) raised ``from`` the ``OSError``.
No message carries a URL or a header value.
"""

from __future__ import annotations

import re
import socket

from .exceptions import (
    LocalProtocolError,
    ReadError,
    ReadTimeout,
    RemoteProtocolError,
    WriteError,
    WriteTimeout,
)

__all__ = ["MAX_CHUNK_LINE", "MAX_HEAD", "MAX_HEADERS", "Body", "Connection", "request_head"]

#: the status line and headers of one response (h11's default is 16 KiB)
MAX_HEAD = 64 * 1024
MAX_HEADERS = 256
#: a chunk's size line, extensions included
MAX_CHUNK_LINE = 4096
READ_SIZE = 64 * 1024

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: ([^\r\n]*))?")
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")
_DIGITS = re.compile(r"[0-9]{1,18}")
#: header names already checked to be tokens (bounded: a process sends a few dozen)
_GOOD_NAMES: set[str] = set()


def _check_header(name: str, value: str) -> None:
    if name not in _GOOD_NAMES:
        if _TOKEN.fullmatch(name) is None:
            raise LocalProtocolError("Illegal header name (not an HTTP token)")
        if len(_GOOD_NAMES) < 1024:
            _GOOD_NAMES.add(name)
    if "\r" in value or "\n" in value or "\0" in value:
        raise LocalProtocolError("Illegal header value (CR, LF or NUL)")


def request_head(
    method: str,
    target: str,
    host: str,
    headers: dict[str, str],
    body_len: int,
    extra: str = "",
    accept_encoding: str | None = None,
) -> bytes:
    """The head of a request (``extra``: more header lines, each ending in CRLF, already safe).

    ``Host``, ``Accept: */*``, ``Accept-Encoding`` (when given) and ``Content-Length`` are added
    unless ``headers`` has them (any case); a value that is not ASCII raises
    ``UnicodeEncodeError``."""
    lines = [f"{method} {target} HTTP/1.1\r\n"]
    seen_host = seen_accept = seen_encoding = False
    for name, value in headers.items():
        _check_header(name, value)
        low = name.lower()
        if low == "host":
            seen_host = True
        elif low == "accept":
            seen_accept = True
        elif low == "accept-encoding":
            seen_encoding = True
        elif low == "content-length" or low == "transfer-encoding":
            continue  # the body's length is ours to say
        lines.append(f"{name}: {value}\r\n")
    if not seen_host:
        lines.insert(1, f"Host: {host}\r\n")
    if not seen_accept:
        lines.append("Accept: */*\r\n")
    if accept_encoding and not seen_encoding:
        lines.append(f"Accept-Encoding: {accept_encoding}\r\n")
    if body_len or method not in ("GET", "HEAD"):
        lines.append(f"Content-Length: {body_len}\r\n")
    lines.append(extra)
    lines.append("\r\n")
    return "".join(lines).encode("ascii")


class Head:
    """A response's status line and headers (names lower-cased, repeated ones joined by ", ")."""

    __slots__ = ("headers", "http10", "reason", "status")

    def __init__(self, status: int, reason: str, headers: dict[str, str], http10: bool) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.http10 = http10


def _parse_head(raw: bytes) -> Head:
    status_line, _, raw = raw.partition(b"\n")
    m = _STATUS_LINE.fullmatch(status_line.rstrip(b"\r"))
    if m is None:
        raise RemoteProtocolError("The server's status line is not HTTP/1.x")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
    lines = text.split("\n") if text else []
    if len(lines) > MAX_HEADERS:
        raise RemoteProtocolError(f"The response has more than {MAX_HEADERS} header fields")
    headers: dict[str, str] = {}
    for line in lines:
        line = line.rstrip("\r")
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or _TOKEN.fullmatch(name) is None:
            raise RemoteProtocolError("The response has a malformed header line")
        name = name.lower()
        value = value.strip(" \t")
        old = headers.get(name)
        headers[name] = value if old is None else f"{old}, {value}"
    reason = (m.group(3) or b"").decode("latin-1")
    return Head(int(m.group(2)), reason, headers, m.group(1) == b"0")


def _eof() -> EOFError:
    """The socket-level cause of a message cut short: a read found the end of the stream."""
    return EOFError("The peer closed its side of the connection (a read returned end of stream)")


class Connection:
    """One socket (plain or TLS) speaking HTTP/1.1, one request at a time."""

    __slots__ = ("__weakref__", "buf", "idle_at", "reused", "sock", "timeout")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""  # bytes received and not yet parsed
        self.idle_at = 0.0  # when it was last put back in its pool
        self.reused = False  # it served a request before this one
        self.timeout: float | None = sock.gettimeout()

    def settimeout(self, timeout: float | None) -> None:
        if timeout != self.timeout:
            self.sock.settimeout(timeout)
            self.timeout = timeout

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except TimeoutError as exc:
            raise WriteTimeout("The request could not be written in time") from exc
        except OSError as exc:
            raise WriteError(str(exc) or type(exc).__name__) from exc

    def recv(self) -> bytes:
        """One network read (b"" at the end of the connection)."""
        try:
            return self.sock.recv(READ_SIZE)
        except TimeoutError as exc:
            raise ReadTimeout("No data was received in time") from exc
        except OSError as exc:
            raise ReadError(str(exc) or type(exc).__name__) from exc

    def read_head(self) -> Head:
        """The next final response's head (interim 1xx answers skipped)."""
        while True:
            head = self._read_one_head()
            if head.status >= 200:
                return head
            if head.status == 101:
                raise RemoteProtocolError("The server switched protocols (101) unasked")

    def _read_one_head(self) -> Head:
        searched = 0  # the head's end is not before this offset (minus 3)
        while True:
            buf = self.buf
            end = buf.find(b"\r\n\r\n", max(searched - 3, 0))
            if end >= 0:
                cut = end + 4
            else:
                m = _HEAD_END.search(buf, max(searched - 3, 0)) if b"\n\n" in buf else None
                cut = m.end() if m is not None else -1
                end = m.start() if m is not None else -1
            if end >= 0:
                if end > MAX_HEAD:
                    raise RemoteProtocolError(f"The response head is over {MAX_HEAD} bytes")
                self.buf = buf[cut:]
                return _parse_head(buf[:end].lstrip(b"\r\n"))
            if len(buf) > MAX_HEAD:
                raise RemoteProtocolError(f"The response head is over {MAX_HEAD} bytes")
            searched = len(buf)
            data = self.recv()
            if not data:
                if buf:
                    raise RemoteProtocolError(
                        "The server closed the connection mid-head"
                    ) from _eof()
                raise RemoteProtocolError(
                    "The server disconnected without sending a response"
                ) from _eof()
            self.buf = buf + data if buf else data

    def stale(self) -> bool:
        """Whether an idle connection cannot carry a request: the server closed it or sent
        something unasked (a non-blocking peek; a TLS record that is pending counts)."""
        if self.buf:
            return True
        sock = self.sock
        pending = getattr(sock, "pending", None)
        try:
            if pending is not None and pending():
                return True
            self.settimeout(0.0)  # a socket with a timeout would wait for the peek
            # the TCP socket's own bytes (TLS in TLS: the proxy's socket, ``tunnel``)
            socket.socket.recv(getattr(sock, "outer", sock), 1, socket.MSG_PEEK)
        except BlockingIOError:
            return False
        except (OSError, ValueError):
            return True
        return True  # EOF, or bytes nobody asked for

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


_NO_BODY, _LENGTH, _CHUNKED, _CLOSE = range(4)
# a chunked body's states
_SIZE, _DATA, _DATA_END, _TRAILER, _DONE = range(5)


def framing(head: Head, method: str) -> tuple[int, int]:
    """``(kind, length)`` of a response's body (RFC 9112 §6.3)."""
    if method == "HEAD" or head.status in (204, 304) or head.status < 200:
        return _NO_BODY, 0
    headers = head.headers
    te = headers.get("transfer-encoding")
    cl = headers.get("content-length")
    if te is not None:
        if cl is not None:
            raise RemoteProtocolError("The response has both Content-Length and Transfer-Encoding")
        if te.strip(" \t").lower() != "chunked":
            raise RemoteProtocolError("The response has a Transfer-Encoding other than chunked")
        return _CHUNKED, 0
    if cl is not None:
        values = {v.strip(" \t") for v in cl.split(",")}
        if len(values) != 1 or _DIGITS.fullmatch(next(iter(values))) is None:
            raise RemoteProtocolError("The response has an invalid Content-Length")
        return _LENGTH, int(values.pop())
    return _CLOSE, 0


class Body:
    """The body of one response on ``conn``: ``parts()`` takes what the bytes held complete,
    ``fill()`` reads once more; ``done`` once the body ended."""

    __slots__ = ("_chunk_state", "_left", "_trailer", "conn", "done", "kind", "reusable")

    def __init__(self, conn: Connection, head: Head, method: str) -> None:
        self.conn = conn
        self.kind, self._left = framing(head, method)
        self._chunk_state = _SIZE
        self._trailer = 0  # trailer bytes seen
        keep = not head.http10 and "close" not in head.headers.get("connection", "").lower()
        self.reusable = keep and self.kind != _CLOSE
        self.done = self.kind == _NO_BODY or (self.kind == _LENGTH and self._left == 0)

    def fill(self) -> bool:
        """One network read into the connection's buffer; False at the connection's end
        (which ends a close-delimited body and cuts any other one short)."""
        data = self.conn.recv()
        if not data:
            if self.kind == _CLOSE:
                self.done = True
                return False
            raise RemoteProtocolError(
                "The server closed the connection before the whole body was sent"
            ) from _eof()
        buf = self.conn.buf
        self.conn.buf = buf + data if buf else data
        return True

    def parts(self) -> bytes:
        """Every complete part of the body held in the buffer, joined (b"" when none; always
        once the body ended: the connection's later bytes are another response's)."""
        if self.done:
            return b""
        conn = self.conn
        kind = self.kind
        if kind == _LENGTH:
            buf = conn.buf
            if len(buf) <= self._left:
                conn.buf = b""
                self._left -= len(buf)
            else:
                conn.buf = buf[self._left :]
                buf = buf[: self._left]
                self._left = 0
            if self._left == 0:
                self.done = True
            return buf
        if kind == _CHUNKED:
            return self._chunks()
        if kind == _CLOSE:
            buf, conn.buf = conn.buf, b""
            return buf
        return b""

    def _chunks(self) -> bytes:
        conn = self.conn
        buf = conn.buf
        out: list[bytes] = []
        pos = 0
        n = len(buf)
        state = self._chunk_state
        while pos < n:
            if state == _DATA:
                take = min(self._left, n - pos)
                out.append(buf[pos : pos + take])
                pos += take
                self._left -= take
                if self._left == 0:
                    state = _DATA_END
            elif state == _SIZE:
                eol = buf.find(b"\r\n", pos, pos + MAX_CHUNK_LINE + 2)
                if eol < 0:
                    if n - pos > MAX_CHUNK_LINE:
                        raise RemoteProtocolError("A chunk size line is too long")
                    break
                size_text = buf[pos:eol].split(b";", 1)[0].strip(b" \t")
                if _CHUNK_SIZE.fullmatch(size_text) is None:
                    raise RemoteProtocolError("A chunk size is not hexadecimal")
                pos = eol + 2
                size = int(size_text, 16)
                if size:
                    self._left = size
                    state = _DATA
                else:
                    state = _TRAILER
            elif state == _DATA_END:
                if n - pos < 2:
                    if buf[pos:] != b"\r":
                        raise RemoteProtocolError("A chunk's data does not end in CRLF")
                    break
                if buf[pos : pos + 2] != b"\r\n":
                    raise RemoteProtocolError("A chunk's data does not end in CRLF")
                pos += 2
                state = _SIZE
            elif state == _TRAILER:
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    if self._trailer + n - pos > MAX_HEAD:
                        raise RemoteProtocolError(f"The trailers are over {MAX_HEAD} bytes")
                    break
                self._trailer += eol + 2 - pos
                if self._trailer > MAX_HEAD:
                    raise RemoteProtocolError(f"The trailers are over {MAX_HEAD} bytes")
                empty = eol == pos
                pos = eol + 2
                if empty:
                    state = _DONE
                    self.done = True
                    break
            else:
                break
        self._chunk_state = state
        conn.buf = buf[pos:] if pos < n else b""
        return out[0] if len(out) == 1 else b"".join(out)

    def read_all(self) -> bytes:
        """The rest of the body."""
        out = [self.parts()]
        while not self.done:
            if not self.fill():
                break
            out.append(self.parts())
        return b"".join(out)

    def end_clean(self) -> bool:
        """Whether the connection can carry another request now."""
        return self.done and self.reusable and not self.conn.buf
