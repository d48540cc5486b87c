# Node: the `npm pack` tarball installed into a fresh npm project; libaimux.so.1 found through
# LD_LIBRARY_PATH (no AIMUX_LIB); with no library findable, a 207 RuntimeInitError.
set -euo pipefail
. "$AIMUX_DIST_TESTS/bindings-lib.sh"
case "$1" in
package)
  bindings_copy "$AIMUX_DIST_SRC/bindings/node" binding node_modules build
  (cd binding && npm pack --silent --pack-destination "$PWD/..") > tarball.txt
  echo "   npm pack: $(cat tarball.txt)"
  rm -rf binding ;;
run)
  rm -rf app && mkdir app
  printf '{"name":"app","private":true,"type":"module"}\n' > app/package.json
  cp "$AIMUX_DIST_TESTS/node/app.mjs" app/
  (cd app && npm install --no-audit --no-fund --prefer-offline --loglevel=error "$PWD/../$(cat ../tarball.txt)")
  bindings_expect_ok "Node, LD_LIBRARY_PATH" \
    "$(bindings_run app "LD_LIBRARY_PATH=$AIMUX_DIST_PREFIX/lib" node app.mjs "$AIMUX_DIST_RECORDING")"
  rc=0; out="$(bindings_run app node app.mjs "$AIMUX_DIST_RECORDING")" || rc=$?
  [ "$rc" = 3 ] || { echo "$out"; echo "Node: exit $rc without a library"; exit 1; }
  bindings_expect_207 Node "$out" ;;
esac
