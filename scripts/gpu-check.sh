#!/usr/bin/env bash
# GPU check in two steps, for a GPU machine that receives a copy of this working tree plus a
# few carried folders and has neither the build dependencies nor network access:
#   scripts/gpu-check.sh pack   (here)  builds for sm_90 into build-gpu and gathers what the
#                                       GPU machine needs into build-gpu-carry (< 64 MiB):
#                                       test and bench binaries, libparley_cuda.so, every
#                                       shared library ldd lists except glibc and CUDA's own,
#                                       and a copy of the reference models and goldens.
#   scripts/gpu-check.sh run    (there) runs the gpu tests, then the GPU benchmark scenarios
#                                       and the device ceilings, logging to $OUT
#                                       (default ./gpu-check-out); then both again with each
#                                       setting that is off by default until measured
#                                       (PARLEY_CUDA_PDL=1, PARLEY_CUDA_KV_WRITEBACK=1,
#                                       PARLEY_CUDA_FUSED_DECODE=1, PARLEY_CUDA_PREFILL_ATTN=
#                                       w4p or w8p), then with all of them.
#   scripts/gpu-check.sh profile (there) time per kernel of decode and prefill steps (ncu).
# Environment: BUILD_DIR (build-gpu), CARRY_DIR (build-gpu-carry), SHARED (../shared),
# ARCH (90), SKIP_CONFIGURE=1 (pack: reuse BUILD_DIR as configured), QUICK=1 (run: the tests and one short bench line only),
# TEST_TIMEOUT_S (240), SANITIZER_TIMEOUT_S (120) and BENCH_TIMEOUT_S (180, per model shape): device time is scarce, so a
# hang in one step must not eat the time of the others.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
build_dir=${BUILD_DIR:-build-gpu}
carry=${CARRY_DIR:-build-gpu-carry}

pack() {
  local shared=${SHARED:-../shared}
  if [[ ${SKIP_CONFIGURE:-0} != 1 ]]; then  # 1: reuse an already configured CUDA build tree
    cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPARLEY_CUDA=ON \
      -DPARLEY_CUDA_ARCHITECTURES="${ARCH:-90}" -DPARLEY_SAMPLES=OFF >/dev/null
  fi
  cmake --build "$build_dir" -j "${JOBS:-2}" --target parley-tests-gpu parley-bench parley_cuda
  rm -rf "$carry"
  mkdir -p "$carry/bin" "$carry/lib" "$carry/shared"
  cp "$build_dir/bin/parley-tests-gpu" "$build_dir/bin/parley-bench" "$carry/bin/"
  cp "$build_dir/lib/libparley_cuda.so" "$carry/lib/"
  strip --strip-debug "$carry/bin/"* "$carry/lib/"*
  # Libraries the GPU machine may lack; glibc and the CUDA libraries come from that machine.
  ldd "$carry/bin/"* "$carry/lib/"* | awk '/=> \// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libcuda|libcudart|libcublas|libcublasLt)\.so' |
    while read -r lib; do cp -L "$lib" "$carry/lib/"; done
  # The reference folder, as the tests expect it (models/, golden/, tokenizers/).
  mkdir -p "$carry/shared/models"
  cp -r "$shared/models/stories260k" "$carry/shared/models/"
  cp -r "$shared/golden" "$shared/tokenizers" "$carry/shared/"
  local bytes
  bytes=$(du -sb "$carry" | cut -f1)
  echo "gpu-check pack: $carry holds $((bytes / 1024 / 1024)) MiB:"
  du -sh "$carry"/*
  if ((bytes >= 64 * 1024 * 1024)); then
    echo "gpu-check pack: $carry is over the 64 MiB a carried tree may hold" >&2
    exit 1
  fi
}

# cuBLAS of the machine: the toolkit's, else the one Python's nvidia-cublas package brings.
cublas_dirs() {
  local d
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [[ -e $d/libcublas.so.13 ]] && echo "$d"
  done
  python3 - <<'PY' 2>/dev/null || true
import glob, os, site
for root in site.getsitepackages():
    for lib in glob.glob(os.path.join(root, "nvidia", "*", "lib")) + glob.glob(os.path.join(root, "nvidia", "cu13", "lib")):
        if glob.glob(os.path.join(lib, "libcublas.so*")):
            print(lib)
PY
}

# The carried binaries' environment on the GPU machine.
use_carried() {
  root=$PWD/$carry
  local libs
  libs=$(cublas_dirs | paste -sd: -)
  export LD_LIBRARY_PATH="$root/lib${libs:+:$libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PARLEY_CUDA_MODULE=$root/lib/libparley_cuda.so
  export PARLEY_SHARED_DIR=$root/shared
}

# The GPU benchmark scenarios $2 (prefill,decode) for both model shapes into the JSON-lines
# file $1, with the environment settings that follow (NAME=VALUE) for the benchmark; fails if
# any run fails.
bench_shapes() {
  local jsonl=$1 scenarios=$2 shape status=0
  shift 2
  for shape in tinyllama-1.1b llama2-7b; do
    env "$@" timeout "${BENCH_TIMEOUT_S:-180}" "$root/bin/parley-bench" --device cuda --out "$jsonl" \
      --synthetic "$shape" --weights f16 --scenario "$scenarios" --kv int8 \
      --prompt-tokens 512,2048 --context 128,2048 --tokens 64 --repeat 3 --copy-mib 2048 || status=1
  done
  return $status
}

# Settings off by default until measured on a device, in the order they run: the name of
# their bench file, the scenarios they can change, then the settings.
variants=(
  "pdl prefill,decode PARLEY_CUDA_PDL=1"
  "writeback prefill,decode PARLEY_CUDA_KV_WRITEBACK=1"
  "fused decode PARLEY_CUDA_FUSED_DECODE=1"
  "prefill-w4p prefill PARLEY_CUDA_PREFILL_ATTN=w4p"
  "prefill-w8p prefill PARLEY_CUDA_PREFILL_ATTN=w8p"
  "all prefill,decode PARLEY_CUDA_PDL=1 PARLEY_CUDA_KV_WRITEBACK=1 PARLEY_CUDA_FUSED_DECODE=1 PARLEY_CUDA_PREFILL_ATTN=w8p"
)

run() {
  local out=${OUT:-./gpu-check-out} root variant name scenarios rest settings
  mkdir -p "$out"
  use_carried
  {
    echo "== $(date -u +%FT%TZ) $(uname -m)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || true
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    ldd "$root/lib/libparley_cuda.so" "$root/bin/parley-bench" | grep -E "not found|cublas" || true
  } 2>&1 | tee "$out/bench.log"

  local status=0
  # The gpu tests (the ctest label gpu runs this binary); --duration shows where time goes.
  timeout "${TEST_TIMEOUT_S:-240}" "$root/bin/parley-tests-gpu" --duration=true 2>&1 |
    tee "$out/gpu-tests.log" || status=1
  # A faulting kernel: the memory checker names it, within a bounded time.
  local sanitizer=${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer
  if ((status)) && [[ -x $sanitizer ]] &&
    grep -qiE 'illegal|misaligned|launch failure|out of bounds|segmentation' "$out/gpu-tests.log"; then
    timeout "${SANITIZER_TIMEOUT_S:-120}" "$sanitizer" --print-limit 20 "$root/bin/parley-tests-gpu" \
      >"$out/sanitizer.log" 2>&1 || true
  fi

  if [[ ${QUICK:-0} == 1 ]]; then
    timeout "${BENCH_TIMEOUT_S:-180}" "$root/bin/parley-bench" --device cuda --out "$out/bench.jsonl" \
      --synthetic tinyllama-1.1b --scenario decode --kv int8 --context 128 --tokens 32 --repeat 1 \
      --copy-mib 1024 2>&1 | tee -a "$out/bench.log" || status=1
  else
    bench_shapes "$out/bench.jsonl" prefill,decode 2>&1 | tee -a "$out/bench.log" || status=1
    # Settings off by default until measured, one at a time and then all together: the
    # tests again, then the same figures into bench-NAME.jsonl. Their outcome does not change
    # the status.
    for variant in "${variants[@]}"; do
      read -r name scenarios rest <<<"$variant"
      read -r -a settings <<<"$rest"
      echo "== ${settings[*]}" >>"$out/gpu-tests-variants.log"
      if env "${settings[@]}" timeout "${TEST_TIMEOUT_S:-240}" "$root/bin/parley-tests-gpu" \
        >>"$out/gpu-tests-variants.log" 2>&1; then
        echo "${settings[*]}: the gpu tests pass"
      else
        echo "${settings[*]}: the gpu tests FAIL (gpu-tests-variants.log)"
      fi
      bench_shapes "$out/bench-$name.jsonl" "$scenarios" "${settings[@]}" >>"$out/bench.log" 2>&1 || true
    done
  fi
  local runs=("$out/bench.jsonl=")
  for variant in "${variants[@]}"; do
    read -r name scenarios rest <<<"$variant"
    runs+=("$out/bench-$name.jsonl=$rest")
  done
  python3 - "${runs[@]}" <<'PY' 2>&1 | tee "$out/summary.txt" || true
# Prefill against the bf16 matrix rate (2 FLOP per parameter per token), decode against
# the device copy bandwidth (the bench's own decode_bandwidth_utilisation).
import json, os, sys
def read(path, label):
    if not os.path.exists(path):
        return []
    return [dict(json.loads(l), label=label) for l in open(path) if l.strip()]
lines = []
for arg in sys.argv[1:]:  # PATH=SETTINGS
    path, settings = arg.split("=", 1)
    lines += read(path, " (%s)" % settings if settings else "")
ceil = next((l for l in lines if l.get("scenario") == "device-ceilings"), {})
tflops = ceil.get("bf16_gemm_tflops")
print("device:", ceil.get("device_name"), "copy GB/s:", ceil.get("bandwidth_gbs"), "bf16 TFLOP/s:", tflops)
# Parameters per model from decode lines: F16 weights are 2 bytes each.
params = {l["model"]: l["weight_bytes_per_token"] / 2 for l in lines
          if l.get("scenario") == "decode" and l.get("weight_bytes_per_token")}
for l in lines:
    s = l.get("scenario")
    if s == "prefill":
        p, tok_s = params.get(l.get("model")), l.get("prefill_tok_s") or 0
        extra = " = %.2f of the bf16 rate" % (2 * p * tok_s / (tflops * 1e12)) if p and tflops else ""
        print("prefill%s %s prompt %s: %.0f tok/s%s" % (l["label"], l.get("model"), l.get("prompt_tokens"),
                                                        tok_s, extra))
    elif s == "decode":
        print("decode%s %s context %s: %.1f tok/s, bandwidth utilisation %s" % (
            l["label"], l.get("model"), l.get("context_tokens"), l.get("decode_tok_s") or 0,
            l.get("decode_bandwidth_utilisation")))
# Each setting against the defaults, figure by figure (above 1: faster).
base = {}
for l in lines:
    key = (l.get("scenario"), l.get("model"), l.get("prompt_tokens"), l.get("context_tokens"))
    rate = l.get("prefill_tok_s") if l.get("scenario") == "prefill" else l.get("decode_tok_s")
    if rate and not l["label"]:
        base[key] = rate
    elif rate and key in base:
        print("vs defaults%s %s %s %s: %.3f" % (l["label"], key[0], key[1], key[2] or key[3],
                                                 rate / base[key]))
PY
  echo "gpu-check run: logs in $out (status $status)"
  return $status
}

# Time per kernel (Nsight Compute, one duration metric, clocks left alone) for a 7B decode
# step at 2048 tokens of context, 7B prefill chunks, and a TinyLlama decode step at 128.
profile() {
  local out=${OUT:-./gpu-check-out} root
  mkdir -p "$out"
  use_carried
  local ncu
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || true)
  [[ -n $ncu ]] || { echo "gpu-check profile: no ncu on this machine" >&2; return 1; }
  local prof=(timeout "${PROFILE_TIMEOUT_S:-150}" "$ncu" --clock-control none
    --metrics gpu__time_duration.sum --print-summary per-kernel)
  local bench=("$root/bin/parley-bench" --device cuda --kv int8 --repeat 1 --copy-mib 64)
  local status=0
  "${prof[@]}" "${bench[@]}" --synthetic llama2-7b --scenario decode --context 2048 --tokens 8 \
    >"$out/profile-decode-7b.log" 2>&1 || status=1
  "${prof[@]}" "${bench[@]}" --synthetic llama2-7b --scenario prefill --prompt-tokens 2048 \
    >"$out/profile-prefill-7b.log" 2>&1 || status=1
  "${prof[@]}" "${bench[@]}" --synthetic tinyllama-1.1b --scenario decode --context 128 --tokens 8 \
    >"$out/profile-decode-tinyllama.log" 2>&1 || status=1
  tail -n 3 "$out"/profile-*.log
  echo "gpu-check profile: logs in $out (status $status)"
  return $status
}

case "$mode" in
  pack) pack ;;
  run) run ;;
  profile) profile ;;
  *)
    echo "usage: scripts/gpu-check.sh pack|run|profile   (see the comment at the top)" >&2
    exit 2
    ;;
esac
