#!/usr/bin/env bash
# Installs the dependencies, configures and builds Parley (library, parley-chat, tests).
#   BUILD_DIR  build tree (default: build); extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

# The CUDA kernels are built for this machine's GPUs, or for sm 90 alone where none is seen
# (one architecture builds fastest); -DPARLEY_CUDA_ARCHITECTURES=... among the arguments wins.
# Only GPUs the kernels serve (sm 80 and later: they use its tensor-core instructions) and
# this nvcc knows count; a GPU newer than nvcc runs the sm 90 build's PTX.
gpu_architectures() {
  local caps known nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
  caps=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null) ||
    caps=
  known=$("$nvcc" --list-gpu-arch 2>/dev/null | sed -n 's/^compute_//p') || known=
  caps=$(tr -d ' .' <<<"$caps" | grep -E '^[0-9]+$' | awk '$1 >= 80' |
         grep -xF -f <(echo "$known") | sort -u | paste -sd ';') || caps=
  echo "${caps:-90}"
}

build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPARLEY_CUDA_ARCHITECTURES="$(gpu_architectures)" "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
