#!/usr/bin/env bash
# Resident-query benchmark on the GPU machine (after a build of gtadoc, gtadoc_query_bench):
# unpacks the corpora carried in .device-data/*.tar.xz (or uses the bundled sample), compresses
# each with every thread, then runs gtadoc_query_bench (cpu1, cpuN, gpu, raw-gpu) on it. The gpu
# engine runs each query as one Engine::run_batch over the archive's shards (the batched pass;
# ENGINES may add gpu-shards, the same engine shard by shard).
# Output: $OUT/query-bench.jsonl (one JSON object per line) and $OUT/query-bench.md.
#   CORPORA="linux100 gcide" REPS=5 BUILD_DIR=build-device scripts/bench/query-bench.sh
#
# Knobs: SHARD_SIZES ("default", or e.g. "default 512M": one archive per size, `default` =
#   gtadoc's 32 MiB), SHARD_SIZE (one size, the older knob), CPU_REPS (repetitions of the CPU
#   engines, default REPS), RAW (1: run the raw-text GPU baseline, default 1), ENGINES,
#   CORPUS_MB (e.g. 486: build the corpus `textNNN` on the machine from the real source and
#   documentation files of its Python installations and headers, in byte order of their paths,
#   up to NNN MB, as scripts/bench/e2e-bench.sh builds `large`; ROOTS overrides the directories).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-./device-out}
mkdir -p "$OUT"
BUILD_DIR=${BUILD_DIR:-build-device}
DATA=${DATA:-/tmp/gtadoc-corpora}
REPS=${REPS:-5}
CPU_REPS=${CPU_REPS:-$REPS}
RAW=${RAW:-1}
ENGINES=${ENGINES:-cpu1,cpuN,gpu}
SHARD_SIZES=${SHARD_SIZES:-${SHARD_SIZE:-default}}
mkdir -p "$DATA"
for t in .device-data/*.tar.xz; do
  [ -f "$t" ] && tar xJf "$t" -C "$DATA"
done
if [ -n "${CORPUS_MB:-}" ]; then
  c=text$CORPUS_MB
  if [ ! -d "$DATA/$c" ]; then
    if [ -z "${ROOTS:-}" ]; then
      ROOTS=
      for r in /usr/include /usr/local/include /usr/lib/python3 /usr/lib/python3.* \
        /usr/local/lib/python3.* /usr/share/doc /usr/local/cuda/include /opt/conda/lib/python3.* \
        /usr/local/cuda/share /usr/share/cmake* /usr/share/perl /usr/share/perl5 /usr/lib/cmake \
        /usr/local/share /opt; do
        [ -d "$r" ] && ROOTS+="${ROOTS:+ }$r"
      done
    fi
    # shellcheck disable=SC2086
    PYTHONPATH="scripts/bench${PYTHONPATH:+:$PYTHONPATH}" \
      python3 - "$DATA/$c.list" "$CORPUS_MB" $ROOTS <<'PY'
import sys
from corpus_files import corpus_files
out, mb, roots = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
chosen, acc = [], 0
for p, size in corpus_files(roots):
    if acc >= mb * 1e6:
        break
    chosen.append(p)
    acc += size
print(f"corpus: {len(chosen)} files, {acc / 1e6:.1f} MB")
with open(out, "wb") as f:
    f.write(b"".join(p + b"\0" for p in chosen))
PY
    mkdir -p "$DATA/$c"
    xargs -0 -r -n 2000 cp --parents -t "$DATA/$c" <"$DATA/$c.list" || echo "copying $c had errors"
  fi
  CORPORA=${CORPORA:-$c}
fi
[ -n "$(ls "$DATA")" ] || cp -r data/sample "$DATA/sample"
CORPORA=${CORPORA:-$(ls "$DATA")}
JSONL=$OUT/query-bench.jsonl
: >>"$JSONL"  # appends: several runs (e.g. shard sizes) make one table
for c in $CORPORA; do
  for size in $SHARD_SIZES; do
    arch=/tmp/qb-$c-$size.gtd
    rm -rf "$arch"
    name=$c
    shard_args=()
    if [ "$size" != default ]; then
      shard_args=(--shard-size "$size")
      name="$c ($size shards)"
    fi
    start=$EPOCHREALTIME
    "$BUILD_DIR/gtadoc" compress "$DATA/$c" -o "$arch" "${shard_args[@]}" ||
      { echo "compress $c failed"; continue; }
    echo "compress $name: $(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.1f", e - s }') s"
    raw_args=()
    [ "$RAW" = 1 ] && raw_args=(--raw "$DATA/$c")
    "$BUILD_DIR/scripts/bench/gtadoc_query_bench" "$arch" --name "$name" "${raw_args[@]}" \
      --reps "$REPS" --cpu-reps "$CPU_REPS" --engines "$ENGINES" --json "$JSONL" ||
      echo "query bench on $c failed"
    rm -rf "$arch"
  done
done
python3 scripts/bench/query_table.py "$JSONL" >"$OUT/query-bench.md"
cat "$OUT/query-bench.md"
