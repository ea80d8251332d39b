#!/usr/bin/env bash
# Runs the Python binding's tests (bindings/python/tests) against one build tree's library;
# exits non-zero on any failure.
#   scripts/test-python.sh [BUILD_DIR]   build tree (default: $BUILD_DIR, else build)
#   Extra pytest arguments may follow the build dir, e.g. scripts/test-python.sh build -k stream
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=$(realpath -m "${1:-${BUILD_DIR:-build}}")  # relative to the repository root
[ $# -gt 0 ] && shift
library="$build_dir/lib/libparley.so.0"
if [ ! -f "$library" ]; then
  echo "test-python: $library not found; build first (scripts/build.sh)" >&2
  exit 1
fi

# Debian's interpreter: python3-pytest is installed for it, not for other pythons on PATH.
python=/usr/bin/python3
[ -x "$python" ] || python=python3

export PARLEY_LIBRARY="$library"
export PARLEY_CHAT="$build_dir/bin/parley-chat"
[ -x "$PARLEY_CHAT" ] || unset PARLEY_CHAT  # that test then finds it itself or skips

# -p no:cacheprovider: leave no .pytest_cache in the source tree.
exec "$python" -m pytest -p no:cacheprovider -q -rs bindings/python/tests "$@"
