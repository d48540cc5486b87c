# Go: the module github.com/aimux-ops/aimux-ops/bindings/go/aimux (package aimux: no import alias)
# served from a file:// GOPROXY (dist-tests/go/goproxy.py) and added to a fresh module with
# `go get`; no replace, no -ldflags, no LD_LIBRARY_PATH: the binding finds the installed library
# through pkg-config (`#cgo pkg-config: --define-prefix aimux-dlopen`), whose Libs put <prefix>/lib in
# the program's RUNPATH: built in place (package phase) and after the move (also vendored,
# -trimpath), with nothing but PKG_CONFIG_PATH; a program whose library has gone starts and gets
# the 207; a CGO_ENABLED=0 build says cgo is needed. Each phase has a build cache of its own: Go's
# does not key on pkg-config's output (golang/go#24544), and the prefix differs from phase to phase.
set -euo pipefail
. "$AIMUX_DIST_TESTS/bindings-lib.sh"
MOD=github.com/aimux-ops/aimux-ops/bindings/go/aimux
VER=v0.1.0
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false GOPRIVATE= GONOSUMDB= GOSUMDB=off
export GOMODCACHE="$PWD/modcache" GOCACHE="$PWD/gocache-$1"
# new_app DIR: a module of its own with the binding added by `go get` from the file proxy.
new_app() {
  rm -rf "$1" && mkdir -p "$1" && cp "$AIMUX_DIST_TESTS/go/main.go" "$1/"
  (cd "$1" && go mod init example.com/app >/dev/null 2>&1 && GOPROXY="file://$PWD/../proxy" go get "$MOD@$VER" 2>&1 | sed 's/^/   go get: /' \
   && GOPROXY=off go mod tidy)
  grep -qx "require $MOD $VER" "$1/go.mod" || { cat "$1/go.mod"; echo "go get did not add $MOD $VER"; exit 1; }
  if grep -q '^replace' "$1/go.mod"; then echo "a replace in go.mod"; exit 1; fi
}
# check_runpath BINARY LIBDIR: RUNPATH exactly LIBDIR (a clean path), no DT_NEEDED on libaimux.
check_runpath() {
  local rp; rp="$(readelf -d "$1" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')"
  [ "$rp" = "$2" ] || { echo "$1: RUNPATH '$rp', not $2"; exit 1; }
  if readelf -d "$1" | grep -q 'NEEDED.*libaimux'; then echo "$1 needs libaimux at start-up (no 207 without it)"; exit 1; fi
  echo "   $(basename "$1"): RUNPATH $rp, no DT_NEEDED on libaimux"
}
case "$1" in
package)
  bindings_copy "$AIMUX_DIST_SRC/bindings/go/aimux" binding build
  "$AIMUX_DIST_PYTHON" "$AIMUX_DIST_TESTS/go/goproxy.py" binding proxy "$VER"
  rm -rf binding
  # in place: plain pkg-config (aimux.pc names this prefix), the run with no environment variable
  new_app app-in-place
  (cd app-in-place && PKG_CONFIG_PATH="$AIMUX_DIST_PREFIX/lib/pkgconfig" GOPROXY=off go build -trimpath -o app .)
  check_runpath app-in-place/app "$AIMUX_DIST_PREFIX/lib"
  bindings_expect_ok "Go, go get from a file proxy, pkg-config in place" \
    "$(bindings_run / "$PWD/app-in-place/app" "$AIMUX_DIST_RECORDING")"
  chmod -R u+w "$GOMODCACHE" ;;
run)
  export PKG_CONFIG_PATH="$AIMUX_DIST_PREFIX/lib/pkgconfig"
  # 1. the moved prefix: from the module cache, -trimpath
  new_app app
  [ -f "$GOMODCACHE/$MOD@$VER/aimux.h" ] || { echo "the binding is not in the module cache"; exit 1; }
  (cd app && GOPROXY=off go build -trimpath -o app .)
  if grep -qF "$GOMODCACHE" app/app; then echo "the -trimpath binary names the module cache"; exit 1; fi
  check_runpath app/app "$AIMUX_DIST_PREFIX/lib"
  bindings_expect_ok "Go, go get, moved prefix" \
    "$(bindings_run / "$PWD/app/app" "$AIMUX_DIST_RECORDING")"
  # 2. the same module vendored (no ../../native next to it)
  (cd app && GOPROXY=off go mod vendor && GOPROXY=off go build -mod=vendor -trimpath -o app-vendored .)
  [ -f "app/vendor/$MOD/aimux.h" ] || { echo "go mod vendor left out aimux.h"; exit 1; }
  check_runpath app/app-vendored "$AIMUX_DIST_PREFIX/lib"
  bindings_expect_ok "Go, vendored" "$(bindings_run / "$PWD/app/app-vendored" "$AIMUX_DIST_RECORDING")"
  # 3. the library gone from where the RUNPATH points (the prefix moved away for this run, then
  # back): the program starts, every call a 207
  away="$AIMUX_DIST_PREFIX.away"
  trap 'if [ -d "$away" ]; then mv "$away" "$AIMUX_DIST_PREFIX"; fi' EXIT
  mv "$AIMUX_DIST_PREFIX" "$away"
  rc=0; out="$(bindings_run / "$PWD/app/app" "$AIMUX_DIST_RECORDING")" || rc=$?
  mv "$away" "$AIMUX_DIST_PREFIX"
  [ "$rc" = 3 ] || { echo "$out"; echo "Go: exit $rc without a library"; exit 1; }
  bindings_expect_207 Go "$out"
  # 4. CGO_ENABLED=0: the first error says cgo is needed.
  rc=0; out="$(cd app && GOPROXY=off CGO_ENABLED=0 go build -o /dev/null . 2>&1)" || rc=$?
  [ "$rc" != 0 ] || { echo "a CGO_ENABLED=0 build succeeded"; exit 1; }
  first="$(printf '%s\n' "$out" | grep -m1 '\.go:[0-9]*:')"
  echo "   CGO_ENABLED=0: $first" | cut -c1-200
  grep -q 'cgo_required.go:.*this package needs cgo: build with CGO_ENABLED=1' <<<"$first" \
    || { echo "$out"; echo "the first CGO_ENABLED=0 error is not the cgo message"; exit 1; }
  chmod -R u+w "$GOMODCACHE" ;;
esac
