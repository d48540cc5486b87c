"""Lay out an installed libaimux under DESTDIR/PREFIX (run by `make install`; stdlib only).

The layout (docs/DESIGN.md "Installing"; every path relative but aimux.pc's prefix, so the tree
can be moved after installation: pkg-config --define-prefix finds a moved aimux.pc's prefix):

    include/aimux.h (+ aimux_codes.h, which it includes), include/aimux.hpp
    lib/libaimux.so.1                       SONAME libaimux.so.1; finds the payload from its path
    lib/libaimux.so -> libaimux.so.1
    lib/pkgconfig/aimux.pc                  prefix=PREFIX (clean flags; the rpath in Libs)
    lib/pkgconfig/aimux-dlopen.pc           the rpath alone, for programs that dlopen libaimux.so.1
                                            (the Go binding: no DT_NEEDED, so no library is a 207)
    lib/cmake/aimux/aimuxConfig.cmake       imported target aimux::aimux (both headers)
    lib/cmake/aimux/aimuxConfigVersion.cmake
    lib/aimux/runtime/                      the interpreter runtime (native/bundle_runtime.py):
                                            lib/libpythonX.Y.so.1.0 (libaimux.so.1's RUNPATH
                                            $ORIGIN/aimux/runtime/lib), lib/pythonX.Y/ (the
                                            standard library), the shared libraries they load
    lib/aimux/pythonX.Y/                    the Python payload: aimux_ops (with its C extension,
                                            aimux_ops/_speedups/_cchunks*.so) and its dependencies,
                                            byte-compiled (__pycache__/*.cpython-XY.pyc)

    python native/install.py --stage native/build/dist/py3.11-<hash> --prefix /usr/local \
        [--destdir D]
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# The prefix is written as it is (pkg-config does not normalise a ${pcfiledir}/../.., which a
# program's rpath would then carry); a moved tree: `pkg-config --define-prefix` (its prefix from
# where aimux.pc is found). Libs carries the rpath, but for /usr (the loader's own directories).
PC = """\
prefix={prefix}
libdir=${{prefix}}/lib
includedir=${{prefix}}/include

Name: aimux
Description: aimux-ops C ABI: AI SDK ops with one error envelope (embeds CPython {pyver})
Version: {version}
Libs: -L${{libdir}} {rpath}-laimux
Cflags: -I${{includedir}}
"""

# A program that dlopen()s libaimux.so.1 (the Go binding) needs only the rpath: linking -laimux
# would make the library a DT_NEEDED, and a program without it would not start (no 207).
PC_DLOPEN = """\
prefix={prefix}
libdir=${{prefix}}/lib

Name: aimux-dlopen
Description: aimux-ops: the rpath to libaimux.so.1 for programs that dlopen it (no -laimux)
Version: {version}
Libs: {rpath}
"""

CONFIG = """\
# aimux CMake package: find_package(aimux CONFIG) gives the imported target aimux::aimux
# (libaimux.so.1 with include/aimux.h and include/aimux.hpp; aimux.hpp needs C++17).
# Relocatable: every path is computed from this file's location.
get_filename_component(_aimux_prefix "${{CMAKE_CURRENT_LIST_DIR}}/../../.." ABSOLUTE)
if(NOT TARGET aimux::aimux)
  add_library(aimux::aimux SHARED IMPORTED)
  set_target_properties(aimux::aimux PROPERTIES
    IMPORTED_LOCATION "${{_aimux_prefix}}/lib/libaimux.so.1"
    IMPORTED_SONAME "libaimux.so.1"
    INTERFACE_INCLUDE_DIRECTORIES "${{_aimux_prefix}}/include")
endif()
set(aimux_INCLUDE_DIR "${{_aimux_prefix}}/include")
set(aimux_LIBRARY "${{_aimux_prefix}}/lib/libaimux.so.1")
set(aimux_PYTHON_VERSION "{pyver}")
unset(_aimux_prefix)
"""

CONFIG_VERSION = """\
# aimux {version}: compatible with any requested {major}.x not newer than this one.
set(PACKAGE_VERSION "{version}")
if(PACKAGE_FIND_VERSION_MAJOR AND NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL "{major}")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
if(NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
  set(PACKAGE_VERSION "${{PACKAGE_VERSION}} (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
"""


def _version() -> str:
    for line in (REPO / "aimux_ops" / "_version.py").read_text(encoding="utf-8").splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("\"'")
    raise SystemExit("no __version__ in aimux_ops/_version.py")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"  {path}")


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    print(f"  {dst}")


def _compile(payload: Path, shown: str) -> None:
    """Byte-compile the payload with this interpreter (the one the library embeds), so that a
    host's first call does not compile every module it imports (and, in a tree its user cannot
    write, again in every process). The code objects name their files relative to the prefix
    (``shown``): nothing installed names the build's paths, and the import system puts each
    module's real path in its tracebacks when it loads the cached code."""
    if compileall.compile_dir(str(payload), ddir=shown, quiet=1, workers=1):
        print(f"  {payload}/**/__pycache__/ (byte-compiled)")
    else:  # a file no import can load anyway (a dependency's template, say): not fatal
        print(f"  {payload}/**/__pycache__/ (byte-compiled but for the files listed above)")


def install(stage: Path, prefix: str, destdir: str) -> None:
    if not os.path.isabs(prefix):
        raise SystemExit(f"PREFIX must be absolute (got {prefix!r})")
    root = Path(destdir + prefix) if destdir else Path(prefix)
    pyver = "{}.{}".format(*sys.version_info[:2])
    version = _version()
    inc, lib = root / "include", root / "lib"
    _copy(HERE / "aimux.h", inc / "aimux.h")
    _copy(HERE / "aimux_codes.h", inc / "aimux_codes.h")  # included by aimux.h (generated codes)
    _copy(REPO / "bindings" / "cpp" / "aimux.hpp", inc / "aimux.hpp")
    _copy(stage / "libaimux.so.1", lib / "libaimux.so.1")
    link = lib / "libaimux.so"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to("libaimux.so.1")
    print(f"  {link} -> libaimux.so.1")
    runtime = lib / "aimux" / "runtime"
    if runtime.exists():
        shutil.rmtree(runtime)
    shutil.copytree(
        stage / "runtime", runtime, symlinks=True, ignore=shutil.ignore_patterns(".stamp")
    )
    print(f"  {runtime}/ (libpython{pyver}, its standard library and the libraries they load)")
    payload = lib / "aimux" / f"python{pyver}"
    if payload.exists():
        shutil.rmtree(payload)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".stamp")
    shutil.copytree(stage / "deps", payload, symlinks=True, ignore=skip)
    # console scripts (their #! names the build interpreter): the library runs none of them
    shutil.rmtree(payload / "bin", ignore_errors=True)
    # the checkout's own build of the C extension is for the venv's interpreter: the stage's
    # (built for this one, native/build_cproject.py) goes in its place
    shutil.copytree(
        REPO / "aimux_ops",
        payload / "aimux_ops",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".stamp", "*.so", ".cchunks-*"),
    )
    for ext in sorted((stage / "cproject").glob("_c*")):
        _copy(ext, payload / "aimux_ops" / "_speedups" / ext.name)
    print(f"  {payload}/ (aimux_ops and its dependencies)")
    _compile(payload, f"lib/aimux/python{pyver}")
    clean = os.path.normpath(prefix).rstrip("/")  # "/opt/x/" or "/opt/./x" as /opt/x; "/" as ""
    rpath = "" if clean in ("", "/usr") else "-Wl,-rpath,${libdir} "
    _write(
        lib / "pkgconfig" / "aimux.pc",
        PC.format(prefix=clean, rpath=rpath, version=version, pyver=pyver),
    )
    _write(
        lib / "pkgconfig" / "aimux-dlopen.pc",
        PC_DLOPEN.format(prefix=clean, rpath=rpath.strip(), version=version),
    )
    cmake = lib / "cmake" / "aimux"
    _write(cmake / "aimuxConfig.cmake", CONFIG.format(pyver=pyver))
    _write(
        cmake / "aimuxConfigVersion.cmake",
        CONFIG_VERSION.format(version=version, major=version.split(".")[0]),
    )
    print(f"installed aimux {version} (Python {pyver}) under {root}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--stage", type=Path, required=True, help="libaimux.so.1 and deps/ (the payload's packages)"
    )
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--destdir", default="")
    args = ap.parse_args()
    install(args.stage.resolve(), args.prefix, args.destdir)


if __name__ == "__main__":
    main()
