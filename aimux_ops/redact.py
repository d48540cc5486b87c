"""Secret and URL scrubbing: what may never leave the core (CONTRACT §1 "Nothing secret").

- ``remember_secret(value)``: the provider registers every API key it uses; every text that
  leaves the core is scrubbed of every remembered value (a provider may echo the key back).
- ``scrub_text``: known secrets, bearer tokens and ``sk-…``-shaped keys → ``[REDACTED]``.
- ``scrub_message``: ``scrub_text`` plus every URL → ``[url]`` (no message carries a URL).
- ``redact_headers``: Authorization, Proxy-Authorization, Cookie, Set-Cookie and any header
  whose name says api-key, token, secret, password or credential keep their name only
  (rate-limit headers such as ``x-ratelimit-remaining-tokens`` are kept: they help debugging).
- ``redact_url``: for recordings, a URL without userinfo and without secret query values.
- ``guard_url``: before a request, remember a URL's secrets (userinfo, secret query values) and
  drop its userinfo.
- ``remember_header_secrets``: before a request, remember the value of every caller-supplied
  header whose name says it carries a secret (a key passed as a header is a key too).
"""

from __future__ import annotations

import base64
import re
import threading
from collections import OrderedDict
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .guest import on_fork_child

__all__ = [
    "REDACTED",
    "guard_url",
    "has_anchor",
    "is_secret_header",
    "redact_headers",
    "redact_url",
    "remember_header_secrets",
    "remember_secret",
    "remembered",
    "scrub_json",
    "scrub_message",
    "scrub_text",
]

REDACTED = "[REDACTED]"
_MAX_SECRETS = 256
_secrets: OrderedDict[str, None] = OrderedDict()
_secrets_lock = threading.Lock()


@on_fork_child
def _reset_lock_after_fork() -> None:
    """In a forked child: a fresh lock (another thread may have held this one at fork time)."""
    global _secrets_lock
    _secrets_lock = threading.Lock()


_secret_re: re.Pattern[str] | None = None

#: The remembered secrets, for the probe below (longest first, as in ``_secret_re``).
_secret_list: tuple[str, ...] = ()
#: Up to this many remembered secrets the probe looks for each with ``in`` (a C substring
#: search); beyond, with the secrets' compiled alternation.
_PROBE_BY_SUBSTRING = 16


def _shaped_anchor(text: str) -> bool:
    """Whether ``text`` holds an anchor of ``_PATTERN_RE``'s secret-shaped tokens, in any case
    as the pattern matches them (``SK-…`` and ``Key-…`` are tokens too; casefold, not lower:
    the pattern's ignore-case also matches ``ſ`` for ``s`` and the Kelvin sign for ``k``)."""
    folded = text.casefold()
    return "sk-" in folded or "key-" in folded or "bearer" in folded


def has_anchor(text: str) -> bool:
    """Whether ``text`` holds anything the scrub could replace: a remembered secret, ``sk-``,
    ``key-`` or ``bearer`` in any case (every replacement ``scrub_text`` makes needs one). Most
    texts have none: they are scrubbed by this check alone. A match inside any of several texts
    is a match inside their join: one check can clear them all."""
    if _shaped_anchor(text):
        return True
    secrets = _secret_list
    if len(secrets) <= _PROBE_BY_SUBSTRING:
        for secret in secrets:
            if secret in text:
                return True
        return False
    pattern = _secret_re
    return pattern is not None and pattern.search(text) is not None


_URL_RE = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,15}://[^\s'\"<>()\[\]{}]+")
_PATTERN_RE = re.compile(
    r"(?i)(\bbearer\s+)[^\s'\",;]+|\b(sk-[A-Za-z0-9_\-]{8,})|\b(key-[A-Za-z0-9_\-]{16,})"
)
_SECRET_HEADER_RE = re.compile(
    r"(?i)^(authorization|proxy-authorization|cookie|set-cookie|x-auth[-_a-z]*)$"
    r"|api[-_]?key|(^|[-_])token$|access[-_]?token|secret|password|credential"
)
_SECRET_QUERY_RE = re.compile(r"(?i)key|token|secret|sig|password|auth")


def remember_secret(value: str | None) -> None:
    """Scrub ``value`` from every text that leaves the core from now on."""
    global _secret_re, _secret_list
    if not value or len(value) < 4:
        return
    with _secrets_lock:
        if value in _secrets:
            _secrets.move_to_end(value)
            return
        _secrets[value] = None
        while len(_secrets) > _MAX_SECRETS:
            _secrets.popitem(last=False)
        ordered = sorted(_secrets, key=len, reverse=True)
        _secret_re = re.compile("|".join(re.escape(s) for s in ordered))
        _secret_list = tuple(ordered)


def remembered() -> tuple[str, ...]:
    """The secrets remembered now (longest first)."""
    return _secret_list


def _pattern_sub(m: re.Match[str]) -> str:
    if m.group(1):
        return m.group(1) + REDACTED
    return REDACTED


def scrub_text(text: str) -> str:
    """Remove remembered secrets and secret-shaped tokens from ``text``."""
    return _scrub_text(text) if has_anchor(text) else text


def _scrub_text(text: str) -> str:
    pattern = _secret_re
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    # the shaped-token pattern only when one of its anchors is there (most texts have none)
    if _shaped_anchor(text):
        return _PATTERN_RE.sub(_pattern_sub, text)
    return text


def scrub_message(text: str) -> str:
    """``scrub_text`` plus: no URL survives."""
    if "://" not in text and not has_anchor(text):
        return text
    text = _scrub_text(text)
    return _URL_RE.sub("[url]", text) if "://" in text else text


def scrub_json(value: Any) -> Any:
    """Every string inside a JSON value scrubbed with ``scrub_text``, the keys of its objects
    too (keys of secret-looking names have their values redacted; two keys that scrub alike
    keep the later value)."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = scrub_text(str(k))
            if isinstance(v, str) and is_secret_header(key):
                out[key] = REDACTED
            else:
                out[key] = scrub_json(v)
        return out
    if isinstance(value, (list, tuple)):
        return [scrub_json(v) for v in value]
    return value


#: Every alternative of ``_SECRET_HEADER_RE`` holds one of these (lower-case ASCII).
_SECRET_HEADER_WORDS = ("auth", "cookie", "api", "token", "secret", "password", "credential")


def is_secret_header(name: str) -> bool:
    """Whether a header (or JSON member) of this name carries a secret."""
    if name.isascii():  # an ASCII name without any of the words cannot match (the common case)
        low = name.lower()
        for word in _SECRET_HEADER_WORDS:
            if word in low:
                break
        else:
            return False
    return _SECRET_HEADER_RE.search(name) is not None


def remember_header_secrets(*header_maps: dict[str, str] | None) -> None:
    """Remember the value (without a ``Bearer`` prefix) of every secret-named header."""
    for headers in header_maps:
        for name, value in (headers or {}).items():
            if is_secret_header(name):
                remember_secret(value.removeprefix("Bearer ").strip())


def redact_headers(headers: Any) -> dict[str, str]:
    """Headers as a plain dict with lower-cased names and every secret value redacted."""
    items = headers.items() if hasattr(headers, "items") else headers
    out: dict[str, str] = {}
    for k, v in items:
        name = str(k).lower()
        out[name] = REDACTED if is_secret_header(name) else scrub_text(str(v))
    return out


def guard_url(url: str) -> str:
    """Remember every secret a URL carries — the userinfo password (also as the ``user:pass``
    Basic credential, plain and base64) and secret query values — and return the URL without its
    userinfo (the key goes in ``Authorization``; httpx would otherwise replace it with Basic auth).
    """
    if "@" not in url and "?" not in url:
        return url  # no userinfo, no query: nothing to remember, nothing to drop (the hot path)
    return _guard_parsed(url)


def _guard_parsed(url: str) -> str:
    """``guard_url`` by way of ``urlsplit``: what it answers for every URL (the fast path
    above skips it only where it remembers nothing and returns the URL unchanged)."""
    try:
        parts = urlsplit(url)
        password = parts.password
        username = parts.username
    except ValueError:
        return url
    for key, value in parse_qsl(parts.query):
        if _SECRET_QUERY_RE.search(key):
            remember_secret(value)
    if password is None and username is None:
        return url
    if password:
        remember_secret(password)
        credential = f"{username or ''}:{password}"
        remember_secret(credential)
        remember_secret(base64.b64encode(credential.encode()).decode())
    elif username:
        remember_secret(username)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def redact_url(url: str) -> str:
    """The URL without userinfo and with secret query values redacted."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "[url]"
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    query = urlencode(
        [(k, REDACTED if _SECRET_QUERY_RE.search(k) else v) for k, v in parse_qsl(parts.query)]
    )
    return urlunsplit((parts.scheme, host, parts.path, query, ""))
