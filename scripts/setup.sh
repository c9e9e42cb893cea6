#!/usr/bin/env bash
# One command on a fresh Debian machine: install the dependencies, build collv and collv-mpi (not
# the tests: scripts/test.sh builds those), and run the main job (verify every model in models/
# over every small size, source and domain). The job ends in one line per model and topology
# family (runs, passed, commutative-only, failed, inconclusive, sizes, time), the failures if
# any, and the summary line; `collv verify --all --runs` lists every run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
# Only what the main job needs: collv, and collv-mpi when MPI was found (docs/partitioned.md).
# The tests are built by scripts/test.sh.
targets=(collv)
if grep -q '^build collv-mpi:' build/release/build.ninja; then targets+=(collv-mpi); fi
cmake --build --preset release -j2 --target "${targets[@]}"
echo "== main job: collv verify --all"
./build/release/collv verify --all
