"""The ops: this package declares every op in ``registry``; each op module is imported (and
registers its ops) the first time one of its ops is looked up.

- ``meta``: ``aimux.version``, ``aimux.manifest``.
- ``generate``: ``generate_text``, ``stream_text``, ``generate_object`` (provider calls), built on
  ``models`` (params / results / events), ``call`` (one provider call: transport, recording,
  retry) and ``tools`` (tool and object validation). Providers are reached only through
  ``aimux_ops.providers``' interface.
"""

from __future__ import annotations

from .registry import OpSpec, StreamContext, all_ops, declare_lazy, get_op, register_op

# Imported on first use (registry.get_op / all_ops), in this order.
declare_lazy("aimux_ops.ops.generate", "generate_text", "generate_object", "stream_text")
declare_lazy("aimux_ops.ops.meta", "aimux.version", "aimux.manifest")

__all__ = ["OpSpec", "StreamContext", "all_ops", "get_op", "register_op"]
