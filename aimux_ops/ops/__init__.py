"""The ops: importing this package registers every op in ``registry``.

- ``meta``: ``aimux.version``, ``aimux.manifest``.
- ``generate``: ``generate_text``, ``stream_text``, ``generate_object`` (provider calls), built on
  ``models`` (params / results / events), ``call`` (one provider call: transport, recording,
  retry) and ``tools`` (tool and object validation). Providers are reached only through
  ``aimux_ops.providers``' interface.
"""

from __future__ import annotations

from . import generate, meta
from .registry import OpSpec, StreamContext, all_ops, get_op, register_op

__all__ = ["OpSpec", "StreamContext", "all_ops", "generate", "get_op", "meta", "register_op"]
