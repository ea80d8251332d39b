#!/usr/bin/env bash
# Installs the dependencies, configures and builds Parley (library, parley-chat, tests).
#   BUILD_DIR  build tree (default: build); extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPARLEY_CUDA_ARCHITECTURES=90 "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
