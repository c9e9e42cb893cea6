#!/usr/bin/env bash
# GOAL files at LogGOPSim's scale (issue 34 item 2): collv's CPU time and peak memory on each GOAL
# file given, beside LogGOPSim's txt2bin and simulator on the same file where they are installed,
# in one run, with the ratio collv / (txt2bin + LogGOPSim).
#
#   bench/bench_goal.sh [--collv PATH] FILE.goal[:COLLECTIVE] ...
#   bench/bench_goal.sh --dir DIR        # DIR's *.goal, the collective from the name (below)
#
# COLLECTIVE is what `collv verify --collective` asks (allreduce, broadcast, barrier, ...); with
# --dir it is taken from the file name: *allreduce* -> allreduce, *bcast*|*broadcast* ->
# broadcast, *dissem* -> barrier, else none. LogGOPSim's tools are looked up on PATH (txt2bin,
# LogGOPSim) or in $LOGGOPSIM_DIR; without them only collv's figures print. This script builds
# nothing and generates nothing: docs/benchmarks.md ("GOAL at 65,536 ranks") says how the files
# were written (LogGOPSim's Schedgen2) and the figures measured.
set -euo pipefail

collv=${COLLV:-build/release/collv}
files=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --collv) collv=$2; shift 2 ;;
    --dir) for f in "$2"/*.goal; do files+=("$f"); done; shift 2 ;;
    -h|--help) sed -n 2,13p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench_goal.sh: unknown option $1" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
[[ ${#files[@]} -gt 0 ]] || { echo "bench_goal.sh: no GOAL file given (see --help)" >&2; exit 2; }
[[ -x $collv ]] || { echo "bench_goal.sh: $collv is not built" >&2; exit 2; }

find_tool() {  # $1: name; prints its path or nothing
  if [[ -n ${LOGGOPSIM_DIR:-} && -x $LOGGOPSIM_DIR/$1 ]]; then echo "$LOGGOPSIM_DIR/$1"; return; fi
  command -v "$1" 2>/dev/null || true
}
txt2bin=$(find_tool txt2bin)
loggopsim=$(find_tool LogGOPSim)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# measure OUT CMD...: runs CMD under /usr/bin/time; OUT gets "cpu_seconds peak_kib exit".
measure() {
  local out=$1; shift
  local rc=0
  /usr/bin/time -f "%U %S %M" -o "$tmp/time" "$@" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
  read -r u s m <"$tmp/time" || true
  [[ $u =~ ^[0-9.]+$ ]] || { read -r u s m < <(tail -1 "$tmp/time"); }
  echo "$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u+s}') $m $rc" >"$out"
}

printf '%-40s %-10s %8s %9s %5s | %8s %9s | %8s %9s | %6s %6s\n' file collective \
  "collv-s" "collv-MiB" exit "t2b-s" "t2b-MiB" "lgs-s" "lgs-MiB" "cpu-x" "mem-x"
for spec in "${files[@]}"; do
  f=${spec%%:*}
  coll=""
  if [[ $spec == *:* ]]; then coll=${spec#*:}
  else
    case $(basename "$f") in
      *allreduce*) coll=allreduce ;;
      *bcast*|*broadcast*) coll=broadcast ;;
      *dissem*) coll=barrier ;;
    esac
  fi
  args=(verify "$f" --json "$tmp/report.json")
  [[ -n $coll ]] && args+=(--collective "$coll")
  measure "$tmp/c" "$collv" "${args[@]}"
  read -r ccpu cmem crc <"$tmp/c"
  verdicts=$(python3 -c '
import json,sys
r=json.load(open(sys.argv[1]))
for run in r.get("results", []):
  c = run.get("checks", {})
  print(" ".join(k + "=" + c[k] for k in ("match", "deadlock", "flow") if k in c))
' "$tmp/report.json" 2>/dev/null | head -1 || true)
  tcpu=- tmem=- lcpu=- lmem=- rcpu=- rmem=-
  if [[ -n $txt2bin && -n $loggopsim ]]; then
    measure "$tmp/t" "$txt2bin" -i "$f" -o "$tmp/s.bin"
    read -r tcpu tmem trc <"$tmp/t"
    measure "$tmp/l" "$loggopsim" -f "$tmp/s.bin"
    read -r lcpu lmem lrc <"$tmp/l"
    rcpu=$(awk -v c="$ccpu" -v t="$tcpu" -v l="$lcpu" 'BEGIN{printf "%.2f", c/(t+l)}')
    # The two run one after the other: their peak is the larger of the two.
    rmem=$(awk -v c="$cmem" -v t="$tmem" -v l="$lmem" 'BEGIN{m=t>l?t:l; printf "%.2f", c/m}')
    tmem=$((tmem / 1024)); lmem=$((lmem / 1024))
  fi
  printf '%-40s %-10s %8s %9s %5s | %8s %9s | %8s %9s | %6s %6s\n' "$(basename "$f")" \
    "${coll:--}" "$ccpu" "$((cmem / 1024))" "$crc" "$tcpu" "$tmem" "$lcpu" "$lmem" "$rcpu" "$rmem"
  [[ -n $verdicts ]] && echo "    collv: $verdicts"
done
[[ -n $txt2bin && -n $loggopsim ]] ||
  echo "(txt2bin/LogGOPSim not found on PATH or in \$LOGGOPSIM_DIR: collv's figures only)"
