# Go: a module with `replace` to a copy of the binding (vendored, -trimpath, the libdir recorded
# from pkg-config at build time), and the same module served from a file:// GOPROXY into a fresh
# module cache (libaimux.so.1 through LD_LIBRARY_PATH); with no library findable, a 207; a
# CGO_ENABLED=0 build says cgo is needed.
set -euo pipefail
. "$AIMUX_DIST_TESTS/bindings-lib.sh"
MOD=github.com/aimux-ops/aimux-ops/bindings/go
VER=v0.1.0
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false GOPRIVATE= GONOSUMDB= GOSUMDB=off
case "$1" in
package)
  bindings_copy "$AIMUX_DIST_SRC/bindings/go" binding build
  # The module as a proxy serves it: <proxy>/<module>/@v/{list,<v>.info,<v>.mod,<v>.zip}.
  mkdir -p "proxy/$MOD/@v"
  (cd binding && "$AIMUX_DIST_PYTHON" - "$PWD/../proxy/$MOD/@v/$VER.zip" "$MOD@$VER" <<'PY'
import os, sys, zipfile
out, root = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for d, dirs, files in os.walk("."):
        dirs.sort()
        for f in sorted(files):
            p = os.path.normpath(os.path.join(d, f))
            z.write(p, f"{root}/{p}")
PY
  )
  cp binding/go.mod "proxy/$MOD/@v/$VER.mod"
  printf '{"Version":"%s","Time":"2026-01-01T00:00:00Z"}\n' "$VER" > "proxy/$MOD/@v/$VER.info"
  printf '%s\n' "$VER" > "proxy/$MOD/@v/list" ;;
run)
  rm -rf app cache-app bin && mkdir -p app cache-app bin
  # 1. replace => a copy of the binding; go mod vendor; -trimpath; libdir from pkg-config.
  cp "$AIMUX_DIST_TESTS/go/main.go" app/
  printf 'module example.com/app\n\ngo 1.24\n\nrequire %s %s\n\nreplace %s => ../binding\n' "$MOD" "$VER" "$MOD" > app/go.mod
  (cd app && go mod vendor)
  [ -f "app/vendor/$MOD/aimux.h" ] || { echo "go mod vendor left out aimux.h"; exit 1; }
  libdir="$(PKG_CONFIG_PATH="$AIMUX_DIST_PREFIX/lib/pkgconfig" pkg-config --define-prefix --variable=libdir aimux)"
  libdir="$(cd "$libdir" && pwd)"
  echo "   pkg-config --variable=libdir aimux: $libdir"
  (cd app && go build -mod=vendor -trimpath -ldflags "-X '$MOD.buildLibDir=$libdir'" -o ../bin/app-pkgconfig .)
  if grep -qF "$PWD/binding" bin/app-pkgconfig; then echo "the -trimpath binary names the binding's directory"; exit 1; fi
  bindings_expect_ok "Go, vendored, -trimpath, libdir from pkg-config" \
    "$(bindings_run / "$PWD/bin/app-pkgconfig" "$AIMUX_DIST_RECORDING")"
  # 2. the same module from a module cache (read-only files, no ../../native next to it).
  cp "$AIMUX_DIST_TESTS/go/main.go" cache-app/
  printf 'module example.com/app\n\ngo 1.24\n\nrequire %s %s\n' "$MOD" "$VER" > cache-app/go.mod
  export GOMODCACHE="$PWD/modcache"
  (cd cache-app && GOPROXY="file://$PWD/../proxy" go mod tidy && GOPROXY=off go build -trimpath -o ../bin/app .)
  [ -f "$GOMODCACHE/$MOD@$VER/aimux.h" ] || { echo "the binding was not built from the module cache"; exit 1; }
  bindings_expect_ok "Go, module cache, LD_LIBRARY_PATH" \
    "$(bindings_run / "LD_LIBRARY_PATH=$AIMUX_DIST_PREFIX/lib" "$PWD/bin/app" "$AIMUX_DIST_RECORDING")"
  rc=0; out="$(bindings_run / "$PWD/bin/app" "$AIMUX_DIST_RECORDING")" || rc=$?
  [ "$rc" = 3 ] || { echo "$out"; echo "Go: exit $rc without a library"; exit 1; }
  bindings_expect_207 Go "$out"
  # 3. CGO_ENABLED=0: the first error says cgo is needed.
  rc=0; out="$(cd cache-app && GOPROXY=off CGO_ENABLED=0 go build -o /dev/null . 2>&1)" || rc=$?
  [ "$rc" != 0 ] || { echo "a CGO_ENABLED=0 build succeeded"; exit 1; }
  first="$(printf '%s\n' "$out" | grep -m1 '\.go:[0-9]*:')"
  echo "   CGO_ENABLED=0: $first" | cut -c1-200
  grep -q 'cgo_required.go:.*this package needs cgo: build with CGO_ENABLED=1' <<<"$first" \
    || { echo "$out"; echo "the first CGO_ENABLED=0 error is not the cgo message"; exit 1; }
  chmod -R u+w "$GOMODCACHE" ;;
esac
