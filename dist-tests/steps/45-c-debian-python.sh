# make install with the system interpreter (Debian's /usr/bin/python3 and its libpython3.X, which
# the tree then carries), when
# it differs from the one the other steps use and can build (shared libpython, Python.h, pip):
# the same C consumer, from the moved prefix.
set -euo pipefail
. "$AIMUX_DIST_TESTS/lib.sh"
SYS=/usr/bin/python3
why=""
if [ ! -x "$SYS" ]; then why="no $SYS"
elif [ "$(realpath "$SYS")" = "$(realpath "$("$AIMUX_DIST_PYTHON" -c 'import sys; print(sys._base_executable)')")" ]; then
  why="$SYS is the interpreter of the other steps"
elif ! "$SYS" -c 'import sysconfig as s, os, sys; sys.exit(not (s.get_config_var("Py_ENABLE_SHARED") and os.path.exists(os.path.join(s.get_paths()["include"], "Python.h"))))'; then
  why="$SYS has no shared libpython or no Python.h (apt-get install libpython3-dev)"
elif ! "$SYS" -m pip --version >/dev/null 2>&1; then why="$SYS has no pip (apt-get install python3-pip)"
fi
if [ -n "$why" ]; then echo "   SKIPPED: $why"; exit 77; fi
case "$1" in
package)
  make -s -C "$AIMUX_DIST_SRC" install PREFIX="$PWD/installed" PYTHON="$SYS" > install.log 2>&1 \
    || { cat install.log; exit 1; }
  echo "   installed for $("$SYS" -c 'import sys; print(sys.executable, sys.version.split()[0])')" ;;
run)
  mv installed prefix-moved
  # it carries the system interpreter's runtime too (Debian's libpython3.X and standard library)
  readelf -d prefix-moved/lib/libaimux.so.1 | grep -qF '(RUNPATH)            Library runpath: [$ORIGIN/aimux/runtime/lib]' \
    || { readelf -d prefix-moved/lib/libaimux.so.1 | grep PATH; echo "no RUNPATH to the runtime it carries"; exit 1; }
  cp "$AIMUX_DIST_TESTS/c/consumer.c" .
  export PKG_CONFIG_PATH="$PWD/prefix-moved/lib/pkgconfig"
  cc -Wall -Werror consumer.c -o consumer $(pkg-config --define-prefix --cflags --libs aimux)
  readelf -d consumer | grep -qF "(RUNPATH)            Library runpath: [$PWD/prefix-moved/lib]" \
    || { readelf -d consumer | grep PATH; echo "the consumer's RUNPATH is not $PWD/prefix-moved/lib"; exit 1; }
  dist_run / "$PWD/consumer" "$AIMUX_DIST_RECORDING" > out.txt
  env -i LD_DEBUG=libs "$PWD/consumer" "$AIMUX_DIST_RECORDING" 2> ld.txt > /dev/null
  lp="$(grep -o 'calling init: [^ ]*libpython[^ ]*' ld.txt | head -1 | cut -d' ' -f3)"
  echo "   libpython loaded: $lp"
  [ "$lp" = "$PWD/prefix-moved/lib/aimux/runtime/lib/libpython$("$SYS" -c 'import sys; print("%d.%d" % sys.version_info[:2])').so.1.0" ] \
    || { echo "libpython not from the runtime the tree carries"; exit 1; }
  dist_check_consumer "C via pkg-config, built with $SYS" out.txt ;;
esac
