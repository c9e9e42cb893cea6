#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds the release and the ASan/UBSan builds,
# runs every test (fast and [slow]) in the release build and again under the sanitizers,
# and the main job as an end-to-end check.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

echo "== release build"
cmake --preset release >/dev/null
cmake --build --preset release -j2
echo "== tests (release, all)"
ctest --preset release -j2

echo "== sanitizer build (ASan/UBSan)"
cmake --preset asan >/dev/null
cmake --build --preset asan -j2 --target collv_tests collv
echo "== tests (ASan/UBSan, all)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --preset asan -j2

echo "== fuzzing: each libFuzzer harness briefly (scripts/fuzz.sh, docs/fuzzing.md)"
bash scripts/fuzz.sh 10

echo "== main job: collv verify --all"
./build/release/collv verify --all --quiet

echo "== proofs: collv prove proofs/, then z3 alone re-checks every certificate"
certs=$(mktemp -d)
trap 'rm -rf "$certs"' EXIT
./build/release/collv prove proofs/ --quiet --emit-smt2 "$certs"
bash scripts/recheck-certificates.sh "$certs"
