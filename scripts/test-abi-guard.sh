#!/usr/bin/env bash
# Checks that scripts/check-abi.sh tells compatible from incompatible changes: it runs the
# check against altered copies of the baseline in abi/, each standing for one kind of change
# between the baseline's release and this build, and expects pass or fail for each.
#   scripts/test-abi-guard.sh [BUILD_DIR]   build tree (default: $BUILD_DIR, else build)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-${BUILD_DIR:-build}}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# expect pass|fail NAME: run the check on the baseline copy in $work/NAME.
expect() {
  local want=$1 name=$2 got=pass
  PARLEY_ABI_DIR="$work/$name" scripts/check-abi.sh "$build_dir" > "$work/$name.log" 2>&1 || got=fail
  # A failure must be the verdict, not a broken run.
  if [ "$got" = fail ] && ! grep -q INCOMPATIBLE "$work/$name.log"; then got=error; fi
  if [ "$got" = "$want" ]; then
    echo "ok      $name: $got"
  else
    echo "FAILED  $name: expected $want, got $got"; sed 's/^/        /' "$work/$name.log"
    failures=$((failures + 1))
  fi
}

# variant NAME PYTHON: a copy of abi/ whose libparley.abi is rewritten by PYTHON (the text is
# in s).
variant() {
  cp -r abi "$work/$1"
  python3 - "$work/$1/libparley.abi" "$2" <<'PY'
import sys
path, code = sys.argv[1], sys.argv[2]
s = open(path).read()
before = s
exec(code)
assert s != before, "the alteration matched nothing"
open(path, "w").write(s)
PY
}

cp -r abi "$work/unchanged"
expect pass unchanged

# The baseline had a function this build lacks: a removed function breaks callers.
variant removed-function '
import re
sym = re.search(r"\n *<elf-symbol name=.parley_version_number.[^\n]*", s).group(0)
s = s.replace(sym, sym + sym.replace("parley_version_number", "parley_retired_function"), 1)
decl = re.search(r"\n *<function-decl name=.parley_version_number.*?</function-decl>", s, re.S).group(0)
s = s.replace(decl, decl + decl.replace("parley_version_number", "parley_retired_function"), 1)
'
expect fail removed-function

# The baseline lacks a function this build has: a new function is what a minor version adds.
variant added-function '
import re
s = re.sub(r"\n *<elf-symbol name=.parley_version_number.[^\n]*", "", s, count=1)
s = re.sub(r"\n *<function-decl name=.parley_version_number.*?</function-decl>", "", s, count=1, flags=re.S)
'
expect pass added-function

# A struct field of the baseline sits elsewhere in this build: callers read the wrong bytes.
variant moved-field '
s = s.replace("layout-offset-in-bits=\x2764\x27", "layout-offset-in-bits=\x2796\x27", 1)
'
expect fail moved-field

# A status code or constant changed value: it is compiled into callers.
cp -r abi "$work/changed-constant"
sed -i '1s/ \(-\?[0-9]\+\)$/ 12345/' "$work/changed-constant/parley-constants.txt"
expect fail changed-constant

[ "$failures" = 0 ] || { echo "test-abi-guard: $failures case(s) wrong"; exit 1; }
echo "test-abi-guard: passed"
