#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/, clang with ASan+UBSan, in build/fuzz) and runs each for a
# bounded time; fails on any crash, sanitizer report, timeout or out-of-memory.
#   bash scripts/fuzz.sh [seconds-per-harness] [harness ...]   (default 20 s; all ten harnesses)
# Seeds: tests/fuzz-corpus/<harness>/; what a run finds is kept in build/fuzz/corpus/<harness>/
# (so runs accumulate) and crashing inputs in build/fuzz/artifacts/. See docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(model run schedule topology proof import symmetry mpi agreement nonblocking)
# COLLV_FUZZ_BUILD: a build directory already configured with clang and -DCOLLV_FUZZ=ON
# (scripts/test.sh's sanitizer build, whose objects serve the tests and the harnesses); by
# default build/fuzz, configured here.
build=${COLLV_FUZZ_BUILD:-build/fuzz}

cc=clang cxx=clang++
if ! command -v clang++ >/dev/null; then cc=clang-14 cxx=clang++-14; fi  # Debian's clang-14

start=$(date +%s)
if [ -z "${COLLV_FUZZ_BUILD:-}" ]; then
  CC=$cc CXX=$cxx cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOLLV_FUZZ=ON \
    -DCOLLV_BUILD_TESTS=OFF -DCOLLV_BUILD_BENCH=OFF >/dev/null
elif ! grep -q '^COLLV_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "fuzz: COLLV_FUZZ_BUILD=$build is not a build configured with -DCOLLV_FUZZ=ON" >&2
  exit 2
fi
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
cmake --build "$build" -j2 --target "${targets[@]}"
echo "fuzz: build took $(($(date +%s) - start)) s"

mkdir -p "$build/artifacts"
failed=()
for h in "${harnesses[@]}"; do
  mkdir -p "$build/corpus/$h"
  log="$build/fuzz_$h.log"
  echo "== fuzz_$h for ${secs} s"
  # -rss_limit_mb: the largest topologies collv accepts (2^24 nodes) take ~1 GB, more under ASan.
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "./$build/fuzz_$h" -max_total_time="$secs" -timeout=30 -rss_limit_mb=6144 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/$h-" \
    "$build/corpus/$h" "tests/fuzz-corpus/$h" >"$log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$log" | tr '\n' ' '
    echo
  else
    echo "fuzz_$h FAILED; the end of $log:"
    tail -40 "$log"
    failed+=("$h")
  fi
done
echo "fuzz: total $(($(date +%s) - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: crashes in ${failed[*]} (inputs in $build/artifacts/)"
  exit 1
fi
