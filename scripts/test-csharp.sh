#!/usr/bin/env bash
# Builds the C# bindings (bindings/csharp) with Mono's compiler and runs their example and
# tests against a built libparley.
#   scripts/test-csharp.sh [BUILD_DIR]   build tree holding lib/libparley.so.0 (default: $BUILD_DIR,
#                                        else build); the assemblies go to BUILD_DIR/csharp
#   PARLEY_SHARED_DIR                    reference models and goldens (default: ../shared)
#   CI=true                              a missing reference file fails instead of skipping
# Needs mono-mcs and mono-runtime (scripts/install-deps.sh) and a C compiler.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${1:-${BUILD_DIR:-build}}
shared_dir=${PARLEY_SHARED_DIR:-../shared}
src=bindings/csharp
out=$build_dir/csharp

library=$build_dir/lib/libparley.so.0
if [ ! -e "$library" ]; then
  echo "error: $library not found; build the target parley first" >&2
  exit 1
fi
for tool in mcs mono cc nm; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found (apt-get install mono-mcs mono-runtime)" >&2; exit 1; }
done
mkdir -p "$out"

# C# 7 at most and no warnings: the subset Unity's Mono compiles as well.
mcs_flags=(-langversion:7 -warnaserror+ -debug -nologo -r:System.dll -r:System.Core.dll)

echo "== compile ($out)"
mcs "${mcs_flags[@]}" -target:library -out:"$out/Parley.dll" "$src"/Parley/*.cs
mcs "${mcs_flags[@]}" -target:exe -out:"$out/ParleyExample.exe" -r:"$out/Parley.dll" "$src"/Example/*.cs
mcs "${mcs_flags[@]}" -target:exe -out:"$out/Parley.Tests.exe" -r:"$out/Parley.dll" "$src"/Tests/*.cs
cc -std=c99 -Wall -Wextra -Werror -pedantic -Iinclude "$src/Tests/layout_probe.c" -o "$out/layout_probe"
"$out/layout_probe" > "$out/layout.txt"
nm -D --defined-only "$library" | awk '$3 ~ /^parley_/ { sub(/@.*/, "", $3); print $3 }' > "$out/symbols.txt"

# [DllImport("parley")] resolves to libparley.so on the library path; the link keeps this
# run on this build's library whatever else is installed.
ln -sf "$(realpath "$library")" "$out/libparley.so"
export LD_LIBRARY_PATH=$out${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

model=$shared_dir/models/stories260k/stories260k-f32.gguf
echo "== example"
if [ -f "$model" ]; then
  mono --debug "$out/ParleyExample.exe" "$model" "Once upon a time" 24
elif [ "${CI:-}" = "true" ]; then
  echo "error: $model is absent (required in CI)" >&2
  exit 1
else
  echo "SKIPPED: $model is absent"
fi

echo "== tests"
mono --debug "$out/Parley.Tests.exe" --shared "$shared_dir" --layout "$out/layout.txt" \
  --symbols "$out/symbols.txt"
