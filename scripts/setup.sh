#!/usr/bin/env bash
# One command on a fresh Debian machine: install the dependencies, build collv, and run the main
# job (verify every model in models/ over every small size, source and domain).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j2
./build/release/collv verify --all
