#!/bin/sh
# collv verify at MPI scale against the memory-speed loop (bench/limits/limit_rd.c, a copy of
# tools/limit_rd.c): MPICH's recursive-doubling all-reduce at p = 4,096, count = 4,096, Open
# MPI's ring all-reduce at p = 1,024, count = 1,024 and MPICH's binomial reduce at p = 4,096,
# count = 4,096, each in the fingerprint, exact and ordered domains, in one run. The loop is
# recursive doubling at the same p and count in every row (the ring and the binomial reduce move
# fewer elements than it: 2 (p-1)/p and at most lg p vectors a rank against lg p), so their
# ratios are against more work than they do. CPU is user + system seconds, memory the peak RSS
# (/usr/bin/time -f); ratios are collv / loop (goal: CPU <= 10, memory <= 4).
#
#   bench/bench_scale.sh [path/to/collv] [extra collv verify options...]
#   SCALE_SMALL=1 bench/bench_scale.sh   # p and count a quarter (a quick look)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
collv=${1:-$root/build/release/collv}
[ $# -gt 0 ] && shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -O2 -o "$tmp/limit_rd" "$here/limits/limit_rd.c"

extra="$*"
# measure OUT cmd...: runs cmd, leaves "cpu_seconds peak_kib exit_code" in OUT
measure() {
  out=$1
  shift
  rc=0
  /usr/bin/time -f "%U %S %M" -o "$tmp/time" "$@" >"$tmp/stdout" 2>&1 || rc=$?
  tail -n 1 "$tmp/time" | awk -v rc="$rc" '{ printf "%.2f %d %d\n", $1 + $2, $3, rc }' >"$out"
}

div=1
[ "${SCALE_SMALL:-}" = 1 ] && div=4
printf '%-44s %-11s %8s %9s %8s %9s %7s %7s  %s\n' case domain collv_s collv_MiB loop_s \
  loop_MiB cpu_x mem_x verdict
for row in "models/mpich/allreduce_recursive_doubling.coll complete 4096 4096 all" \
  "models/openmpi/allreduce_ring.coll ring 1024 1024 all" \
  "models/mpich/reduce_binomial.coll complete 4096 4096 0"; do
  set -- $row
  model=$1 topo=$2 p=$(($3 / div)) c=$(($4 / div)) src=$5
  shift 5
  measure "$tmp/loop" "$tmp/limit_rd" "$p" "$c"
  read -r ls lk lrc <"$tmp/loop"
  for d in fingerprint exact ordered; do
    measure "$tmp/collv" "$collv" verify "$root/$model" -t "$topo:$p" -c "$c" -s "$src" -d "$d" \
      --max-p 4096 --quiet $extra
    read -r cs ck crc <"$tmp/collv"
    verdict=$(tail -n 1 "$tmp/stdout" | cut -c 1-60)
    printf '%-44s %-11s %8.2f %9d %8.2f %9d %7s %7s  exit %s: %s\n' \
      "$(basename "$model" .coll) $topo:$p c=$c" "$d" "$cs" $((ck / 1024)) "$ls" \
      $((lk / 1024)) "$(echo "$cs $ls" | awk '{ printf "%.1f", ($2 > 0 ? $1 / $2 : 0) }')" \
      "$(echo "$ck $lk" | awk '{ printf "%.1f", ($2 > 0 ? $1 / $2 : 0) }')" "$crc" "$verdict"
  done
done
