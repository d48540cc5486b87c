"""Build native/build/libaimux.so: the aimux C ABI (native/aimux.h) over the Python core.

cffi embedding mode. The sources live in ``native/src/``: ``aimux_shim.c`` (owns ``aimux_error_t``
and every exported function; starts the embedded interpreter and calls into Python through
``extern "Python"`` callbacks), ``aimux_cdef.h`` (what the Python side sees of it) and
``aimux_embed.py`` (the init code that defines the callbacks). This script only builds: it lets
cffi generate the module, which ``#include``s the shim, and compiles it with the system C compiler
(no setuptools needed):

    python native/build_libaimux.py [--out native/build/libaimux.so]
    python native/build_libaimux.py --noop --out native/build/libaimux_noop.so   # bench floor
    python native/build_libaimux.py --out DIR/libaimux.so.1 --soname libaimux.so.1 \
        --payload-rel aimux/python3.11          # an installable library (make install, the wheel)
        [--runtime-rel aimux/runtime/lib]       # ... that finds the libpython it carries there

The library links ``libpythonX.Y.so.1.0`` by its SONAME, with an rpath to ``$ORIGIN/<runtime-rel>``
when it carries its runtime (make install), else to the build interpreter's LIBDIR unless that is a
system one, and exports only the ``aimux_*`` symbols (``src/aimux.map``). Recorded at build time
(so the library needs no environment variable):
- ``--payload-rel``: where its Python payload (aimux_ops and its dependencies) lies, relative to
  the library's own directory. Without it (a development build): the package paths of this
  interpreter (its site-packages, so the editable install's .pth files are processed, and the
  repository root). ``AIMUX_PYTHONPATH`` (``:``-separated) replaces either at run time.
- the Python home of this interpreter (``sys.base_prefix``): a fallback only; at run time the
  library takes the home of the libpython it loaded. ``--python-home`` forces one (tests).
"""

from __future__ import annotations

import argparse
import marshal
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


def _compiled(source: str, filename: str) -> str:
    """The init code as this interpreter's bytecode, run by a three-line stub: the runtime does
    not compile ~500 lines at every start (cold start). The library runs only on this Python's
    minor version (the shim checks it before the init code runs), whose bytecode this is."""
    code = marshal.dumps(compile(source, filename, "exec"))
    return f"import marshal\nexec(marshal.loads({code!r}), globals())\ndel marshal\n"


def _sh(cmd: list[str]) -> None:
    print("  " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True)


def _system_libdir(libdir: str) -> bool:
    """True when the dynamic loader searches `libdir` by default (no rpath needed)."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    system = {"/lib", "/lib64", "/usr/lib", "/usr/lib64"}
    if multiarch:
        system |= {f"/lib/{multiarch}", f"/usr/lib/{multiarch}"}
    return os.path.normpath(libdir) in system


def _rpath(libdir: str, runtime_rel: str | None) -> list[str]:
    """Where the loader finds libpython: the runtime the installed tree carries (relative to the
    library's own directory), else the build interpreter's LIBDIR unless the loader searches it."""
    if runtime_rel:
        return [f"-Wl,-rpath,$ORIGIN/{runtime_rel}", "-Wl,--enable-new-dtags"]
    return [] if _system_libdir(libdir) else [f"-Wl,-rpath,{libdir}"]


def build(
    out: Path,
    noop: bool,
    cc: str,
    cflags: list[str],
    home: str | None = None,
    payload_rel: str | None = None,
    soname: str | None = None,
    workdir: Path | None = None,
    runtime_rel: str | None = None,
) -> None:
    ffi = cffi.FFI()
    module = "_aimux_noop" if noop else "_aimux_cffi"
    prefix = "noop" if noop else "aimux"
    ffi.embedding_api("")
    # the queue's values (aimux_queue.h) are defined once: cffi reads them as the C side does
    ffi.cdef(("" if noop else _read("aimux_queue.h")) + _read(f"{prefix}_cdef.h"))
    # The shim is included, not pasted: compiler messages point into native/src/.
    ffi.set_source(module, f'#include "{prefix}_shim.c"')
    init = _read(f"{prefix}_embed.py")
    ffi.embedding_init_code(init if noop else _compiled(init, f"native/src/{prefix}_embed.py"))
    out.parent.mkdir(parents=True, exist_ok=True)
    workdir = workdir or out.parent
    workdir.mkdir(parents=True, exist_ok=True)
    c_file = workdir / f"{module}.c"
    ffi.emit_c_code(str(c_file))

    if payload_rel is None:
        venv_site = [p for p in site.getsitepackages() if os.path.isdir(p)]
        paths = ":".join(dict.fromkeys([*venv_site, str(REPO)]))
    else:
        paths = ""
    fixed_home = home is not None
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
        f"-DAIMUX_PAYLOAD_REL={cstr(payload_rel or '')}",
        *(["-DAIMUX_HOME_FIXED=1"] if fixed_home else []),
        # an installable library carries no build directory (cffi's messages use __FILE__)
        *([f"-ffile-prefix-map={REPO}=.", f"-ffile-prefix-map={workdir}=."] if payload_rel else []),
        str(c_file),
        "-o",
        str(out),
        f"-L{libdir}",
        f"-lpython{ldversion}",
        *_rpath(libdir, runtime_rel),
        *([] if noop else [f"-Wl,--version-script={SRC / 'aimux.map'}"]),
        *([f"-Wl,-soname,{soname}"] if soname else []),
        "-ldl",
        "-lpthread",
        "-Wl,--no-undefined",
    ]
    _sh(cmd)
    where = f"payload <libdir>/{payload_rel}" if payload_rel else f"package paths {paths}"
    print(f"built {out} (python {sys.version.split()[0]}, home {home}; {where})")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, default=HERE / "build" / "libaimux.so")
    ap.add_argument("--noop", action="store_true", help="build the bench floor library instead")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--python-home", help="force another Python home (tests: a broken runtime)")
    ap.add_argument(
        "--payload-rel",
        help="the Python payload's directory relative to the library's (an installable build)",
    )
    ap.add_argument("--soname", help="the library's SONAME (libaimux.so.1 when installed)")
    ap.add_argument(
        "--runtime-rel",
        help="libpython's directory relative to the library's (the runtime an install carries)",
    )
    ap.add_argument("--workdir", type=Path, help="where the generated C goes (default: beside)")
    args = ap.parse_args()
    build(
        args.out.resolve(),
        args.noop,
        args.cc,
        shlex.split(os.environ.get("CFLAGS", "")),
        args.python_home,
        args.payload_rel,
        args.soname,
        args.workdir.resolve() if args.workdir else None,
        args.runtime_rel,
    )


if __name__ == "__main__":
    main()
