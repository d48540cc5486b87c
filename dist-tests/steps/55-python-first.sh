# The README's Python "First program" against the wheel in a fresh venv: type-checked with
# `mypy --strict` against the installed package (py.typed), then run with an empty environment
# but the provider's URL and key, against the fault server (a local stand-in speaking OpenAI's
# wire format): generate, stream, a 429 with retry-after, a refused connection.
set -euo pipefail
if [ "$1" = package ]; then
  "$AIMUX_DIST_PYTHON" - "$AIMUX_DIST_SRC/README.md" > first.py <<'PY'
import re, sys
section = open(sys.argv[1], encoding="utf-8").read().split("### First program", 1)[1]
print(re.search(r"```python\n(.*?)```", section, re.S).group(1), end="")
PY
  cp "$AIMUX_DIST_SRC/tests/fault_server.py" .
  exit 0
fi
[ "$1" = run ] || exit 0
base="$("$AIMUX_DIST_PYTHON" -c 'import sys; print(sys._base_executable)')"
"$base" -m venv venv
venv/bin/python -m pip install -q --disable-pip-version-check -c "$AIMUX_DIST_PIP_CONSTRAINTS" \
  "$AIMUX_DIST_WHEEL"
mypy="$(dirname "$AIMUX_DIST_PYTHON")/mypy"
[ -x "$mypy" ] || { echo "no mypy beside $AIMUX_DIST_PYTHON (make setup installs it)"; exit 1; }
"$mypy" --strict --no-incremental --python-executable "$PWD/venv/bin/python" first.py > mypy.txt \
  || { cat mypy.txt; echo "mypy --strict failed on the README's first program"; exit 1; }
echo "   mypy --strict first.py (against the installed wheel): $(tail -1 mypy.txt)"
venv/bin/python fault_server.py --port 0 > server.txt &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do grep -q '^fault server on ' server.txt && break; sleep 0.1; done
url="$(sed -n 's/^fault server on //p' server.txt)"
[ -n "$url" ] || { echo "the fault server did not start"; exit 1; }
(cd / && env -i OPENAI_BASE_URL="$url" OPENAI_API_KEY=sk-first-program \
  BUSY_MODEL="fault:mode=status;status=429;retry_after=0;message=Rate limit reached" \
  "$OLDPWD/venv/bin/python" "$OLDPWD/first.py") > out.txt
sed 's/^/   /' out.txt
printf '%s\n' "generate: Hello! stop 14" "Hello!" "rate limited: 429 maxRetriesExceeded" \
  "refused: ConnectionRefusedError True" | diff - out.txt \
  || { echo "the first program's output differs"; exit 1; }
echo "   the README's Python first program (wheel in a fresh venv): ok"
