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
