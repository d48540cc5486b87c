"""Loading an optional C extension of aimux_ops (``aimux_ops._cchunks``, ``aimux_ops._cproject``
for ``envelope``): None when ``AIMUX_PURE_PYTHON`` is set (not "" or "0"; read once, when this
module is first imported, so that every extension and every provider of a process agree), when it
is not built, or when its source lies next to it and differs from the one it was built from
(``SOURCE_SHA``: a stale build never shadows an edited source; the Python path runs)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

#: ``_cchunks.read_openai``: (datas, names, out, loads, start, seen) -> (index, parsed)
ReadOpenAI = Callable[
    [list[bytes], list[str | None] | None, list[dict[str, Any]], Any, int, bool], tuple[int, Any]
]
#: ``_cchunks.read_anthropic``: (datas, out, loads, start, json_blocks, tool_calls)
ReadAnthropic = Callable[
    [list[bytes], list[dict[str, Any]], Any, int, set[int], dict[int, list[str]]],
    tuple[int, Any],
]


class CChunks(Protocol):
    """What the providers use of ``aimux_ops._cchunks`` (its stub, ``_cchunks.pyi``, is checked
    against it below): the module ``load("_cchunks")`` answers, typed."""

    @property
    def UNPARSED(self) -> object: ...
    @property
    def read_openai(self) -> ReadOpenAI: ...
    @property
    def read_anthropic(self) -> ReadAnthropic: ...


if TYPE_CHECKING:
    from . import _cchunks

    _stub_matches: CChunks = _cchunks


#: ``AIMUX_PURE_PYTHON`` as the process started: the C extensions are off (the one reading).
PURE_PYTHON: bool = os.environ.get("AIMUX_PURE_PYTHON", "") not in ("", "0")


def load(name: str) -> Any:
    """The module ``aimux_ops.<name>`` built from ``aimux_ops/<name>.c``, or None."""
    if PURE_PYTHON:
        return None
    try:
        module = importlib.import_module(f"aimux_ops.{name}")
    except ImportError:
        return None
    try:
        text = (Path(__file__).parent / f"{name}.c").read_bytes()
    except OSError:  # no source beside the build (a hand-copied .so): nothing to be stale against
        return module
    # a checkout, `make install`'s payload and the wheel all hold the .c beside the .so: the
    # build must come from that very source
    import hashlib

    if hashlib.sha256(text).hexdigest() != module.SOURCE_SHA:
        return None  # a stale build: run `make native` (or native/build_cproject.py)
    return module


#: The most network reads in a row a stream gives straight to its Python loop while the C reader
#: takes nothing of its reads (a stream of shapes it hands back: tool-call deltas, ...).
PACE_MAX = 64


def new_pace() -> list[int]:
    """A stream's pacing of its C reader: [reads left to give straight to the Python loop, the
    length of the last such run]."""
    return [0, 0]


def pace_after(pace: list[int], took: bool) -> None:
    """After a read the C reader saw: none skipped while it takes something; after a read where
    it took nothing, skip the next 1, 2, 4, ... reads (up to ``PACE_MAX``), then try again (a
    hand-back costs more than the Python loop's own chunk; the Python loop is the reference, so
    who reads a read never changes what it yields)."""
    if took:
        pace[1] = 0
    else:
        pace[0] = pace[1] = min(pace[1] * 2 or 1, PACE_MAX)


def parsed_already(obj: Any) -> Any:
    """A ``loads`` that answers ``obj``: the chunk a C reader parsed and handed back, read by the
    Python loop without parsing it again."""
    return lambda _data: obj
