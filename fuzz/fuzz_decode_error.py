"""atheris: ``aimux_ops.decode_error`` (and ``chain_links``, the C shim's walk) on fuzzed JSON.

Every input either decodes to an ``AimuxError`` whose ``__cause__`` chain ends (bounded), or is
refused with an ``AimuxError`` (202 INVALID_WIRE_JSON); nothing else may escape. A decoded error
projected again gives an envelope that validates against schema/envelope.schema.json within the
bounds (the forward-compatibility path: unknown kinds and codes still decode and still project;
a payload value a newer core may send is kept as it is, see ``common.check_reprojected``).
Run: ``python fuzz/fuzz_decode_error.py [libFuzzer flags] [corpus dirs]``.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["aimux_ops"]):
    from aimux_ops.errors import AimuxError
    from aimux_ops.wire.envelope import chain_links, decode_error, project

import common


def TestOneInput(data: bytes) -> None:
    try:
        exc = decode_error(data)
    except AimuxError as refused:
        common.check_envelope(project(refused))
        return
    if not isinstance(exc, AimuxError):
        raise AssertionError(f"decode_error returned {type(exc).__name__}")
    seen = 0
    node: BaseException | None = exc
    while node is not None:
        seen += 1
        if seen > 1000:
            raise AssertionError("the decoded __cause__ chain does not end")
        node = node.__cause__
    common.check_reprojected(project(exc))
    _root, links = chain_links(data)
    if not links or not 0 < links[0].code <= 0x7FFFFFFF:
        raise AssertionError(f"chain_links gave {links[:2]!r} for a decodable envelope")


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
