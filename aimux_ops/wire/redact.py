"""Secret and URL scrubbing: what may never leave the core (CONTRACT §1 "Nothing secret").

- ``Secrets``: the secret values of one call (its key, secret header values, URL secrets), known
  when the call is built, and the one rule for what they look like in a text: raw, each line of a
  multi-line value, JSON / ``repr`` escapes and URL-encoding of any of its characters, base64 of it
  (alone or inside ``user:key``). ``with secrets.active():`` makes every scrub below use them
  (the call's envelope, result, events, recording and log lines); ``attach`` / ``attached`` carry
  them on an exception to the projection at the boundary.
- ``DeltaScrub``: a stream's text deltas scrubbed of its call's values as their concatenation
  is (a value split across deltas is redacted too).
- ``remember_secret(value)``: a process-wide memory of recent keys (at most 256), a defence in
  depth only: a call never relies on it (its ``Secrets`` hold its own).
- ``scrub_text``: known secrets, bearer tokens and ``sk-…``-shaped keys → ``[REDACTED]``.
- ``scrub_message``: ``scrub_text`` plus every URL → ``[url]`` (no message carries a URL).
- ``scrub_values``: a result or events, every string and key scrubbed with ``scrub_text``.
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

import contextvars
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

from ..guest import on_fork_child

__all__ = [
    "NO_SECRETS",
    "DeltaScrub",
    "REDACTED",
    "Secrets",
    "active_secrets",
    "attach",
    "attached",
    "call_secrets",
    "guard_url",
    "has_anchor",
    "is_secret_header",
    "plain_text",
    "redact_headers",
    "redact_url",
    "remember_header_secrets",
    "remember_secret",
    "remembered",
    "scrub_events",
    "scrub_json",
    "scrub_message",
    "scrub_text",
    "scrub_values",
    "url_secrets",
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


# -- the secrets of one call --------------------------------------------------------------------

#: A value shorter than this is no secret (it would match everywhere).
_MIN_SECRET = 4
#: A base64 fragment shorter than this is not looked for (a short run of base64 letters is
#: everywhere); a key of 6 bytes or more gives one at every alignment.
_MIN_BASE64 = 8
_LINE_SPLIT_RE = re.compile(r"\r\n|\r|\n")


def _hex(value: int, width: int) -> str:
    """``value`` as ``width`` hex digits, each letter in either case."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{value:0{width}x}")


#: An escape's backslash, doubled any number of times.
_ESC = r"\\+"
_JSON_SHORT = {'"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r"}
_JSON_SHORT["\t"] = "t"


def _char_pattern(c: str) -> str:
    """Every way a text can carry ``c``: itself, a JSON ``\\uXXXX`` (a surrogate pair beyond
    the BMP) or short escape, a ``repr`` escape (``\\xXX``, ``\\UXXXXXXXX``, ``\\'``), each
    escape's backslash doubled any number of times (an escape escaped again: JSON in JSON, the
    ``repr`` of a JSON text), and the URL-encoding of its UTF-8 bytes (``%XX``; ``+`` for a
    space)."""
    code = ord(c)
    alts = [re.escape(c)]
    if code < 0x10000:
        alts.append(_ESC + "u" + _hex(code, 4))
    else:
        high = 0xD800 + ((code - 0x10000) >> 10)
        low = 0xDC00 + ((code - 0x10000) & 0x3FF)
        alts.append(_ESC + "u" + _hex(high, 4) + _ESC + "u" + _hex(low, 4))
        alts.append(_ESC + "U" + _hex(code, 8))
    if code < 0x100:
        alts.append(_ESC + "x" + _hex(code, 2))
    if c in _JSON_SHORT:
        alts.append(_ESC + re.escape(_JSON_SHORT[c]))
    if c == "'":
        alts.append(_ESC + "'")
    alts.append("".join("%" + _hex(b, 2) for b in c.encode("utf-8", "surrogatepass")))
    if c == " ":
        alts.append(r"\+")
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _base64_fragments(value: str) -> list[str]:
    """What base64 keeps of ``value`` wherever it sits in the encoded bytes (``user:key`` of
    Basic auth, or the key alone): at each of the three alignments, the run of letters made of
    its bytes only; each also in the URL-safe alphabet."""
    import base64  # (with the first secret remembered: a replay without a key never loads it)

    raw = value.encode("utf-8", "surrogatepass")
    out: list[str] = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        start = -(-8 * shift // 6)
        end = 8 * (shift + len(raw)) // 6
        fragment = encoded[start:end]
        if len(fragment) >= _MIN_BASE64:
            out.append(fragment)
            safe = fragment.translate(str.maketrans("+/", "-_"))
            if safe != fragment:
                out.append(safe)
    return out


class Secrets:
    """The secret values of one call and every form of them a text can hold (module docstring).

    Immutable; ``probe`` answers whether a text holds any of them, ``sub`` replaces each with
    ``[REDACTED]`` (longest first). The pattern of the escaped forms is compiled on the first
    text that holds an escape or a ``%`` (most texts have none: substring checks suffice)."""

    __slots__ = ("_escaped", "_markers", "anchors", "values")

    def __init__(self, values: Iterable[str | None]) -> None:
        seen: dict[str, None] = {}
        for value in values:
            if not value or len(value) < _MIN_SECRET:
                continue
            seen[value] = None
            lines = _LINE_SPLIT_RE.split(value)
            if len(lines) == 1:
                continue
            # a CR/LF split: each line survives it, and each word of a line (an injected
            # ``Name: value`` header line is read as its name and its value)
            for part in lines + [word for line in lines for word in line.split()]:
                part = part.strip()
                if len(part) >= _MIN_SECRET:
                    seen[part] = None
        #: the values (longest first)
        self.values: tuple[str, ...] = tuple(sorted(seen, key=len, reverse=True))
        fragments = {f: None for v in self.values for f in _base64_fragments(v)}
        #: every literal form: the values and their base64 fragments (longest first)
        self.anchors: tuple[str, ...] = tuple(sorted({**seen, **fragments}, key=len, reverse=True))
        self._escaped: re.Pattern[str] | None = None
        #: what a text holds when it may hold an escaped or encoded form of a value (a text
        #: without any of these can only hold the literal forms: the ``anchors``)
        markers = ["\\u", "\\U", "\\x", "%"]
        if any(c in _JSON_SHORT or c == "'" for v in self.values for c in v):
            markers.append("\\")
        if any(" " in v for v in self.values):
            markers.append("+")
        self._markers = tuple(markers)

    def __bool__(self) -> bool:
        return bool(self.values)

    def _pattern(self) -> re.Pattern[str]:
        pattern = self._escaped
        if pattern is None:
            alternatives = ["".join(_char_pattern(c) for c in v) for v in self.values]
            alternatives += [re.escape(f) for f in self.anchors if f not in self.values]
            pattern = self._escaped = re.compile("|".join(alternatives))
        return pattern

    def probe(self, text: str) -> bool:
        """Whether ``text`` holds one of the values in any of its forms."""
        if not self.values:
            return False
        for anchor in self.anchors:
            if anchor in text:
                return True
        for marker in self._markers:
            if marker in text:
                return self._pattern().search(text) is not None
        return False

    def sub(self, text: str) -> str:
        """``text`` with every form of every value replaced by ``[REDACTED]``."""
        return self._pattern().sub(REDACTED, text) if self.probe(text) else text

    @contextmanager
    def active(self) -> Iterator[Secrets]:
        """Every scrub in this context (thread, greenlet) also uses these secrets."""
        token = _active.set(self)
        try:
            yield self
        finally:
            _active.reset(token)


NO_SECRETS = Secrets(())
_active: contextvars.ContextVar[Secrets] = contextvars.ContextVar(
    "aimux_call_secrets", default=NO_SECRETS
)


def active_secrets() -> Secrets:
    """The secrets of the call running in this context (``NO_SECRETS`` outside any call)."""
    return _active.get()


@lru_cache(maxsize=512)
def _secrets_of(values: tuple[str, ...]) -> Secrets:
    return Secrets(values)


def call_secrets(
    api_key: str | None,
    header_maps: Iterable[dict[str, str] | None] = (),
    urls: Iterable[str | None] = (),
) -> Secrets:
    """The ``Secrets`` of a call: its key, the value of every secret-named header (with and
    without a ``Bearer`` prefix) and every secret a URL carries (``url_secrets``). The same
    values give the same (shared, immutable) object: a host repeating its calls compiles once."""
    values: list[str] = [api_key] if api_key else []
    for headers in header_maps:
        for name, value in (headers or {}).items():
            if is_secret_header(name):
                values.append(value)
                values.append(value.removeprefix("Bearer ").strip())
    for url in urls:
        if url:
            values.extend(url_secrets(url))
    return _secrets_of(tuple(values))


#: Where ``attach`` keeps a call's secrets on an exception leaving it.
_ATTACHED = "_aimux_secrets"


def attach(exc: BaseException, secrets: Secrets) -> None:
    """Carry ``secrets`` on ``exc`` to the projection (``envelope.project``), which scrubs the
    whole chain with them wherever it runs (the first attach wins: the innermost call's)."""
    if not secrets:
        return
    try:
        exc.__dict__.setdefault(_ATTACHED, secrets)
    except Exception:  # noqa: BLE001 - an exception without a __dict__: the defence in depth
        pass


def attached(exc: BaseException) -> Secrets:
    """The secrets ``attach`` put on ``exc`` or, when a boundary wrapped it, on the nearest
    link of its chain (``__cause__``, else ``__context__``; ``NO_SECRETS``: none)."""
    link: BaseException | None = exc
    for _ in range(16):
        if link is None:
            break
        got = getattr(link, "__dict__", _NO_DICT).get(_ATTACHED)
        if isinstance(got, Secrets):
            return got
        link = link.__cause__ if link.__cause__ is not None else link.__context__
    return NO_SECRETS


_NO_DICT: dict[str, Any] = {}


class DeltaScrub:
    """The text deltas of one stream scrubbed of a call's values as their concatenation is: a
    value the provider splits across deltas (or network reads) is redacted too.

    ``batch(events)`` answers the events of one read with their ``text-delta`` texts rewritten:
    a value (in any of its forms) that ends in this read is replaced by ``[REDACTED]`` in the
    first unsent delta it touches and removed from the others (a delta left empty is dropped);
    a raw head of a value (``_MIN_SECRET`` characters or more) that ends the read is held back
    and put before the next delta (a shorter head goes out: no recognisable part of a value).
    ``flush()``: what is held when the text ends, as a delta (``[REDACTED]``: a value's head).
    An escaped or encoded form is redacted once complete, but its head is not held: what of it
    went out before the read that completes it stays out (``scrub_values`` also scrubs each
    delta alone)."""

    __slots__ = ("_keep", "_secrets", "_tail", "_values", "held")

    def __init__(self, secrets: Secrets) -> None:
        self._secrets = secrets
        self._values = secrets.values
        # enough of what was sent to see a value's escaped form (6 characters a character)
        self._keep = 6 * max((len(v) for v in self._values), default=0)
        self._tail = ""  # the last characters sent (at most ``_keep``)
        self.held = ""

    def __bool__(self) -> bool:
        return bool(self._values)

    def _head_at(self, text: str) -> int:
        """Where the longest head of a value (``_MIN_SECRET`` characters or more) that ends
        ``text`` begins (``len(text)``: none)."""
        at = len(text)
        for v in self._values:
            i = text.find(v[:_MIN_SECRET], max(0, len(text) - len(v) + 1))
            while i != -1 and i < at:
                if v.startswith(text[i:]):
                    at = i
                    break
                i = text.find(v[:_MIN_SECRET], i + 1)
        return at

    def batch(self, events: list[Any], text: str | None = None) -> list[Any]:
        """``text``: ``plain_text(events)`` when the caller has it (None: found here)."""
        if not self._values:
            return events
        if text is None:
            texts = [e["text"] for e in events if type(e) is dict and e.get("type") == "text-delta"]
            if not texts:
                return events if not self.held else [self.flush(), *events]
            text = "".join(texts)
        elif not events:
            return events if not self.held else [self.flush(), *events]
        base = len(self._tail)
        whole = self._tail + self.held + text
        pattern = self._secrets._pattern
        cut = max(self._head_at(whole), base)  # what was sent stays sent
        spans = []
        if self._secrets.probe(whole):  # a value in any form (only raw heads are held)
            spans = [m.span() for m in pattern().finditer(whole) if m.end() > base]
        if not spans and cut == len(whole) and not self.held:
            self._tail = whole[-self._keep :] if self._keep else ""
            return events
        # each delta's range in ``whole``: the held text goes before the first one
        out: list[Any] = []
        start = base
        first = True
        for e in events:
            if not (type(e) is dict and e.get("type") == "text-delta"):
                out.append(e)
                continue
            end = start + len(e["text"]) + (len(self.held) if first else 0)
            first = False
            text = self._piece(whole, start, min(end, cut), spans, base) if start < cut else ""
            start = end
            if text:
                out.append({**e, "text": text})
        self.held = whole[cut:]
        sent = whole[:cut]
        self._tail = sent[-self._keep :] if self._keep else ""
        return out

    @staticmethod
    def _piece(whole: str, start: int, end: int, spans: list[tuple[int, int]], base: int) -> str:
        """``whole[start:end]`` without the characters of any span, ``[REDACTED]`` in the place
        of the span's first character not sent before (``base``: where the unsent text
        begins)."""
        parts = []
        at = start
        for s, e in spans:
            if e <= start or s >= end:
                continue
            if s > at:
                parts.append(whole[at:s])
            if start <= max(s, base) < end:
                parts.append(REDACTED)
            at = max(at, min(e, end))
        if at < end:
            parts.append(whole[at:end])
        return "".join(parts)

    def flush(self) -> dict[str, Any]:
        """The held text as a last delta: ``[REDACTED]`` (it was a value's head)."""
        self.held = ""
        return {"type": "text-delta", "text": REDACTED}


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
    if _shaped_anchor(text) or _active.get().probe(text):
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


#: the shortest value the process-wide memory keeps: a call scrubs its own secrets whatever their
#: length (``Secrets``), but a short one ("null", a test key) remembered for every later call
#: would scrub ordinary words from other callers' texts
_MIN_REMEMBERED = 8


def remember_secret(value: str | None) -> None:
    """Scrub ``value`` from every text that leaves the core from now on (defence in depth: a
    call's own ``Secrets`` are what it relies on)."""
    global _secret_re, _secret_list
    if not value or len(value) < _MIN_REMEMBERED:
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
    text = _active.get().sub(text)  # first: a key holding "Bearer " or "sk-" goes whole
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


def scrub_values(value: Any) -> Any:
    """``value`` (a result, an event, a batch of events: JSON values) with every string and
    object key scrubbed with ``scrub_text``; nothing is redacted by name (a tool's ``password``
    argument is the caller's). The same object when nothing in it could be scrubbed: one probe
    over its JSON (every form a secret can take there is one the probe knows)."""
    try:
        text = orjson.dumps(value).decode("utf-8")
    except (orjson.JSONEncodeError, TypeError):
        text = None
    if text is not None and not has_anchor(text):
        return value
    return _scrub_values(value)


def plain_text(events: list[Any]) -> str | None:
    """The texts of ``events`` joined when each is a plain text delta (a dict of exactly
    ``type`` ``text-delta`` and a ``text`` string: the stream's hot path), else None."""
    try:
        texts = [
            e["text"]
            for e in events
            if type(e) is dict and len(e) == 2 and e["type"] == "text-delta"
        ]
        if len(texts) == len(events):
            return "".join(texts)  # (a TypeError when one is not a string)
    except (KeyError, TypeError):
        pass
    return None


#: the strings of a plain text delta but its text (its keys and type are strings a scrub sees)
_DELTA_STRINGS = "type\ntext-delta\ntext\n"


def scrub_events(events: list[Any], text: str | None = None) -> list[Any]:
    """``scrub_values(events)`` for one read's events, without serializing them when each is a
    plain text delta (``text``: their ``plain_text``, when the caller has it): every string of
    such a batch is in the text probed here, so a clear probe clears them all (a value across
    two deltas is a false alarm: each string is then scrubbed alone)."""
    if not events:
        return events
    if text is None and (text := plain_text(events)) is None:
        return scrub_values(events)  # type: ignore[no-any-return]
    if not has_anchor(_DELTA_STRINGS + text):
        return events
    return _scrub_values(events)  # type: ignore[no-any-return]


def _scrub_values(value: Any) -> Any:
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {scrub_text(str(k)): _scrub_values(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub_values(v) for v in value]
    return value


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
    plain = {str(k).lower(): str(v) for k, v in items}
    # one check of the names' join and one of the values' join clear most headers at once (a
    # word or an anchor inside any of them is inside their join; every response pays this)
    names = "\n".join(plain)
    if not names.isascii() or any(word in names for word in _SECRET_HEADER_WORDS):
        for name in plain:
            if is_secret_header(name):
                plain[name] = REDACTED
    if has_anchor("\n".join(plain.values())):
        for name, value in plain.items():
            if value is not REDACTED:
                plain[name] = scrub_text(value)
    return plain


def guard_url(url: str) -> str:
    """Remember every secret a URL carries — the userinfo password (also as the ``user:pass``
    Basic credential, plain and base64) and secret query values — and return the URL without its
    userinfo (the key goes in ``Authorization``; httpx would otherwise replace it with Basic auth).
    """
    if "@" not in url and "?" not in url:
        return url  # no userinfo, no query: nothing to remember, nothing to drop (the hot path)
    return _guard_parsed(url)


def url_secrets(url: str) -> list[str]:
    """Every secret ``url`` carries: the userinfo password (also as the ``user:pass`` Basic
    credential, plain and base64; the user name when there is no password) and the value of
    every secret-named query parameter."""
    if "@" not in url and "?" not in url:
        return []
    try:
        parts = urlsplit(url)
        password = parts.password
        username = parts.username
    except ValueError:
        return []
    out = [value for key, value in parse_qsl(parts.query) if _SECRET_QUERY_RE.search(key)]
    if password:
        import base64

        credential = f"{username or ''}:{password}"
        out += [password, credential, base64.b64encode(credential.encode()).decode()]
    elif username:
        out.append(username)
    return out


def _guard_parsed(url: str) -> str:
    """``guard_url`` by way of ``urlsplit``: what it answers for every URL (the fast path
    above skips it only where it remembers nothing and returns the URL unchanged)."""
    try:
        parts = urlsplit(url)
        password = parts.password
        username = parts.username
    except ValueError:
        return url
    for secret in url_secrets(url):
        remember_secret(secret)
    if password is None and username is None:
        return url
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
