#!/usr/bin/env bash
# MPI end to end, run by CTest once per rank count: compress under mpirun, then every task on
# that archive under mpirun must equal the raw-text reference byte for byte (ranks writing their
# ranges through mappings and with pwrite); --partitioned parts must add up to the same rows; a
# rank that throws or dies stops the job with a message naming it and leaves no output behind.
# Usage: run_test.sh GTADOC SOURCE_DIR SCRATCH NP REFERENCE
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 NP=$4 REF=$5
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
MPIRUN=(mpirun --oversubscribe -np "$NP")
rm -rf "$WORK" && mkdir -p "$WORK/in"
fail() { echo "FAIL: $*" >&2; exit 1; }

# Corpus: part of the bundled real sample plus a few adversarial documents.
# shellcheck source=tests/lib/corpus.sh
source "$(dirname "$0")/../lib/corpus.sh"
make_test_corpus

"${MPIRUN[@]}" "$BIN" compress "$WORK/in" -o "$WORK/c.gtd" --shards 7 --threads 1
[[ -f $WORK/c.gtd/manifest.h5 ]] || fail "compress under mpirun wrote no manifest"
"$BIN" decompress "$WORK/c.gtd" -o "$WORK/round" && diff -r "$WORK/in" "$WORK/round" ||
  fail "round trip after MPI compress"

cases=(
  "word-count"
  "word-count --top 5 --lowercase"
  "sort --alnum"
  "inverted-index"
  "inverted-index --ids --lowercase --alnum"
  "term-vector"
  "term-vector --top 0 --min-count 2"
  "sequence-count"
  "sequence-count --n 2 --top 9"
  "sequence-count --n 4 --per-doc --top 2 --alnum"
  "ranked-inverted-index"
  "ranked-inverted-index --n 2 --lowercase"
)
traversals=(top-down bottom-up auto)
k=0
for c in "${cases[@]}"; do
  for fmt in tsv json; do
    t=${traversals[$((k % 3))]}; k=$((k + 1))
    # shellcheck disable=SC2086
    "$REF" "$WORK/in" $c --format "$fmt" > "$WORK/want"
    rm -f "$WORK/got"
    # shellcheck disable=SC2086
    # Every other case renders each rank's range straight into a mapping of the file
    # (formats/output_mapping.h; forced: these results are below its size threshold, and the
    # scratch directory need not be tmpfs).
    map_min=8m; [[ $((k % 2)) -eq 0 ]] && map_min=0
    GTADOC_OUTPUT_MAP=all GTADOC_OUTPUT_MAP_MIN_BYTES=$map_min \
      "${MPIRUN[@]}" -x GTADOC_OUTPUT_MAP -x GTADOC_OUTPUT_MAP_MIN_BYTES "$BIN" run \
      "$WORK/c.gtd" $c --format "$fmt" --engine cpu --traversal "$t" --threads 1 -o "$WORK/got"
    cmp -s "$WORK/want" "$WORK/got" || { diff "$WORK/want" "$WORK/got" | head -20; fail "np=$NP: $c --format $fmt --traversal $t"; }
  done
done

# A count-ordered --top of at most 65536 rows sends each rank's first K rows to rank 0; larger
# ones, and every --top with GTADOC_TOP_TO_ROOT=0, exchange ranges by sampled splitters. Both
# against the reference, with cuts inside runs of equal counts.
for c in "word-count --top 44" "word-count --top 70000 --lowercase" "sequence-count --n 3 --top 25"; do
  # shellcheck disable=SC2086
  "$REF" "$WORK/in" $c > "$WORK/want"
  for to_root in 1 0; do
    rm -f "$WORK/got"
    # shellcheck disable=SC2086
    GTADOC_TOP_TO_ROOT=$to_root "${MPIRUN[@]}" -x GTADOC_TOP_TO_ROOT "$BIN" run "$WORK/c.gtd" $c \
      --engine cpu --threads 1 -o "$WORK/got"
    cmp -s "$WORK/want" "$WORK/got" || fail "np=$NP: $c with GTADOC_TOP_TO_ROOT=$to_root"
  done
done

# --partitioned: one part per rank plus _SUCCESS; for every task the TSV parts, concatenated in
# part order, are the one-file result (ranks hold consecutive ranges of the global order, and
# --top is global); each JSON part is a complete array of its slice.
for c in "sort" "word-count" "word-count --top 7" "inverted-index" "term-vector" \
  "sequence-count --n 2 --top 11" "sequence-count --per-doc --top 2" "ranked-inverted-index --n 2"; do
  rm -rf "$WORK/parts"
  # shellcheck disable=SC2086
  GTADOC_OUTPUT_MAP=all GTADOC_OUTPUT_MAP_MIN_BYTES=0 \
    "${MPIRUN[@]}" -x GTADOC_OUTPUT_MAP -x GTADOC_OUTPUT_MAP_MIN_BYTES "$BIN" run \
    "$WORK/c.gtd" $c --engine cpu --partitioned -o "$WORK/parts/"
  [[ -f $WORK/parts/_SUCCESS ]] || fail "no _SUCCESS for $c"
  [[ $(ls "$WORK/parts" | grep -c '^part-') -eq $NP ]] || fail "expected $NP parts for $c"
  # shellcheck disable=SC2086
  "$REF" "$WORK/in" $c > "$WORK/want"
  cat "$WORK"/parts/part-*.tsv | cmp -s - "$WORK/want" || fail "parts of $c do not concatenate to the result"
done
rm -rf "$WORK/parts"
"${MPIRUN[@]}" "$BIN" run "$WORK/c.gtd" term-vector --format json --engine cpu --partitioned \
  -o "$WORK/parts"
for part in "$WORK"/parts/part-*.json; do  # "[\n" rows joined by ",\n" "\n]\n", or "[\n]\n"
  [[ $(head -n 1 "$part") == "[" && $(tail -n 1 "$part") == "]" ]] || fail "$part is not a JSON array"
done
cat "$WORK"/parts/part-*.json | grep -c '^{"doc":' | grep -qx "$("$REF" "$WORK/in" term-vector | wc -l)" ||
  fail "JSON parts do not hold every term-vector row"

# A result on tmpfs (mapped by default where 8 threads or more write it; forced here with
# GTADOC_OUTPUT_MAP=all, and below the size threshold): each rank renders its range straight into
# the mapping, one file and parts. By default fewer threads (the ranks' together) write it.
SHM=$(mktemp -d /dev/shm/gtadoc-mpi-test.XXXXXX 2>/dev/null || true)
# (Only where /dev/shm has room: a tmpfs is mapped with room for the file plus 64 MiB.)
if [[ -n $SHM && $(stat -f -c %T "$SHM") == tmpfs &&
  $(df -B1 --output=avail "$SHM" | tail -1) -gt $((128 << 20)) ]]; then
  for c in "inverted-index" "sequence-count --n 2" "word-count --top 7"; do
    for fmt in tsv json; do
      # shellcheck disable=SC2086
      "$REF" "$WORK/in" $c --format "$fmt" > "$WORK/want"
      # shellcheck disable=SC2086
      GTADOC_OUTPUT_MAP_MIN_BYTES=0 GTADOC_OUTPUT_MAP=all "${MPIRUN[@]}" \
        -x GTADOC_OUTPUT_MAP_MIN_BYTES -x GTADOC_OUTPUT_MAP "$BIN" -vv run \
        "$WORK/c.gtd" $c --format "$fmt" --engine cpu -o "$SHM/got" --force 2>"$WORK/err"
      cmp -s "$WORK/want" "$SHM/got" || { rm -rf "$SHM"; fail "np=$NP: $c --format $fmt on tmpfs"; }
      grep -q "through a mapping (tmpfs)" "$WORK/err" ||
        { rm -rf "$SHM"; fail "np=$NP: $c was not written through a mapping on tmpfs"; }
    done
  done
  GTADOC_OUTPUT_MAP_MIN_BYTES=0 "${MPIRUN[@]}" -x GTADOC_OUTPUT_MAP_MIN_BYTES "$BIN" -vv run \
    "$WORK/c.gtd" inverted-index --engine cpu --threads 1 -o "$SHM/got" --force 2>"$WORK/err"
  "$REF" "$WORK/in" inverted-index > "$WORK/want"
  cmp -s "$WORK/want" "$SHM/got" || { rm -rf "$SHM"; fail "np=$NP: inverted-index on tmpfs"; }
  grep -q "written (tmpfs, fewer than 8 writers)" "$WORK/err" ||
    { rm -rf "$SHM"; fail "np=$NP: one thread a rank wrote through a mapping on tmpfs"; }
  GTADOC_OUTPUT_MAP_MIN_BYTES=0 GTADOC_OUTPUT_MAP=all "${MPIRUN[@]}" -x GTADOC_OUTPUT_MAP_MIN_BYTES \
    -x GTADOC_OUTPUT_MAP "$BIN" run "$WORK/c.gtd" sort --engine cpu --partitioned -o "$SHM/parts"
  "$REF" "$WORK/in" sort > "$WORK/want"
  cat "$SHM"/parts/part-*.tsv | cmp -s - "$WORK/want" || { rm -rf "$SHM"; fail "sort parts on tmpfs"; }
fi
[[ -z $SHM ]] || rm -rf "$SHM"

# Standard output under several ranks (no -o, or -o -): rank 0 prints every rank's bytes in
# rank order.
for c in "word-count --top 9" "ranked-inverted-index --n 2 -o -"; do
  # shellcheck disable=SC2086
  "${MPIRUN[@]}" "$BIN" run "$WORK/c.gtd" $c --engine cpu > "$WORK/got"
  # shellcheck disable=SC2086
  "$REF" "$WORK/in" ${c% -o -} | cmp -s - "$WORK/got" || fail "np=$NP: $c on standard output"
done

# Failures: a rank that throws, and (with 2+ ranks) a rank killed mid-job. Which rank holds
# which shard is the pipeline's business, so try shards until the injected rank has one.
inject() {  # inject RANK MODE -> sets rc
  local r=$1 mode=$2 s
  for s in 0 1 2 3 4 5 6; do
    rm -f "$WORK/got"
    set +e
    GTADOC_FAULT_INJECT="$r:$s:$mode" timeout 120 "${MPIRUN[@]}" -x GTADOC_FAULT_INJECT "$BIN" run \
      "$WORK/c.gtd" word-count --engine cpu -o "$WORK/got" 2> "$WORK/err"
    rc=$?
    set -e
    [[ $rc -ne 0 ]] && return 0
  done
  return 0
}
inject $((NP - 1)) throw
[[ $rc -ne 0 ]] || fail "injected failure did not fail the job"
grep -q "shard [0-9]* (shard-000" "$WORK/err" || { cat "$WORK/err"; fail "failure message names no shard"; }
[[ $(grep -c "error" "$WORK/err") -eq 1 ]] || { cat "$WORK/err"; fail "expected one error line"; }
[[ ! -e $WORK/got ]] || fail "output written despite a failed rank"
[[ -z $(ls "$WORK" | grep '\.tmp-') ]] || fail "temporary output left behind"

inject $((NP - 1)) segv
[[ $rc -ne 0 && $rc -ne 124 ]] || { cat "$WORK/err"; fail "crashing rank did not stop the job (rc=$rc)"; }
grep -q "shard [0-9]* (shard-000.*crashed with signal 11" "$WORK/err" || { cat "$WORK/err"; fail "crash message names no shard"; }
[[ ! -e $WORK/got ]] || fail "output written despite a crashed rank"

if [[ $NP -ge 2 ]]; then
  inject 1 kill
  [[ $rc -ne 0 && $rc -ne 124 ]] || { cat "$WORK/err"; fail "killed rank did not stop the job cleanly (rc=$rc)"; }
  grep -qi "rank 1" "$WORK/err" || { cat "$WORK/err"; fail "no message names the killed rank"; }
  [[ ! -e $WORK/got ]] || fail "output written despite a killed rank"
fi
# Every rank on one node: Open MPI's shared-memory transport (pml ob1) unless a pml was chosen
# (GTADOC_MPI_PML=default, or mpirun --mca pml); the answers do not depend on the transport.
"${MPIRUN[@]}" "$BIN" run "$WORK/c.gtd" inverted-index --engine cpu -o "$WORK/pml-ob1" -vv \
  2> "$WORK/err"
grep -q "shared-memory transport (pml ob1" "$WORK/err" || { cat "$WORK/err"; fail "no pml chosen"; }
"${MPIRUN[@]}" -x GTADOC_MPI_PML=default "$BIN" run "$WORK/c.gtd" inverted-index --engine cpu \
  -o "$WORK/pml-default" -vv 2> "$WORK/err"
! grep -q "pml ob1" "$WORK/err" || fail "GTADOC_MPI_PML=default: the pml was still chosen"
"${MPIRUN[@]}" --mca pml ob1 "$BIN" run "$WORK/c.gtd" inverted-index --engine cpu -o "$WORK/pml-own" \
  -vv 2> "$WORK/err"
! grep -q "transport (pml ob1" "$WORK/err" || fail "mpirun --mca pml: the user's pml was overridden"
cmp "$WORK/pml-ob1" "$WORK/pml-default" && cmp "$WORK/pml-ob1" "$WORK/pml-own" ||
  fail "answers differ between MPI transports"

echo "PASS: np=$NP"
