"""``python -m aimux_ops.native --cflags | --libs | --libdir | --includedir | --library``.

Prints, on one line, what each flag asks for (several flags may be given, as with pkg-config).
Exit status 1, with the reason on stderr, when this install carries no library.
"""

from __future__ import annotations

import argparse
import sys

from . import NotInstalledError, cflags, includedir, libdir, library, libs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m aimux_ops.native",
        description="Compiler and linker flags for the libaimux of this aimux_ops install.",
    )
    ap.add_argument("--cflags", action="store_true", help="-I<includedir>")
    ap.add_argument("--libs", action="store_true", help="-L<libdir> -l:libaimux.so.1 and an rpath")
    ap.add_argument("--libdir", action="store_true", help="the directory of libaimux.so.1")
    ap.add_argument("--includedir", action="store_true", help="the directory of aimux.h, aimux.hpp")
    ap.add_argument("--library", action="store_true", help="the path of libaimux.so.1")
    args = ap.parse_args(argv)
    out: list[str] = []
    try:
        if args.cflags:
            out += cflags()
        if args.libs:
            out += libs()
        if args.libdir:
            out.append(str(libdir()))
        if args.includedir:
            out.append(str(includedir()))
        if args.library:
            out.append(str(library()))
    except NotInstalledError as e:
        print(f"aimux_ops.native: {e}", file=sys.stderr)
        return 1
    if not out:
        ap.print_usage(sys.stderr)
        return 2
    print(" ".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
