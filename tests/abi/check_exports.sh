#!/usr/bin/env bash
# The shared library exports exactly the functions parley.h declares: nothing that is not
# parley_* (no C++ internals, no standard-library instantiations), and none missing.
set -euo pipefail
lib=$1
header=$2

exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWBDRV]$/ {print $3}' | sed 's/@.*//' | sort -u)
declared=$(grep -oE 'PARLEY_API[^;(]*\b(parley_[a-z0-9_]+)\(' "$header" |
           grep -oE 'parley_[a-z0-9_]+\($' | tr -d '(' | sort -u)

status=0
foreign=$(grep -v '^parley_' <<<"$exported" | grep -v '^PARLEY_' || true)
if [ -n "$foreign" ]; then
  echo "exported symbols that are not parley_*:"; echo "$foreign"; status=1
fi
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$missing" ]; then
  echo "declared in parley.h but not exported:"; echo "$missing"; status=1
fi
extra=$(comm -13 <(echo "$declared") <(grep '^parley_' <<<"$exported"))
if [ -n "$extra" ]; then
  echo "exported but not declared in parley.h:"; echo "$extra"; status=1
fi
[ "$(wc -l <<<"$declared")" -ge 20 ] || { echo "found too few declarations in $header"; status=1; }
[ $status -eq 0 ] && echo "exports match parley.h: $(wc -l <<<"$declared") functions"
exit $status
