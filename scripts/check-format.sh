#!/usr/bin/env bash
# Fails if any C++ file differs from what clang-format (.clang-format) would make of it.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cpp' '*.hpp' '*.cc' '*.h')
bad=0
for f in $files; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (run: clang-format -i $f)"
    bad=1
  fi
done
if [ "$bad" -ne 0 ]; then exit 1; fi
echo "clang-format: $(echo "$files" | wc -w) files formatted"

# Test names CTest can run: each Catch test is registered under its name, and CTest splits a
# name at ';' and Catch reads a name that starts with '-' as an option, so such a test never runs
# (it fails with "no test cases matched"). The name is the TEST_CASE's first argument, adjacent
# string literals joined.
bad_names=$(perl -0777 -ne 'while (/TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)/g) {
    my $n = join "", ($1 =~ /"((?:[^"\\]|\\.)*)"/g);
    print "$ARGV: $n\n" if $n =~ /;/ || $n =~ /^-/; }' tests/*.cpp)
if [ -n "$bad_names" ]; then
  echo "test names CTest cannot run (a ';' or a leading '-'):"
  echo "$bad_names"
  exit 1
fi
echo "test names: none with ';' or a leading '-'"
