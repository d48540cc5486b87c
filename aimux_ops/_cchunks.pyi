"""The common stream chunk of the providers, read in C (aimux_ops/_cchunks.c)."""

from typing import Any

SOURCE_SHA: str
UNPARSED: object

def read_openai(
    datas: list[bytes],
    names: list[str | None] | None,
    out: list[dict[str, Any]],
    loads: Any,
    start: int,
    seen: bool,
    /,
) -> tuple[int, Any]: ...
