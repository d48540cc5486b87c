# Go: the README's first program (the block after `<!-- first-program:go -->`), as a user writes
# it: a fresh module, the binding added by `go get` from a file:// GOPROXY, `go vet` clean, built
# through pkg-config against the installed (then moved) prefix and run with an empty environment
# but OPENAI_BASE_URL / OPENAI_API_KEY, against tests/fault_server.py (copied out of the checkout):
# the generated text, the streamed deltas, a 429 whose retry error carries statusCode and
# retry-after, and a refused connection matched with errors.Is(err, syscall.ECONNREFUSED).
set -euo pipefail
. "$AIMUX_DIST_TESTS/bindings-lib.sh"
MOD=github.com/aimux-ops/aimux-ops/bindings/go/aimux
VER=v0.1.0
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false GOPRIVATE= GONOSUMDB= GOSUMDB=off
export GOMODCACHE="$PWD/modcache" GOCACHE="$PWD/gocache"
case "$1" in
package)
  command -v go >/dev/null || { echo "   no go toolchain"; exit 77; }
  bindings_copy "$AIMUX_DIST_SRC/bindings/go/aimux" binding build
  "$AIMUX_DIST_PYTHON" "$AIMUX_DIST_TESTS/go/goproxy.py" binding proxy "$VER"
  rm -rf binding
  cp "$AIMUX_DIST_SRC/tests/fault_server.py" .
  mkdir -p first
  sed -n '/^<!-- first-program:go -->$/,/^```$/p' "$AIMUX_DIST_SRC/README.md" | sed '1,2d;$d' > first/main.go
  grep -q 'aimux.GenerateText' first/main.go || { echo "no Go first program in README.md"; exit 1; } ;;
run)
  export PKG_CONFIG_PATH="$AIMUX_DIST_PREFIX/lib/pkgconfig"
  (cd first && rm -f go.mod go.sum && go mod init example.com/first >/dev/null 2>&1 \
     && GOPROXY="file://$PWD/../proxy" go get "$MOD@$VER" 2>&1 | sed 's/^/   go get: /' \
     && GOPROXY=off go mod tidy && GOPROXY=off go vet . && GOPROXY=off go build -trimpath -o first .)
  echo "   $(wc -l < first/main.go) lines (README.md), go vet clean"
  "$AIMUX_DIST_PYTHON" fault_server.py --port 0 > server.out 2>&1 &
  server=$!
  trap 'kill "$server" 2>/dev/null || true' EXIT
  for _ in $(seq 1 600); do grep -q '^fault server on ' server.out && break; sleep 0.1; done
  base="$(sed -n 's/^fault server on //p' server.out)"
  [ -n "$base" ] || { cat server.out; echo "the fault server did not start"; exit 1; }
  out="$(bindings_run / "OPENAI_BASE_URL=$base" "OPENAI_API_KEY=sk-test" "$PWD/first/first")"
  printf '%s\n' "$out" | sed 's/^/   /'
  for want in 'text: Hello! (14 tokens)' 'delta: Hel' 'delta: lo!' 'finish: stop' \
    'rate limited (retry after 200ms): AI_RetryError: Failed after 3 attempts. Last error: *' \
    'no server: AI_APICallError: Cannot connect to API: *Connection refused'; do
    found=0
    while IFS= read -r line; do [[ "$line" == $want ]] && found=1; done <<<"$out"
    [ $found = 1 ] || { echo "Go first program: no line '$want'"; exit 1; }
  done
  if grep -q 'sk-test' <<<"$out"; then echo "the key reached the output"; exit 1; fi
  echo "   Go first program: ok" ;;
esac
