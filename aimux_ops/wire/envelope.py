"""The envelope: the one projection of an exception to JSON, and its decoding back (CONTRACT §1).

``project(exc) -> bytes`` is called once, at the dispatch boundary (and by the recorder for an
error outcome, and by streams for an ``error`` event): the same bytes everywhere. It scrubs with
the secrets of the call the exception left (``redact.attach``), wherever it runs. Anything that is
not an ``AimuxError`` is wrapped in ``InternalError`` (208) with the exception as its cause.
``retryable`` and ``retryAfterMs`` come from structured fields only (``AimuxError.retryable`` /
``.retry_after_ms``), never from message text. An envelope is at most 1 MiB: when the default
bounds give more, the projection runs again with tighter ones (each cut still marked).

``decode_error`` rebuilds the native chain: aimux nodes become the catalogued classes (an unknown
kind / code becomes ``UnknownError`` keeping the raw JSON), source nodes ``SourceError``; each link
is ``__cause__``; a RetryError's attempts are decoded into ``errors`` and the last one is its
``__cause__`` (the AI SDK's ``lastError``). ``chain_links`` walks the same chain for the C shim.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

from ..errors import (
    AimuxError,
    InternalError,
    InvalidWireJSONError,
    RetryError,
    SourceError,
    UnknownError,
    lookup,
)
from ..errors import TimeoutError as AITimeoutError
from . import redact
from .causes import DEFAULT_LIMITS, Limits, capture

__all__ = [
    "CODE_MAX",
    "ENVELOPE_MAX_BYTES",
    "RETRY_AFTER_MAX_MS",
    "chain_links",
    "check_root",
    "decode_cause",
    "decode_error",
    "native_chain",
    "project",
    "root_fields",
    "to_envelope",
    "whole_number",
]

ENVELOPE_MAX_BYTES = 1024 * 1024
CODE_MAX = 0x7FFFFFFF  # a code is an int32_t in the C ABI
#: The largest ``retryAfterMs`` any decoder reports (DESIGN.md "Numbers on the wire"): the longest
#: Go ``time.Duration`` in whole milliseconds (~292 years), exact in a double.
RETRY_AFTER_MAX_MS = 9_223_372_036_854
_DECODE_MAX_DEPTH = 256
_TIGHTER = (
    Limits(message_bytes=1024, value_bytes=2048, depth=16, attempts=8),
    Limits(message_bytes=256, value_bytes=256, depth=8, attempts=4),
    Limits(message_bytes=256, value_bytes=64, depth=4, attempts=2),
    Limits(message_bytes=256, value_bytes=64, depth=1, attempts=1),
)
_LAST_RESORT = (
    b'{"kind":"binding","code":208,"message":"internal error: the error could not be projected",'
    b'"error":{"name":"InternalError"},"retryable":false}'
)


def _as_aimux(exc: BaseException) -> AimuxError:
    if isinstance(exc, AimuxError):
        return exc
    wrapper = InternalError(f"unexpected {type(exc).__name__} inside the core")
    wrapper.__cause__ = exc
    return wrapper


def _root(err: AimuxError, limits: Limits) -> dict[str, Any]:
    node = capture(err, limits)
    truncated = node.pop("truncated", None)
    node["retryable"] = bool(err.retryable)
    after = err.retry_after_ms
    if after is not None and 0 <= after <= RETRY_AFTER_MAX_MS:
        node["retryAfterMs"] = int(after)
    if truncated:
        node["truncated"] = truncated
    return node


def to_envelope(exc: BaseException, *, remember: bool = False) -> dict[str, Any]:
    """The envelope of ``exc`` as a dict (what ``project`` serializes); ``remember`` as in
    ``project``."""
    return orjson.loads(project(exc, remember=remember))  # type: ignore[no-any-return]


_NO_DICT: dict[str, Any] = {}  # read only: getattr's default when an exception has no __dict__

#: Where ``project(..., remember=True)`` keeps the envelope on the exception (with the cause it
#: was projected with: a changed ``__cause__`` projects again).
_REMEMBERED = "_aimux_envelope"


def project(exc: BaseException, *, remember: bool = False) -> bytes:
    """The envelope JSON of ``exc``. Never raises.

    ``remember=True`` keeps the bytes on the exception, and any later ``project`` of the same
    exception (with the same ``__cause__``) answers them: a failed recorded call is projected
    once, by the recorder, and the dispatch boundary reuses it."""
    held = getattr(exc, "__dict__", _NO_DICT).get(_REMEMBERED)
    if held is not None and held[0] is exc.__cause__:
        return held[1]  # type: ignore[no-any-return]
    secrets = redact.attached(exc)  # the secrets of the call it left (redact.attach)
    if secrets:
        with secrets.active():
            data = _project(exc)
    else:
        data = _project(exc)
    if remember:
        try:
            exc.__dict__[_REMEMBERED] = (exc.__cause__, data)
        except Exception:  # noqa: BLE001 - an exception without a __dict__ is projected again
            pass
    return data


#: The envelope this process projected last and the root node it was serialized from:
#: ``chain_links`` of those very bytes (the shim's next step after a failed call) reads the nodes
#: instead of parsing the JSON again. Replaced as one tuple; read once and matched by identity,
#: so a thread that projected in between only sends a reader back to parsing.
_last: tuple[bytes, dict[str, Any]] = (b"", {})


def _project(exc: BaseException) -> bytes:
    global _last
    try:
        err = exc if isinstance(exc, AimuxError) else _as_aimux(exc)
        root = _root(err, DEFAULT_LIMITS)
        data = orjson.dumps(root)
        if len(data) <= ENVELOPE_MAX_BYTES:
            _last = (data, root)
            return data
        for limits in _TIGHTER:
            node = _root(err, limits)
            marks = node.setdefault("truncated", [])
            if "envelope" not in marks:
                marks.append("envelope")
            data = orjson.dumps(node)
            if len(data) <= ENVELOPE_MAX_BYTES:
                return data
    except Exception:  # noqa: BLE001 - the projection must never fail
        pass
    return _LAST_RESORT


# -- decoding ----------------------------------------------------------------------------------


def _parse(envelope: bytes | str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(envelope, dict):
        return envelope
    try:
        obj = orjson.loads(envelope)
    except orjson.JSONDecodeError as exc:
        raise InvalidWireJSONError("envelope is not valid JSON", argument="envelope") from exc
    if not isinstance(obj, dict):
        raise InvalidWireJSONError("envelope is not a JSON object", argument="envelope")
    return obj


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _decode_node(node: dict[str, Any], depth: int) -> BaseException:
    message = _str(node.get("message"))
    kind = node.get("kind")
    exc: BaseException
    if isinstance(kind, str):
        code = _wire_code(node)
        error = node.get("error") if isinstance(node.get("error"), dict) else {}
        assert isinstance(error, dict)
        name_raw = error.get("name")
        name = name_raw if isinstance(name_raw, str) else None
        cls = lookup(kind, name, code)
        # A name this version does not know stays generic even when its code is known; a
        # RetryError is one only by name (the native-chain rule follows attempts by name).
        if (
            cls is None
            or (name is not None and cls.error_name != name)
            or (cls is RetryError and name is None)
        ):
            exc = UnknownError(message, kind=kind, code=code, name=name)
        else:
            members = {k: v for k, v in error.items() if k not in ("name", "errors")}
            attempts: list[BaseException] = []
            if issubclass(cls, (RetryError, AITimeoutError)):  # a timeout's earlier attempts too
                raw_attempts = error.get("errors")
                attempts = [
                    _decode_node(a, depth + 1)
                    for a in (raw_attempts if isinstance(raw_attempts, list) else [])
                    if isinstance(a, dict) and depth + 1 < _DECODE_MAX_DEPTH
                ]
            if issubclass(cls, RetryError):  # the attempts are part of its payload
                exc = cls(message, payload=cls.wire_payload({**members, "errors": attempts}))
            elif issubclass(cls, AITimeoutError):
                exc = cls(message, payload=cls.wire_payload(members), errors=attempts)
            else:
                exc = cls(message, payload=cls.wire_payload(members))
            if code > 0:
                exc.code = code  # the code as sent (a known name keeps its class's code otherwise)
        assert isinstance(exc, AimuxError)
        exc.raw = node
    else:
        type_raw = node.get("type")
        exc = SourceError(message, type_raw if isinstance(type_raw, str) else None)
        exc.raw = node
    cause = node.get("cause")
    if isinstance(cause, dict) and depth + 1 < _DECODE_MAX_DEPTH:
        exc.__cause__ = _decode_node(cause, depth + 1)
    elif isinstance(exc, RetryError) and exc.errors:
        exc.__cause__ = exc.errors[-1]
    return exc


def whole_number(value: Any) -> int | None:
    """A JSON number's value when it is a whole number, else None: ``3`` and ``3.0`` (and
    ``3e0``) alike, as JSON does not tell them apart and JavaScript's parser cannot (DESIGN.md
    "Numbers on the wire"); a bool, a string or a fraction is not one."""
    cls = value.__class__
    if cls is int:
        return value  # type: ignore[no-any-return]
    if cls is float and value.is_integer():
        return int(value)
    return None


def _wire_code(node: dict[str, Any]) -> int:
    """A node's ``code`` when it is a whole number from 0 to 2**31-1 (what ``aimux_error_code``'s
    ``int32_t`` holds), else 0."""
    code = whole_number(node.get("code"))
    return code if code is not None and 0 <= code <= CODE_MAX else 0


def check_root(obj: dict[str, Any]) -> None:
    """An envelope's root must be an aimux node (a string ``kind``) with a code in 1..2**31-1
    (what ``aimux_error_code`` can return), or no code at all but an ``error.name`` this version
    knows (whose class gives the code); else 202 — never a root with code 0."""
    kind = obj.get("kind")
    if not isinstance(kind, str):
        raise InvalidWireJSONError(
            "envelope has no 'kind': it is a source node, not an envelope", argument="envelope"
        )
    code = whole_number(obj.get("code"))
    if code is not None and code > CODE_MAX:
        raise InvalidWireJSONError(
            "envelope 'code' is out of range (an integer from 1 to 2147483647)",
            argument="envelope",
        )
    if code is None or code < 1:
        error = obj.get("error")
        name = error.get("name") if isinstance(error, dict) else None
        if not isinstance(name, str) or lookup(kind, name, None) is None:
            raise InvalidWireJSONError(
                "envelope has no valid 'code' (an integer ≥ 1) and no known error name",
                argument="envelope",
            )


def decode_cause(node: dict[str, Any]) -> BaseException:
    """Rebuild one cause node (an aimux node or a source node) and its chain as exceptions: a
    host's own error chain (a tool's failure) enters the core this way."""
    return _decode_node(node, 0)


def decode_error(envelope: bytes | str | dict[str, Any]) -> AimuxError:
    """Rebuild the native exception (with its ``__cause__`` chain) from an envelope."""
    obj = _parse(envelope)
    check_root(obj)
    exc = _decode_node(obj, 0)
    assert isinstance(exc, AimuxError)
    exc.wire_root = root_fields(obj)
    return exc


def root_fields(root: dict[str, Any]) -> tuple[bool, int | None]:
    """The root's own ``(retryable, retryAfterMs)`` as given (CONTRACT §4): what every decoder
    reports. A ``retryable`` that is not a JSON bool reads as false; a ``retryAfterMs`` that is
    not a whole number from 0 to ``RETRY_AFTER_MAX_MS`` as absent."""
    retryable = root.get("retryable")
    after = whole_number(root.get("retryAfterMs"))
    ok_after = after is not None and 0 <= after <= RETRY_AFTER_MAX_MS
    return retryable is True, after if ok_after else None


def native_chain(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The links of the native chain starting at ``node`` (DESIGN.md): ``cause``, or for an
    AI_RetryError without one, the last attempt."""
    links: list[dict[str, Any]] = []
    current: Any = node
    while isinstance(current, dict) and len(links) < _DECODE_MAX_DEPTH:
        links.append(current)
        nxt = current.get("cause")
        if nxt is None and isinstance(current.get("kind"), str):
            error = current.get("error")
            if isinstance(error, dict) and error.get("name") == "AI_RetryError":
                attempts = error.get("errors")
                if isinstance(attempts, list) and attempts:
                    nxt = attempts[-1]
        current = nxt
    return links


def _decoded_root_code(root: dict[str, Any]) -> int:
    error = root.get("error")
    name = error.get("name") if isinstance(error, dict) else None
    cls = lookup(str(root.get("kind")), name if isinstance(name, str) else None, None)
    return cls.code if cls is not None else 0


class Link(NamedTuple):
    """One link of the native chain as the C shim gets it (``aimux_ops.wire.packed.pack``)."""

    code: int
    #: ``error.statusCode`` of an aimux node when a whole number from 0 to 2**31-1, else 0 (a
    #: RetryError's is its last attempt's: ``RetryError.status_code``)
    status_code: int
    kind: bytes  #: the node's kind, b"source" for a source node
    name: bytes | None  #: ``error.name`` (aimux node) or ``type`` (source node), None if absent
    message: bytes
    json: bytes


def chain_links(envelope_json: bytes) -> tuple[tuple[bool, int | None], list[Link]]:
    """The root's own ``(retryable, retryAfterMs)`` and, root first, one ``Link`` per link of
    the native chain: what ``decode_error`` and ``decode-chain`` report, decided once here so
    the C accessors never read JSON. The root's JSON is ``envelope_json`` itself; source nodes
    report code 0 and status 0; an aimux node's code or status outside 0..2**31-1 reads as 0
    (the root's code is checked by ``check_root``)."""
    held = _last
    if held[0] is envelope_json:  # projected here just now: the same nodes, not parsed again
        root = held[1]
    else:
        root = orjson.loads(envelope_json)
        if not isinstance(root, dict):
            raise InvalidWireJSONError("envelope is not a JSON object", argument="envelope")
    check_root(root)
    out: list[Link] = []
    for i, link in enumerate(native_chain(root)):
        kind = link.get("kind")
        status = 0
        if isinstance(kind, str):
            code = _wire_code(link)
            error = link.get("error")
            name = None
            if isinstance(error, dict):
                name = error.get("name")
                status = whole_number(error.get("statusCode")) or 0
                status = status if 0 <= status <= CODE_MAX else 0
        else:
            code = 0
            kind = "source"
            name = link.get("type")
        if i == 0 and code < 1:
            code = _decoded_root_code(root)
        out.append(
            Link(
                code,
                status,
                kind.encode("utf-8", "replace"),
                name.encode("utf-8", "replace") if isinstance(name, str) else None,
                _str(link.get("message")).encode("utf-8", "replace"),
                # the root is the envelope's own bytes (the same bytes everywhere), minus any
                # surrounding whitespace a foreign producer left around the object
                envelope_json.strip() if i == 0 else orjson.dumps(link),
            )
        )
    return root_fields(root), out
