"""The packed error chain: the one binary layout in which the core hands the C shim an error's
native chain, so that one C call (``_aimux_err_unpack``, native/src/aimux_shim.c) builds every
``aimux_error_t`` node and no C accessor ever reads JSON.

This module is the layout's only definition. ``pack`` writes it (the shim's Python side,
native/src/aimux_embed.py, calls it with ``envelope.chain_links``); the generator
(``aimux_ops.codegen``, ``make schema``) writes the same fields, as C types and offsets, into
``native/src/aimux_packed.h``, which the shim's reader includes; ``make check-schema`` fails when
the header drifts from this module.

The layout, in native byte order with no padding: the root's header (``ROOT``: its own
``retryable`` and ``retryAfterMs``, -1 when absent), then for each link of the chain, root
first, a link header (``LINK``: its code, its ``statusCode`` (0: none) and the lengths of its
four strings, ``NO_NAME`` for a link without a name) followed by the strings themselves (kind,
name, message, JSON), not NUL-terminated.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from operator import itemgetter

__all__ = [
    "LINK",
    "LINK_FIELDS",
    "NO_NAME",
    "ROOT",
    "ROOT_FIELDS",
    "c_type",
    "offsets",
    "pack",
]

#: ``struct`` format character -> the C type of the same size and signedness.
_C_TYPES = {"B": "uint8_t", "i": "int32_t", "I": "uint32_t", "q": "int64_t"}

#: The root's header, field by field: (name, ``struct`` format character).
ROOT_FIELDS = (("retryable", "B"), ("retry_after_ms", "q"))
#: A link's header, field by field; its four strings follow it in this order.
LINK_FIELDS = (
    ("code", "i"),
    ("status_code", "i"),
    ("kind_len", "I"),
    ("name_len", "I"),
    ("message_len", "I"),
    ("json_len", "I"),
)

ROOT = struct.Struct("=" + "".join(f for _, f in ROOT_FIELDS))
LINK = struct.Struct("=" + "".join(f for _, f in LINK_FIELDS))
#: ``name_len`` of a link without a name (an aimux node without ``error.name``, a source node
#: without ``type``): no name bytes follow.
NO_NAME = 0xFFFFFFFF

_CODE_MIN, _CODE_MAX = -(2**31), 2**31 - 1
_AFTER_MAX = 2**63 - 1
_pack_root = ROOT.pack
_pack_link = LINK.pack
#: A header's values in its fields' order, from the values by field name (``pack`` names what
#: it writes; the order is the fields' alone).
_root_order = itemgetter(*(name for name, _ in ROOT_FIELDS))
_link_order = itemgetter(*(name for name, _ in LINK_FIELDS))


def c_type(fmt: str) -> str:
    """The C type of a field's ``struct`` format character."""
    return _C_TYPES[fmt]


def offsets(fields: tuple[tuple[str, str], ...]) -> list[tuple[str, str, int]]:
    """Each field's (name, C type, byte offset) in its header."""
    out, at = [], 0
    for name, fmt in fields:
        out.append((name, c_type(fmt), at))
        at += struct.calcsize("=" + fmt)
    return out


Link = tuple[int, int, bytes, "bytes | None", bytes, bytes]


def pack(walk: tuple[tuple[bool, int | None], Iterable[Link]]) -> bytes:
    """The packed chain of ``envelope.chain_links``' answer: the root's own ``(retryable,
    retryAfterMs)`` and its links ``(code, status_code, kind, name, message, json)``, root first.
    A code or status outside int32 reads as 0 and a retry hint outside int64 as absent (what
    the accessors' types can hold)."""
    (retryable, after), links = walk
    root = {
        "retryable": 1 if retryable else 0,
        "retry_after_ms": -1 if after is None or after > _AFTER_MAX else after,
    }
    parts = [_pack_root(*_root_order(root))]
    for code, status, kind, name, message, json in links:
        header = {
            "code": code if _CODE_MIN <= code <= _CODE_MAX else 0,
            "status_code": status if 0 <= status <= _CODE_MAX else 0,
            "kind_len": len(kind),
            "name_len": NO_NAME if name is None else len(name),
            "message_len": len(message),
            "json_len": len(json),
        }
        parts.append(_pack_link(*_link_order(header)))
        parts.append(kind)
        if name is not None:
            parts.append(name)
        parts.append(message)
        parts.append(json)
    return b"".join(parts)
