#!/usr/bin/env bash
# Installs the dependencies, configures and builds Parley (library, parley-chat, tests).
#   BUILD_DIR  build tree (default: build); extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

# The CUDA kernels are built for this machine's GPUs, or for sm 90 alone where none is seen
# (one architecture builds fastest); -DPARLEY_CUDA_ARCHITECTURES=... among the arguments wins.
gpu_architectures() {
  local caps
  caps=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null) || caps=
  caps=$(tr -d ' .' <<<"$caps" | grep -E '^[0-9]+$' | sort -u | paste -sd ';') || caps=
  echo "${caps:-90}"
}

build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPARLEY_CUDA_ARCHITECTURES="$(gpu_architectures)" "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
