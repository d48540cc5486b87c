# A C program built with pkg-config against the (moved) prefix, run with an empty environment.
set -euo pipefail
. "$AIMUX_DIST_TESTS/lib.sh"
[ "$1" = run ] || exit 0
cp "$AIMUX_DIST_TESTS/c/consumer.c" .
export PKG_CONFIG_PATH="$AIMUX_DIST_PREFIX/lib/pkgconfig"
echo "   pkg-config --cflags --libs aimux: $(pkg-config --cflags --libs aimux)"
cc -Wall -Wextra -Werror consumer.c -o consumer $(pkg-config --cflags --libs aimux) \
  -Wl,-rpath,"$(pkg-config --variable=libdir aimux)"
readelf -d consumer | grep -q 'NEEDED.*\[libaimux.so.1\]' || { echo "consumer does not need libaimux.so.1"; exit 1; }
dist_run / "$PWD/consumer" "$AIMUX_DIST_RECORDING" > out.txt
dist_check_consumer "C via pkg-config" out.txt
# the library copied away from its payload: a 207 naming where it looked, not a crash
mkdir -p lonely && cp "$AIMUX_DIST_PREFIX/lib/libaimux.so.1" lonely/
if dist_run / LD_LIBRARY_PATH="$PWD/lonely" "$PWD/consumer" "$AIMUX_DIST_RECORDING" > lonely.txt; then
  echo "a libaimux without its payload succeeded"; exit 1
fi
grep -q '"code":207,"message":"[^"]*cannot find its Python payload[^"]*lonely/aimux/python' lonely.txt \
  || { cat lonely.txt; echo "no 207 naming the missing payload"; exit 1; }
echo "   without its payload: $(grep -o 'libaimux cannot find its Python payload[^"]*' lonely.txt | head -1 | cut -c1-150)…"
