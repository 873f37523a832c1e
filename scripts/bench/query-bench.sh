#!/usr/bin/env bash
# Resident-query benchmark on the GPU machine (after a build of gtadoc, gtadoc_query_bench):
# unpacks the corpora carried in .device-data/*.tar.xz (or uses the bundled sample), compresses
# each with every thread, then runs gtadoc_query_bench (cpu1, cpuN, gpu, raw-gpu) on it.
# Output: $OUT/query-bench.jsonl (one JSON object per line) and $OUT/query-bench.md.
#   CORPORA="linux100 gcide" REPS=5 BUILD_DIR=build-device scripts/bench/query-bench.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-./device-out}
mkdir -p "$OUT"
BUILD_DIR=${BUILD_DIR:-build-device}
DATA=${DATA:-/tmp/gtadoc-corpora}
REPS=${REPS:-5}
ENGINES=${ENGINES:-cpu1,cpuN,gpu}
SHARD_SIZE=${SHARD_SIZE:-}  # e.g. 256M: fewer, larger shards (default: gtadoc's 32 MiB)
mkdir -p "$DATA"
for t in .device-data/*.tar.xz; do
  [ -f "$t" ] && tar xJf "$t" -C "$DATA"
done
[ -n "$(ls "$DATA")" ] || cp -r data/sample "$DATA/sample"
CORPORA=${CORPORA:-$(ls "$DATA")}
JSONL=$OUT/query-bench.jsonl
: >>"$JSONL"  # appends: several runs (e.g. shard sizes) make one table
for c in $CORPORA; do
  arch=/tmp/qb-$c.gtd
  rm -rf "$arch"
  name=$c
  shard_args=()
  if [ -n "$SHARD_SIZE" ]; then
    shard_args=(--shard-size "$SHARD_SIZE")
    name="$c ($SHARD_SIZE shards)"
  fi
  "$BUILD_DIR/gtadoc" compress "$DATA/$c" -o "$arch" "${shard_args[@]}" ||
    { echo "compress $c failed"; continue; }
  "$BUILD_DIR/scripts/bench/gtadoc_query_bench" "$arch" --name "$name" --raw "$DATA/$c" \
    --reps "$REPS" --engines "$ENGINES" --json "$JSONL" || echo "query bench on $c failed"
done
python3 scripts/bench/query_table.py "$JSONL" >"$OUT/query-bench.md"
cat "$OUT/query-bench.md"
