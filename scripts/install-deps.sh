#!/usr/bin/env bash
# Installs every Debian package that building and testing Parley needs. Safe to run again:
# it only calls apt-get when something is missing.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config binutils
  libsentencepiece-dev nlohmann-json3-dev libxxhash-dev libhwy-dev libzstd-dev libsqlite3-dev
  doctest-dev python3 python3-pytest python3-venv python3-setuptools python3-wheel
  python3-numpy python3-sentencepiece python3-jinja2 python3-jsonschema
  mono-mcs mono-runtime abigail-tools clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run this as root (there is no sudo), or install them with apt-get" >&2
    exit 1
  fi
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
