#!/usr/bin/env bash
# The gate a CI job runs: verify every model of the project and write JUnit and JSON reports.
# Exit 0 only if every invariant holds on every size, source and domain.
#   COLLV=/path/to/collv bash gate.sh [MODELS_DIR]
set -u
COLLV=${COLLV:-collv}
dir=${1:-models}
"$COLLV" verify "$dir" --junit collv-report.xml --json collv-report.json --quiet
rc=$?
case $rc in
  0) echo "collv gate: every invariant holds" ;;
  1) echo "collv gate: a violation; see collv-report.xml (run 'collv verify $dir' for the counterexamples)" ;;
  3) echo "collv gate: inconclusive (a run hit a limit, or a solver gave no answer)" ;;
  *) echo "collv gate: bad usage or a model that does not parse (exit $rc)" ;;
esac
exit $rc
