#!/usr/bin/env bash
# Shuffle volume per task against the rank count (what 4 and 8 GPUs would move, measured
# without them). Runs `gtadoc run ARCHIVE TASK --stats` under `mpirun -np P` for each P (CPU
# engine, one thread per rank: the records and bytes a rank sends do not depend on the engine or
# the threads, only on which shards a rank holds and on the partitioning) and prints a Markdown
# table of the records entering the shuffle and the bytes sent between ranks (sums over ranks,
# from --stats), plus each run's shuffle seconds. Every output is compared with the 1-rank one.
#
#   scripts/bench/shuffle-volume.sh ARCHIVE [OUT_DIR]          # RANKS="1 2 4 8" by default
#   GTADOC=build/gtadoc RANKS="1 2 4" TASKS="word-count sort" scripts/bench/shuffle-volume.sh a.gtd
set -euo pipefail
ARCHIVE=$1
OUT=${2:-shuffle-volume-out}
GTADOC=${GTADOC:-build/gtadoc}
RANKS=${RANKS:-1 2 4 8}
TASKS=${TASKS:-word-count|sort|inverted-index|term-vector|sequence-count|ranked-inverted-index}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
field() { sed -n "s/^  \"$1\": \\([0-9.e+-]*\\),*$/\\1/p" "$2"; }
echo "| task | ranks | records | shuffle bytes | bytes / record | shuffle s | total s | output |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
IFS='|' read -ra task_list <<<"$TASKS"
for task in "${task_list[@]}"; do
  for p in $RANKS; do
    name="${task}-np${p}"
    mpirun --oversubscribe --bind-to none -np "$p" "$GTADOC" run "$ARCHIVE" "$task" --engine cpu \
      --threads 1 -o "$OUT/$name.out" --force --stats "$OUT/$name.json" 2>"$OUT/$name.err"
    same="same"
    cmp -s "$OUT/$name.out" "$OUT/${task}-np${RANKS%% *}.out" || same="DIFFERS"
    rec=$(field records "$OUT/$name.json") bytes=$(field shuffle_bytes "$OUT/$name.json")
    per=$(awk -v b="$bytes" -v r="$rec" 'BEGIN { printf "%.1f", r ? b / r : 0 }')
    echo "| $task | $p | $rec | $bytes | $per | $(field shuffle_s "$OUT/$name.json") |" \
      "$(field total_s "$OUT/$name.json") | $same |"
  done
done
