"""The template libaimux answers an unknown op from, without the interpreter.

A call of an op no one registered fails with ``UnknownOpError`` (300), and for a plain name (made of
``redact.PLAIN``, at most ``MAX_NAME`` characters) whose message holds no remembered secret, its
answer is the same bytes but for the name: no scrub rule, ``repr`` escape, JSON escape or clip acts
on such a name. ``blob`` cuts the shim's own answer for a probe name into the pieces around the name
and checks them against its answers for two more probes (the longest name; every plain character,
one at a time); libaimux (``native/src/aimux_unknown_op.c``) then puts a caller's name between the
pieces. The core stays the only author of the envelope: when any check fails, or
``AIMUX_PURE_PYTHON`` is set, there is no template and every call goes to the core as before.

The template copies the op names and the remembered secrets; ``changes.OP_NAMES`` and
``changes.SECRETS`` withdraw it around every change of either (docs/DESIGN.md "Unknown ops in C").

The blob, in native byte order: ``int32 code, uint8 retryable, int64 retry_after_ms (-1: none),
uint32 max_len, n_json, n_known, n_secrets``, then strings, each ``uint32 length, bytes``: the plain
characters, the error's kind, its name, the message before and after the op's name, the ``n_json``
pieces of the envelope JSON (the name goes between each two), the ``n_known`` op names, the
``n_secrets`` remembered secrets that could be in the message once a plain name is in it (inside the
name, or across its ends and the text around it: ``_may_touch``); the shim sends a call whose
message holds one to the core.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

from . import redact
from .dispatch import _op_names

__all__ = ["MAX_NAME", "blob"]

#: The longest name answered from the template (the core shows an unknown name up to 200).
MAX_NAME = 128

_HEAD = struct.Struct("=iBqIIII")
_ROOT = struct.Struct("=Bq")
_NODE = struct.Struct("=iIIII")
_NO_NAME = 0xFFFFFFFF
_PLAIN_SET = frozenset(redact.PLAIN)


def _may_touch(secret: str, before: str, after: str) -> bool:
    """Whether ``before + name + after`` can hold ``secret`` for a plain name: ``secret`` is a
    tail of ``before`` (maybe empty), then plain characters (not none: a secret all in the
    fixed text is the core's to scrub), then a head of ``after`` (maybe empty)."""
    n = len(secret)
    heads = [k for k in range(min(n, len(before)) + 1) if before.endswith(secret[:k])]
    tails = [j for j in range(min(n, len(after)) + 1) if after.startswith(secret[n - j :])]
    for k in heads:
        for j in tails:
            middle = secret[k : n - j]
            if k + j < n and len(middle) <= MAX_NAME and _PLAIN_SET.issuperset(middle):
                return True
    return False


def _probes(known: set[str], secrets: tuple[str, ...]) -> list[str] | None:
    """Three plain names no op has and no secret is in: the one the template is cut around,
    the longest, and one holding every plain character."""
    longest = (redact.PLAIN * (MAX_NAME // len(redact.PLAIN) + 1))[:MAX_NAME]
    probes = ["aimux_unknown_op_probe", longest[::-1], "Z." + redact.PLAIN]
    for probe in probes:
        if probe in known or any(s in probe for s in secrets):
            return None
    return probes


def _one_node(packed: bytes) -> tuple[int, int, int, bytes, bytes, bytes, bytes] | None:
    """The root's retryable and retry hint and its only node's code, kind, name, message and
    JSON; None unless the chain is exactly one named node."""
    if len(packed) < _ROOT.size + _NODE.size:
        return None
    retryable, after = _ROOT.unpack_from(packed)
    code, kl, nl, ml, jl = _NODE.unpack_from(packed, _ROOT.size)
    if nl == _NO_NAME or _ROOT.size + _NODE.size + kl + nl + ml + jl != len(packed):
        return None
    at = _ROOT.size + _NODE.size
    kind, name = packed[at : at + kl], packed[at + kl : at + kl + nl]
    msg = packed[at + kl + nl : at + kl + nl + ml]
    return retryable, after, code, kind, name, msg, packed[at + kl + nl + ml :]


def _fill(
    root: bytes, code: int, kind: bytes, name: bytes, msg: list[bytes], json: list[bytes], op: bytes
) -> bytes:
    """The packed answer the template gives for ``op`` (what the C side builds)."""
    m, j = op.join(msg), op.join(json)
    return root + _NODE.pack(code, len(kind), len(name), len(m), len(j)) + kind + name + m + j


def _pack_strings(parts: list[bytes]) -> bytes:
    return b"".join(struct.pack("=I", len(p)) + p for p in parts)


def blob(answer: Callable[[bytes], bytes | None]) -> bytes | None:
    """The template for libaimux, from ``answer`` (an op name -> the packed error chain the shim
    builds for its call, None when the call succeeds); None when there is none to give."""
    if os.environ.get("AIMUX_PURE_PYTHON", "") not in ("", "0"):
        return None
    known = list(_op_names())
    remembered = redact.remembered()
    probes = _probes(set(known), remembered)
    if probes is None:
        return None
    first = probes[0].encode("ascii")
    packed = answer(first)
    parts = None if packed is None else _one_node(packed)
    if parts is None:
        return None
    retryable, after, code, kind, name, msg, json = parts
    msg_pieces, json_pieces = msg.split(first), json.split(first)
    if len(msg_pieces) != 2 or first in kind or first in name:
        return None
    try:
        text_before, text_after = (p.decode("utf-8") for p in msg_pieces)
    except UnicodeDecodeError:
        return None
    if redact.REDACTED in text_before or redact.REDACTED in text_after:
        # a remembered secret in the message's own words: the text around a name is then not
        # what the core scrubs (two secrets may overlap there), so the core answers every call
        return None
    secrets = [s for s in remembered if _may_touch(s, text_before, text_after)]
    root = _ROOT.pack(retryable, after)
    for probe in probes[1:]:
        op = probe.encode("ascii")
        if answer(op) != _fill(root, code, kind, name, msg_pieces, json_pieces, op):
            return None
    head = _HEAD.pack(code, retryable, after, MAX_NAME, len(json_pieces), len(known), len(secrets))
    strings = [redact.PLAIN.encode("ascii"), kind, name, *msg_pieces, *json_pieces]
    strings += [n.encode("utf-8", "surrogatepass") for n in known]
    strings += [s.encode("utf-8", "surrogatepass") for s in secrets]
    return head + _pack_strings(strings)
