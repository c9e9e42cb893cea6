#!/usr/bin/env bash
# Issue 34's three distances to the limit, in one run (docs/benchmarks.md):
#   1. collv verify at MPI scale against plain loops of the same work (bench_scale.sh: MPICH's
#      recursive doubling and binomial reduce at p = count = 4,096 against limit_rd, Open MPI's
#      ring at p = count = 1,024 and 2,048 against limit_ring; fingerprint, exact and ordered);
#   2. collv on Schedgen's 65,536-rank GOAL files against LogGOPSim's txt2bin + simulator
#      (bench_goal.sh), where the files and LogGOPSim are found: GOAL_DIR holds
#      allreduce_recdoub_65536.goal, bcast_binomialtree_65536.goal and dissemination_65536.goal
#      (docs/benchmarks.md, "GOAL at 65,536 ranks", says how Schedgen2 writes them), and
#      LOGGOPSIM_DIR (or PATH) holds txt2bin and LogGOPSim; without the files the part says so
#      and is skipped, without LogGOPSim only collv's figures print;
#   3. the streamed executor against limit_loop at star:10 (bench_loop.sh 10).
# Times are CPU (user + system) and peaks from /usr/bin/time; ratios are collv / the other. It
# asserts nothing about time; it exits non-zero when a part fails to run.
#
#   bench/bench_all.sh                      COLLV=path/to/collv to time another build
#   GOAL_DIR=/tmp/goal64k LOGGOPSIM_DIR=/path/to/LogGOPSim bench/bench_all.sh
#   SCALE_SMALL=1 STAR=9 bench/bench_all.sh  # a quick look: p and count a quarter, star:9
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
collv=${COLLV:-$root/build/release/collv}
case ${1:-} in
  -h | --help) sed -n 2,18p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "bench_all.sh: no arguments (see --help); set COLLV, GOAL_DIR, LOGGOPSIM_DIR" >&2; exit 2 ;;
esac
[[ -x $collv ]] || { echo "bench_all.sh: $collv is not built" >&2; exit 2; }

echo "== 1. MPI scale against limit_rd and limit_ring (bench/bench_scale.sh)"
sh "$here/bench_scale.sh" "$collv"

echo
echo "== 2. GOAL at 65,536 ranks against txt2bin + LogGOPSim (bench/bench_goal.sh)"
goals=()
for f in allreduce_recdoub_65536.goal bcast_binomialtree_65536.goal dissemination_65536.goal; do
  [[ -n ${GOAL_DIR:-} && -f $GOAL_DIR/$f ]] && goals+=("$GOAL_DIR/$f")
done
if [[ ${#goals[@]} -eq 0 ]]; then
  echo "skipped: no 65,536-rank GOAL file in GOAL_DIR='${GOAL_DIR:-}' (see --help)"
else
  COLLV=$collv bash "$here/bench_goal.sh" "${goals[@]}"
fi

echo
echo "== 3. The streamed executor against limit_loop (bench/bench_loop.sh ${STAR:-10})"
COLLV=$collv sh "$here/bench_loop.sh" "${STAR:-10}"
