"""Opening a connection to an origin: TCP (``TCP_NODELAY``), through an environment proxy when one
is named (``proxy``: a ``CONNECT`` tunnel for https), then TLS for https (``tls``; SNI is the
origin's host). An ``https://`` proxy gets TLS of its own first (verified, SNI the proxy's
host); the origin's TLS then runs inside it (``tunnel``: TLS in TLS). ``attach`` is told every
socket a cancel must be able to shut down (a ``SendGuard``'s: during a handshake a duplicate of
the TCP socket, whose shutdown wakes it; then the TLS socket over it).

Failures: ``ConnectTimeout``, ``ConnectError`` (refused, unresolvable, a TLS failure) or
``ProxyError``, each raised ``from`` the ``OSError`` / ``ssl.SSLError`` below it."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

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


def _tls(sock: socket.socket, server_hostname: str, attach: Attach | None, what: str) -> Any:
    """``sock`` wrapped in TLS (a ``SendGuard``'s cancel shuts a duplicate of it down while
    ``wrap_socket`` holds the descriptor); ``what``: "proxy" for the proxy's own session."""
    holder = sock.dup() if attach is not None else None
    try:
        if holder is not None and attach is not None:
            attach(holder)  # ``wrap_socket`` takes ``sock``'s descriptor away
        from .tls import ssl_context  # a plain-http process never loads OpenSSL here

        try:
            wrapped = ssl_context().wrap_socket(sock, server_hostname=server_hostname)
        except TimeoutError as exc:
            raise ConnectTimeout(
                f"The TLS handshake{_WITH[what]} did not complete in time"
            ) from exc
        except OSError as exc:  # ssl.SSLError among them
            raise _tls_failure(exc, what) from exc
        if attach is not None:
            attach(wrapped)
        return wrapped
    finally:
        if holder is not None:
            holder.close()


_WITH = {"origin": "", "proxy": " with the proxy"}


def _tls_failure(exc: OSError, what: str) -> TransportError:
    text = str(exc) or type(exc).__name__
    if what == "proxy":
        return ProxyError(f"The TLS handshake with the proxy failed: {text}")
    return ConnectError(text)


def _tls_in_tls(outer: Any, host: str) -> Any:
    """The origin's TLS session inside the proxy's (``tunnel``); the outer socket stays the
    one a cancel shuts down."""
    from .tls import ssl_context
    from .tunnel import tls_in_tls

    try:
        return tls_in_tls(outer, ssl_context(), host)
    except TimeoutError as exc:
        raise ConnectTimeout("The TLS handshake did not complete in time") from exc
    except OSError as exc:
        raise ConnectError(str(exc) or type(exc).__name__) from exc


def open_connection(
    scheme: str,
    host: str,
    port: int,
    timeout: float | None,
    proxy: Proxy | None = None,
    attach: Attach | None = None,
) -> Connection:
    """A new connection to ``scheme://host:port`` whose socket has ``timeout``."""
    if proxy is not None and proxy.scheme not in ("http", "https"):
        raise ProxyError(f"Only http:// and https:// proxies are supported, not {proxy.scheme}://")
    if proxy is not None:
        sock: Any = _tcp(proxy.host, proxy.port, timeout)
    else:
        sock = _tcp(host, port, timeout)
    try:
        if attach is not None:
            attach(sock)
        if proxy is not None and proxy.scheme == "https":
            sock = _tls(sock, proxy.host, attach, "proxy")  # verified, SNI the proxy's host
        if scheme == "https":
            if proxy is None:
                sock = _tls(sock, host, attach, "origin")
            else:
                _tunnel(sock, proxy, f"{host}:{port}")
                if proxy.scheme == "https":
                    sock = _tls_in_tls(sock, host)  # ``attach``-ed: the proxy's socket
                else:
                    sock = _tls(sock, host, attach, "origin")
    except BaseException as exc:
        sock.close()
        if isinstance(exc, TransportError) or not isinstance(exc, OSError):
            raise
        raise ConnectError(str(exc) or type(exc).__name__) from exc
    return Connection(sock)
