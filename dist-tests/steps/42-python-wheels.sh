# The manylinux wheel of each supported CPython (AIMUX_DIST_WHEELS), each in a fresh venv of its
# interpreter: `pip install` with no compiler on PATH (nothing is built), then the day-one program
# (dist-tests/python/day_one.py) with an empty environment, and the C consumer linked with
# `python -m aimux_ops.native --cflags --libs` of that venv, also run with an empty environment.
# A host that dlopens the library (as the bindings do) gets libpython from its DT_NEEDED
# (auditwheel removes it; build_wheels.py puts it back), the interpreter's LIBDIR given: in a venv
# the wheel's rpath cannot name it. Then the sdist, which still builds from source (with the compiler), runs the day-one program.
set -euo pipefail
. "$AIMUX_DIST_TESTS/lib.sh"
[ "$1" = run ] || exit 0
nocc="$PWD/no-compiler-bin"   # PATH for pip and the program: no cc, gcc, ld, make
mkdir -p "$nocc"

# fresh_venv DIR PYTHON: a venv of PYTHON's base interpreter (not of another venv)
fresh_venv() {
  local base
  base="$("$2" -c 'import sys; print(sys._base_executable)')"
  "$base" -m venv "$1"
}

# day_one LABEL VENV: the Python day-one program from / with an empty environment
day_one() {
  (cd / && env -i PATH="$nocc" "$2/bin/python" "$AIMUX_DIST_TESTS/python/day_one.py" \
    "$AIMUX_DIST_RECORDING") > "$2.out" || { cat "$2.out"; echo "$1: the day-one program failed"; return 1; }
  dist_check_consumer "$1" "$2.out"
}

cc -Wall -Wextra -Werror "$AIMUX_DIST_TESTS/c/dlopen_host.c" -o dlopen_host -ldl
n=0
while read -r python wheel; do
  minor="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  venv="$PWD/venv-$minor"
  fresh_venv "$venv" "$python"
  for tool in cc gcc; do
    if env -i PATH="$nocc" "$venv/bin/python" -c "import shutil, sys; sys.exit(shutil.which('$tool') is None)"; then
      echo "   $tool is on the install's PATH"; exit 1
    fi
  done
  env -i PATH="$nocc" HOME="$HOME" "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    --only-binary=:all: -c "$AIMUX_DIST_PIP_CONSTRAINTS" "$wheel" > "pip-$minor.txt" 2>&1 \
    || { cat "pip-$minor.txt"; echo "   pip install $(basename "$wheel") FAILED (no compiler)"; exit 1; }
  echo "   Python $minor: pip install $(basename "$wheel") with no compiler on PATH: ok"
  day_one "Python $minor day-one program (manylinux wheel, fresh venv)" "$venv"
  flags="$("$venv/bin/python" -m aimux_ops.native --cflags --libs)"
  cc -Wall -Wextra -Werror "$AIMUX_DIST_TESTS/c/consumer.c" -o "consumer-$minor" $flags
  dist_run / "$PWD/consumer-$minor" "$AIMUX_DIST_RECORDING" > "consumer-$minor.txt" \
    || { cat "consumer-$minor.txt"; echo "   the C consumer on the $minor wheel failed"; exit 1; }
  dist_check_consumer "C on the Python $minor wheel (python -m aimux_ops.native)" "consumer-$minor.txt"
  lib="$("$venv/bin/python" -m aimux_ops.native --library)"
  pydir="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')"
  (cd / && env -i LD_LIBRARY_PATH="$pydir" "$OLDPWD/dlopen_host" "$lib") > "dlopen-$minor.txt" \
    || { cat "dlopen-$minor.txt"; echo "   dlopen of the $minor wheel's libaimux failed"; exit 1; }
  echo "   $(cat "dlopen-$minor.txt")"
  n=$((n + 1))
done < "$AIMUX_DIST_WHEELS"
if [ "$n" -lt 3 ]; then
  echo "   only $n of the 3 supported CPython minors (3.11-3.13) on this machine"
fi

# the sdist builds from source: libaimux and the chunk reader compiled at install time
fresh_venv venv-sdist "$AIMUX_DIST_PYTHON"
venv-sdist/bin/python -m pip install -q --disable-pip-version-check -c "$AIMUX_DIST_PIP_CONSTRAINTS" \
  "$AIMUX_DIST_SDIST" > pip-sdist.txt 2>&1 || { cat pip-sdist.txt; echo "   pip install of the sdist FAILED"; exit 1; }
echo "   pip install $(basename "$AIMUX_DIST_SDIST") (built from source): ok"
day_one "day-one program (sdist built from source)" "$PWD/venv-sdist"
