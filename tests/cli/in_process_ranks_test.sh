#!/usr/bin/env bash
# Ranks that are threads of one process (`gtadoc run --gpus N` on a machine with N GPUs;
# the service's are tests/serve/serve_mpi_test.sh local3;
# GTADOC_LOCAL_RANKS=N, the same ranks with any engine, here the CPU engine): every task at 1-4
# ranks equals the raw-text reference byte for byte (one file through pwrite and through a
# mapping, standard output, --partitioned parts); a rank that throws stops the others with one
# error line and nothing left behind; --gpus's bad values, --engine cpu, more GPUs than are
# visible and a launcher are refused with a clear message.
# Usage: in_process_ranks_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 REF=$4
rm -rf "$WORK" && mkdir -p "$WORK/in"
fail() { echo "FAIL: $*" >&2; exit 1; }

# The corpus of tests/mpi/run_test.sh: part of the sample plus adversarial documents.
# shellcheck source=tests/lib/corpus.sh
source "$(dirname "$0")/../lib/corpus.sh"
make_test_corpus
"$BIN" compress "$WORK/in" -o "$WORK/c.gtd" --shards 7 --threads 2 >/dev/null

cases=(
  "word-count"
  "word-count --top 5 --lowercase"
  "sort --alnum"
  "inverted-index --ids"
  "term-vector --top 0 --min-count 2"
  "sequence-count --n 2 --top 9"
  "sequence-count --n 4 --per-doc --top 2 --alnum"
  "ranked-inverted-index"
)
for np in 1 2 3 4; do
  k=0
  for c in "${cases[@]}"; do
    fmt=tsv; [[ $((k % 3)) -eq 2 ]] && fmt=json
    map_min=8m; [[ $((k % 2)) -eq 0 ]] && map_min=0
    k=$((k + 1))
    # shellcheck disable=SC2086
    "$REF" "$WORK/in" $c --format "$fmt" > "$WORK/want"
    rm -f "$WORK/got"
    # shellcheck disable=SC2086
    GTADOC_LOCAL_RANKS=$np GTADOC_OUTPUT_MAP=all GTADOC_OUTPUT_MAP_MIN_BYTES=$map_min "$BIN" run \
      "$WORK/c.gtd" $c --format "$fmt" --engine cpu --threads 1 -o "$WORK/got"
    cmp -s "$WORK/want" "$WORK/got" ||
      { diff "$WORK/want" "$WORK/got" | head -20; fail "ranks=$np: $c --format $fmt"; }
  done
  # Standard output: rank 0 prints every rank's bytes in rank order.
  GTADOC_LOCAL_RANKS=$np "$BIN" run "$WORK/c.gtd" inverted-index --engine cpu > "$WORK/got"
  "$REF" "$WORK/in" inverted-index | cmp -s - "$WORK/got" || fail "ranks=$np: standard output"
  # Parts: one per rank, concatenating to the one-file result.
  rm -rf "$WORK/parts"
  GTADOC_LOCAL_RANKS=$np "$BIN" run "$WORK/c.gtd" word-count --top 7 --engine cpu --partitioned \
    -o "$WORK/parts"
  [[ -f $WORK/parts/_SUCCESS && $(ls "$WORK/parts" | grep -c '^part-') -eq $np ]] ||
    fail "ranks=$np: expected $np parts and _SUCCESS"
  "$REF" "$WORK/in" word-count --top 7 | cmp -s - <(cat "$WORK"/parts/part-*.tsv) ||
    fail "ranks=$np: parts do not concatenate to the result"
done

# The ranks say who they are, the statistics count them, and the shuffle says how it moved.
GTADOC_LOCAL_RANKS=3 "$BIN" -v run "$WORK/c.gtd" sequence-count --engine cpu -o "$WORK/seq" \
  --stats "$WORK/st.json" 2> "$WORK/err"
grep -q "^gtadoc \[rank 2\]: info: shard" "$WORK/err" || { cat "$WORK/err"; fail "no rank 2 log line"; }
grep -q '"ranks": 3' "$WORK/st.json" || { cat "$WORK/st.json"; fail "stats do not count 3 ranks"; }
grep -q "shuffle: this process's memory" "$WORK/err" || { cat "$WORK/err"; fail "shuffle not said"; }
"$REF" "$WORK/in" sequence-count | cmp -s - "$WORK/seq" || fail "sequence-count with --stats"

# Faults injected into rank 2 of 3 (which rank holds which shard is the pipeline's business:
# shards are tried until rank 2 holds one); sets rc and s, the shard that failed.
inject() {  # inject MODE
  for s in 0 1 2 3 4 5 6; do
    rm -f "$WORK/got"
    set +e
    GTADOC_LOCAL_RANKS=3 GTADOC_FAULT_INJECT="2:$s:$1" timeout 60 "$BIN" run "$WORK/c.gtd" \
      word-count --engine cpu -o "$WORK/got" 2> "$WORK/err"
    rc=$?
    set -e
    [[ $rc -ne 0 ]] && return 0
  done
}
# A rank that throws: one error line naming the shard, no output, no debris.
inject throw
[[ $rc -ne 0 && $rc -ne 124 ]] || fail "an injected failure did not fail the run (rc=$rc)"
grep -q "shard [0-9]* (shard-000" "$WORK/err" || { cat "$WORK/err"; fail "the message names no shard"; }
[[ $(grep -c "error" "$WORK/err") -eq 1 ]] || { cat "$WORK/err"; fail "expected one error line"; }
[[ ! -e $WORK/got ]] || fail "output written despite a failed rank"
[[ -z $(ls -A "$WORK" | grep '\.tmp-') ]] || fail "temporary output left behind"
# A rank that crashes (SIGSEGV) ends the process: the message names that rank and its shard.
inject segv 2> /dev/null  # (bash's own "Segmentation fault" line)
[[ $rc -ne 0 && $rc -ne 124 ]] || fail "an injected crash did not end the run (rc=$rc)"
grep -q "rank 2: shard $s (shard-0000$s.h5).*crashed with signal 11" "$WORK/err" ||
  { cat "$WORK/err"; fail "the crash message does not name rank 2 and shard $s"; }
[[ ! -e $WORK/got ]] || fail "output written despite a crashed rank"
# A failure every rank meets (the output exists): one rank's message and exit code, said once.
touch "$WORK/exists"
set +e
"$BIN" run "$WORK/c.gtd" word-count --engine cpu -o "$WORK/exists" 2> "$WORK/err1"
want=$?
GTADOC_LOCAL_RANKS=4 "$BIN" run "$WORK/c.gtd" word-count --engine cpu -o "$WORK/exists" 2> "$WORK/err"
rc=$?
set -e
[[ $rc -eq $want && $rc -ne 0 ]] || fail "an existing output: exit $rc at 4 ranks, $want at one"
[[ $(wc -l < "$WORK/err") -eq 1 ]] && grep -qF "$(sed 's/^gtadoc: error: //' "$WORK/err1")" "$WORK/err" ||
  { cat "$WORK/err"; fail "not one line with one rank's message"; }
[[ ! -s $WORK/exists ]] || fail "the existing output was changed"

# --gpus: clear refusals.
expect() {  # expect CODE PATTERN ARGS... (run with the arguments, no GPU needed for these)
  local code=$1 pattern=$2
  shift 2
  set +e
  "$@" > "$WORK/out" 2> "$WORK/err"
  local rc=$?
  set -e
  [[ $rc -eq $code ]] || { cat "$WORK/err"; fail "exit $rc, expected $code: $*"; }
  grep -q -- "$pattern" "$WORK/err" || { cat "$WORK/err"; fail "no '$pattern' from: $*"; }
  [[ ! -e $WORK/never ]] || fail "output written by a refused run: $*"
}
expect 2 "'0' is not all or an integer from 1 to 64" "$BIN" run "$WORK/c.gtd" word-count --gpus 0 -o "$WORK/never"
expect 2 "'x' is not all or an integer" "$BIN" run "$WORK/c.gtd" word-count --gpus x -o "$WORK/never"
expect 2 "GTADOC_LOCAL_RANKS: '65' is not" env GTADOC_LOCAL_RANKS=65 "$BIN" run "$WORK/c.gtd" word-count -o "$WORK/never"
expect 2 "with --engine cpu: the CPU engine uses the cores" \
  "$BIN" run "$WORK/c.gtd" word-count --gpus 2 --engine cpu -o "$WORK/never"
expect 2 "with --engine cpu: the CPU engine uses the cores" \
  "$BIN" serve "$WORK/c.gtd" --gpus 2 --engine cpu --listen 127.0.0.1:0
if [[ ! -d /proc/driver/nvidia/gpus ]]; then  # no GPU here (CI): --gpus is refused
  expect 3 "--gpus 2: 0 GPUs are visible" "$BIN" run "$WORK/c.gtd" word-count --gpus 2 -o "$WORK/never"
  expect 3 "--gpus all: no GPU is visible" "$BIN" run "$WORK/c.gtd" word-count --gpus all -o "$WORK/never"
else  # more than are visible
  expect 3 "--gpus 64: " "$BIN" run "$WORK/c.gtd" word-count --gpus 64 -o "$WORK/never"
fi
if command -v mpirun >/dev/null; then
  expect 2 "GTADOC_LOCAL_RANKS: under a launcher" env OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 1 -x GTADOC_LOCAL_RANKS=2 "$BIN" run "$WORK/c.gtd" \
    word-count --engine cpu -o "$WORK/never"
fi
echo "PASS"
