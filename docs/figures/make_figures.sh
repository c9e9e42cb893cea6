#!/bin/sh
# Regenerates the sources' figures with `collv render` (see docs/figures/README.md).
# Run from the repository root after building:  sh docs/figures/make_figures.sh
# COLLV may name another collv executable (default: build/release/collv).
set -eu
COLLV=${COLLV:-build/release/collv}
OUT=docs/figures

# Draw one figure as SVG and PNG: fig NAME ARGS... (ARGS without -o; --per-step DIR is
# given as NAME-steps automatically when the second argument is "steps").
fig() {
  name=$1; shift
  for ext in svg png; do
    "$COLLV" render "$@" -o "$OUT/$name.$ext"
  done
}
figsteps() {
  name=$1; shift
  for ext in svg png; do
    "$COLLV" render "$@" -o "$OUT/$name.$ext" --per-step "$OUT/$name-steps"
  done
}

# Grama et al., chapter 4
fig      fig4_2_broadcast_ring       broadcast_ring      --topology ring:8      --source 0
fig      fig4_3_reduce_ring          reduce_ring         --topology ring:8      --source 0
fig      fig4_6_broadcast_hypercube  broadcast_hypercube --topology hypercube:3 --source 0
fig      fig4_7_broadcast_tree       broadcast_tree      --topology tree:8      --source 0
fig      fig4_9_allgather_ring       allgather_ring      --topology ring:8      --steps 1,2,7
figsteps fig4_11_allgather_hypercube allgather_hypercube --topology hypercube:3
# Figure 4.12: step 3 of the hypercube all-to-all broadcast on a ring; the exit code 1 (a
# counterexample was drawn) is expected.
for ext in svg png; do
  "$COLLV" render allgather_hypercube --topology ring:8 --counterexample --check congestion \
    --step 3 -o "$OUT/fig4_12_contention_ring.$ext" || [ $? -eq 1 ]
done
figsteps fig4_13_scan_hypercube      scan_hypercube_ordered --topology hypercube:3 --domain ordered

# Oh, Choi, Primeaux (ICCS 2005)
figsteps paper_fig1_allreduce_s3     allreduce_star      --topology star:3
figsteps paper_fig3_allreduce_s4     allreduce_star      --topology star:4
