#!/bin/sh
# The streamed executor against the memory-speed loop (bench/limits/limit_loop.c, a copy of
# tools/limit_loop.c), in one run (issue 34 item 3): for each star size given (default 9 10),
# the loop on as many nodes, steps and neighbour tables as `allreduce_star` on star:N, then
# `collv verify allreduce_star -t star:N -d fingerprint --stream on`, each timed by
# /usr/bin/time; prints CPU time (user + system, the whole process), nanoseconds a transfer, the
# ratio collv / loop and both peaks. Asserts nothing about time (docs/benchmarks.md, "The
# executor in rooms, and the distance to limit_loop").
#
#   bench/bench_loop.sh [N ...]        COLLV=path/to/collv to time another build
set -eu
collv=${COLLV:-build/release/collv}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/limit_loop" "$here/limits/limit_loop.c"
[ $# -gt 0 ] || set -- 9 10
for n in "$@"; do
  # p = n!, n(n-1)/2 steps, n-1 links: the loop's nodes, steps and neighbour tables.
  p=1; i=2; while [ $i -le "$n" ]; do p=$((p * i)); i=$((i + 1)); done
  steps=$((n * (n - 1) / 2)); links=$((n - 1)); transfers=$((p * steps))
  /usr/bin/time -f "%U %S %M" -o "$tmp/l" "$tmp/limit_loop" $p $steps $links > "$tmp/lo"
  /usr/bin/time -f "%U %S %M" -o "$tmp/c" "$collv" verify allreduce_star -t star:$n \
    -d fingerprint --stream on --quiet > "$tmp/co" || { cat "$tmp/co"; exit 1; }
  read lu ls lm < "$tmp/l"; read cu cs cm < "$tmp/c"
  awk -v n=$n -v t=$transfers -v lu=$lu -v ls=$ls -v lm=$lm -v cu=$cu -v cs=$cs -v cm=$cm 'BEGIN {
    l = lu + ls; c = cu + cs
    printf "star:%d  %d transfers  limit_loop %.2f s CPU (%.1f ns a transfer, %d MiB)  collv verify %.2f s CPU (%.1f ns a transfer, %d MiB)  ratio %.1f\n",
      n, t, l, 1e9 * l / t, lm / 1024, c, 1e9 * c / t, cm / 1024, (l > 0 ? c / l : 0) }'
done
