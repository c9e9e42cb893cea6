#!/usr/bin/env bash
# Re-checks SMT-LIB2 certificates with the z3 executable alone, without collv: each file names
# its expected answer in a "; expected: sat|unsat" comment. A certificate with several checks
# (synth lower bounds: the pruning lemmas, then the question) must answer unsat to every check
# but the last, and the expected answer to the last. A certificate of `prove --every-p` names the
# way of its portfolio that answered ("; answered by: WAY"): the z3 executable's ways ran this
# very file (options and check included), so z3 replays them the same way; the API's way asked
# the same question through Z3's API (docs/smt.md, "The portfolio"). The count per way is printed.
#   bash scripts/recheck-certificates.sh DIR
set -euo pipefail
dir=${1:?usage: recheck-certificates.sh DIR}
total=0; bad=0
declare -A ways=()
for f in "$dir"/*.smt2; do
  [ -e "$f" ] || continue
  want=$(sed -n 's/^; expected: *\([a-z]*\).*/\1/p' "$f" | head -n 1)
  out=$(timeout 600 z3 "$f" 2>&1 || true)
  answers=$(printf '%s\n' "$out" | grep -E '^(sat|unsat|unknown)$' || true)
  errors=$(printf '%s\n' "$out" | grep -c '^(error' || true)
  got=$(printf '%s\n' "$answers" | tail -n 1)
  lemmas=$(printf '%s\n' "$answers" | head -n -1 | grep -cv '^unsat$' || true)
  total=$((total + 1))
  way=$(sed -n 's/^; answered by: \([a-z0-9-]*\).*/\1/p' "$f" | head -n 1)
  [ -n "$way" ] && ways[$way]=$(( ${ways[$way]:-0} + 1 ))
  if [ -z "$want" ] || [ "$got" != "$want" ] || [ "$lemmas" -ne 0 ] || [ "$errors" -ne 0 ]; then
    echo "MISMATCH $f: expected '$want', z3 says '$got' ($lemmas lemma checks not unsat, $errors errors)"
    bad=$((bad + 1))
  fi
done
echo "z3 re-checked $total certificates: $((total - bad)) as expected, $bad not"
if [ "${#ways[@]}" -gt 0 ]; then
  line="answered by:"
  for w in $(printf '%s\n' "${!ways[@]}" | sort); do line="$line $w ${ways[$w]},"; done
  echo "${line%,}"
fi
[ "$total" -gt 0 ] && [ "$bad" -eq 0 ]
