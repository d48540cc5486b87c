"""Lay out one module version the way a Go module proxy serves it (GOPROXY=file://<out>):

    <out>/<module>/@v/list            the versions, one a line
    <out>/<module>/@v/<v>.info        {"Version": <v>, "Time": ...}
    <out>/<module>/@v/<v>.mod         the module's go.mod
    <out>/<module>/@v/<v>.zip         every file of the module under <module>@<v>/

Usage: python goproxy.py <module dir> <out> <version>   (the module path is read from go.mod;
a module path is lower case here, so it needs none of the proxy's !-escaping).
"""

from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path


def module_path(go_mod: Path) -> str:
    for line in go_mod.read_text(encoding="utf-8").splitlines():
        if line.startswith("module "):
            return line.split(None, 1)[1].strip().strip('"')
    raise SystemExit(f"no module line in {go_mod}")


def main() -> None:
    src, out, version = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    mod = module_path(src / "go.mod")
    if mod != mod.lower():
        raise SystemExit(f"{mod}: upper case needs the proxy's !-escaping, which this script lacks")
    at = out / mod / "@v"
    at.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(at / f"{version}.zip", "w", zipfile.ZIP_DEFLATED) as z:
        for d, dirs, files in os.walk(src):
            # a nested module, a vendor directory or a build output is not part of the module
            dirs[:] = sorted(
                x
                for x in dirs
                if x not in ("vendor", "build", ".git") and not (Path(d) / x / "go.mod").exists()
            )
            for f in sorted(files):
                p = Path(d, f)
                z.write(p, f"{mod}@{version}/{p.relative_to(src).as_posix()}")
    (at / f"{version}.mod").write_bytes((src / "go.mod").read_bytes())
    info = {"Version": version, "Time": "2026-01-01T00:00:00Z"}
    (at / f"{version}.info").write_text(json.dumps(info) + "\n", encoding="utf-8")
    (at / "list").write_text(version + "\n", encoding="utf-8")
    print(f"   proxy: {mod}@{version} ({(at / f'{version}.zip').stat().st_size} bytes zipped)")


if __name__ == "__main__":
    main()
