#!/usr/bin/env bash
# The resident-query benchmark tool (scripts/bench/query_bench.cpp) on a small real archive:
# it must run every task on the CPU engines (and the GPU engine when one is visible), report
# that every engine's reduced records equal cpu1's, and its table script must render the result.
# Usage: query_bench_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE. Exit 77 when not built.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3
BENCH=$(dirname "$BIN")/scripts/bench/gtadoc_query_bench
if [[ ! -x $BENCH ]]; then echo "SKIP: $BENCH not built (GTADOC_BUILD_BENCH=OFF)"; exit 77; fi
rm -rf "$WORK" && mkdir -p "$WORK/in"
(cd "$SRC/data/sample" && find . -type f | LC_ALL=C sort | awk 'NR % 5 == 0' |
   while read -r f; do mkdir -p "$WORK/in/$(dirname "$f")"; cp "$f" "$WORK/in/$f"; done)
"$BIN" compress "$WORK/in" -o "$WORK/c.gtd" --shards 3
"$BENCH" "$WORK/c.gtd" --name sample --engines cpu1,cpuN,gpu --reps 1 --json "$WORK/q.jsonl" \
  > "$WORK/stdout"
tasks=$(grep -c '"engine":"cpu1"' "$WORK/q.jsonl")
[[ $tasks -eq 6 ]] || { cat "$WORK/q.jsonl"; echo "FAIL: $tasks tasks for cpu1, want 6"; exit 1; }
[[ $(grep -c '"engine":"cpuN"' "$WORK/q.jsonl") -eq 6 ]] || { echo "FAIL: cpuN rows"; exit 1; }
if grep -q '"match":false' "$WORK/q.jsonl"; then
  grep '"match":false' "$WORK/q.jsonl"
  echo "FAIL: an engine's records differ from cpu1's"
  exit 1
fi
grep -q '"shards":3' "$WORK/q.jsonl" || { echo "FAIL: info line"; exit 1; }
if command -v python3 >/dev/null; then
  python3 "$SRC/scripts/bench/query_table.py" "$WORK/q.jsonl" > "$WORK/table.md"
  grep -q '^| sequence-count |' "$WORK/table.md" || { cat "$WORK/table.md"; echo "FAIL: table"; exit 1; }
fi
echo "PASS: query bench ran every task, all engines agree"
