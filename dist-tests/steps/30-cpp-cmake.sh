# A C++ program (aimux.hpp) built by CMake with find_package(aimux CONFIG), run with an empty
# environment.
set -euo pipefail
. "$AIMUX_DIST_TESTS/lib.sh"
[ "$1" = run ] || exit 0
command -v cmake >/dev/null || { echo "cmake is missing (apt-get install cmake)"; exit 1; }
mkdir -p src && cp "$AIMUX_DIST_TESTS/cpp/CMakeLists.txt" "$AIMUX_DIST_TESTS/cpp/consumer.cpp" src/
cmake -S src -B build -DCMAKE_PREFIX_PATH="$AIMUX_DIST_PREFIX" -DCMAKE_BUILD_TYPE=Release > cmake.log 2>&1 \
  || { cat cmake.log; exit 1; }
cmake --build build > build.log 2>&1 || { cat build.log; exit 1; }
# the build tree's rpath CMake writes from aimux::aimux's location: a clean path, no ..
rp="$(readelf -d build/consumer | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')"
[ "$rp" = "$AIMUX_DIST_PREFIX/lib" ] || { echo "the consumer's RUNPATH is '$rp', not $AIMUX_DIST_PREFIX/lib"; exit 1; }
echo "   RUNPATH $rp"
dist_run / "$PWD/build/consumer" "$AIMUX_DIST_RECORDING" > out.txt
dist_check_consumer "C++ via CMake find_package" out.txt
