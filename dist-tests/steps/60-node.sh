# Node: `make -C bindings/node pack PREFIX=<the installed tree>` (npm pack of the package with the
# library for linux-x64 inside: prebuilds/linux-x64/libaimux.so.1 and its payload), installed into
# a fresh npm project and run with no environment variable: the package's own library; with
# LD_LIBRARY_PATH, the system loader's first; with the package's library removed and none
# findable, a 207 RuntimeInitError.
set -euo pipefail
. "$AIMUX_DIST_TESTS/bindings-lib.sh"
case "$1" in
package)
  make -s -C "$AIMUX_DIST_SRC/bindings/node" pack PREFIX="$AIMUX_DIST_PREFIX" > pack.log 2>&1 || { cat pack.log; exit 1; }
  tgz="$(cd "$AIMUX_DIST_SRC/bindings/node/build" && ls aimux-ops-*.tgz)"
  cp "$AIMUX_DIST_SRC/bindings/node/build/$tgz" . && echo "$tgz" > tarball.txt
  tar -tzf "$tgz" > files.txt
  grep -qx 'package/prebuilds/linux-x64/libaimux.so.1' files.txt || { echo "the tarball carries no libaimux.so.1"; exit 1; }
  grep -q '^package/prebuilds/linux-x64/aimux/python[0-9.]*/aimux_ops/__init__.py$' files.txt \
    || { echo "the tarball carries no payload"; exit 1; }
  tar -xzOf "$tgz" package/package.json | grep -q '"private"' && { echo "package.json is private"; exit 1; }
  echo "   npm pack: $tgz ($(du -k "$tgz" | cut -f1) KiB, $(wc -l < files.txt) files, the library for linux-x64 inside)" ;;
run)
  rm -rf app && mkdir app
  printf '{"name":"app","private":true,"type":"module"}\n' > app/package.json
  cp "$AIMUX_DIST_TESTS/node/app.mjs" app/
  (cd app && npm install --no-audit --no-fund --prefer-offline --loglevel=error "$PWD/../$(cat ../tarball.txt)")
  pkg="$PWD/app/node_modules/aimux-ops"
  bad="$(grep -rlF --binary-files=text -e "$AIMUX_DIST_WORK/src" -e "$AIMUX_DIST_WORK/installed" "$pkg" || true)"
  [ -z "$bad" ] || { echo "installed package files name the build: $bad"; exit 1; }
  out="$(bindings_run app node app.mjs "$AIMUX_DIST_RECORDING")"
  bindings_expect_ok "Node, npm install <tarball>, no environment variable" "$out"
  grep -qx "library: $pkg/prebuilds/linux-x64/libaimux.so.1" <<<"$out" || { echo "not the package's own library"; exit 1; }
  out="$(bindings_run app "LD_LIBRARY_PATH=$AIMUX_DIST_PREFIX/lib" node app.mjs "$AIMUX_DIST_RECORDING")"
  bindings_expect_ok "Node, LD_LIBRARY_PATH" "$out"
  grep -qx "library: $AIMUX_DIST_PREFIX/lib/libaimux.so.1" <<<"$out" || { echo "LD_LIBRARY_PATH's library not first"; exit 1; }
  rm -rf "$pkg/prebuilds"
  rc=0; out="$(bindings_run app node app.mjs "$AIMUX_DIST_RECORDING")" || rc=$?
  [ "$rc" = 3 ] || { echo "$out"; echo "Node: exit $rc without a library"; exit 1; }
  bindings_expect_207 Node "$out" ;;
esac
