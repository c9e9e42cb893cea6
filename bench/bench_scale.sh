#!/bin/sh
# collv verify at MPI scale against plain loops of the same work, in one run: MPICH's
# recursive-doubling all-reduce at p = 4,096, count = 4,096 and MPICH's binomial reduce at
# p = 4,096, count = 4,096 against bench/limits/limit_rd.c (recursive doubling at the same p and
# count: the reduce moves fewer elements than it, at most lg p vectors a rank against lg p, so its
# ratio is against more work than it does); Open MPI's ring all-reduce at p = count = 1,024 and
# 2,048 against bench/limits/limit_ring.c (the ring's own 2 (p - 1) steps of count/p-element
# slices at the same p and count). Each in the fingerprint, exact and ordered domains. CPU is
# user + system seconds, memory the peak RSS (/usr/bin/time -f); ratios are collv / loop (goal:
# CPU <= 10, memory <= 4).
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
${CC:-cc} -O2 -o "$tmp/limit_ring" "$here/limits/limit_ring.c"

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
for row in "models/mpich/allreduce_recursive_doubling.coll complete 4096 4096 all limit_rd" \
  "models/openmpi/allreduce_ring.coll ring 1024 1024 all limit_ring" \
  "models/openmpi/allreduce_ring.coll ring 2048 2048 all limit_ring" \
  "models/mpich/reduce_binomial.coll complete 4096 4096 0 limit_rd"; do
  set -- $row
  model=$1 topo=$2 p=$(($3 / div)) c=$(($4 / div)) src=$5 loop=$6
  shift 6
  measure "$tmp/loop" "$tmp/$loop" "$p" "$c"
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
