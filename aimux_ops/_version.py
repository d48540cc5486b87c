"""The package version and the C ABI version (one place; the package root, the meta ops and
the dispatcher's precomputed ``aimux.version`` answer read them)."""

__version__ = "0.1.0"

#: The C ABI version ``aimux.version`` reports.
ABI_VERSION = 1

#: ``aimux.version``'s answer to ``{}`` as its op serializes it (a test checks they agree), built
#: without a JSON library: libaimux answers a first ``aimux.version`` before the core loads.
VERSION_ANSWER = b'{"name":"aimux-ops","version":"%s","abiVersion":%d}' % (
    __version__.encode(),
    ABI_VERSION,
)
