"""Unknown ops through the C ABI (libaimux loaded in this process with ctypes): every accessor of
the answer is the core's own (``dispatch.call_json``'s envelope, code 300, ``availableOps``), a
new op is found at once and a removed one is unknown again, a pure op registered anew answers
afresh, and a remembered secret in an op's name never leaves."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import orjson
import pytest
from pydantic import BaseModel, ConfigDict

from aimux_ops.boundary import dispatch
from aimux_ops.ops import registry
from aimux_ops.wire import redact

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from cabi import Lib

pytestmark = pytest.mark.timeout(120)

P = ctypes.c_void_p
#: Every accessor of one answer: code, kind, name, message, JSON, retryable, retry hint, and
#: whether it has a cause.
View = tuple[int, bytes, bytes, bytes, bytes, int, int, bool]


class Probe(Lib):
    """``bench/cabi.Lib`` reading every accessor of an error."""

    def __init__(self) -> None:
        super().__init__()
        lib = self.lib
        for name in ("aimux_error_kind", "aimux_error_name"):
            getattr(lib, name).restype = P
            getattr(lib, name).argtypes = [P]
        lib.aimux_error_retryable.restype = ctypes.c_int
        lib.aimux_error_retryable.argtypes = [P]
        lib.aimux_error_retry_after_ms.restype = ctypes.c_int64
        lib.aimux_error_retry_after_ms.argtypes = [P]

    def answer(self, op: bytes) -> View | bytes:
        """The call's answer: its error's view, or the result."""
        lib, out = self.lib, P()
        err = lib.aimux_call(op, b"{}", ctypes.byref(out))
        if not err:
            return self.take_string(out.value) or b""
        try:
            return (
                lib.aimux_error_code(err),
                self.take_string(lib.aimux_error_kind(err)) or b"",
                self.take_string(lib.aimux_error_name(err)) or b"",
                self.take_string(lib.aimux_error_message(err)) or b"",
                self.take_string(lib.aimux_error_json(err)) or b"",
                lib.aimux_error_retryable(err),
                lib.aimux_error_retry_after_ms(err),
                bool(lib.aimux_error_cause(err)),
            )
        finally:
            lib.aimux_error_free(err)


_probe: Probe | None = None


@pytest.fixture()
def lib() -> Probe:
    global _probe
    if _probe is None:
        _probe = Probe()
        _probe.call(b"aimux.version", b"{}")  # the runtime and its callbacks are up
    return _probe


class _NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


#: Names of every shape a caller sends: plain, look-alikes of op names and of the anchors the
#: scrub looks for, dashes, spaces, quotes, escapes, a URL, non-ASCII, invalid UTF-8, long ones.
NAMES = [
    b"x",
    b"no.such.op",
    b"generate_Text",
    b"aimux.versions",
    b"sk_live_abcdefghijklmnop",
    b"n" * 128,
    b"n" * 300,
    b"",
    b"no-such-op",
    b"sk-abcdefghijklmnop",
    b"key-0123456789abcdef",
    b"bearer abc",
    b"no such op",
    b"http://x.y/z",
    b"quote'op",
    b'dq"op',
    b"back\\slash",
    b"tab\top",
    "caf\u00e9".encode(),
    b"\xff\xfe",
]


@pytest.mark.parametrize("name", NAMES)
def test_an_unknown_op_is_the_cores_answer_in_every_accessor(lib: Probe, name: bytes) -> None:
    view = lib.answer(name)
    assert isinstance(view, tuple)
    env = dispatch.call_json(name, b"{}")[1]
    assert env is not None
    root = orjson.loads(env)
    assert view[4] == env  # the envelope the core's own call_json gives, byte for byte
    assert view[:4] == (
        root["code"],
        root["kind"].encode(),
        root["error"]["name"].encode(),
        root["message"].encode(),
    )
    assert view[5:] == (0, -1, "cause" in root)
    if root["code"] == 300:
        assert view[2] == b"UnknownOpError"
        assert root["error"]["availableOps"] == dispatch._op_names()


def test_a_wrong_mode_is_302(lib: Probe) -> None:
    view = lib.answer(b"stream_text")
    assert isinstance(view, tuple) and view[:3] == (302, b"protocol", b"WrongModeError")


def test_a_new_op_is_found_at_once_and_a_removed_one_is_unknown_again(lib: Probe) -> None:
    name = b"test.unknown_op_cabi.fresh"
    before = lib.answer(name)
    assert isinstance(before, tuple) and before[0] == 300
    registry.register_op(name.decode(), mode="call", params=_NoParams)(lambda p: {"fresh": 1})
    try:
        assert lib.answer(name) == b'{"fresh":1}'
        other = lib.answer(b"no.such.op")  # the new op is in availableOps
        assert isinstance(other, tuple)
        assert name.decode() in orjson.loads(other[4])["error"]["availableOps"]
    finally:
        registry.unregister_op(name.decode())
    assert lib.answer(name) == before


def test_a_remembered_secret_in_a_name_is_scrubbed(lib: Probe) -> None:
    secret = "PlainSecret0123456789zz"
    name = f"ops.{secret}.call".encode()
    first = lib.answer(name)
    assert isinstance(first, tuple) and secret.encode() in first[3]  # not remembered yet
    redact.remember_secret(secret)
    for _ in range(3):
        view = lib.answer(name)
        assert isinstance(view, tuple) and view[0] == 300
        assert secret.encode() not in view[3] + view[4]
        assert b"[REDACTED]" in view[3] and b"[REDACTED]" in view[4]


def test_a_pure_op_removed_or_registered_anew_answers_afresh(lib: Probe) -> None:
    name = "test.unknown_op_cabi.pure"
    registry.register_op(name, mode="call", params=_NoParams, pure=True)(lambda p: {"v": 1})
    try:
        assert lib.answer(name.encode()) == b'{"v":1}'
        assert lib.answer(name.encode()) == b'{"v":1}'  # the cached result
        registry.register_op(name, mode="call", params=_NoParams, pure=True)(lambda p: {"v": 2})
        assert lib.answer(name.encode()) == b'{"v":2}'
    finally:
        registry.unregister_op(name)
    view = lib.answer(name.encode())
    assert isinstance(view, tuple) and view[0] == 300
