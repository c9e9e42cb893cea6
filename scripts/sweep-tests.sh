#!/usr/bin/env bash
# The [sweep] tests: full proofs and mutant runs of minutes each (e.g. MPICH's recursive-doubling
# all-reduce with its fold, 1,109 obligations) whose cheaper siblings run in CI. CI leaves them out
# (the release test preset excludes the label `sweep`); run them before a release or after a
# change to the every-p prover. Builds the release tests if needed; extra arguments go to ctest
# (e.g. -R fold). Exit status: ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
parent=$(cd .. && pwd)
if [ "$parent" != "/" ]; then export CCACHE_BASEDIR="$parent"; fi
export CCACHE_NOHASHDIR=1
cmake --preset release >/dev/null
cmake --build --preset release -j2 --target collv collv_tests
ctest --preset sweep -j2 "$@"
