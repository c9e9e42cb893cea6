#!/usr/bin/env bash
# Asks one synthesis question on star:5 once per conjugacy class of subgroups of S_5 (19 classes),
# restricted to schedules invariant under that subgroup acting by relabelling the symbols (left
# multiplication; docs/smt.md, "Invariant schedules"). Conjugate subgroups give isomorphic
# questions (x -> g x maps H-invariant schedules to gHg^-1-invariant ones), so these 19 cover every
# subgroup. A sat line is a real schedule (re-checked by the executor's checkers); an unsat line
# only says that no schedule invariant under that subgroup exists.
#
#   scripts/s5-invariant-sweep.sh allreduce 9 60000       # collective, steps, timeout per query (ms)
#   COLLV=build/release/collv PROOF=DIR scripts/s5-invariant-sweep.sh allgather 8 240000
set -euo pipefail
coll=${1:?collective (allgather or allreduce)}
steps=${2:?steps}
timeout=${3:-60000}
collv=${COLLV:-build/release/collv}
# one generating set per class, largest subgroup first (found by listing the subgroups that one or
# two permutations generate and keeping one per conjugacy class)
classes=(
  "120|(4 5),(1 2 3 4)"
  "60|(3 4 5),(1 2 3)"
  "24|(3 4),(1 2 3)"
  "20|(2 3 4 5),(1 2 4 5)"
  "12|(2 5),(1 2)(3 4)"
  "12|(3 4 5),(2 3 4)"
  "10|(2 3)(4 5),(1 2)(3 4)"
  "8|(4 5),(2 4 3 5)"
  "6|(1 2 3)(4 5)"
  "6|(3 4),(1 3)"
  "6|(2 3)(4 5),(1 2 3)"
  "5|(1 2 3 5 4)"
  "4|(3 5),(2 4)"
  "4|(2 3)(4 5),(2 4)(3 5)"
  "4|(1 3 5 4)"
  "3|(1 3 4)"
  "2|(1 3)(4 5)"
  "2|(1 4)"
  "1|()"
)
printf '%-6s %-26s %-8s %s\n' order generators answer seconds
for c in "${classes[@]}"; do
  order=${c%%|*}
  gens=${c#*|}
  args=(synth "$coll" -t star:5 --steps "$steps" --backend cadical --invariant "$gens"
    --timeout "$timeout" --quiet)
  [[ -n "${PROOF:-}" ]] && args+=(--proof "$PROOF")
  start=$(date +%s.%N)
  rc=0
  "$collv" "${args[@]}" > /dev/null 2>&1 || rc=$?
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  case $rc in
    0) answer=sat ;;
    1) answer=unsat ;;
    3) answer=unknown ;;
    *) answer="error($rc)" ;;
  esac
  printf '%-6s %-26s %-8s %.1f\n' "$order" "$gens" "$answer" "$secs"
done
