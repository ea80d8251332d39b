#!/usr/bin/env bash
# Builds Parley and runs every test; exits non-zero on any failure. This is what CI runs.
#   BUILD_DIR               build tree (default: build)
#   PARLEY_FUZZ_SECONDS=N   seconds each fuzz target runs (default 60)
#   PARLEY_SANITIZE_PASS=0  skip the second build, which runs the tests again under
#                           AddressSanitizer + UndefinedBehaviorSanitizer
#   PARLEY_TSAN_PASS=0      skip the ThreadSanitizer build of the threaded tests
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${BUILD_DIR:-build}
jobs=$(nproc)

echo "== build ($build_dir)"
BUILD_DIR=$build_dir scripts/build.sh -DPARLEY_TESTS=ON -DPARLEY_SAMPLES=ON

echo "== tests"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"

echo "== Python binding"
scripts/test-python.sh "$build_dir"
echo "== C# binding"
scripts/test-csharp.sh "$build_dir"
echo "== install, find_package and pkg-config"
scripts/test-install.sh "$build_dir"
echo "== ABI against the baseline in abi/"
scripts/check-abi.sh "$build_dir"
scripts/test-abi-guard.sh "$build_dir"

echo "== fuzzing (libFuzzer, clang, ASan + UBSan)"
BUILD_DIR=$build_dir-fuzz scripts/test-fuzz.sh "${PARLEY_FUZZ_SECONDS:-60}"

if [ "${PARLEY_SANITIZE_PASS:-1}" != "0" ]; then
  echo "== tests under AddressSanitizer + UndefinedBehaviorSanitizer"
  BUILD_DIR=$build_dir-asan scripts/build.sh -DCMAKE_BUILD_TYPE=Debug -DPARLEY_CUDA=OFF \
    -DPARLEY_SANITIZE=ON -DPARLEY_TESTS=ON -DPARLEY_SAMPLES=ON
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$build_dir-asan" --output-on-failure -j "$jobs"
fi
if [ "${PARLEY_TSAN_PASS:-1}" != "0" ]; then
  echo "== threaded tests under ThreadSanitizer"
  BUILD_DIR=$build_dir-tsan scripts/test-tsan.sh
fi
echo "== all tests passed"
