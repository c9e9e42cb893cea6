#!/usr/bin/env bash
# The sweep of docs/mpi.md: every selectable algorithm of allreduce, reduce, reduce_scatter,
# reduce_scatter_block, allgather, bcast, scan, exscan, alltoall, gather, scatter, allgatherv,
# gatherv, scatterv, alltoallv and barrier in Open MPI
# and MPICH, judged by `collv mpi` at p = 2..12, under a commutative and (for the reductions) a
# non-commutative user operation, for the rooted collectives the roots 0, p/2 and p-1 (collv
# mpi's default). Slow (hours on a shared 2-core machine): run it in the background. Writes one
# JSON report per library,
# collective, algorithm, operation and count range into OUT, and OUT/table.md, the table that
# docs/mpi.md shows.
#
#   bash scripts/mpi-sweep.sh [OUT]      (default: mpi-sweep/)
#   SIZES=2..12 COUNTS="0..2 13" IMPLS="openmpi mpich" COLLS="allreduce bcast" bash scripts/mpi-sweep.sh
#   REDUCTION_OPS=noncommutative (the operations a reduction runs under; default both)
#   ROOT=last (collv mpi --root for the rooted collectives; default sample: 0, p/2, p-1)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-mpi-sweep}
COLLV=${COLLV:-./build/release/collv}
SIZES=${SIZES:-2..12}
COUNTS=${COUNTS:-0..2 13}
IMPLS=${IMPLS:-openmpi mpich}
COLLS=${COLLS:-allreduce reduce reduce_scatter reduce_scatter_block allgather bcast scan exscan alltoall gather scatter allgatherv gatherv scatterv alltoallv barrier}
TIMEOUT=${TIMEOUT:-30}
REDUCTION_OPS=${REDUCTION_OPS:-commutative noncommutative}
ROOT=${ROOT:-sample}
mkdir -p "$OUT"
[ -x "$COLLV" ] || { echo "mpi-sweep: no $COLLV (build it first)"; exit 2; }

reduction() { case "$1" in allreduce|reduce|reduce_scatter|reduce_scatter_block|scan|exscan) return 0;; esac; return 1; }

for impl in $IMPLS; do
  for coll in $COLLS; do
    algs=$("$COLLV" mpi --impl "$impl" --collective "$coll" --list-algorithms | tail -n +2)
    ops="commutative"
    if reduction "$coll"; then ops="$REDUCTION_OPS"; fi
    for alg in $algs; do
      for op in $ops; do
        for counts in $COUNTS; do
          f="$OUT/$impl-$coll-$alg-$op-c$counts.json"
          [ -s "$f" ] && continue   # resumable: a report already written is kept
          "$COLLV" mpi --impl "$impl" --collective "$coll" --algorithm "$alg" --sizes "$SIZES" \
            --count "$counts" --root "$ROOT" --op "$op" --timeout "$TIMEOUT" --quiet --json "$f.tmp" \
            >/dev/null 2>"$f.err"
          rc=$?
          if [ -s "$f.tmp" ]; then mv "$f.tmp" "$f"; else echo "{\"exit\": $rc}" >"$f"; fi
          echo "$(date -u +%H:%M:%S) $impl $coll $alg $op count $counts: exit $rc"
        done
      done
    done
  done
done

# The table: per library, collective, algorithm and operation, the process counts where every
# run passed, and each failure with the command that reproduces it.
python3 - "$OUT" >"$OUT/table.md" <<'EOF'
import glob, json, os, re, sys
from collections import defaultdict
out = sys.argv[1]
rows = defaultdict(lambda: {"runs": 0, "passed": 0, "refused": [], "fail": [], "ps": defaultdict(lambda: [0, 0]), "errors": []})
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    try:
        j = json.load(open(f))
    except ValueError:
        continue
    lib = j.get("library")
    if not lib:
        name = os.path.basename(f)
        m = re.match(r"(\w+)-(\w+)-(.+)-(commutative|noncommutative)-c", name)
        rows[m.groups() if m else (name, "", "", "")]["errors"].append(f"exit {j.get('exit')}: " + open(f + ".err").read().strip()[-300:])
        continue
    op = re.search(r"-(commutative|noncommutative)-c[^-]*\.json$", f).group(1)
    key = (lib["impl"], lib["collective"], lib["algorithm"], op)
    r = rows[key]
    r["refused"] += lib.get("fell_back", [])
    for x in j["results"]:
        r["runs"] += 1
        r["ps"][x["p"]][0] += 1
        if x["status"] == "pass":
            r["passed"] += 1
            r["ps"][x["p"]][1] += 1
        else:
            bad = sorted(k for k, v in x["checks"].items() if v in ("fail", "unknown"))
            msg = x["violations"][0]["message"] if x["violations"] else x.get("error", "")
            r["fail"].append((x["p"], x["count"], x["status"], ",".join(bad), msg, x.get("reproduce", "").split("\n")[0]))
def ranges(ps):
    ps = sorted(ps)
    if not ps: return "-"
    out, a, b = [], ps[0], ps[0]
    for p in ps[1:]:
        if p == b + 1: b = p
        else: out.append((a, b)); a = b = p
    out.append((a, b))
    return ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in out)
print("| library | collective | algorithm | operation | runs | passed | p where every run passed | fell back (library said so) | failures (first) |")
print("|---|---|---|---|---|---|---|---|---|")
details = []
for key in sorted(rows):
    r = rows[key]
    good = [p for p, (n, ok) in r["ps"].items() if n == ok]
    refused = len(r["refused"])
    ref = f"{refused} ({r['refused'][0]}, ...)" if refused else ""
    if r["errors"]:
        fails = "error: " + r["errors"][0].replace("|", "/").replace("\n", " ")
    elif r["fail"]:
        p, c, st, checks, msg, rep = r["fail"][0]
        fails = f"{len(r['fail'])}: p={p} count={c} {st} ({checks})"
        details.append((key, r["fail"]))
    else:
        fails = ""
    print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {r['runs']} | {r['passed']} | {ranges(good)} | {ref} | {fails} |")
print()
for key, fl in details:
    print(f"- **{key[0]} {key[1]} {key[2]}, {key[3]}**: {len(fl)} failing runs at p = {ranges(set(f[0] for f in fl))}, counts {ranges(set(f[1] for f in fl))}.")
    p, c, st, checks, msg, rep = fl[0]
    print(f"  First: p={p} count={c}: {checks}: {' '.join(msg.split())[:400]}")
    print(f"  Reproduce: `{rep}`")
EOF
echo "mpi-sweep: $OUT/table.md"
