# The platform wheel in a fresh venv: a C program built with `python -m aimux_ops.native
# --cflags --libs` runs with an empty environment and uses that venv's aimux_ops.
set -euo pipefail
. "$AIMUX_DIST_TESTS/lib.sh"
[ "$1" = run ] || exit 0
base="$("$AIMUX_DIST_PYTHON" -c 'import sys; print(sys._base_executable)')"
"$base" -m venv venv
venv/bin/python -m pip install -q --disable-pip-version-check -c "$AIMUX_DIST_PIP_CONSTRAINTS" \
  "$AIMUX_DIST_WHEEL"
site="$(venv/bin/python -c 'import aimux_ops, os; print(os.path.dirname(os.path.dirname(aimux_ops.__file__)))')"
case "$site" in "$PWD"/venv/*) ;; *) echo "aimux_ops imported from $site, not the venv"; exit 1;; esac
flags="$(venv/bin/python -m aimux_ops.native --cflags --libs)"
echo "   python -m aimux_ops.native --cflags --libs: $flags"
cp "$AIMUX_DIST_TESTS/c/consumer.c" .
cc -Wall -Wextra -Werror consumer.c -o consumer $flags
dist_run / "$PWD/consumer" "$AIMUX_DIST_RECORDING" > out.txt
# the library found this venv's packages: each extension module it loaded lives in the venv
env -i LD_DEBUG=libs "$PWD/consumer" "$AIMUX_DIST_RECORDING" 2> ld.txt > /dev/null
grep -q "calling init: $site/pydantic_core/" ld.txt || { echo "pydantic_core not loaded from $site"; exit 1; }
dist_check_consumer "C via python -m aimux_ops.native (wheel in a fresh venv)" out.txt
