#!/usr/bin/env bash
# Re-checks SMT-LIB2 certificates with the z3 executable alone, without collv: each file names
# its expected answer in a "; expected: sat|unsat" comment.
#   bash scripts/recheck-certificates.sh DIR
set -euo pipefail
dir=${1:?usage: recheck-certificates.sh DIR}
total=0; bad=0
for f in "$dir"/*.smt2; do
  [ -e "$f" ] || continue
  want=$(sed -n 's/^; expected: *\([a-z]*\).*/\1/p' "$f" | head -n 1)
  got=$(timeout 600 z3 "$f" 2>&1 | grep -E '^(sat|unsat|unknown)$' | tail -n 1 || true)
  total=$((total + 1))
  if [ -z "$want" ] || [ "$got" != "$want" ]; then
    echo "MISMATCH $f: expected '$want', z3 says '$got'"
    bad=$((bad + 1))
  fi
done
echo "z3 re-checked $total certificates: $((total - bad)) as expected, $bad not"
[ "$total" -gt 0 ] && [ "$bad" -eq 0 ]
