#!/usr/bin/env bash
# The Slurm batch script on a real single-node Slurm cluster (shared/recipes/slurm-single-node.sh):
# sbatch scripts/slurm/gtadoc-run.sbatch with 2 tasks must produce the reference output.
# Usage: slurm_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE. Exit 77 (skipped) without the recipe.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 REF=$4
RECIPE=${GTADOC_SLURM_RECIPE:-$SRC/../shared/recipes/slurm-single-node.sh}
if [[ ! -f $RECIPE ]]; then echo "SKIP: no Slurm recipe at $RECIPE"; exit 77; fi
if [[ $(id -u) -ne 0 ]]; then echo "SKIP: the single-node Slurm cluster needs root"; exit 77; fi
rm -rf "$WORK" && mkdir -p "$WORK/in"
(cd "$SRC/data/sample" && find . -type f | LC_ALL=C sort | awk 'NR <= 20' |
   while read -r f; do mkdir -p "$WORK/in/$(dirname "$f")"; cp "$f" "$WORK/in/$f"; done)
"$BIN" compress "$WORK/in" -o "$WORK/c.gtd" --shards 3
export GTADOC=$BIN
WORK_SLURM=$WORK/slurm NTASKS=2 MPI_LAUNCH=pmix \
  SBATCH_SCRIPT="$SRC/scripts/slurm/gtadoc-run.sbatch $WORK/c.gtd word-count $WORK/counts.tsv --lowercase --engine cpu -v" \
  WORK="$WORK/slurm" KEEP=1 bash "$RECIPE"
"$REF" "$WORK/in" word-count --lowercase > "$WORK/want"
cmp "$WORK/want" "$WORK/counts.tsv"
grep -q "2 ranks" "$WORK"/slurm/job/out.* || { cat "$WORK"/slurm/job/out.*; echo "FAIL: job did not run 2 ranks"; exit 1; }
echo "PASS: sbatch with 2 ranks matches the reference"
