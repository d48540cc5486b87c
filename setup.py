"""The wheel's native step: build libaimux for the interpreter that builds the wheel and ship it.

setuptools runs this for `pip install <checkout>` / `pip wheel <checkout>`: after the Python
files, it compiles native/build_libaimux.py into ``aimux_ops/native/lib/libaimux.so.1`` (SONAME
libaimux.so.1; its payload is the site-packages it is installed in, ``../../..`` from its
directory) and copies ``aimux.h`` (with the ``aimux_codes.h`` it includes) and ``aimux.hpp`` to
``aimux_ops/native/include/``, and compiles the optional C extension
(native/build_cproject.py) into ``aimux_ops/_speedups/_cchunks<EXT_SUFFIX>`` (the stream chunks).
The
wheel is then a platform wheel for that CPython; `make wheel` (native/build_wheels.py) makes it
manylinux with auditwheel. Editable installs skip it (development uses native/build and
the in-place build of `make setup`). Everything else is in pyproject.toml.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPyWithLibaimux(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        spec = importlib.util.spec_from_file_location(
            "build_libaimux", ROOT / "native" / "build_libaimux.py"
        )
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        pkg = Path(self.build_lib) / "aimux_ops" / "native"
        temp = Path(self.get_finalized_command("build").build_temp) / "libaimux"
        mod.build(
            pkg / "lib" / "libaimux.so.1",
            noop=False,
            cc=shutil.which("cc") or "cc",
            cflags=[],
            payload_rel="../../..",
            soname="libaimux.so.1",
            workdir=temp,
        )
        cspec = importlib.util.spec_from_file_location(
            "build_cproject", ROOT / "native" / "build_cproject.py"
        )
        assert cspec is not None and cspec.loader is not None
        cmod = importlib.util.module_from_spec(cspec)
        cspec.loader.exec_module(cmod)
        cmod.build(Path(self.build_lib) / "aimux_ops" / "_speedups", cc=shutil.which("cc") or "cc")
        (pkg / "include").mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "native" / "aimux.h", pkg / "include" / "aimux.h")
        shutil.copy2(ROOT / "native" / "aimux_codes.h", pkg / "include" / "aimux_codes.h")
        shutil.copy2(ROOT / "bindings" / "cpp" / "aimux.hpp", pkg / "include" / "aimux.hpp")


class PlatformDistribution(Distribution):
    """The wheel carries a compiled library: tag it for this platform and CPython."""

    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildPyWithLibaimux}, distclass=PlatformDistribution)
