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
