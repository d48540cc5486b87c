"""The packed error chain (``aimux_ops.wire.packed``, its one definition): ``pack`` writes the layout
its fields describe, the generated header the shim reads is those fields, and the real library
(``aimux_error_from_json``: ``chain_links`` packed by ``pack``, read by ``_aimux_err_unpack``)
gives back in every accessor what ``chain_links`` decided, over random chains."""

from __future__ import annotations

import ctypes
import random
import struct
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from aimux_ops.codegen import c
from aimux_ops.wire import packed
from aimux_ops.wire.envelope import chain_links

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from cabi import Lib

REPO = Path(__file__).resolve().parent.parent

P = ctypes.c_void_p


def _header(fields: tuple[tuple[str, str], ...], buf: bytes, off: int) -> dict[str, int]:
    """One header read field by field, by name, at the offsets the fields give."""
    formats = dict(fields)
    return {
        name: struct.unpack_from("=" + formats[name], buf, off + at)[0]
        for name, _, at in packed.offsets(fields)
    }


def _read(
    buf: bytes,
) -> tuple[tuple[int, int], list[tuple[int, int, bytes, bytes | None, bytes, bytes]]]:
    """The layout as the module's docstring and fields describe it."""
    root = _header(packed.ROOT_FIELDS, buf, 0)
    off, links = packed.ROOT.size, []
    while off < len(buf):
        h = _header(packed.LINK_FIELDS, buf, off)
        off += packed.LINK.size
        strings = []
        for key in ("kind_len", "name_len", "message_len", "json_len"):
            if key == "name_len" and h[key] == packed.NO_NAME:
                strings.append(None)
                continue
            strings.append(buf[off : off + h[key]])
            off += h[key]
        kind, name, message, json = strings
        assert kind is not None and message is not None and json is not None
        links.append((h["code"], h["status_code"], kind, name, message, json))
    assert off == len(buf)
    return (root["retryable"], root["retry_after_ms"]), links


def test_pack_writes_the_layout_of_its_fields() -> None:
    links = [
        (300, 0, b"protocol", b"UnknownOpError", "unknown op 'x' \u00e9".encode(), b"{}"),
        (0, 0, b"source", None, b"", b'{"message":""}'),
        (14, 429, b"aimux", b"AI_RetryError", b"r", b"{}"),
        (2**31, 2**31, b"aimux", b"", b"m", b"j"),  # outside int32: reads as 0
        (-(2**31) - 1, -1, b"k", None, b"", b""),
    ]
    buf = packed.pack(((True, 1500), links))
    root, got = _read(buf)
    assert root == (1, 1500)
    assert got == [
        *links[:3],
        (0, 0, b"aimux", b"", b"m", b"j"),
        (0, 0, b"k", None, b"", b""),
    ]
    assert _read(packed.pack(((False, None), [])))[0] == (0, -1)
    assert _read(packed.pack(((False, 2**63), [])))[0] == (0, -1)  # outside int64: absent


def test_the_header_the_shim_reads_is_the_modules_fields() -> None:
    text = (REPO / c.PACKED).read_text()
    assert text == c._packed()  # committed and current (also `make check-schema`)
    for prefix, fields, size in (
        ("ROOT", packed.ROOT_FIELDS, packed.ROOT.size),
        ("LINK", packed.LINK_FIELDS, packed.LINK.size),
    ):
        for name, ctype, at in packed.offsets(fields):
            assert f"typedef {ctype} _aimux_packed_{prefix.lower()}_{name}_t;" in text
            assert f"#define _AIMUX_PACKED_{prefix}_{name.upper()} {at}\n" in text
        assert f"#define _AIMUX_PACKED_{prefix}_SIZE {size}\n" in text
    assert f"#define _AIMUX_PACKED_NO_NAME 0x{packed.NO_NAME:X}u\n" in text


class _Decoder(Lib):
    def __init__(self) -> None:
        super().__init__()
        lib = self.lib
        lib.aimux_error_from_json.restype = P
        lib.aimux_error_from_json.argtypes = [ctypes.c_char_p, ctypes.POINTER(P)]
        for name in ("aimux_error_kind", "aimux_error_name"):
            getattr(lib, name).restype = P
            getattr(lib, name).argtypes = [P]
        lib.aimux_error_retryable.restype = ctypes.c_int
        lib.aimux_error_retryable.argtypes = [P]
        lib.aimux_error_retry_after_ms.restype = ctypes.c_int64
        lib.aimux_error_retry_after_ms.argtypes = [P]
        lib.aimux_error_status_code.restype = ctypes.c_int32
        lib.aimux_error_status_code.argtypes = [P]

    def decode(self, env: bytes) -> tuple[tuple[bool, int | None], list[Any]]:
        """What the library's accessors say of the decoded chain, in ``chain_links``' shape."""
        lib, out = self.lib, P()
        err = lib.aimux_error_from_json(env, ctypes.byref(out))
        assert not err, self.take_error(err)
        root = out.value
        try:
            links, node = [], root
            while node:
                links.append(
                    (
                        lib.aimux_error_code(node),
                        lib.aimux_error_status_code(node),
                        self.take_string(lib.aimux_error_kind(node)),
                        self.take_string(lib.aimux_error_name(node)),
                        self.take_string(lib.aimux_error_message(node)),
                        self.take_string(lib.aimux_error_json(node)),
                    )
                )
                node = lib.aimux_error_cause(node)
            after = lib.aimux_error_retry_after_ms(root)
            return (bool(lib.aimux_error_retryable(root)), None if after < 0 else after), links
        finally:
            lib.aimux_error_free(root)


def _text(rng: random.Random) -> str:
    return "".join(rng.choice('ab \u00e9\u4e2d"\\\n\x01') for _ in range(rng.randint(0, 12)))


def _node(rng: random.Random, depth: int) -> dict[str, Any]:
    if rng.random() < 0.4:
        node: dict[str, Any] = {"message": _text(rng)}
        if rng.random() < 0.5:
            node["type"] = _text(rng)
    else:
        node = {
            "kind": rng.choice(["aimux", "protocol", "binding", "future-kind"]),
            "code": rng.choice([1, 11, 300, 2**31 - 1, 2**31, -5, 3.0, "x"]),
            "message": _text(rng),
        }
        if rng.random() < 0.8:
            node["error"] = {"name": rng.choice(["AI_APICallError", "UnknownOpError", _text(rng)])}
            if rng.random() < 0.5:
                node["error"]["statusCode"] = rng.choice([429, 503, 0, 2**31, -1, 4.0, "500", True])
    if depth > 0 and rng.random() < 0.7:
        node["cause"] = _node(rng, depth - 1)
    return node


@pytest.fixture(scope="module")
def decoder() -> _Decoder:
    return _Decoder()


def test_the_library_reads_back_what_chain_links_decided(decoder: _Decoder) -> None:
    rng = random.Random(2026)
    checked = 0
    for _ in range(400):
        root = _node(rng, 6)
        root.update(kind="aimux", code=rng.randint(1, 2**31 - 1), error={"name": "AI_X"})
        root["retryable"] = rng.choice([True, False, 1, None])
        if rng.random() < 0.5:
            root["retryAfterMs"] = rng.choice([0, 1500, 2**40, -1, 1.5])
        env = orjson.dumps(root)
        want = chain_links(env)
        assert decoder.decode(env) == (want[0], [tuple(link) for link in want[1]])
        checked += len(want[1])
    assert checked > 800
