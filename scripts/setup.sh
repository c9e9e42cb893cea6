#!/usr/bin/env bash
# One command on a fresh Debian machine: install the dependencies, build collv, and run the main
# job (verify every model in models/ over every small size, source and domain). The job ends in
# one line per model and topology family (runs, passed, commutative-only, failed, inconclusive,
# sizes, time), the failures if any, and the summary line; `collv verify --all --runs` lists
# every run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j2
echo "== main job: collv verify --all"
./build/release/collv verify --all
