#!/usr/bin/env bash
# Installs a build tree into a temporary prefix and builds samples/minimal_c against the
# installed Parley as an outside program would: with CMake's find_package(Parley) and with
# pkg-config and plain cc. Runs both programs, checks the installed library's SONAME and that
# it exports only parley_*. Exits non-zero on any failure.
#   scripts/test-install.sh [BUILD_DIR]   build tree (default: $BUILD_DIR, else build)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build_dir=$(realpath -m "${1:-${BUILD_DIR:-build}}")  # relative to the repository root
model="$repo/../shared/models/stories260k/stories260k-f32.gguf"

fail() { echo "test-install: FAILED: $*" >&2; exit 1; }
step() { echo "test-install: $*"; }

[ -f "$build_dir/CMakeCache.txt" ] || fail "$build_dir is not a configured build tree"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

step "install $build_dir -> $prefix"
cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log" || {
  cat "$work/install.log"; fail "cmake --install"; }
pc=$(find "$prefix" -path '*/pkgconfig/parley.pc' | head -n 1)
[ -n "$pc" ] || fail "parley.pc not installed"
libdir=$(dirname "$(dirname "$pc")")
[ -f "$prefix/include/parley.h" ] || fail "parley.h not installed"
for f in libparley.so libparley.so.0; do
  [ -L "$libdir/$f" ] || fail "$libdir/$f is not a symbolic link"
done
library=$(realpath "$libdir/libparley.so.0")
[ -f "$library" ] || fail "libparley.so.0 points nowhere"
if [ -f "$build_dir/lib/libparley_cuda.so" ]; then
  # libparley looks for the CUDA module beside itself; it must load there without the tree.
  [ -f "$libdir/libparley_cuda.so" ] || fail "libparley_cuda.so was built but not installed"
  if ldd "$libdir/libparley_cuda.so" | grep -q "not found"; then
    fail "the installed libparley_cuda.so lacks libraries: $(ldd "$libdir/libparley_cuda.so" | grep "not found")"
  fi
fi
[ -f "$libdir/cmake/Parley/ParleyConfig.cmake" ] || fail "ParleyConfig.cmake not installed"
[ -f "$libdir/cmake/Parley/ParleyConfigVersion.cmake" ] || fail "ParleyConfigVersion.cmake not installed"

step "SONAME and exported symbols of $library"
soname=$(objdump -p "$library" | awk '$1 == "SONAME" {print $2}')
[ "$soname" = libparley.so.0 ] || fail "SONAME is '$soname', not libparley.so.0"
exported=$(nm -D --defined-only "$library" | awk '$2 ~ /^[TWBDRVi]$/ {print $3}' | sed 's/@.*//' | sort -u)
foreign=$(grep -v '^parley_' <<<"$exported" || true)
[ -z "$foreign" ] || fail "exports that are not parley_*: $(tr '\n' ' ' <<<"$foreign")"
[ "$(grep -c '^parley_' <<<"$exported")" -ge 20 ] || fail "too few parley_* exports"

# The program must load the installed library, not the build tree's.
expect_installed_library() {
  local resolved
  resolved=$(ldd "$1" | awk '$1 == "libparley.so.0" {print $3}')
  [ "$(realpath "$resolved" 2>/dev/null)" = "$library" ] ||
    fail "$1 loads libparley.so.0 from '$resolved', not from $prefix"
}

# Without arguments the sample prints its usage and exits 1; on the model it exits 0.
run_sample() {
  local exe=$1 rc=0
  expect_installed_library "$exe"
  "$exe" >"$work/out.txt" 2>&1 || rc=$?
  [ $rc -eq 1 ] && grep -q '^usage: ' "$work/out.txt" ||
    fail "$exe without arguments: exit $rc, output: $(cat "$work/out.txt")"
  if [ -f "$model" ]; then
    "$exe" "$model" "Once upon a time" >"$work/out.txt" 2>&1 ||
      fail "$exe on $model: exit $?, output: $(cat "$work/out.txt")"
    [ -s "$work/out.txt" ] || fail "$exe printed no reply"
  else
    step "skip: running $exe on a model ($model not found)"
  fi
}

step "find_package(Parley) with CMAKE_PREFIX_PATH"
cmake -S tests/install -B "$work/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 || {
  cat "$work/configure.log"; fail "configuring tests/install"; }
cmake --build "$work/cmake-build" >"$work/build.log" 2>&1 || {
  cat "$work/build.log"; fail "building tests/install"; }
run_sample "$work/cmake-build/minimal_c"

step "pkg-config with PKG_CONFIG_PATH and cc"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
version=$(pkg-config --modversion parley) || fail "pkg-config cannot find parley"
expected=$(awk '/^project\(parley VERSION/ {print $3}' CMakeLists.txt)
[ "$version" = "$expected" ] || fail "parley.pc says version $version, CMakeLists.txt $expected"
# shellcheck disable=SC2046 # the flags are meant to split into words
cc -std=c99 -Wall -Werror samples/minimal_c/main.c $(pkg-config --cflags --libs parley) \
  -o "$work/minimal_c_pc" || fail "cc with pkg-config's flags"
# Like any library outside the loader's default path, it is found through LD_LIBRARY_PATH.
LD_LIBRARY_PATH="$libdir" run_sample "$work/minimal_c_pc"

step "passed"
