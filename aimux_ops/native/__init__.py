"""Where this installation's libaimux and C headers are, and the compiler flags that use them.

The platform wheel (``pip install aimux-ops``, or ``pip install <checkout>``) carries
``aimux_ops/native/lib/libaimux.so.1`` and ``aimux_ops/native/include/{aimux.h,aimux.hpp}``. That
library finds this environment's ``aimux_ops`` from its own path (the site-packages directory three
levels up), so a C program linked with these flags needs no environment variable::

    cc app.c $(python -m aimux_ops.native --cflags --libs) -o app

An editable (development) install carries neither: use ``native/build/`` of the checkout.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

__all__ = ["NotInstalledError", "cflags", "includedir", "libdir", "library", "libs"]

SONAME = "libaimux.so.1"
_HERE = Path(__file__).resolve().parent


class NotInstalledError(RuntimeError):
    """This aimux_ops has no libaimux (an editable install, or a source tree)."""


def libdir() -> Path:
    """The directory holding ``libaimux.so.1``."""
    d = _HERE / "lib"
    if not (d / SONAME).is_file():
        raise NotInstalledError(
            f"no {d / SONAME}: this aimux_ops ({_HERE.parent}) was not installed from its wheel "
            "(an editable install has no library: build it with `make native` in the checkout, "
            "or `pip install` the checkout without -e)"
        )
    return d


def library() -> Path:
    """The path of ``libaimux.so.1`` (what ``AIMUX_LIB`` may point at)."""
    return libdir() / SONAME


def includedir() -> Path:
    """The directory holding ``aimux.h`` and ``aimux.hpp``."""
    d = _HERE / "include"
    if not (d / "aimux.h").is_file():
        raise NotInstalledError(
            f"no {d / 'aimux.h'}: this aimux_ops was not installed from its wheel"
        )
    return d


def cflags() -> list[str]:
    """Compiler flags: the include directory."""
    return [f"-I{includedir()}"]


def libs() -> list[str]:
    """Linker flags: the library, with an rpath to it (the program runs with no variable), and
    this interpreter's libpython, which libaimux needs: linked by the program itself (kept even
    under ``--as-needed``) with an rpath to its LIBDIR, since a program's rpath does not reach
    its libraries' own dependencies (a venv's libpython lies outside the wheel's reach)."""
    d = libdir()
    flags = [f"-L{d}", f"-l:{SONAME}", f"-Wl,-rpath,{d}"]
    pylib = (
        sysconfig.get_config_var("INSTSONAME")
        if sysconfig.get_config_var("Py_ENABLE_SHARED")
        else None
    )
    pydir = sysconfig.get_config_var("LIBDIR")
    if pylib and pydir:
        flags += [
            f"-L{pydir}",
            "-Wl,--push-state,--no-as-needed",
            f"-l:{pylib}",
            "-Wl,--pop-state",
            f"-Wl,-rpath,{pydir}",
        ]
    return flags
