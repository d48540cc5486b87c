"""Proxies from the environment: ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY`` and ``NO_PROXY``
(either case) through urllib's ``getproxies`` and ``proxy_bypass_environment``, as httpx honoured
them. An ``http://`` or ``https://`` proxy (TLS to the proxy itself, verified: ``connect``): a
request to an http origin goes to it in absolute form, one to an https origin through a
``CONNECT`` tunnel; the proxy URL's userinfo becomes ``Proxy-Authorization: Basic`` (never in a
message: ``Proxy``'s repr leaves it out). Any other proxy scheme (SOCKS) is a ``ProxyError`` at
connect."""

from __future__ import annotations

import base64
import os
import urllib.parse
from dataclasses import dataclass, field

__all__ = ["Proxy", "proxy_for"]


@dataclass(frozen=True)
class Proxy:
    scheme: str
    host: str
    port: int
    #: the ``Proxy-Authorization`` value, or None
    authorization: str | None = field(default=None, repr=False)


def _parse(url: str) -> Proxy:
    if "://" not in url:
        url = "http://" + url
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    auth = None
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
        auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    port = parts.port or (443 if scheme == "https" else 80)
    return Proxy(scheme, parts.hostname or "", port, auth)


def proxy_for(scheme: str, host: str) -> Proxy | None:
    """The proxy the environment names for ``scheme://host``, or None (none named, or the host
    is in ``NO_PROXY``)."""
    if not any(name[-6:].lower() == "_proxy" for name in os.environ):
        return None  # (urllib.request, a heavy import, is not needed then)
    import urllib.request

    proxies = urllib.request.getproxies()
    url = proxies.get(scheme) or proxies.get("all")
    if not url:
        return None
    if urllib.request.proxy_bypass_environment(host, proxies):  # type: ignore[attr-defined]
        return None
    return _parse(url)
