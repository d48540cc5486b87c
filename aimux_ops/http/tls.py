"""The TLS context of every connection: certificates verified, hostnames checked, SNI sent, ALPN
``http/1.1``. Its CA certificates: ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set, else certifi's
bundle when certifi is installed (what httpx used), else the system's default paths. One context
per process, made on first use (loading the CA bundle takes milliseconds)."""

from __future__ import annotations

import os
import ssl

__all__ = ["ssl_context"]

_context: list[ssl.SSLContext] = []


def _new_context() -> ssl.SSLContext:
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    if cafile is None and capath is None:
        try:
            import certifi

            cafile = certifi.where()
        except ImportError:  # the system's default paths
            pass
    ctx = ssl.create_default_context(cafile=cafile, capath=capath)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def ssl_context() -> ssl.SSLContext:
    """The process's TLS context (a race makes two equal ones; one is kept)."""
    if not _context:
        _context.append(_new_context())
    return _context[0]
