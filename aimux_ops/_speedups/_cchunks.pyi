"""The common stream chunk of the providers, read in C (aimux_ops/_speedups/_cchunks.c)."""

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
def read_anthropic(
    datas: list[bytes],
    out: list[dict[str, Any]],
    loads: Any,
    start: int,
    json_blocks: set[int] | None = None,
    tool_calls: dict[int, list[str]] | None = None,
    /,
) -> tuple[int, Any]: ...
