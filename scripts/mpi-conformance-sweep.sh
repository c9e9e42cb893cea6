#!/usr/bin/env bash
# The conformance sweep of docs/mpi.md: `collv mpi --conformance` for every library model that
# names an Open MPI or MPICH selector, at p = 2..12 and counts 0..2p+1 (one `collv mpi` per p),
# root p-1. Slow (tens of minutes on a shared 2-core machine): run it in the background. Writes
# OUT/p<P>.txt (the reports) and OUT/table.md (per model: the verdict at each p).
#
#   bash scripts/mpi-conformance-sweep.sh [OUT] [MODEL PATHS...]   (default: mpi-conformance/ models/)
#   P_LO=2 P_HI=12 ROOT=last TIMEOUT=30 bash scripts/mpi-conformance-sweep.sh out models/mpich
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-mpi-conformance}
shift || true
MODELS=("$@")
[ ${#MODELS[@]} -gt 0 ] || MODELS=(models)
COLLV=${COLLV:-./build/release/collv}
P_LO=${P_LO:-2}
P_HI=${P_HI:-12}
ROOT=${ROOT:-last}
TIMEOUT=${TIMEOUT:-30}
mkdir -p "$OUT"
[ -x "$COLLV" ] || { echo "mpi-conformance-sweep: no $COLLV (build it first)"; exit 2; }

for ((p = P_LO; p <= P_HI; ++p)); do
  f="$OUT/p$p.txt"
  grep -q '^conformance: ' "$f" 2>/dev/null && continue  # resumable: a finished p is kept
  "$COLLV" mpi --conformance "${MODELS[@]}" --sizes "$p" --count "0..$((2 * p + 1))" \
    --root "$ROOT" --timeout "$TIMEOUT" >"$f.tmp" 2>"$OUT/p$p.err"
  rc=$?
  mv "$f.tmp" "$f"
  echo "exit $rc" >>"$f"
  echo "$(date -u +%H:%M:%S) p=$p counts 0..$((2 * p + 1)): exit $rc"
done

# The table: one row per model: its verdict at each p (pass, FAIL, inconclusive, error, not
# judged), the runs judged and passed, and the runs where the library fell back (MPICH said so).
python3 - "$OUT" "$P_LO" "$P_HI" >"$OUT/table.md" <<'PY'
import re, sys
out, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
verdicts, runs, passed, fell = {}, {}, {}, {}
for p in range(lo, hi + 1):
    try:
        text = open(f"{out}/p{p}.txt").read()
    except OSError:
        continue
    cut = text.rfind("\nconformance: ")
    for sec in re.split(r"^== ", text[:cut], flags=re.M)[1:]:
        model = sec.split(":", 1)[0]
        m = re.search(r"^(\d+) runs: (\d+) passed", sec, re.M)
        if m:
            runs[model] = runs.get(model, 0) + int(m.group(1))
            passed[model] = passed.get(model, 0) + int(m.group(2))
        m = re.search(r"^the skipped runs: (\d+) where the library fell back", sec, re.M)
        if m:
            fell.setdefault(model, []).append(f"{m.group(1)} at p={p}")
    for m in re.finditer(r"^  (pass|FAIL|inconclusive|error|not judged|no compare)\s+(\S+)", text[cut:], re.M):
        verdicts.setdefault(m.group(2), {})[p] = m.group(1)
ps = list(range(lo, hi + 1))
print("| model | " + " | ".join(f"p={p}" for p in ps) + " | runs judged | passed | fell back |")
print("|---|" + "---|" * (len(ps) + 3))
for model in sorted(verdicts):
    name = re.sub(r"^(.*/)?models/", "", model)
    print(f"| {name} | " + " | ".join(verdicts[model].get(p, "") for p in ps) +
          f" | {runs.get(model, 0)} | {passed.get(model, 0)} | {', '.join(fell.get(model, []))} |")
PY
cat "$OUT/table.md"
