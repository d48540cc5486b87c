# The installed tree itself: the layout, the SONAME and symlink, only aimux_* exported, the
# payload for the build's Python, no rpath into a build directory.
set -euo pipefail
[ "$1" = run ] || exit 0
P="$AIMUX_DIST_PREFIX"
for f in include/aimux.h include/aimux_codes.h include/aimux.hpp lib/libaimux.so.1 lib/pkgconfig/aimux.pc \
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
echo "   layout ok; SONAME libaimux.so.1; $n symbols exported, all aimux_*; payload lib/aimux/python$pyver"
