#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan, -fno-sanitize-recover=all,
# over the parsing code only) and runs each for a bounded time, starting from its committed
# seed corpus and regressions. Targets run side by side, one per core. Any crash, sanitizer
# report, leak, timeout or out-of-memory fails the script; the reproducer (crash-*, leak-*,
# timeout-*, oom-*) and the log stay in $BUILD_DIR/fuzz-out/<target>/.
#   scripts/test-fuzz.sh [seconds per target, default 120]
#   BUILD_DIR  build tree (default: build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=${1:-120}
build_dir=${BUILD_DIR:-build-fuzz}
jobs=$(nproc)
targets=(gguf safetensors kv_codec text conversation json json_schema)

echo "== fuzz build ($build_dir)"
start=$SECONDS
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPARLEY_FUZZ=ON >/dev/null
cmake --build "$build_dir" -j "$jobs" --target "${targets[@]/#/fuzz_}"
echo "built in $((SECONDS - start)) s"

# Extra seeds per target: the regressions of the same format (the text target keeps to short
# inputs, which is where its bugs are).
extra_seeds() {
  case $1 in
    gguf) echo "$root/tests/fuzz/regressions/gguf" ;;
    safetensors) echo "$root/tests/fuzz/regressions/safetensors" ;;
    kv_codec) echo "$root/tests/fuzz/regressions/kv" ;;
  esac
}

run_one() {
  local t=$1 out="$root/$build_dir/fuzz-out/$1"
  rm -rf "$out"
  mkdir -p "$out/new"
  local max_len=()
  [ "$t" = text ] && max_len=(-max_len=4096)
  # New inputs go to a scratch corpus in the build tree; the committed files are only read.
  (cd "$out" &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$root/$build_dir/bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 "${max_len[@]}" new "$root/tests/fuzz/corpus/$t" $(extra_seeds "$t") \
      >log 2>&1)
}

echo "== fuzzing ${targets[*]} for $seconds s each, $jobs at a time"
# In batches of $jobs; each run leaves its exit status in its output folder.
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
  for t in "${targets[@]:i:jobs}"; do
    (
      rc=0
      run_one "$t" || rc=$?
      echo "$rc" >"$root/$build_dir/fuzz-out/$t/rc"
    ) &
  done
  wait
done
failed=0
for t in "${targets[@]}"; do
  out="$build_dir/fuzz-out/$t"
  if [ "$(cat "$out/rc" 2>/dev/null)" = 0 ]; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log" | tail -1)
    echo "fuzz_$t: clean, ${runs:-?} inputs"
  else
    echo "fuzz_$t: FAILED; reproducer and log in $out:"
    ls "$out" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' || true
    grep -E 'ERROR|SUMMARY|Test unit written' "$out/log" | head -20 || true
    failed=1
  fi
done
[ "$failed" = 0 ] && echo "== fuzzing clean ($((SECONDS - start)) s in all)"
exit "$failed"
