"""Loading the optional C extension of aimux_ops (``aimux_ops._speedups._cchunks``, the
providers' stream chunk reader, whose Python reference is each provider's ``_read_events``):
None when ``AIMUX_PURE_PYTHON`` is set (not "" or "0"; read once, when this module is first
imported, so that every provider of a process agrees), when it is not built, or when its source
lies next to it and differs from the one it was built from (``SOURCE_SHA``: a stale build never
shadows an edited source; the Python path runs)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
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
    """What the providers use of ``aimux_ops._speedups._cchunks`` (its stub, ``_cchunks.pyi``, is
    checked against it below): the module ``load("_cchunks")`` answers, typed."""

    @property
    def UNPARSED(self) -> object: ...
    @property
    def read_openai(self) -> ReadOpenAI: ...
    @property
    def read_anthropic(self) -> ReadAnthropic: ...


if TYPE_CHECKING:
    from . import _cchunks

    _stub_matches: CChunks = _cchunks


#: ``AIMUX_PURE_PYTHON`` when this module was first imported (by a provider's first stream, not
#: by ``import aimux_ops``): the C extension is off (the one reading).
PURE_PYTHON: bool = os.environ.get("AIMUX_PURE_PYTHON", "") not in ("", "0")


def load(name: str) -> Any:
    """The module ``aimux_ops._speedups.<name>`` built from its ``<name>.c`` beside this file, or
    None."""
    if PURE_PYTHON:
        return None
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ImportError:
        return None
    try:
        with open(os.path.join(os.path.dirname(__file__), f"{name}.c"), "rb") as source:
            text = source.read()
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


def chunk_reader(provider: dict[str, Any]) -> CChunks | None:
    """``aimux_ops._speedups._cchunks`` for a provider module (its globals): its ``_cchunks`` is
    ``...`` until its first stream loads the module here (None when it is off, not built or
    stale; tests set it, None to run the Python loop alone)."""
    if provider["_cchunks"] is ...:
        provider["_cchunks"] = load("_cchunks")
    module: CChunks | None = provider["_cchunks"]
    return module


def read_paced(
    fast: Callable[[int], tuple[int, Any]],
    python: Callable[[list[str | None] | None, list[bytes], Any], bool],
    names: list[str | None] | None,
    datas: list[bytes],
    loads: Any,
    unparsed: object,
    pace: list[int] | None,
) -> bool:
    """One read's events, a provider's C reader first (``fast(start)``: ``(index, parsed)`` of
    the first event it hands back, ``index == len(datas)`` when it took them all) and its Python
    loop (``python(names, datas, loads)``: True at the stream's terminal event) for the rest: an
    event the C reader hands back (any other shape, the end, an error, a bad chunk) is read by
    the Python loop alone (with the chunk the C reader parsed, not parsed again), and the C reader
    goes on after it; after two hand-backs in a row the rest of the read is the Python loop's, in
    one call (a run of other shapes costs no more than the Python loop). With ``pace`` (the
    stream's, ``pace_after``), reads where the C reader took nothing make the next reads go
    straight to the Python loop for a while."""
    n = len(datas)
    if names is not None and len(names) != n:
        return python(names, datas, loads)
    if pace is not None and pace[0]:
        pace[0] -= 1
        return python(names, datas, loads)
    took = False
    i = 0
    while True:
        j, parsed = fast(i)
        if j >= n:
            if pace is not None:
                pace_after(pace, True)
            return False
        took = took or j > i
        k = j + 1
        one = None if names is None else names[j:k]
        if python(one, datas[j:k], loads if parsed is unparsed else parsed_already(parsed)):
            return True
        if k >= n or (j == i and i > 0):  # the end, or the event before was handed back too
            if pace is not None:
                pace_after(pace, took)
            if k >= n:
                return False
            return python(None if names is None else names[k:], datas[k:], loads)
        i = k


def parsed_already(obj: Any) -> Any:
    """A ``loads`` that answers ``obj``: the chunk a C reader parsed and handed back, read by the
    Python loop without parsing it again."""
    return lambda _data: obj
