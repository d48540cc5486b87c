"""Loading an optional C extension of aimux_ops (``aimux_ops._cchunks``; ``envelope`` loads
``_cproject`` the same way): None when ``AIMUX_PURE_PYTHON`` is set (not "" or "0"), when it is
not built, or when its source lies next to it (a checkout) and differs from the one it was built
from (``SOURCE_SHA``: a stale build never shadows an edited source; the Python path runs)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any


def load(name: str) -> Any:
    """The module ``aimux_ops.<name>`` built from ``aimux_ops/<name>.c``, or None."""
    if os.environ.get("AIMUX_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        module = importlib.import_module(f"aimux_ops.{name}")
    except ImportError:
        return None
    try:
        text = (Path(__file__).parent / f"{name}.c").read_bytes()
    except OSError:  # an installed payload or a wheel: no source to be stale against
        return module
    import hashlib

    if hashlib.sha256(text).hexdigest() != module.SOURCE_SHA:
        return None  # a stale build: run `make native` (or native/build_cproject.py)
    return module


def parsed_already(obj: Any) -> Any:
    """A ``loads`` that answers ``obj``: the chunk a C reader parsed and handed back, read by the
    Python loop without parsing it again."""
    return lambda _data: obj
