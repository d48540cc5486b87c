"""TLS inside TLS: the origin's TLS session over an ``https://`` proxy's own TLS connection
(``CONNECT`` tunnel), with the stdlib's ``SSLObject`` over two ``MemoryBIO`` s on the proxy's
blocking ``SSLSocket`` (``outer``).

``TunnelSocket`` is what a ``Connection`` needs of a socket: ``sendall`` / ``recv`` (one read
of ``outer`` at most per call, as a TLS socket's ``recv`` returns one record), the timeout
(``outer``'s), ``pending``, ``fileno`` / ``detach`` / ``close`` (``outer``'s descriptor: a forked
child closes it without a word to the peer) and ``shutdown``, which shuts ``outer``'s raw socket
down (never a TLS close: any thread may call it, and a blocked read wakes)."""

from __future__ import annotations

import socket
import ssl

__all__ = ["TunnelSocket", "tls_in_tls"]

_READ = 64 * 1024


class TunnelSocket:
    __slots__ = ("_in", "_obj", "_out", "outer")

    def __init__(self, outer: ssl.SSLSocket, ctx: ssl.SSLContext, server_hostname: str) -> None:
        self.outer = outer
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._obj = ctx.wrap_bio(self._in, self._out, server_hostname=server_hostname)

    def _flush(self) -> None:
        if self._out.pending:
            self.outer.sendall(self._out.read())

    def _fill(self) -> bool:
        """One read of ``outer`` into the session; False at its end."""
        data = self.outer.recv(_READ)
        if not data:
            self._in.write_eof()
            return False
        self._in.write(data)
        return True

    def do_handshake(self) -> None:
        while True:
            try:
                self._obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._flush()
                if not self._fill():
                    raise ssl.SSLEOFError(
                        ssl.SSL_ERROR_EOF, "the tunnel closed during the origin's TLS handshake"
                    ) from None
        self._flush()

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        for start in range(0, len(view), _READ):
            self._obj.write(view[start : start + _READ])
            self._flush()

    def recv(self, size: int) -> bytes:
        while True:
            try:
                return self._obj.read(size)
            except ssl.SSLWantReadError:
                self._flush()  # a session ticket's or key update's answer
                if self._in.eof or not self._fill():
                    if self._in.eof and not self._in.pending:
                        return b""  # the tunnel ended mid-record: the end of the stream
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return b""  # the end of the stream (a ragged one too, as an SSLSocket's)

    def pending(self) -> int:
        return self._obj.pending() + self._in.pending + self.outer.pending()

    def settimeout(self, timeout: float | None) -> None:
        self.outer.settimeout(timeout)

    def gettimeout(self) -> float | None:
        return self.outer.gettimeout()

    def fileno(self) -> int:
        return self.outer.fileno()

    def detach(self) -> int:
        return self.outer.detach()

    def shutdown(self, how: int) -> None:
        socket.socket.shutdown(self.outer, how)  # the raw socket: never a TLS unwrap

    def close(self) -> None:
        self.outer.close()


def tls_in_tls(outer: ssl.SSLSocket, ctx: ssl.SSLContext, server_hostname: str) -> TunnelSocket:
    """The origin's TLS session through ``outer`` (the proxy's), handshaken and verified."""
    tunnel = TunnelSocket(outer, ctx, server_hostname)
    tunnel.do_handshake()
    return tunnel
