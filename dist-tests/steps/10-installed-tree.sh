# The installed tree itself: the layout, the SONAME and symlink, only aimux_* exported, the
# payload for the build's Python with its optional C extension (_cchunks) built and
# loaded (not stale against the .c files it ships), no rpath into a build directory.
set -euo pipefail
[ "$1" = run ] || exit 0
P="$AIMUX_DIST_PREFIX"
for f in include/aimux.h include/aimux_codes.h include/aimux.hpp lib/libaimux.so.1 lib/pkgconfig/aimux.pc lib/pkgconfig/aimux-dlopen.pc \
         lib/cmake/aimux/aimuxConfig.cmake lib/cmake/aimux/aimuxConfigVersion.cmake; do
  [ -f "$P/$f" ] || { echo "missing $f"; exit 1; }
done
[ "$(readlink "$P/lib/libaimux.so")" = libaimux.so.1 ] || { echo "lib/libaimux.so is not a symlink to libaimux.so.1"; exit 1; }
readelf -d "$P/lib/libaimux.so.1" | grep -q 'SONAME.*\[libaimux.so.1\]' || { echo "no SONAME libaimux.so.1"; exit 1; }
other="$(nm -D --defined-only "$P/lib/libaimux.so.1" | awk '{print $3}' | grep -v '^aimux_' || true)"
[ -z "$other" ] || { echo "exports more than aimux_*: $other"; exit 1; }
n="$(nm -D --defined-only "$P/lib/libaimux.so.1" | grep -c ' aimux_')"
pyver="$("$AIMUX_DIST_PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[ -f "$P/lib/aimux/python$pyver/aimux_ops/__init__.py" ] || { echo "no payload lib/aimux/python$pyver"; exit 1; }
payload="$P/lib/aimux/python$pyver"
for ext in _cchunks; do
  compgen -G "$payload/aimux_ops/_speedups/$ext*.so" >/dev/null || { echo "no $ext*.so in the payload"; exit 1; }
done
# the payload alone (-S: not the venv's site-packages, whose aimux_ops is the checkout's)
loaded="$(cd / && env -i PYTHONPATH="$payload" "$AIMUX_DIST_PYTHON" -S -c '
import aimux_ops, aimux_ops._speedups as c
print(aimux_ops.__file__)
print(c.load("_cchunks") is not None)')"
[ "$(echo "$loaded" | head -1)" = "$payload/aimux_ops/__init__.py" ] || { echo "aimux_ops not from the payload: $loaded"; exit 1; }
[ "$(echo "$loaded" | tail -1)" = "True" ] || { echo "the payload's C extension does not load: $loaded"; exit 1; }
# the runtime it carries: libpython, the standard library, and every library any ELF in lib/aimux
# needs but the C runtime's own (libc, libm, libgcc_s, ...) beside it, each found by a RUNPATH
rt="$P/lib/aimux/runtime/lib"
[ -f "$rt/libpython$pyver.so.1.0" ] && [ -f "$rt/python$pyver/os.py" ] && [ -d "$rt/python$pyver/lib-dynload" ] \
  || { echo "no runtime (libpython$pyver, its standard library) under lib/aimux/runtime"; exit 1; }
readelf -d "$P/lib/libaimux.so.1" | grep -qF '(RUNPATH)            Library runpath: [$ORIGIN/aimux/runtime/lib]' \
  || { readelf -d "$P/lib/libaimux.so.1" | grep PATH; echo "libaimux.so.1 has no RUNPATH \$ORIGIN/aimux/runtime/lib"; exit 1; }
missing=""
while IFS= read -r elf; do
  for need in $(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [[ "$need" =~ ^(ld-linux[-_a-z0-9]*|lib(c|m|dl|pthread|rt|util|resolv|gcc_s|stdc\+\+))\.so ]] && continue
    [ -n "$(find "$P/lib" -name "$need" -print -quit)" ] || missing+=" ${elf#$P/}:$need"
  done
done < <(find "$P/lib" -type f \( -name '*.so' -o -name '*.so.*' \))
[ -z "$missing" ] || { echo "libraries the tree needs but does not carry:$missing"; exit 1; }
echo "   runtime: $(du -sh --apparent-size "$P/lib/aimux/runtime" | cut -f1) (libpython$pyver, standard library, $(ls "$rt" | grep -c '^lib.*\.so') shared libraries); payload $(du -sh --apparent-size "$payload" | cut -f1)"
echo "   layout ok; SONAME libaimux.so.1; $n symbols exported, all aimux_*; payload lib/aimux/python$pyver (C extension loads)"
