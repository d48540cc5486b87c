"""atheris: ``aimux_ops.boundary.dispatch.call_json`` and the stream functions with fuzzed op + params.

Input layout: byte 0 picks the op (one of ``common.OPS``, or the rest of the input split at the
first NUL as a raw op name), the rest is the params JSON. Call ops go through ``call_json``,
stream ops through ``stream_json`` / ``stream_next_json`` / ``stream_free`` (at most 200 events).
Run: ``python fuzz/fuzz_call_json.py [libFuzzer flags] [corpus dirs]``.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["aimux_ops"]):
    from aimux_ops.boundary import dispatch

import common


def split(data: bytes) -> tuple[bytes, bytes]:
    if not data:
        return b"", b""
    sel, rest = data[0], data[1:]
    if sel < 0xF0:
        return common.OPS[sel % len(common.OPS)].encode(), rest
    op, _, params = rest.partition(b"\0")
    return op, params


def TestOneInput(data: bytes) -> None:
    op, params = split(data)
    params = common.shape_params(params)
    name = op.decode("utf-8", "replace")
    if name == "stream_text":
        handle = common.drain_stream(op, params, 200)
        if handle is None:
            return
        _, stale = dispatch.stream_next_json(handle)
        if stale is None or common.check_envelope(stale)["code"] != 203:
            raise AssertionError("a freed handle did not answer 203")
        return
    result, env = dispatch.call_json(op, params)
    common.check_reply(name, result, env)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    try:
        atheris.Fuzz()
    finally:
        common.cleanup()


if __name__ == "__main__":
    main()
