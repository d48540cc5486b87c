# The installed tree on machines with no Python: minimal Debian 12 and 13 roots (debootstrap
# minbase, dist-tests/debian-root.sh; cached), no python3 and no libpython in them. The moved
# prefix is copied into each root at its own path, with the C consumer (pkg-config
# --define-prefix) and the C++ one (CMake) built here; both run there by chroot with an empty
# environment: a replayed generate_text, a replayed stream, a chain that reaches
# ConnectionRefusedError. Every library they load must come from the root's libc set or the tree.
set -euo pipefail
. "$AIMUX_DIST_TESTS/lib.sh"
[ "$1" = run ] || exit 0
SUITES="${AIMUX_DIST_SUITES:-bookworm trixie}"
# debootstrap and chroot need root (as does writing the prefix into the root)
[ "$(id -u)" = 0 ] || { echo "   SKIPPED: debootstrap and chroot need root (uid $(id -u))"; exit 77; }

export PKG_CONFIG_PATH="$AIMUX_DIST_PREFIX/lib/pkgconfig"
cp "$AIMUX_DIST_TESTS/c/consumer.c" .
cc -Wall -Wextra -Werror consumer.c -o consumer-c $(pkg-config --define-prefix --cflags --libs aimux)
mkdir -p cpp && cp "$AIMUX_DIST_TESTS/cpp/CMakeLists.txt" "$AIMUX_DIST_TESTS/cpp/consumer.cpp" cpp/
cmake -S cpp -B cpp/build -DCMAKE_PREFIX_PATH="$AIMUX_DIST_PREFIX" -DCMAKE_BUILD_TYPE=Release > cmake.log 2>&1 \
  && cmake --build cpp/build > build.log 2>&1 || { cat cmake.log build.log; exit 1; }
cp cpp/build/consumer consumer-cpp

placed=()
cleanup() { local d; for d in "${placed[@]+"${placed[@]}"}"; do rm -rf "$d"; done; }
trap cleanup EXIT
ran=0
for suite in $SUITES; do
  rc=0; root="$("$AIMUX_DIST_TESTS/debian-root.sh" "$suite" 2> root.err)" || rc=$?
  if [ $rc = 77 ]; then echo "   $suite: SKIPPED: $(tail -1 root.err)"; continue; fi
  [ $rc = 0 ] || { cat root.err; echo "debian-root.sh $suite failed"; exit 1; }
  release="$(cat "$root/etc/debian_version")"
  # what the root must not have: any Python (the tree brings its own)
  if chroot "$root" /bin/sh -c 'command -v python3 || ls /usr/bin/python* /usr/lib/*/libpython* /usr/lib/libpython*' \
      > has.txt 2>/dev/null; then
    echo "the $suite root has a Python: $(tr '\n' ' ' < has.txt)"; exit 1
  fi
  # the user's machine: the prefix at its own path, the programs and the recording beside it
  inside="$root$AIMUX_DIST_WORK"
  placed+=("$inside")
  mkdir -p "$inside/bin" "$(dirname "$root$AIMUX_DIST_PREFIX")"
  cp -a "$AIMUX_DIST_PREFIX" "$root$AIMUX_DIST_PREFIX"
  cp consumer-c consumer-cpp "$inside/bin/"
  cp "$AIMUX_DIST_RECORDING" "$root$AIMUX_DIST_RECORDING"
  for lang in c cpp; do
    rc=0
    chroot "$root" /usr/bin/env -i LD_DEBUG=libs "$AIMUX_DIST_WORK/bin/consumer-$lang" "$AIMUX_DIST_RECORDING" \
      > "out-$suite-$lang.txt" 2> "ld-$suite-$lang.txt" || rc=$?
    dist_check_consumer "$lang on Debian $release ($suite minbase, no Python)" "out-$suite-$lang.txt" \
      || { echo "exit status $rc"; grep -iE 'error|cannot' "ld-$suite-$lang.txt" | head; exit 1; }
    # every object it loaded: the root's C runtime (libc, libm, libgcc_s, libstdc++) or the tree
    foreign="$(grep -o 'calling init: [^ ]*' "ld-$suite-$lang.txt" | cut -d' ' -f3 | sort -u \
      | grep -vF "$AIMUX_DIST_PREFIX/" | grep -vE '/(ld-linux[^/]*|lib(c|m|dl|pthread|rt|util|resolv|gcc_s|stdc\+\+)\.so[.0-9]*)$' || true)"
    [ -z "$foreign" ] || { echo "loaded from the root, not the tree: $foreign"; exit 1; }
    lp="$(grep -o 'calling init: [^ ]*libpython[^ ]*' "ld-$suite-$lang.txt" | head -1 | cut -d' ' -f3)"
    [[ "$lp" == "$AIMUX_DIST_PREFIX/lib/aimux/runtime/lib/libpython"* ]] || { echo "libpython from '$lp'"; exit 1; }
    ssl="$(grep -c 'calling init: [^ ]*/aimux/runtime/lib/[^ ]*lib\(ssl\|crypto\)\.so' "ld-$suite-$lang.txt" || true)"
    echo "   libpython, the standard library and $ssl of libssl/libcrypto from the tree"
  done
  rm -rf "$root$AIMUX_DIST_WORK"
  ran=$((ran + 1))
done
# a suite that could not be made is a skip of the step (after the others ran), never a pass
[ "$ran" = "$(echo $SUITES | wc -w)" ] || { echo "   SKIPPED: $ran of the roots ($SUITES) could be made here"; exit 77; }
