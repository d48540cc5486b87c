"""The Python binding's decode-chain testee: an envelope on stdin → the native chain as JSON.

It decodes with ``decode_error`` and walks the native exceptions (``__cause__``; a RetryError's
last attempt), printing ``[{"kind", "code", "name", "message"}]`` (CONTRACT §4). With
``--lines`` it is long-lived: one envelope per stdin line, one answer line each,
``{"chain": [...], "root": {"retryable", "retryAfterMs"}}`` or, when ``decode_error`` refuses
the envelope, ``{"rejected": {"code", "message"}}`` (DESIGN.md "decode-chain").
"""

from __future__ import annotations

import sys
from typing import Any

import orjson

from ..errors import AimuxError, SourceError
from .envelope import decode_error


def walk(exc: BaseException | None) -> list[dict[str, Any]]:
    """One entry per link of the native chain of a decoded error."""
    out: list[dict[str, Any]] = []
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, AimuxError):
            raw_error = (exc.raw or {}).get("error")
            name = raw_error.get("name") if isinstance(raw_error, dict) else exc.error_name
            out.append(
                {
                    "kind": exc.kind,
                    "code": exc.code,
                    "name": name if isinstance(name, str) else None,
                    "message": exc.message,
                }
            )
            exc = exc.native_next()
        else:
            typ = exc.type if isinstance(exc, SourceError) else type(exc).__name__
            out.append({"kind": "source", "code": 0, "name": typ, "message": str(exc)})
            exc = exc.__cause__
    return out


def answer(envelope: bytes) -> dict[str, Any]:
    """The long-lived mode's answer for one envelope."""
    try:
        err = decode_error(envelope)
    except AimuxError as exc:
        return {"rejected": {"code": exc.code, "message": exc.message}}
    return {
        "chain": walk(err),
        "root": {"retryable": err.retryable, "retryAfterMs": err.retry_after_ms},
    }


def main(argv: list[str]) -> int:
    if argv == ["--lines"]:
        out = sys.stdout.buffer
        for line in sys.stdin.buffer:
            if line.strip():
                out.write(orjson.dumps(answer(line)) + b"\n")
                out.flush()
        return 0
    if argv:
        print("usage: decode-chain [--lines]", file=sys.stderr)
        return 2
    print(orjson.dumps(walk(decode_error(sys.stdin.buffer.read()))).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
