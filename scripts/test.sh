#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds the release build and runs every test
# (fast and [slow]) in it; builds the ASan/UBSan build and runs the fast tests (ctest label
# "unit": everything not tagged [slow] or [heavy]) under the sanitizers: they cover every reader of input
# (models, specs, schedule files, proof files, the command line); the [slow] tests are long pure
# computations on the repository's own models and proofs and run in the release build only.
# [heavy] tests are fast-suite tests long only from Z3 or MPI launches: release phase only.
# [sweep] tests (full proofs of minutes with a cheaper sibling here) are left out: scripts/sweep-tests.sh.
# Then the fuzz harnesses briefly. The main job (`collv verify --all`) is a line of the README
# tour, which a [slow] test runs as written; the proofs and z3's re-check of every certificate
# are [slow] tests too. Each phase's wall and CPU time is printed at the end (README.md
# says how long the whole takes on a 2-core machine).
set -euo pipefail
cd "$(dirname "$0")/.."

report=()
# Runs one phase and records its wall time and the CPU time of its processes.
phase() {
  local name=$1
  shift
  echo "== $name"
  local t0 c0 c1
  t0=$(date +%s.%N)
  times >"$times_file"  # in this shell: a subshell would not see this shell's children
  c0=$(child_cpu)
  "$@"
  times >"$times_file"
  c1=$(child_cpu)
  report+=("$(printf '%7.1f s wall %7.1f s CPU  %s' \
    "$(echo "$(date +%s.%N) - $t0" | bc)" "$(echo "$c1 - $c0" | bc)" "$name")")
}
# User + system CPU seconds of every finished child of this shell (bash's `times`, second line).
times_file=$(mktemp)
trap 'rm -f "$times_file"' EXIT
child_cpu() {
  tail -n 1 "$times_file" | awk '{
    s = 0
    for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); s += a[1] * 60 + a[2] }
    print s }'
}

# quarantine_size_mb=64: ASan's default quarantine (256 MiB of freed blocks, about 1 GiB of
# resident memory on a run that allocates and frees much) counts against collv's --max-memory,
# which measures what the process holds; the reproducers' 1 GiB limits would trip on it.
sanitized() {
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:quarantine_size_mb=64 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$@"
}


phase "dependencies" bash scripts/install-deps.sh
# The compiler cache (CMakeLists.txt uses ccache when present) serves a clone in any folder:
# paths below the clone's parent are hashed relative to the build directory, and the build
# directory itself is not hashed (the -g1 sanitizer build would otherwise miss every time).
parent=$(cd .. && pwd)
if [ "$parent" != "/" ]; then export CCACHE_BASEDIR="$parent"; fi
export CCACHE_NOHASHDIR=1
phase "release build" sh -c 'cmake --preset release >/dev/null && cmake --build --preset release -j2'
phase "tests (release, all)" ctest --preset release -j2
# -O1 -g1 (line tables for the sanitizers' stack traces): half the compile time of the preset's
# -O2 -g, which made this build 13 of the suite's 19 minutes of CPU. With clang (installed by
# scripts/install-deps.sh) the same objects also carry libFuzzer's coverage (-DCOLLV_FUZZ=ON),
# so the fuzz harnesses link against them instead of a third build of the whole library (it
# took 670 s of compile time).
fuzz_targets="fuzz_model fuzz_run fuzz_schedule fuzz_topology fuzz_proof fuzz_import"
fuzz_targets="$fuzz_targets fuzz_symmetry fuzz_mpi fuzz_agreement fuzz_nonblocking"
asan_cxx=$(command -v clang++ || command -v clang++-14 || true)
asan_flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")
asan_targets="collv_tests collv"
if [ -n "$asan_cxx" ]; then
  # A build/asan configured earlier with another compiler cannot switch: start it afresh.
  if [ -f build/asan/CMakeCache.txt ] &&
    ! grep -q "^CMAKE_CXX_COMPILER:[A-Z]*=$asan_cxx\$" build/asan/CMakeCache.txt; then
    rm -rf build/asan
  fi
  asan_flags+=(-DCMAKE_CXX_COMPILER="$asan_cxx" -DCOLLV_FUZZ=ON)
  asan_targets="$asan_targets $fuzz_targets"
fi
# shellcheck disable=SC2086  # the target lists are words
phase "sanitizer build (ASan/UBSan, -O1 -g1${asan_cxx:+, clang, with the fuzz harnesses})" \
  sh -c 'cmake --preset asan "$@" >/dev/null && cmake --build --preset asan -j2 --target '"$asan_targets" \
  sh "${asan_flags[@]}"
phase "tests (ASan/UBSan, label unit)" sanitized ctest --preset asan -j2 -L unit
if [ -n "$asan_cxx" ]; then
  phase "fuzzing: each libFuzzer harness briefly (scripts/fuzz.sh, docs/fuzzing.md)" \
    env COLLV_FUZZ_BUILD=build/asan bash scripts/fuzz.sh 10
else
  phase "fuzzing: each libFuzzer harness briefly (scripts/fuzz.sh, docs/fuzzing.md)" \
    bash scripts/fuzz.sh 10
fi

echo "== time per phase"
printf '%s\n' "${report[@]}"
