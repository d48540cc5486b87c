# A C program built with pkg-config, run with an empty environment: in place (package phase: the
# prefix aimux.pc names) and from the moved prefix (`pkg-config --define-prefix`); both with the
# rpath aimux.pc's Libs carry, a clean path (no ..) to the prefix's lib/.
set -euo pipefail
. "$AIMUX_DIST_TESTS/lib.sh"
# build_consumer LABEL PKG-CONFIG-COMMAND...: ./consumer, its RUNPATH exactly $AIMUX_DIST_PREFIX/lib
build_consumer() {
  local label="$1"; shift
  cp "$AIMUX_DIST_TESTS/c/consumer.c" .
  export PKG_CONFIG_PATH="$AIMUX_DIST_PREFIX/lib/pkgconfig"
  echo "   $* --cflags --libs aimux: $("$@" --cflags --libs aimux)"
  [ "$("$@" --variable=libdir aimux)" = "$AIMUX_DIST_PREFIX/lib" ] \
    || { echo "$label: libdir is $("$@" --variable=libdir aimux), not $AIMUX_DIST_PREFIX/lib"; exit 1; }
  cc -Wall -Wextra -Werror consumer.c -o consumer $("$@" --cflags --libs aimux)
  readelf -d consumer | grep -q 'NEEDED.*\[libaimux.so.1\]' || { echo "consumer does not need libaimux.so.1"; exit 1; }
  local rp; rp="$(readelf -d consumer | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')"
  [ "$rp" = "$AIMUX_DIST_PREFIX/lib" ] || { echo "$label: the consumer's RUNPATH is '$rp', not $AIMUX_DIST_PREFIX/lib"; exit 1; }
  echo "   $label: RUNPATH $rp"
  dist_run / "$PWD/consumer" "$AIMUX_DIST_RECORDING" > out.txt
  dist_check_consumer "$label" out.txt
}
case "$1" in
package)
  build_consumer "C via pkg-config, in place" pkg-config ;;
run)
  build_consumer "C via pkg-config --define-prefix, moved prefix" pkg-config --define-prefix
  # the library copied away from its payload: a 207 naming where it looked, not a crash
  mkdir -p lonely && cp "$AIMUX_DIST_PREFIX/lib/libaimux.so.1" lonely/
  if dist_run / LD_LIBRARY_PATH="$PWD/lonely" "$PWD/consumer" "$AIMUX_DIST_RECORDING" > lonely.txt; then
    echo "a libaimux without its payload succeeded"; exit 1
  fi
  grep -q '"code":207,"message":"[^"]*cannot find its Python payload[^"]*lonely/aimux/python' lonely.txt \
    || { cat lonely.txt; echo "no 207 naming the missing payload"; exit 1; }
  echo "   without its payload: $(grep -o 'libaimux cannot find its Python payload[^"]*' lonely.txt | head -1 | cut -c1-150)…" ;;
esac
