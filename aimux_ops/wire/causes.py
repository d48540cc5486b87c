"""Cause capture: any Python exception chain → bounded, scrubbed cause nodes (CONTRACT §1).

An ``AimuxError`` becomes an aimux node ``{kind, code, message, error, cause?}``; anything else a
source node ``{message, type, cause?}``. The next link is ``__cause__``, else ``__context__``
unless suppressed, else an exception wrapped as the first argument. Bounds, each marked in the
node's ``truncated`` list, never silent:

- every ``message`` ≤ 1 KiB (UTF-8 bytes), cut text ending ``…[truncated]``;
- every payload string, and ``value`` / ``data`` / ``responseBody``, ≤ 16 KiB (an over-limit
  JSON value becomes the cut text of its JSON);
- at most 16 nodes deep, cycles cut (``"cause"`` marked);
- at most 16 retry attempts kept (the first and the last 15; ``"error.errors"`` marked).

Every message is scrubbed of secrets and URLs, every payload string of secrets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import AimuxError, OtherError, RetryError, SourceError
from ..errors._base import _plain, dump_models
from ..errors.aimux import KEPT_ATTEMPTS
from .redact import REDACTED, has_anchor, is_secret_header, scrub_message, scrub_text

__all__ = ["DEFAULT_LIMITS", "Limits", "capture", "clip_text", "exception_type_name", "next_link"]

TRUNCATION_MARK = "…[truncated]"
_MARK_BYTES = len(TRUNCATION_MARK.encode())


@dataclass(frozen=True)
class Limits:
    message_bytes: int = 1024
    value_bytes: int = 16 * 1024
    depth: int = 16
    attempts: int = KEPT_ATTEMPTS  # what the retry loop keeps


DEFAULT_LIMITS = Limits()


def clip_text(text: str, limit: int) -> tuple[str, bool]:
    """``text`` as valid UTF-8 (lone surrogates replaced) of at most ``limit`` bytes."""
    if len(text) <= limit and text.isascii():
        return text, False
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "replace")
        text = raw.decode("utf-8")
    if len(raw) <= limit:
        return text, False
    keep = max(0, limit - _MARK_BYTES)
    return raw[:keep].decode("utf-8", "ignore") + TRUNCATION_MARK, True


def exception_type_name(exc: BaseException) -> str:
    """``package.ClassName`` (``ConnectionRefusedError`` for builtins); the core's HTTP client's
    exceptions keep their public module (``aimux_ops.http.ConnectError``)."""
    if isinstance(exc, SourceError) and exc.type:
        return exc.type
    cls = type(exc)
    module = cls.__module__
    if module == "builtins":
        return cls.__qualname__
    if module not in _PUBLIC_MODULES:
        module = module.split(".")[0]
    return f"{module}.{cls.__qualname__}"


#: modules whose exceptions are named with the module itself, not only its package
_PUBLIC_MODULES = frozenset({"aimux_ops.http"})


def _safe_str(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not break the projection
        return f"<unprintable {type(exc).__name__}>"
    if not isinstance(text, str):  # pragma: no cover - str() always returns str
        return repr(text)
    return text


def next_link(exc: BaseException) -> BaseException | None:
    """``__cause__``, else ``__context__`` unless suppressed, else an exception the error wraps
    as its first argument. The last rule recovers chains a library cut with ``raise exc from
    None`` (httpcore's pool re-raises ``ConnectError(ConnectionRefusedError(...))`` that way)."""
    if exc.__cause__ is not None:
        return exc.__cause__
    if not exc.__suppress_context__ and exc.__context__ is not None:
        return exc.__context__
    if exc.args and isinstance(exc.args[0], BaseException):
        return exc.args[0]
    return None


_SCRUB_MARGIN = (
    512  # text is cut to limit + margin before scrubbing, so a secret on the cut is seen
)


class _Budget:
    """How many more string bytes one payload field may visit before the rest is cut."""

    def __init__(self, limit: int) -> None:
        self.left = 2 * limit + _SCRUB_MARGIN
        self.cut = False


def _sanitize(value: Any, limit: int, budget: _Budget) -> Any:
    """A JSON value with every string pre-cut and scrubbed and secret-named members redacted,
    visiting at most a bounded number of bytes (what is past the budget is cut)."""
    if isinstance(value, str):
        if budget.left <= 0:
            budget.cut = True
            return TRUNCATION_MARK
        text, cut = clip_text(value, min(budget.left, limit + _SCRUB_MARGIN))
        budget.left -= len(text)
        budget.cut |= cut
        return scrub_text(text)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if budget.left <= 0:
                budget.cut = True
                break
            raw_key = str(k)
            key = scrub_text(raw_key)  # a key is text that leaves too (a token as a key)
            budget.left -= len(key)
            redacted = isinstance(v, str) and is_secret_header(raw_key)
            out[key] = REDACTED if redacted else _sanitize(v, limit, budget)
        return out
    if isinstance(value, (list, tuple)):
        items = []
        for v in value:
            if budget.left <= 0:
                budget.cut = True
                break
            items.append(_sanitize(v, limit, budget))
        return items
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return _sanitize(repr(value), limit, budget)


#: Payload fields typed "any JSON" (the AI SDK's ``value`` / ``data``): an over-limit value may
#: become the cut text of its JSON. Every other field keeps its type when cut.
_ANY_TYPED = frozenset({"value", "data"})


def _shrink(container: dict[str, Any] | list[Any], limit: int) -> dict[str, Any] | list[Any]:
    """The leading members / items of ``container`` whose JSON fits in ``limit`` bytes."""
    size = 2
    if isinstance(container, list):
        items: list[Any] = []
        for item in container:
            size += len(orjson.dumps(item)) + 1
            if size > limit:
                break
            items.append(item)
        return items
    members: dict[str, Any] = {}
    for key, item in container.items():
        size += len(orjson.dumps({key: item})) - 1
        if size > limit:
            break
        members[key] = item
    return members


def _small_bound(value: Any, texts: list[str], depth: int) -> int:
    """An upper bound of the JSON size of ``value`` when it is made of ASCII strings (str keys),
    finite numbers, booleans, null, lists and objects, at most 16 levels deep; -1 otherwise
    (such a value is also plain JSON, what the payload serializer hands back unchanged). Its string
    values are added to ``texts`` (one scrub probe for all of them). A 64-bit integer or a
    float is at most 24 characters; an ASCII character at most 6 once escaped."""
    kind = type(value)
    if kind is str:
        if not value.isascii():
            return -1
        texts.append(value)
        return 6 * len(value) + 2
    if value is None or kind is int or kind is bool:
        return 24
    if kind is float:
        return 24 if math.isfinite(value) else -1
    if depth > 16:
        return -1
    total = 2
    if kind is dict:
        for k, v in value.items():
            if type(k) is not str or not k.isascii():
                return -1
            texts.append(k)  # keys are probed (and scrubbed) as the values are
            kind = type(v)
            if kind is str:  # the common members inline (no call per member)
                if not v.isascii():
                    return -1
                texts.append(v)
                total += 6 * (len(k) + len(v)) + 6
            elif v is None or kind is int or kind is bool or (kind is float and math.isfinite(v)):
                total += 6 * len(k) + 28
            else:
                bound = _small_bound(v, texts, depth + 1)
                if bound < 0:
                    return -1
                total += 6 * len(k) + 4 + bound
        return total
    if kind is list:
        for v in value:
            kind = type(v)
            if kind is str:
                if not v.isascii():
                    return -1
                texts.append(v)
                total += 6 * len(v) + 3
            elif v is None or kind is int or kind is bool or (kind is float and math.isfinite(v)):
                total += 25
            else:
                bound = _small_bound(v, texts, depth + 1)
                if bound < 0:
                    return -1
                total += bound + 1
        return total
    return -1


def _clean(value: Any, scrub: bool) -> Any:
    """What _sanitize gives a value ``_small_bound`` accepted within the limit (nothing is cut,
    no budget is reached): secret-named members redacted, strings (and keys) scrubbed when
    ``scrub``."""
    kind = type(value)
    if kind is str:
        return scrub_text(value) if scrub else value
    if kind is dict:
        out: dict[str, Any] = {}
        for k, v in value.items():
            kind = type(v)
            key = scrub_text(k) if scrub else k
            if kind is str:
                out[key] = REDACTED if is_secret_header(k) else (scrub_text(v) if scrub else v)
            elif kind is dict or kind is list:
                out[key] = _clean(v, scrub)
            else:
                out[key] = v
        return out
    if kind is list:
        return [
            (scrub_text(v) if scrub else v)
            if type(v) is str
            else (_clean(v, scrub) if type(v) in (dict, list) else v)
            for v in value
        ]
    return value


def _small_clean(value: Any, limit: int) -> Any:
    """What _sanitize gives a value whose JSON surely fits in ``limit`` (``_small_bound``), with
    one scrub probe for all its strings, measured again only when a scrub or a redaction changed
    it; None when it is not such a value."""
    texts: list[str] = []
    bound = _small_bound(value, texts, 0)
    if 0 < bound <= limit:
        clean = _clean(value, has_anchor("\n".join(texts)))
        if clean == value or len(orjson.dumps(clean)) <= limit:
            return clean
    return None


def _bounded_value(value: Any, limit: int, key: str) -> tuple[Any, bool]:
    """``value`` sanitized and at most ``limit`` bytes of JSON. An over-limit string is cut; an
    over-limit ``value`` / ``data`` becomes the cut text of its JSON; any other over-limit object
    or array keeps its type and its leading members that fit."""
    kind = type(value)
    if kind is str and len(value) <= limit and value.isascii():
        return scrub_text(value), False
    if kind is list:
        # a list of short ASCII strings (op names, tool names): one join, one probe
        joined = None
        if value and type(value[0]) is str:
            try:
                joined = "\n".join(value)
            except TypeError:  # not only strings
                pass
        if joined is not None and joined.isascii() and 6 * len(joined) + 3 * len(value) < limit:
            if not has_anchor(joined):
                return list(value), False
            scrubbed = [scrub_text(t) for t in value]
            if len(orjson.dumps(scrubbed)) <= limit:
                return scrubbed, False
    if kind is list or kind is dict:
        clean = _small_clean(value, limit)
        if clean is not None:
            return clean, False
    budget = _Budget(limit)
    clean = _sanitize(value, limit, budget)
    if isinstance(clean, str):
        text, cut = clip_text(clean, limit)
        return text, cut or budget.cut
    if isinstance(clean, (dict, list)):
        raw = orjson.dumps(clean)
        if len(raw) > limit:
            if key in _ANY_TYPED:
                return clip_text(raw.decode("utf-8"), limit)[0], True
            return _shrink(clean, limit), True
    return clean, budget.cut


def _message_text(raw: str, limits: Limits, truncated: list[str]) -> str:
    limit = limits.message_bytes
    if len(raw) <= limit and raw.isascii() and "\x00" not in raw:
        # the common case: short ASCII, no cut before or after scrubbing (the same text as below)
        if "://" not in raw and not has_anchor(raw):
            return raw  # nothing to scrub (what scrub_message answers), nothing to cut
        text = scrub_message(raw)
        if len(text) <= limit and text.isascii():
            return text
    # NUL would cut the message short for every C reader (aimux_error_message): never emitted
    pre, pre_cut = clip_text(raw.replace("\x00", "\ufffd"), limits.message_bytes + _SCRUB_MARGIN)
    text, cut = clip_text(scrub_message(pre), limits.message_bytes)
    if cut or pre_cut:
        truncated.append("message")
        if not text.endswith(TRUNCATION_MARK):
            text = clip_text(text, limits.message_bytes - len(TRUNCATION_MARK.encode()))[0]
            text += TRUNCATION_MARK
    return text


_BASE_PAYLOAD_FIELDS = AimuxError.payload_fields


def _payload(exc: AimuxError, limits: Limits, truncated: list[str]) -> dict[str, Any]:
    if type(exc).payload_fields is _BASE_PAYLOAD_FIELDS:
        # payload_fields and the loop below in one pass over the field values, while each is
        # plain JSON (what payload_fields would hand over unchanged); else the two steps
        mark = len(truncated)
        try:
            error = _plain_payload(exc, limits, truncated)
        except Exception:  # noqa: BLE001 - the two steps report it as they always have
            error = None
        if error is not None:
            return error
        del truncated[mark:]
    return _payload_fields(exc, limits, truncated)


def _plain_payload(exc: AimuxError, limits: Limits, truncated: list[str]) -> dict[str, Any] | None:
    """``_payload_fields`` for a payload of plain values and no undeclared member (None: not
    such a payload)."""
    if exc._extra:
        return None
    values = exc._values
    limit = limits.value_bytes
    error: dict[str, Any] = {"name": exc.error_name}
    for name, wire in exc._wire:
        value = values.get(name)
        if value is None:
            continue
        kind = type(value)
        if kind is str:
            if len(value) <= limit and value.isascii():
                error[wire] = scrub_text(value)
                continue
        elif kind is bool or kind is int:
            error[wire] = value
            continue
        elif kind is float:
            if not math.isfinite(value):
                return None
            error[wire] = value
            continue
        elif kind is list or kind is dict:
            clean = _small_clean(value, limit)  # a small plain value: one walk, no cut
            if clean is not None:
                error[wire] = clean
                continue
            if kind is list and not _plain(value, 0):
                value = dump_models(value)  # a list of simple models (violations), as dumped
                if value is None:
                    return None
            elif not _plain(value, 0):
                return None
        elif not _plain(value, 0):
            return None
        bounded, cut = _bounded_value(value, limit, wire)
        if cut:
            truncated.append(f"error.{wire}")
        error[wire] = bounded
    return error


def _payload_fields(exc: AimuxError, limits: Limits, truncated: list[str]) -> dict[str, Any]:
    error: dict[str, Any] = {"name": exc.error_name}
    try:
        fields = exc.payload_fields()
    except Exception:  # noqa: BLE001 - a payload that cannot dump is reported, not fatal
        fields = {}
        truncated.append("error")
    limit = limits.value_bytes
    for key, value in fields.items():
        if type(value) is str and len(value) <= limit and value.isascii():
            error[key] = scrub_text(value)  # what _bounded_value gives a short ASCII text
            continue
        if value is None or isinstance(value, (bool, int, float)):
            error[key] = value  # scalars need no bound and no scrubbing
            continue
        bounded, cut = _bounded_value(value, limit, key)
        if cut:
            truncated.append(f"error.{key}")
        error[key] = bounded
    return error


def capture(
    exc: BaseException,
    limits: Limits = DEFAULT_LIMITS,
    *,
    depth: int = 1,
    path: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """The cause node for ``exc`` and its chain (``exc`` itself at ``depth``).

    One loop along the chain (a recursion only into a RetryError's attempts): each node is
    filled in place, its ``cause`` an empty dict the next turn fills, so every node's members
    come in the same order as when each link was captured by its own call (``cause`` before
    ``truncated``)."""
    seen = set(path)  # the ids of exc's ancestors, then of every node along the chain
    node: dict[str, Any] = {}
    root = node
    while True:
        truncated: list[str] = []
        seen.add(id(exc))
        if isinstance(exc, AimuxError):
            node["kind"] = exc.kind
            node["code"] = exc.code
            node["message"] = _message_text(exc.message, limits, truncated)
            error = node["error"] = _payload(exc, limits, truncated)
            children = exc.cause_children()
            if children or isinstance(exc, RetryError):
                kept = list(children)
                if len(kept) > limits.attempts:
                    kept = kept[:1] + kept[len(kept) - (limits.attempts - 1) :]
                    truncated.append("error.errors")
                elif getattr(exc, "attempts_dropped", 0):  # dropped by the retry loop itself
                    truncated.append("error.errors")
                attempts = []
                ancestors = frozenset(seen)
                for child in kept:
                    if not isinstance(child, AimuxError):
                        wrapper = OtherError(_safe_str(child))
                        wrapper.__cause__ = child
                        child = wrapper
                    if depth >= limits.depth or id(child) in ancestors:
                        if "error.errors" not in truncated:
                            truncated.append("error.errors")
                        continue
                    attempts.append(capture(child, limits, depth=depth + 1, path=ancestors))
                error["errors"] = attempts
            # A RetryError has no cause on the wire: its attempts are the chain (last = cause).
            nxt = None if isinstance(exc, RetryError) else exc.__cause__
        else:
            raw = exc.message if isinstance(exc, SourceError) else _safe_str(exc)
            node["message"] = _message_text(raw, limits, truncated)
            node["type"] = exception_type_name(exc)
            nxt = next_link(exc)
        child_node = None
        if nxt is not None:
            if depth >= limits.depth or id(nxt) in seen:
                truncated.append("cause")
            else:
                child_node = node["cause"] = {}
        if truncated:
            node["truncated"] = truncated
        if child_node is None:
            return root
        node = child_node
        exc = nxt  # type: ignore[assignment]
        depth += 1
