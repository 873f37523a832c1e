#!/usr/bin/env bash
# Compression past memory: for each corpus size, a synthetic corpus written by
# gtadoc_gen (trained on real text; scripts/datasets/README.md), compressed once per budget under
# /usr/bin/time. Prints a Markdown table: wall time, MB/s per core, peak RSS, archive size and
# ratio, tokens spilled, distinct words. Corpora and archives live in WORK and are deleted after
# each size (disk: about 1.6x the largest size at once).
#
#   scripts/bench/compress-scale.sh GTADOC GTADOC_GEN MODEL WORK "1G 5G 20G" "1G default" > t.md
#
# MODEL: a model from `gtadoc_gen train` (trained here if MODEL does not exist and TRAIN names
# a folder of real text). "default" runs without --memory-budget (a quarter of RAM).
set -euo pipefail
if [[ $# -lt 6 ]]; then
  sed -n '2,12p' "$0" >&2
  exit 2
fi
BIN=$1 GEN=$2 MODEL=$3 WORK=$4 SIZES=$5 BUDGETS=$6
THREADS=${THREADS:-$(nproc)}
mkdir -p "$WORK"
if [[ ! -f $MODEL ]]; then
  [[ -n ${TRAIN:-} ]] || { echo "no model $MODEL and no TRAIN folder" >&2; exit 2; }
  "$GEN" train "$TRAIN" -o "$MODEL" >&2
fi
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (GNU time)" >&2; exit 2; }

echo "| corpus | budget | wall s | MB/s per core | peak RSS MiB | archive MB | ratio | tokens spilled | distinct words |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for size in $SIZES; do
  corpus=$WORK/synth-$size
  rm -rf "$corpus"
  "$GEN" generate "$MODEL" -o "$corpus" --bytes "$size" --threads "$THREADS" >&2
  bytes=$(du -sb --apparent-size "$corpus" | cut -f1)
  for budget in $BUDGETS; do
    arch=$WORK/synth-$size.gtd
    rm -rf "$arch"
    opt=()
    [[ $budget != default ]] && opt=(--memory-budget "$budget")
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/time.txt" \
      "$BIN" compress "$corpus" -o "$arch" --threads "$THREADS" -v "${opt[@]}" \
      >/dev/null 2>"$WORK/compress.log"
    read -r wall user sys rss <"$WORK/time.txt"
    abytes=$(du -sb --apparent-size "$arch" | cut -f1)
    spilled=$(grep -o "[0-9]* spilled to disk ([^)]*)" "$WORK/compress.log" | head -1 || true)
    distinct=$(grep -o "[0-9]* distinct words" "$WORK/compress.log" | head -1 | cut -d' ' -f1 || true)
    awk -v c="$size ($bytes B)" -v b="$budget" -v w="$wall" -v by="$bytes" -v t="$THREADS" \
      -v r="$rss" -v a="$abytes" -v s="${spilled:-?}" -v d="${distinct:-?}" 'BEGIN {
        printf "| %s | %s | %.1f | %.1f | %d | %.1f | %.2f | %s | %s |\n",
          c, b, w, by / w / t / 1e6, r / 1024, a / 1e6, by / a, s, d }'
    rm -rf "$arch"
  done
  rm -rf "$corpus"
done
