#!/usr/bin/env bash
# Builds what the threaded tests need with ThreadSanitizer and runs them (ctest label
# `threads`): sessions on many threads with spills, interrupts and the janitor, two processes
# on one store, the C ABI's concurrency tests and the CPU thread pool. Any report fails.
#   BUILD_DIR  build tree (default: build-tsan)
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${BUILD_DIR:-build-tsan}
jobs=$(nproc)

# -O1 keeps the instrumented tests fast enough; debug info names the lines of a report. The CPU
# kernels are compiled for AVX2 (and the scalar fallback) only: races do not depend on the
# vector width, and the other targets would double the build.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DPARLEY_TSAN=ON -DPARLEY_CUDA=OFF -DPARLEY_TESTS=ON -DPARLEY_SAMPLES=OFF \
  -DPARLEY_BENCH=OFF -DPARLEY_SIMD_SKIP="SSSE3;SSE4;AVX3" >/dev/null
cmake --build "$build_dir" -j "$jobs" --target parley-tests-threads parley-store-writer \
  parley-tests-backend parley-tests-abi parley-tests-integration parley-tests-engine

TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
  ctest --test-dir "$build_dir" -L threads --output-on-failure -j "$jobs"
