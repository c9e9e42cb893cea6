#!/usr/bin/env bash
# Times the hand-written XOR-partner encoding experiments (bench/every_p_xor/*.smt2, docs/smt.md
# "XOR partners: encoding experiments") with the z3 executable: each file's answers (one per
# check-sat), its expected answers and the wall time, under a timeout (default 120 s a file).
#   bash scripts/every-p-xor-timings.sh [TIMEOUT_SECONDS] [FILE...]
set -uo pipefail
limit=${1:-120}
shift || true
dir=$(cd "$(dirname "$0")/../bench/every_p_xor" && pwd)
files=("$@")
[ ${#files[@]} -gt 0 ] || files=("$dir"/*.smt2)
printf '%-34s %-8s %-40s %s\n' file seconds answers expected
for f in "${files[@]}"; do
  want=$(sed -n 's/^; expect: *//p' "$f" | head -n 1 | cut -c1-60)
  start=$(date +%s.%N)
  out=$(timeout "$limit" z3 "$f" 2>&1)
  rc=$?
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  got=$(printf '%s\n' "$out" | grep -E '^(sat|unsat|unknown)$' | tr '\n' ' ')
  [ $rc -eq 124 ] && got="${got}timeout"
  printf '%-34s %-8.2f %-40s %s\n' "$(basename "$f")" "$secs" "$got" "$want"
done
