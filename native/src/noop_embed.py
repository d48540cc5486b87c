"""The bench floor's init code: answers a fixed version string (see noop_shim.c)."""

from _aimux_noop import ffi, lib

_VERSION = b'{"name":"aimux-ops","version":"0.1.0","abiVersion":1}'


@ffi.def_extern(error=-1)
def _noop_py(op, out, _s=ffi.string, _dup=lib._noop_strndup, _v=_VERSION):
    _s(op)
    out[0] = _dup(_v, len(_v))
    return 0
