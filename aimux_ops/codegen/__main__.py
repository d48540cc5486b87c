"""``python -m aimux_ops.codegen --write | --check [--root DIR]``: write, or check for drift, every
generated file (see ``aimux_ops.codegen``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import OWNED_DIRS, generate

REPO = Path(__file__).resolve().parents[2]


def _stale(root: Path, files: dict[str, bytes]) -> list[str]:
    out = []
    for d in OWNED_DIRS:
        base = root / d
        if base.is_dir():
            out += [
                p.relative_to(root).as_posix()
                for p in sorted(base.rglob("*"))
                if p.is_file() and p.relative_to(root).as_posix() not in files
            ]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    ap.add_argument("--root", type=Path, default=REPO, help="the repository root")
    args = ap.parse_args(argv)
    root: Path = args.root.resolve()
    files = generate(root)
    stale = _stale(root, files)
    if args.write:
        for rel in stale:
            (root / rel).unlink()
        written = 0
        for rel, data in sorted(files.items()):
            target = root / rel
            if not target.is_file() or target.read_bytes() != data:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                written += 1
        print(f"codegen: {len(files)} files, {written} written, {len(stale)} removed")
        return 0
    drift = [
        rel
        for rel, data in sorted(files.items())
        if not (root / rel).is_file() or (root / rel).read_bytes() != data
    ]
    for rel in drift:
        print(f"codegen drift: {rel} differs from the catalogue", file=sys.stderr)
    for rel in stale:
        print(f"codegen drift: {rel} is not generated", file=sys.stderr)
    if drift or stale:
        print("run `make schema` and commit the result", file=sys.stderr)
        return 1
    print(f"codegen: {len(files)} generated files match the catalogue")
    return 0


if __name__ == "__main__":
    sys.exit(main())
