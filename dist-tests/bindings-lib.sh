# dist-tests/bindings-lib.sh — checks shared by the Node, Go and Java steps (60-node, 70-go,
# 80-java; source it). Each binding's consumer prints the same lines:
#   text: Hello!                                   the replayed generate_text (recordings/demo.jsonl)
#   stream: Hello! (finish)                        the replayed stream_text: its text-deltas, its last event
#   chain: <kind> <code> <name>: <message>         one per link of the failing call's native chain
#   error: <code> <name>: <message>                (exit 3) when the first call fails
# Programs run with an empty environment (lib.sh's dist_run), plus PATH (node, java) and HOME,
# plus what a case names.
. "$AIMUX_DIST_TESTS/lib.sh"

bindings_run() { # DIR VAR=VALUE... PROGRAM ARGS...
  local dir="$1"; shift
  dist_run "$dir" "PATH=$PATH" "HOME=$HOME" "$@"
}

# bindings_expect_ok LABEL OUTPUT: the replay's text, the replayed stream's, then the failing call's chain
# down to the OS error.
bindings_expect_ok() {
  local label="$1" out="$2"
  printf '%s\n' "$out" | sed 's/^/   /'
  grep -qx 'text: Hello!' <<<"$out" || { echo "$label: no 'text: Hello!' from the replayed generate_text"; return 1; }
  grep -qx 'stream: Hello! (finish)' <<<"$out" || { echo "$label: no 'stream: Hello! (finish)' from the replayed stream_text"; return 1; }
  grep -q '^chain: aimux 11 AI_APICallError: ' <<<"$out" || { echo "$label: no AI_APICallError in the chain"; return 1; }
  [[ "$(grep '^chain: ' <<<"$out" | tail -n 1)" == 'chain: source 0 ConnectionRefusedError: '* ]] \
    || { echo "$label: the failing call's chain does not end at ConnectionRefusedError"; return 1; }
  echo "   $label: ok"
}

# bindings_expect_207 LABEL OUTPUT: every binding's answer when no library can be found.
bindings_expect_207() {
  local label="$1" out="$2"
  printf '%s\n' "$out" | sed 's/^/   /'
  grep -q '^error: 207 RuntimeInitError: aimux: cannot load libaimux\. Tried: ' <<<"$out" \
    || { echo "$label: no 207 RuntimeInitError naming what was tried"; return 1; }
  grep -q 'libaimux\.so\.1 through the system loader' <<<"$out" || { echo "$label: the 207 does not name the loader"; return 1; }
  grep -q 'Fix: ' <<<"$out" || { echo "$label: the 207 does not say how to fix it"; return 1; }
  echo "   $label, no library findable: 207: ok"
}

# bindings_copy SRC DEST EXCLUDE...: a copy of a binding's directory without build outputs.
bindings_copy() {
  local src="$1" dest="$2"; shift 2
  local ex=()
  for e in "$@"; do ex+=("--exclude=./$e"); done
  rm -rf "$dest" && mkdir -p "$dest"
  (cd "$src" && tar "${ex[@]}" -cf - .) | tar -xf - -C "$dest"
}
