"""The package version (one place; the package root and the meta ops read it)."""

__version__ = "0.1.0"
