#!/usr/bin/env bash
# Runs every turn4-* reproducer (../shared/data/reproducers/turn4-repro.sh N, issue 37) and prints
# one Markdown table row each: exit code, wall and CPU seconds, peak resident memory (of the
# largest process, /usr/bin/time's %M), and what the run printed last. From the repository root:
#   bash scripts/reproducers.sh [N ...]        (B and BM name other binaries, as in turn4-repro.sh)
# Done when every row ends with exit 1, 2 or 3 (or 0 for the correct models: 2, 6, 7, 8, 17)
# within 30 s and its memory limit (--max-memory 768 for 10, the default 8192 MiB for the rest).
set -uo pipefail
cd "$(dirname "$0")/.."
R=${R:-$(cd ../shared/data/reproducers 2>/dev/null && pwd)}
[ -f "$R/turn4-repro.sh" ] || { echo "no turn4-repro.sh in ${R:-../shared/data/reproducers}" >&2; exit 2; }
items=("$@")
[ ${#items[@]} -eq 0 ] && items=($(seq 1 17))
echo "| N | exit | wall s | CPU s | peak MiB | last line |"
echo "|---|---|---|---|---|---|"
for n in "${items[@]}"; do
  out=$(mktemp) tm=$(mktemp)
  /usr/bin/time -o "$tm" -f "%e %U %S %M" bash "$R/turn4-repro.sh" "$n" >"$out" 2>&1
  rc=$(sed -n 's/^Command exited with non-zero status \([0-9]*\)$/\1/p' "$tm")
  read -r wall user sys peak < <(tail -1 "$tm")
  last=$(grep -v '^\s*$' "$out" | tail -1 | cut -c1-90 | tr '|' '/')
  printf '| %s | %s | %.1f | %.1f | %d | %s |\n' "$n" "${rc:-0}" "$wall" \
    "$(echo "$user + $sys" | bc)" $((peak / 1024)) "$last"
  rm -f "$out" "$tm"
done
rm -f o.json  # item 12's --json o.json
