#!/usr/bin/env bash
# Checks that a build of libparley keeps the ABI recorded in abi/ (what programs built against
# an earlier minor version rely on).
#   scripts/check-abi.sh [BUILD_DIR]           compare BUILD_DIR/lib/libparley.so.0 (default:
#                                              $BUILD_DIR, else build) with the baseline
#   scripts/check-abi.sh --update [BUILD_DIR]  rewrite the baseline from that build (an
#                                              intended change: a new minor or major version)
#   PARLEY_ABI_DIR                             the baseline's folder (default: abi)
# It fails on a function removed or changed, a struct field changed, moved or removed, or a
# PARLEY_* constant changed or removed. Appended struct fields, new functions and new
# constants are what a minor version may add: they are reported, and pass.
# The build needs debug info (RelWithDebInfo, the default, or Debug); needs abigail-tools and
# python3.
set -euo pipefail
cd "$(dirname "$0")/.."

update=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
build_dir=${1:-${BUILD_DIR:-build}}
library=$build_dir/lib/libparley.so.0
abi_dir=${PARLEY_ABI_DIR:-abi}
baseline=$abi_dir/libparley.abi
constants_baseline=$abi_dir/parley-constants.txt
allowed=$abi_dir/allowed-changes.suppr
refresh="scripts/check-abi.sh --update $build_dir"

if [ ! -e "$library" ]; then
  echo "error: $library not found; build the target parley first" >&2
  exit 1
fi
if ! readelf -S "$library" | grep -q '\.debug_info'; then
  echo "error: $library has no debug info, so its types cannot be compared;" \
       "build with -DCMAKE_BUILD_TYPE=RelWithDebInfo or Debug" >&2
  exit 1
fi
for tool in abidw abidiff python3; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found (apt-get install abigail-tools python3)" >&2; exit 1; }
done
if [ "$(uname -m)" != "x86_64" ]; then
  echo "SKIPPED: the baseline describes the x86-64 ABI; this machine is $(uname -m)"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Only what parley.h declares and the exported parley_* functions reach (the library's own
# C++ types are internal), and nothing that depends on where or how it was built: no paths
# of this checkout, no DT_NEEDED list (it changes with build options such as CUDA), type ids
# that are hashes (adding one type does not renumber the others).
abidw --headers-dir include --drop-private-types --exported-interfaces-only \
      --no-corpus-path --no-comp-dir-path --no-show-locs --no-elf-needed --type-id-style hash \
      "$library" | sed "s|path='$PWD/|path='|" > "$work/libparley.abi"

# Macro values are baked into callers, and abidw cannot see macros: list them separately.
# (The version macros change with every release by design.)
grep -E '^#define PARLEY_[A-Z0-9_]+ +-?[0-9]+' include/parley.h \
  | awk '$2 !~ /^PARLEY_VERSION_/ { print $2, $3 }' | LC_ALL=C sort > "$work/parley-constants.txt"

if [ "$update" = 1 ]; then
  cp "$work/libparley.abi" "$baseline"
  cp "$work/parley-constants.txt" "$constants_baseline"
  echo "baseline updated from $library: $baseline, $constants_baseline"
  exit 0
fi

status=0

# A field appended to a struct is compatible (structs are caller-sized): cut the fields past
# the baseline's size off the fresh structs, so that only a change to the baseline's own
# fields (moved, retyped, renamed, removed) is left for abidiff to find.
python3 - "$baseline" "$work/libparley.abi" "$work/without-appended.abi" <<'PY'
import sys
import xml.etree.ElementTree as ET

baseline, fresh, out = sys.argv[1:]
sizes = {c.get("name"): int(c.get("size-in-bits"))
         for c in ET.parse(baseline).iter("class-decl") if c.get("size-in-bits")}
tree = ET.parse(fresh)
for c in tree.iter("class-decl"):
    old = sizes.get(c.get("name"))
    if old is None or not c.get("size-in-bits") or int(c.get("size-in-bits")) <= old:
        continue
    for member in c.findall("data-member"):
        if int(member.get("layout-offset-in-bits")) >= old:
            c.remove(member)
    c.set("size-in-bits", str(old))
tree.write(out)
PY

echo "== ABI report: $baseline -> $library"
set +e
abidiff "$baseline" "$work/libparley.abi" > "$work/report.txt"
report_rc=$?
cat "$work/report.txt"
abidiff --suppressions "$allowed" "$baseline" "$work/without-appended.abi" > "$work/breaking.txt"
breaking_rc=$?
set -e
# abidiff's exit status is a bit set: 1 error, 2 usage error, 4 ABI change, 8 incompatible
# change. Its incompatible bit covers removed symbols only (a struct field moved or retyped is
# a plain "ABI change" to it), so any change left once the compatible kinds are set aside fails.
if (( (report_rc | breaking_rc) & 3 )); then
  echo "error: abidiff failed" >&2
  status=1
elif (( breaking_rc & 12 )); then
  echo "== INCOMPATIBLE: changes a minor version may not make (abidiff exit $breaking_rc)"
  if ! cmp -s "$work/report.txt" "$work/breaking.txt"; then
    echo "   without the compatible ones:"
    cat "$work/breaking.txt"
  fi
  status=1
elif (( report_rc & 12 )); then
  echo "== compatible additions only (appended fields, new functions); once they are released,"
  echo "   record them in the baseline:  $refresh"
else
  echo "== no ABI change"
fi

echo "== constants: $constants_baseline -> include/parley.h"
removed=$(LC_ALL=C comm -23 "$constants_baseline" "$work/parley-constants.txt")
added=$(LC_ALL=C comm -13 "$constants_baseline" "$work/parley-constants.txt")
if [ -n "$added" ]; then echo "added or changed to:"; echo "$added" | sed 's/^/  /'; fi
if [ -n "$removed" ]; then
  echo "INCOMPATIBLE: removed or changed from:"
  echo "$removed" | sed 's/^/  /'
  status=1
elif [ -z "$added" ]; then
  echo "no change"
fi

if [ "$status" != 0 ]; then
  echo
  echo "The ABI of $library is not compatible with the baseline. If this is intended (a new"
  echo "major version), refresh the baseline with:  $refresh"
fi
exit $status
