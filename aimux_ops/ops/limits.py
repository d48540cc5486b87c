"""The caps on what a caller controls, and the checks of what the transport owns (issue 32).

Numeric caps are the params' own bounds (``models``: ``maximum`` in ``schema/ops``, a 301 naming
the field); the rest are checked here before any network and answered as ``InvalidArgumentError``
(code 5) naming the field:

- ``MAX_RETRIES``: ``maxRetries`` above it is invalid params (refused, not capped: a caller who
  asks for more gets told, not silently less). With ``retry.initialDelayMs: 0`` against a closed
  port a call makes ``MAX_RETRIES + 1`` connects, a fraction of a second; only the attempts an
  envelope reports (``causes.Limits.attempts``) are kept while it runs.
- ``MAX_TIMER_MS`` (2**31 - 1 ms, ~24.8 days; JavaScript's timer bound): ``timeoutMs`` and
  ``retry.initialDelayMs``; the backoff never waits longer either.
- ``MAX_JSON_DEPTH``: the nesting of every free-form JSON value a caller gives (tool
  ``inputSchema``, ``generate_object``'s ``schema``, content parts, tool-call inputs): deeper
  values would exhaust the JSON Schema validator's recursion or orjson's depth limit.
- headers (``model.headers``, ``headers``): at most ``MAX_HEADERS`` each, a name an HTTP token of
  at most ``MAX_HEADER_NAME_BYTES``, a value of at most ``MAX_HEADER_VALUE_BYTES`` of printable
  ASCII and HTAB only (no CR, LF, NUL: no header injection), and never one the transport owns
  (``TRANSPORT_HEADERS``: framing and hop-by-hop; a caller's ``Content-Length`` beside the
  transport's chunked body is a request-smuggling desync). A value is never quoted (it may be a
  secret).
- the API key (``model.apiKey``, or the variable ``model.apiKeyEnv`` names): printable ASCII
  only, as a header value must be (a CR/LF would split the credential header); never quoted.
- ``model.baseURL``: absolute ``http://`` or ``https://`` with a host; an empty or relative one is
  refused, never taken as the provider's default origin.

Not capped: the prompt, messages, tools and stop sequences are forwarded as given, like the AI
SDK does: their size is the caller's own params JSON (nothing here amplifies it: the body is built
once, an envelope clips what it quotes), and the provider enforces its own limits.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from ..errors import InvalidArgumentError

__all__ = [
    "MAX_HEADERS",
    "MAX_HEADER_NAME_BYTES",
    "MAX_HEADER_VALUE_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_RETRIES",
    "MAX_TIMER_MS",
    "TRANSPORT_HEADERS",
    "check_api_key",
    "check_base_url",
    "check_headers",
    "json_depth_checked",
    "json_depth_ok",
]

MAX_RETRIES = 1000
MAX_TIMER_MS = 2**31 - 1
MAX_JSON_DEPTH = 64
MAX_HEADERS = 64
MAX_HEADER_NAME_BYTES = 256
MAX_HEADER_VALUE_BYTES = 8192

#: lower-cased: the request's framing, its connection's management and its target (RFC 9110
#: §7.6.1 hop-by-hop, RFC 9112 framing, ``Expect``, HTTP/2's ``HTTP2-Settings``)
TRANSPORT_HEADERS = frozenset(
    (
        "connection",
        "content-length",
        "expect",
        "host",
        "http2-settings",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    )
)

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: a value's forbidden characters: controls but HTAB, DEL, and anything outside ASCII (the
#: transport sends a value as ASCII bytes; fetch refuses one that is not even a ByteString)
_BAD_VALUE = re.compile(r"[^\t\x20-\x7e]")
#: a key's: the same but HTAB
_BAD_KEY = re.compile(r"[^\x20-\x7e]")


def json_depth_checked(value: Any) -> Any:
    """``value`` when ``json_depth_ok``, else ValueError (a params validator: 301 with its path)."""
    if not json_depth_ok(value):
        raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} objects / arrays")
    return value


def json_depth_ok(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` (decoded JSON) nests at most ``limit`` objects / arrays deep
    (iterative: a hostile value cannot exhaust the stack here)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return True


def _refuse(field: str, why: str) -> InvalidArgumentError:
    from ..errors import InvalidArgumentError  # (``models`` imports this module: no cold cost)

    return InvalidArgumentError(f"Invalid argument for {field}: {why}", argument=field)


def _name_shown(name: str) -> str:
    shown = name if len(name) <= 64 else name[:64] + "…"
    return ascii(shown)


def check_headers(headers: dict[str, str] | None, field: str) -> None:
    """Refuse ``headers`` (the param ``field``) unless every header can be sent as given."""
    if not headers:
        return
    if len(headers) > MAX_HEADERS:
        raise _refuse(field, f"{len(headers)} headers, at most {MAX_HEADERS} can be given")
    for name, value in headers.items():
        if len(name) > MAX_HEADER_NAME_BYTES:
            raise _refuse(field, f"header name longer than {MAX_HEADER_NAME_BYTES} bytes")
        if not _TOKEN.fullmatch(name):
            raise _refuse(field, f"header name {_name_shown(name)} is not an HTTP token")
        if name.lower() in TRANSPORT_HEADERS:
            raise _refuse(
                field,
                f"header {name!r} is set by the transport (framing and hop-by-hop headers "
                "cannot be given)",
            )
        if len(value) > MAX_HEADER_VALUE_BYTES:
            raise _refuse(
                field, f"the value of header {name!r} is longer than {MAX_HEADER_VALUE_BYTES} bytes"
            )
        if _BAD_VALUE.search(value):
            raise _refuse(
                field,
                f"the value of header {name!r} holds a control character (CR, LF, NUL, …) or a "
                "character outside ASCII",
            )


def check_api_key(key: str | None, from_params: bool) -> None:
    """Refuse a key that cannot be sent in a header as it is (nothing of it is quoted, not even a
    position: the codec's own error would show a character of it)."""
    if key is not None and _BAD_KEY.search(key):
        field = "model.apiKey" if from_params else "model.apiKeyEnv"
        raise _refuse(
            field,
            "the API key holds a control character (CR, LF, NUL, …) or a character outside ASCII",
        )


def check_base_url(url: str) -> None:
    """Refuse a ``model.baseURL`` that is not an absolute http(s) URL with a host (the URL is
    not quoted: its userinfo or query may hold a secret)."""
    field = "model.baseURL"
    if not url:
        raise _refuse(field, "an empty URL (omit baseURL for the provider's default)")
    if any(c <= " " or c == "\x7f" for c in url):
        raise _refuse(field, "the URL holds whitespace or a control character")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        raise _refuse(field, "not a valid URL") from None  # its text may quote the URL
    if parts.scheme.lower() not in ("http", "https"):
        raise _refuse(field, "the URL must start with http:// or https://")
    if not host:
        raise _refuse(field, "the URL has no host")
