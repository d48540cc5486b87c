# dist-tests/lib.sh — helpers for the steps of dist-tests/run.sh (source it).

# dist_run DIR PROGRAM ARGS...: run PROGRAM from DIR with an empty environment (what a user's
# program gets when nothing is configured), output to stdout.
dist_run() {
  local dir="$1"; shift
  (cd "$dir" && env -i "$@")
}

# dist_check_consumer LABEL OUTPUT_FILE: the consumer's output must show the replayed
# generate_text, the replayed stream and a native chain ending in ConnectionRefusedError.
dist_check_consumer() {
  local label="$1" out="$2"
  sed 's/^/   /' "$out"
  grep -q '^replay ok: .*"text":"Hello!"' "$out" || { echo "$label: no replayed generate_text"; return 1; }
  grep -q '^stream ok: text-delta events "Hello!", then finish (stop)' "$out" \
    || { echo "$label: no replayed stream_text"; return 1; }
  grep -q '^chain ok: ends in ConnectionRefusedError' "$out" \
    || { echo "$label: the native chain does not reach ConnectionRefusedError"; return 1; }
  echo "   $label: ok"
}
