#!/usr/bin/env bash
# The gate an MSCCL user's CI runs: judge every MSCCL-XML file under the machine it runs on and
# write JUnit and JSON reports. Exit 0 only if every check holds for every file.
#   COLLV=/path/to/collv bash gate.sh [SCHEDULES_DIR] [MACHINE]
# MACHINE is a topology spec: nvswitch:8 (default), dgx1, or a topology file (file:machine.json).
set -u
COLLV=${COLLV:-collv}
dir=${1:-schedules}
machine=${2:-nvswitch:8}
shopt -s nullglob
files=("$dir"/*.xml)
if [ ${#files[@]} -eq 0 ]; then
  echo "msccl gate: no .xml file in $dir: nothing checked"
  exit 2
fi
"$COLLV" verify "${files[@]}" -t "$machine" --junit msccl-report.xml --json msccl-report.json --quiet
rc=$?
case $rc in
  0) echo "msccl gate: every schedule in $dir is right on $machine" ;;
  1) echo "msccl gate: a violation; see msccl-report.xml ('collv verify FILE -t $machine' shows the counterexample)" ;;
  3) echo "msccl gate: inconclusive (a limit was hit)" ;;
  *) echo "msccl gate: a file collv cannot read, or one made for another number of GPUs (exit $rc)" ;;
esac
exit $rc
