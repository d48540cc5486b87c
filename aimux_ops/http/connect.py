"""Opening a connection to an origin: TCP (``TCP_NODELAY``), through an environment proxy when one
is named (``proxy``: a ``CONNECT`` tunnel for https), then TLS for https (``tls``; SNI is the
origin's host). ``attach`` is told every socket a cancel must be able to shut down (a
``SendGuard``'s: during the handshake a duplicate of the TCP socket, whose shutdown wakes it).

Failures: ``ConnectTimeout``, ``ConnectError`` (refused, unresolvable, a TLS failure) or
``ProxyError``, each raised ``from`` the ``OSError`` / ``ssl.SSLError`` below it."""

from __future__ import annotations

import socket
from collections.abc import Callable

from .connection import Connection, request_head
from .exceptions import ConnectError, ConnectTimeout, ProxyError, TransportError
from .proxy import Proxy

__all__ = ["open_connection"]

Attach = Callable[[socket.socket | None], None]


def _tcp(host: str, port: int, timeout: float | None) -> socket.socket:
    try:
        sock = socket.create_connection((host, port), timeout)
    except TimeoutError as exc:
        raise ConnectTimeout("The connection was not established in time") from exc
    except OSError as exc:
        raise ConnectError(str(exc) or type(exc).__name__) from exc
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:  # pragma: no cover - not a TCP socket
        pass
    return sock


def _tunnel(sock: socket.socket, proxy: Proxy, host_port: str) -> None:
    """A ``CONNECT`` tunnel to ``host_port`` through the proxy ``sock`` is connected to."""
    extra = f"Proxy-Authorization: {proxy.authorization}\r\n" if proxy.authorization else ""
    conn = Connection(sock)
    conn.send(request_head("CONNECT", host_port, host_port, {}, 0, extra))
    head = conn.read_head()
    if not 200 <= head.status < 300:
        raise ProxyError(f"The proxy answered {head.status} to the tunnel request")
    if conn.buf:
        raise ProxyError("The proxy sent bytes before the tunnel was open")


def open_connection(
    scheme: str,
    host: str,
    port: int,
    timeout: float | None,
    proxy: Proxy | None = None,
    attach: Attach | None = None,
) -> Connection:
    """A new connection to ``scheme://host:port`` whose socket has ``timeout``."""
    if proxy is not None and proxy.scheme != "http":
        raise ProxyError(f"Only http:// proxies are supported, not {proxy.scheme}://")
    if proxy is not None:
        sock = _tcp(proxy.host, proxy.port, timeout)
    else:
        sock = _tcp(host, port, timeout)
    try:
        if attach is not None:
            attach(sock)
        if scheme == "https":
            if proxy is not None:
                _tunnel(sock, proxy, f"{host}:{port}")
            holder = sock.dup() if attach is not None else None
            try:
                if holder is not None and attach is not None:
                    attach(holder)  # ``wrap_socket`` takes ``sock``'s descriptor away
                from .tls import ssl_context  # a plain-http process never loads OpenSSL here

                try:
                    sock = ssl_context().wrap_socket(sock, server_hostname=host)
                except TimeoutError as exc:
                    raise ConnectTimeout("The TLS handshake did not complete in time") from exc
                except OSError as exc:  # ssl.SSLError among them
                    raise ConnectError(str(exc) or type(exc).__name__) from exc
                if attach is not None:
                    attach(sock)
            finally:
                if holder is not None:
                    holder.close()
    except BaseException as exc:
        sock.close()
        if isinstance(exc, TransportError) or not isinstance(exc, OSError):
            raise
        raise ConnectError(str(exc) or type(exc).__name__) from exc
    return Connection(sock)
