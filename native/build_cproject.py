"""Build the optional C extension of aimux_ops for this interpreter: aimux_ops._speedups._cchunks
(aimux_ops/_speedups/_cchunks.c, the stream chunks in C); stdlib only (no setuptools), like
build_libaimux.py:

    python native/build_cproject.py                  # in place: aimux_ops/_speedups/<name>.so
    python native/build_cproject.py --out-dir DIR    # DIR/<name><EXT_SUFFIX> (a wheel, a stage)
    python native/build_cproject.py --only _cchunks  # one of them

Each module records the SHA-256 of the source it was compiled from (``SOURCE_SHA``): in a
checkout, where the source lies next to it, aimux_ops uses it only when that still matches (an
edited, not rebuilt source is never shadowed by a stale build: the pure Python path runs instead,
and the tests that require the C path fail).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: the extension modules, each built from aimux_ops/_speedups/<name>.c
MODULES = ("_cchunks",)
WARNINGS = ["-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes"]


def source_of(name: str) -> Path:
    return REPO / "aimux_ops" / "_speedups" / f"{name}.c"


def source_sha(source: Path) -> str:
    return hashlib.sha256(source.read_bytes()).hexdigest()


def build_one(name: str, out_dir: Path, cc: str = "cc", cflags: list[str] | None = None) -> Path:
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    out = out_dir / f"{name}{suffix}"
    source = source_of(name)
    out_dir.mkdir(parents=True, exist_ok=True)
    include = sysconfig.get_paths()["include"]
    fd, tmp = tempfile.mkstemp(prefix=f".{name.lstrip('_')}-", suffix=suffix, dir=out_dir)
    os.close(fd)
    cmd = [
        cc,
        "-shared",
        "-fPIC",
        "-O2",
        "-g",
        *WARNINGS,
        "-fvisibility=hidden",
        *(cflags or []),
        f"-I{include}",
        # no build path in what is installed (dist-tests check that nothing names the checkout)
        f"-ffile-prefix-map={REPO}=.",
        f'-DAIMUX{name.upper()}_SOURCE_SHA="{source_sha(source)}"',
        str(source),
        "-o",
        tmp,
    ]
    print("  " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    try:
        subprocess.run(cmd, check=True)
        os.chmod(tmp, 0o755)
        os.replace(tmp, out)  # atomic: a process that has the old one mapped keeps it
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    print(f"built {out} (python {sys.version.split()[0]})")
    return out


def build(
    out_dir: Path,
    cc: str = "cc",
    cflags: list[str] | None = None,
    modules: tuple[str, ...] = MODULES,
) -> list[Path]:
    """Every module of ``modules`` into ``out_dir``."""
    return [build_one(name, out_dir, cc, cflags) for name in modules]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out-dir", type=Path, default=REPO / "aimux_ops" / "_speedups")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--cflags", default="", help="extra compiler flags (e.g. -Werror)")
    ap.add_argument("--only", action="append", choices=MODULES, help="build only this module")
    args = ap.parse_args()
    build(args.out_dir, args.cc, shlex.split(args.cflags), tuple(args.only or MODULES))


if __name__ == "__main__":
    main()
