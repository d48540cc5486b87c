"""The package version and the C ABI version (one place; the package root, the meta ops and
the dispatcher's precomputed ``aimux.version`` answer read them)."""

__version__ = "0.1.0"

#: The C ABI version ``aimux.version`` reports.
ABI_VERSION = 1
