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
"$python" -m pytest -p no:cacheprovider -q -rs bindings/python/tests "$@"

# The README's offline install into a virtual environment (python3-venv, python3-setuptools,
# python3-wheel: the setuptools before 70.1 cannot build a wheel without it), from a copy: pip
# builds in the tree it is given.
if ! "$python" -c "import ensurepip, setuptools, wheel" 2>/dev/null; then
  echo "test-python: skipped the virtual environment install (no python3-venv, setuptools or wheel)"
  exit 0
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -r bindings/python "$scratch/package"
"$python" -m venv --system-site-packages "$scratch/venv"
"$scratch/venv/bin/pip" install -q --no-build-isolation --no-index "$scratch/package"
(cd "$scratch" && venv/bin/python -c "import parley; assert '/venv/' in parley.__file__; \
  print('installed parley', parley.__version__, 'in a virtual environment:', parley.version())")

# A wheel with libparley.so.0 copied into the package is tagged for this platform (a pure
# py3-none-any one would install a Linux x86-64 library anywhere), and once installed the
# package loads the library it carries.
cp -r bindings/python "$scratch/bundling"
rm -rf "$scratch/bundling/build" "$scratch/bundling/tests"
strip --strip-debug -o "$scratch/bundling/parley/libparley.so.0" "$library" 2>/dev/null ||
  cp "$library" "$scratch/bundling/parley/libparley.so.0"
"$scratch/venv/bin/pip" wheel -q --no-build-isolation --no-index --no-deps \
  -w "$scratch/wheels" "$scratch/bundling"
platform=$("$python" -c "import sysconfig; print(sysconfig.get_platform().replace('-', '_') \
  .replace('.', '_'))")
wheel=$(ls "$scratch"/wheels/parley-*.whl)
case $wheel in
  *-py3-none-"$platform".whl) ;;
  *) echo "test-python: a wheel bundling libparley.so.0 is $(basename "$wheel"), not" \
       "tagged py3-none-$platform" >&2; exit 1 ;;
esac
"$scratch/venv/bin/pip" install -q --no-index --force-reinstall --no-deps "$wheel"
(cd "$scratch" && env -u PARLEY_LIBRARY venv/bin/python -c "import parley, pathlib; \
  here = pathlib.Path(parley.__file__).parent; \
  assert pathlib.Path(parley.library_path()) == here / 'libparley.so.0', parley.library_path(); \
  print('installed', pathlib.Path('$wheel').name, 'loads', parley.library_path())")
