"""ctypes over libaimux.so: the C ABI exactly as a user loads it (CONTRACT §3).

Used by the benchmarks (``bench/run.py``) and by the hardening tests (``tests/test_hardening_*``).
Every returned string and error is freed here; ``Lib.call`` / ``Lib.stream_events`` return Python
bytes, and report an error as ``CError`` (code, message, the envelope JSON, the native chain).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
P = ctypes.c_void_p


def lib_path() -> str:
    return os.environ.get("AIMUX_LIB") or str(ROOT / "native" / "build" / "libaimux.so")


@dataclass
class CError(Exception):
    code: int
    message: str
    json: bytes
    #: (code, message, node JSON) for each link of the native chain, root first
    chain: list[tuple[int, str, bytes]] = field(default_factory=list)

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class Lib:
    def __init__(self, path: str | None = None) -> None:
        self.path = path or lib_path()
        lib = ctypes.CDLL(self.path)
        lib.aimux_abi_version.restype = ctypes.c_uint32
        lib.aimux_abi_version.argtypes = []
        lib.aimux_call.restype = P
        lib.aimux_call.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(P)]
        lib.aimux_stream.restype = P
        lib.aimux_stream.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_uint64)]
        lib.aimux_stream_next.restype = P
        lib.aimux_stream_next.argtypes = [ctypes.c_uint64, ctypes.POINTER(P)]
        lib.aimux_stream_cancel.restype = None
        lib.aimux_stream_cancel.argtypes = [ctypes.c_uint64]
        lib.aimux_stream_free.restype = None
        lib.aimux_stream_free.argtypes = [ctypes.c_uint64]
        lib.aimux_error_code.restype = ctypes.c_int32
        lib.aimux_error_code.argtypes = [P]
        lib.aimux_error_message.restype = P
        lib.aimux_error_message.argtypes = [P]
        lib.aimux_error_json.restype = P
        lib.aimux_error_json.argtypes = [P]
        lib.aimux_error_cause.restype = P
        lib.aimux_error_cause.argtypes = [P]
        lib.aimux_error_free.restype = None
        lib.aimux_error_free.argtypes = [P]
        lib.aimux_string_free.restype = None
        lib.aimux_string_free.argtypes = [P]
        self.lib = lib

    # -- strings and errors ----------------------------------------------------------------------
    def take_string(self, ptr: int | None) -> bytes | None:
        """Copy a returned ``char *`` and free it."""
        if not ptr:
            return None
        try:
            return ctypes.string_at(ptr)
        finally:
            self.lib.aimux_string_free(ptr)

    def take_error(self, err: int) -> CError:
        """Read a returned error (code, message, JSON, the whole native chain) and free it."""
        lib = self.lib
        try:
            chain: list[tuple[int, str, bytes]] = []
            node = err
            while node and len(chain) < 64:
                msg = self.take_string(lib.aimux_error_message(node)) or b""
                js = self.take_string(lib.aimux_error_json(node)) or b""
                chain.append((lib.aimux_error_code(node), msg.decode("utf-8", "replace"), js))
                node = lib.aimux_error_cause(node)
            code, message, js = chain[0]
            return CError(code, message, js, chain)
        finally:
            lib.aimux_error_free(err)

    # -- calls -----------------------------------------------------------------------------------
    def call(self, op: bytes | None, params: bytes | None) -> bytes:
        out = P()
        err = self.lib.aimux_call(op, params, ctypes.byref(out))
        if err:
            if out.value:
                raise AssertionError("aimux_call returned an error and a result")
            raise self.take_error(err)
        result = self.take_string(out.value)
        if result is None:
            raise AssertionError("aimux_call returned NULL and no result")
        return result

    def call_raw(self, op: bytes | None, params: bytes | None) -> None:
        """The cheapest round trip (for the benchmarks): result / error freed unread."""
        out = P()
        err = self.lib.aimux_call(op, params, ctypes.byref(out))
        if err:
            self.lib.aimux_error_free(err)
        else:
            self.lib.aimux_string_free(out.value)

    def open_stream(self, op: bytes | None, params: bytes | None) -> int:
        handle = ctypes.c_uint64()
        err = self.lib.aimux_stream(op, params, ctypes.byref(handle))
        if err:
            if handle.value:
                raise AssertionError("aimux_stream returned an error and a handle")
            raise self.take_error(err)
        if not handle.value:
            raise AssertionError("aimux_stream returned NULL and handle 0")
        return handle.value

    def next_event(self, handle: int) -> bytes | None:
        out = P()
        err = self.lib.aimux_stream_next(handle, ctypes.byref(out))
        if err:
            raise self.take_error(err)
        return self.take_string(out.value)

    def stream_events(self, op: bytes, params: bytes, limit: int = 1_000_000) -> Iterator[bytes]:
        """Every event of a stream (the handle freed at the end, or when the iterator closes)."""
        handle = self.open_stream(op, params)
        try:
            for _ in range(limit):
                event = self.next_event(handle)
                if event is None:
                    return
                yield event
            raise AssertionError(f"stream {handle} did not end within {limit} events")
        finally:
            self.lib.aimux_stream_free(handle)

    def count_stream(self, op: bytes, params: bytes) -> int:
        """Count the events of a stream with the fewest Python steps (for the benchmarks)."""
        lib = self.lib
        handle = ctypes.c_uint64()
        err = lib.aimux_stream(op, params, ctypes.byref(handle))
        if err:
            raise self.take_error(err)
        out = P()
        ref = ctypes.byref(out)
        n = 0
        nxt, free_s = lib.aimux_stream_next, lib.aimux_string_free
        try:
            while True:
                err = nxt(handle.value, ref)
                if err:
                    raise self.take_error(err)
                if not out.value:
                    return n
                free_s(out.value)
                n += 1
        finally:
            lib.aimux_stream_free(handle.value)
