#!/usr/bin/env bash
# Default thread counts follow the CPUs the process may use (docs/REFERENCE.md §2): an affinity mask
# (taskset), SLURM_CPUS_PER_TASK, and otherwise the machine's CPUs; --threads overrides; the
# output does not depend on any of it.
# Usage: threads_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$BIN" compress "$SRC/data/sample" -o "$WORK/s.gtd" --shards 2 >/dev/null
threads() {  # threads [ENV...] -- [PREFIX...]: the "threads" of gtadoc run --stats
  rm -f "$WORK/st.json"
  env "$@" "$BIN" run "$WORK/s.gtd" word-count --top 5 --engine cpu -o "$WORK/out-$RANDOM" \
    --stats "$WORK/st.json"
  sed -n 's/^ *"threads": \([0-9]*\),*$/\1/p' "$WORK/st.json"
}
all=$(nproc --all)
[[ $(threads) -ge 1 ]] || fail "no threads"
[[ $(threads) -le $all ]] || fail "more threads than CPUs by default"
if command -v taskset >/dev/null; then
  [[ $(threads taskset -c 0) -eq 1 ]] || fail "taskset -c 0 should give one thread"
fi
[[ $(threads SLURM_CPUS_PER_TASK=1) -eq 1 ]] || fail "SLURM_CPUS_PER_TASK=1 should give one thread"
rm -f "$WORK/st.json"
"$BIN" run "$WORK/s.gtd" word-count --top 5 --engine cpu --threads 3 -o "$WORK/out-3" \
  --stats "$WORK/st.json"
grep -q '"threads": 3' "$WORK/st.json" || fail "--threads 3 not honoured"
first=$(ls "$WORK"/out-* | head -1)
for f in "$WORK"/out-*; do cmp -s "$first" "$f" || fail "$f differs"; done
echo "PASS: default threads follow affinity and Slurm's allotment"
