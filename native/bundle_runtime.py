"""The interpreter runtime an installed libaimux carries (run by `make install`; stdlib only).

The runtime of the interpreter running this script, laid out as a Python home of its own, so the
installed tree runs on a machine with no Python (docs/DESIGN.md "Installing"):

    <out>/lib/libpythonX.Y.so.1.0      found by libaimux.so.1 through its RUNPATH
                                       ($ORIGIN/aimux/runtime/lib); debug info stripped
    <out>/lib/pythonX.Y/               the standard library, but what a library never imports
                                       (tests, IDLE, Tk, curses, ensurepip, the static libpython);
                                       byte-compiled, the code naming lib/aimux/runtime/...
    <out>/lib/pythonX.Y/lib-dynload/   its C extensions, each with RUNPATH $ORIGIN/../..
    <out>/lib/lib*.so.*                every shared library those load but glibc's own and
                                       libgcc_s (libssl, libcrypto, libffi, libz, libexpat, ...),
                                       each with RUNPATH $ORIGIN

The shim finds the home from where the libpython it loaded lies (<out>/lib/pythonX.Y/os.py).

    python native/bundle_runtime.py --out native/build/dist/<tag>/runtime
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

# What every Linux the library targets has (the manylinux policy's libraries, glibc's): never
# bundled, as a private copy of libc cannot work beside the process's own.
SYSTEM_LIBS = re.compile(
    r"^(linux-vdso|ld-linux[-\w]*|libc|libm|libdl|libpthread|librt|libutil|libresolv|libgcc_s"
    r"|libstdc\+\+)\.so"
)

# Standard library parts no library import reaches: test suites, GUIs, terminals, packaging.
STDLIB_SKIP = {
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "turtle.py",
    "lib2to3",
    "ensurepip",
    "pydoc_data",
    "site-packages",
    "dist-packages",
    "curses",
    "sqlite3",
    "venv",
    "__phello__",
    "lib-dynload",
}
# lib-dynload extensions left out (and the libraries only they load: X11, Tcl/Tk, ncurses,
# readline, sqlite, libnsl): tests, GUIs, terminals, databases, deprecated crypt
DYNLOAD_SKIP = re.compile(
    r"^(_test\w*|_ctypes_test|_xxtestfuzz|xxlimited\w*|_xxsubinterpreters|_tkinter|_curses\w*"
    r"|readline|nis|spwd|ossaudiodev|_dbm|_gdbm|_sqlite3|_crypt)\."
)


def _ldd(path: Path) -> dict[str, str]:
    """The shared libraries `path` loads, resolved as on this machine: {soname: path}."""
    out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, check=True).stdout
    found: dict[str, str] = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m is None:
            continue
        if m.group(2) == "not":
            raise SystemExit(f"{path} needs {m.group(1)}, which this machine cannot find")
        found[m.group(1)] = m.group(2)
    return found


def _patchelf(*args: str) -> None:
    subprocess.run(["patchelf", *args], check=True)


def _strip(path: Path) -> None:
    subprocess.run(["strip", "--strip-debug", str(path)], check=True)


def _libpython() -> Path:
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    name = sysconfig.get_config_var("INSTSONAME") or ""
    path = Path(libdir) / name
    if not sysconfig.get_config_var("Py_ENABLE_SHARED") or not path.is_file():
        multiarch = sysconfig.get_config_var("MULTIARCH") or ""
        path = Path(libdir) / multiarch / name  # Debian's libpython3.X in lib/<multiarch>
    if not path.is_file():
        raise SystemExit(
            f"no shared libpython for {sys.executable} ({libdir}/{name}): build libaimux from an "
            "interpreter with one (pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared; Debian: "
            "apt-get install libpython3.X)"
        )
    return path


def bundle(out: Path) -> None:
    xy = "{}.{}".format(*sys.version_info[:2])
    lib = out / "lib"
    stdlib = lib / f"python{xy}"
    if out.exists():
        shutil.rmtree(out)
    stdlib.mkdir(parents=True)

    libpython = _libpython()
    shutil.copy2(libpython, lib / libpython.name)
    _strip(lib / libpython.name)

    src = Path(sysconfig.get_paths()["stdlib"])
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "config-*")
    for entry in sorted(src.iterdir()):
        if entry.name in STDLIB_SKIP or entry.name.startswith("config-"):
            continue
        if entry.is_dir():
            shutil.copytree(entry, stdlib / entry.name, ignore=skip)
        elif entry.suffix == ".py" or entry.name == "LICENSE.txt":
            shutil.copy2(entry, stdlib / entry.name)

    dynload_src = Path(sysconfig.get_config_var("DESTSHARED") or src / "lib-dynload")
    dynload = stdlib / "lib-dynload"
    dynload.mkdir()
    extensions = []
    for ext in sorted(dynload_src.glob("*.so")):
        if DYNLOAD_SKIP.match(ext.name):
            continue
        shutil.copy2(ext, dynload / ext.name)
        _strip(dynload / ext.name)
        _patchelf("--set-rpath", "$ORIGIN/../..", str(dynload / ext.name))
        extensions.append(ext)

    needed: dict[str, str] = {}
    for elf in [libpython, *extensions]:
        needed.update(_ldd(elf))
    for soname, path in sorted(needed.items()):
        if SYSTEM_LIBS.match(soname):
            continue
        shutil.copy2(os.path.realpath(path), lib / soname)
        os.chmod(lib / soname, 0o755)
        _strip(lib / soname)
        _patchelf("--set-rpath", "$ORIGIN", str(lib / soname))
        print(f"  bundled {soname} (from {path})")

    # the code names its files as installed (lib/aimux/runtime/...), not as built
    shown = f"lib/aimux/runtime/lib/python{xy}"
    if not compileall.compile_dir(str(stdlib), ddir=shown, quiet=1, workers=1):
        print("  (byte-compiled but for the files listed above)")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"bundled the Python {sys.version.split()[0]} runtime in {out} ({size / 1e6:.1f} MB)")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, required=True, help="the runtime's directory (replaced)")
    args = ap.parse_args()
    bundle(args.out.resolve())


if __name__ == "__main__":
    main()
