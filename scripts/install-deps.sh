#!/usr/bin/env bash
# Installs collv's build and test dependencies from Debian packages. Idempotent:
# packages already present are left alone, so a second run is quick.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache
  libz3-dev z3
  libcadical-dev cadical
  libcli11-dev catch2
  graphviz
  nlohmann-json3-dev libfmt-dev
  libpugixml-dev
  clang-format
  clang-14 libclang-rt-14-dev
  openmpi-bin libopenmpi-dev mpich libmpich-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
