# The installed library loaded (ctypes) into a host running another CPython minor version: every
# call a 207 RuntimeInitError naming both versions — no abort, no "No module named".
set -euo pipefail
[ "$1" = run ] || exit 0
built="$("$AIMUX_DIST_PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
cands=()
for v in 3.8 3.9 3.10 3.11 3.12 3.13 3.14; do
  [ "$v" = "$built" ] && continue
  p="$(command -v "python$v" 2>/dev/null || true)"; [ -n "$p" ] && cands+=("$p")
done
if command -v pyenv >/dev/null; then cands+=("$(pyenv root)"/versions/*/bin/python3); fi
host=""
for p in "${cands[@]}"; do
  v="$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)"
  if [ -n "$v" ] && [ "$v" != "$built" ] && [ "${v%%.*}" = 3 ]; then host="$p"; hv="$v"; break; fi
done
if [ -z "$host" ]; then echo "   SKIPPED: no CPython other than $built on this machine"; exit 77; fi
cat > host.py <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
P = ctypes.c_void_p
lib.aimux_call.restype = P
lib.aimux_call.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(P)]
lib.aimux_error_code.restype = ctypes.c_int32
lib.aimux_error_code.argtypes = [P]
lib.aimux_error_message.restype = P
lib.aimux_error_message.argtypes = [P]
out = P()
err = lib.aimux_call(b"aimux.version", b"{}", ctypes.byref(out))
if not err:
    sys.exit("expected a 207, got a result")
print(lib.aimux_error_code(err), ctypes.string_at(lib.aimux_error_message(err)).decode())
PY
here="$PWD"
(cd / && env -i "$host" "$here/host.py" "$AIMUX_DIST_PREFIX/lib/libaimux.so.1") > out.txt
sed 's/^/   /' out.txt
grep -q "^207 .*built for Python $built but this process runs Python $hv" out.txt \
  || { echo "no 207 naming Python $built and $hv"; exit 1; }
echo "   a Python $hv host: 207 naming both versions: ok"
