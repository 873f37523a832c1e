#!/usr/bin/env bash
# Streamed CPU batches (GTADOC_CPU_BATCH_SYMBOLS): a query of the CPU engine whose shards run in
# many small batches, each dropped before the next shards load (their arrays reused by the next
# reads), gives for every task exactly the raw-text reference's output, on one and two threads
# and under mpirun -np 2; the log shows the batches.
# Usage: cpu_batches_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 REF=$4
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=tests/lib/corpus.sh
source "$SRC/tests/lib/corpus.sh"
make_test_corpus
"$BIN" compress in -o c.gtd --shards 12 >/dev/null

CASES=("${EVERY_TASK_CASES[@]}")
for c in "${CASES[@]}"; do
  # shellcheck disable=SC2086
  "$REF" in $c >want
  for threads in 1 2; do
    # shellcheck disable=SC2086
    GTADOC_CPU_BATCH_SYMBOLS=1 "$BIN" -vv run c.gtd $c --engine cpu --threads $threads -o got \
      --force 2>log
    batches=$(grep -c "shards of [0-9]* symbols run as a batch" log || true)
    # 12 shards, a batch due at every 4 x threads loaded: 3 batches on one thread, 1 on two (the
    # other 4 shards run at the end).
    [[ $batches -eq $((12 / (4 * threads))) ]] || fail "$c, $threads threads: $batches batches"
    cmp -s want got || fail "$c, $threads threads, in batches: differs from the reference"
  done
  if command -v mpirun >/dev/null; then
    # shellcheck disable=SC2086
    GTADOC_CPU_BATCH_SYMBOLS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      mpirun --oversubscribe -np 2 -x GTADOC_CPU_BATCH_SYMBOLS "$BIN" run c.gtd $c --engine cpu \
      --threads 1 -o got2 --force 2>log2 || fail "mpirun -np 2 $c: $(tail -1 log2)"
    cmp -s want got2 || fail "mpirun -np 2 $c, in batches: differs from the reference"
  fi
done
# The default leaves a small archive in one batch at the end.
"$BIN" -vv run c.gtd word-count --engine cpu --threads 1 -o got --force 2>log
! grep -q "run as a batch" log || fail "the default ran the 12 small shards in batches"
# A bad value: exit 2 with a message naming the variable, no output file.
rm -f bad
rc=0
GTADOC_CPU_BATCH_SYMBOLS=0 "$BIN" run c.gtd word-count --engine cpu -o bad 2>log || rc=$?
[[ $rc -eq 2 ]] || fail "GTADOC_CPU_BATCH_SYMBOLS=0: exit $rc, expected 2"
grep -q "GTADOC_CPU_BATCH_SYMBOLS" log || fail "GTADOC_CPU_BATCH_SYMBOLS=0: the error does not name it"
[[ ! -e bad ]] && [[ -z $(find . -maxdepth 1 -name 'bad.tmp-*') ]] || fail "a refused run left a file"
echo "PASS: ${#CASES[@]} tasks in streamed CPU batches equal the reference"
