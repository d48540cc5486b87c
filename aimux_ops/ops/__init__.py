"""The ops: importing this package registers every op in ``registry``.

- ``meta``: ``aimux.version``, ``aimux.manifest``.
- ``generate``: ``generate_text``, ``stream_text``, ``generate_object`` (provider calls).
"""

from __future__ import annotations

import importlib

from . import meta
from .registry import OpSpec, StreamContext, all_ops, get_op, register_op

try:  # the provider ops; their absence must not take the meta ops down
    importlib.import_module(f"{__name__}.generate")
except ModuleNotFoundError as exc:  # pragma: no cover - only while the module is missing
    if exc.name != f"{__name__}.generate":
        raise

__all__ = ["OpSpec", "StreamContext", "all_ops", "get_op", "meta", "register_op"]
