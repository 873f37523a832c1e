#!/usr/bin/env bash
# Benchmarks on the GPU machine, after scripts/device-check.sh built ${BUILD_DIR:-build-device}:
# unpacks corpora carried in .device-data/*.tar.xz (the machine has no network), then runs
# scripts/bench/engines.py (gpu, cpu 1 thread, cpu all threads, raw-cpu, raw-gpu, raw-wc) and
# compression timings (1 thread and all threads). Results go to $OUT/bench-*.{json,md}.
#   CORPORA="python-doc gcide" REPS=2 scripts/bench/device-bench.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-./device-out}
mkdir -p "$OUT"
BUILD_DIR=${BUILD_DIR:-build-device}
DATA=${DATA:-/tmp/gtadoc-corpora}
REPS=${REPS:-2}
mkdir -p "$DATA"
for t in .device-data/*.tar.xz; do
  [ -f "$t" ] && tar xJf "$t" -C "$DATA"
done
if [ -z "$(ls "$DATA")" ]; then  # nothing carried: the bundled sample
  cp -r data/sample "$DATA/sample"
fi
CORPORA=${CORPORA:-$(ls "$DATA")}
args=()
for c in $CORPORA; do args+=(--corpus "$c=$DATA/$c"); done
{
  echo "| corpus | threads | seconds | MB/s | archive bytes |"
  echo "|---|---:|---:|---:|---:|"
  for c in $CORPORA; do
    bytes=$(du -sb --apparent-size "$DATA/$c" | cut -f1)
    for th in 1 "$(nproc)"; do
      rm -rf "/tmp/ct-$c.gtd"
      s=$(date +%s.%N)
      "$BUILD_DIR/gtadoc" compress "$DATA/$c" -o "/tmp/ct-$c.gtd" --threads "$th" || echo "compress failed"
      e=$(date +%s.%N)
      ab=$(du -sb --apparent-size "/tmp/ct-$c.gtd" | cut -f1)
      awk -v c="$c" -v t="$th" -v s="$s" -v e="$e" -v b="$bytes" -v a="$ab" \
        'BEGIN { printf "| %s | %s | %.2f | %.1f | %d |\n", c, t, e - s, b / 1e6 / (e - s), a }'
    done
  done
} > "$OUT/bench-compress.md" 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/bench-gpu.txt" 2>&1
lscpu | grep -E "Model name|^CPU\(s\)" >> "$OUT/bench-gpu.txt"
PYTHONUNBUFFERED=1 python3 scripts/bench/engines.py "${args[@]}" --build "$BUILD_DIR" --reps "$REPS" \
  --traversals --threads "$(nproc)" --work /tmp/gtadoc-bench --out "$OUT/bench-engines" \
  2>&1 | tee "$OUT/bench-engines.log"
