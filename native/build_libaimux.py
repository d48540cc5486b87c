"""Build native/build/libaimux.so: the aimux C ABI (native/aimux.h) over the Python core.

cffi embedding mode. The sources live in ``native/src/``: ``aimux_shim.c`` (owns ``aimux_error_t``
and every exported function; starts the embedded interpreter and calls into Python through
``extern "Python"`` callbacks), ``aimux_cdef.h`` (what the Python side sees of it) and
``aimux_embed.py`` (the init code that defines the callbacks). This script only builds: it lets
cffi generate the module, which ``#include``s the shim, and compiles it with the system C compiler
(no setuptools needed):

    python native/build_libaimux.py [--out native/build/libaimux.so]
    python native/build_libaimux.py --noop --out native/build/libaimux_noop.so   # bench floor

Recorded at build time (so the library needs no environment variable at run time):
- the Python home of the interpreter running this script (``sys.base_prefix``), whose libpython
  the library links (rpath);
- the package paths: this interpreter's site-packages (so the editable install's .pth files are
  processed) and the repository root. ``AIMUX_PYTHONPATH`` (``:``-separated) replaces them.
"""

from __future__ import annotations

import argparse
import os
import shlex
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import cffi

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

SRC = HERE / "src"


def _read(name: str) -> str:
    return (SRC / name).read_text(encoding="utf-8")


def _sh(cmd: list[str]) -> None:
    print("  " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True)


def build(out: Path, noop: bool, cc: str, cflags: list[str], home: str | None = None) -> None:
    ffi = cffi.FFI()
    module = "_aimux_noop" if noop else "_aimux_cffi"
    prefix = "noop" if noop else "aimux"
    ffi.embedding_api("")
    ffi.cdef(_read(f"{prefix}_cdef.h"))
    # The shim is included, not pasted: compiler messages point into native/src/.
    ffi.set_source(module, f'#include "{prefix}_shim.c"')
    ffi.embedding_init_code(_read(f"{prefix}_embed.py"))
    out.parent.mkdir(parents=True, exist_ok=True)
    c_file = out.parent / f"{module}.c"
    ffi.emit_c_code(str(c_file))

    venv_site = [p for p in site.getsitepackages() if os.path.isdir(p)]
    paths = ":".join(dict.fromkeys([*venv_site, str(REPO)]))
    home = home or sys.base_prefix
    libdir = sysconfig.get_config_var("LIBDIR")
    ldversion = sysconfig.get_config_var("LDVERSION")
    include = sysconfig.get_paths()["include"]

    def cstr(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    cmd = [
        cc,
        "-shared",
        "-fPIC",
        "-O2",
        "-g",
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter",
        "-Wno-unused-function",
        "-fvisibility=hidden",
        *cflags,
        f"-I{include}",
        f"-I{HERE}",
        f"-I{SRC}",
        f"-DAIMUX_BUILD_PATHS={cstr(paths)}",
        f"-DAIMUX_PYTHON_HOME={cstr(home)}",
        str(c_file),
        "-o",
        str(out),
        f"-L{libdir}",
        f"-lpython{ldversion}",
        f"-Wl,-rpath,{libdir}",
        "-ldl",
        "-lpthread",
        "-Wl,--no-undefined",
    ]
    _sh(cmd)
    print(f"built {out} (python home {home}; package paths {paths})")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, default=HERE / "build" / "libaimux.so")
    ap.add_argument("--noop", action="store_true", help="build the bench floor library instead")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--python-home", help="record another Python home (tests: a broken runtime)")
    args = ap.parse_args()
    build(
        args.out.resolve(),
        args.noop,
        args.cc,
        shlex.split(os.environ.get("CFLAGS", "")),
        args.python_home,
    )


if __name__ == "__main__":
    main()
