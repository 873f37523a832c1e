#!/usr/bin/env bash
# `gtadoc run` progress (docs/REFERENCE.md §2 --progress): quiet when standard error is not a
# terminal; --progress shows shards loaded and traversed and bytes written, one final line per
# stage, on rank 0 only under mpirun; the result is the same with and without it.
# Usage: progress_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$BIN" compress "$SRC/data/sample" -o "$WORK/s.gtd" --shards 3 2>/dev/null

"$BIN" run "$WORK/s.gtd" inverted-index -o "$WORK/quiet.tsv" 2>"$WORK/quiet.err"
[[ ! -s $WORK/quiet.err ]] || { cat "$WORK/quiet.err"; fail "progress without a terminal and without --progress"; }

"$BIN" run "$WORK/s.gtd" inverted-index -o "$WORK/shown.tsv" --progress 2>"$WORK/shown.err"
cmp -s "$WORK/quiet.tsv" "$WORK/shown.tsv" || fail "--progress changed the result"
for stage in "loading: 100.0% (3/3 shards" "traversing: 100.0% (3/3 shards" \
  "writing: 100.0% ($(stat -c %s "$WORK/shown.tsv")/$(stat -c %s "$WORK/shown.tsv") bytes"; do
  [[ $(grep -cF "$stage" "$WORK/shown.err") -eq 1 ]] || { cat "$WORK/shown.err"; fail "no final line '$stage'"; }
done
grep -q $'\r' "$WORK/shown.err" && fail "carriage returns in progress written to a file"

if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  mpirun --oversubscribe -np 2 "$BIN" run "$WORK/s.gtd" sort -o "$WORK/np2.tsv" --progress \
    2>"$WORK/np2.err" </dev/null
  "$BIN" run "$WORK/s.gtd" sort | cmp -s - "$WORK/np2.tsv" || fail "np=2 --progress: result differs"
  for label in loading traversing "writing (rank 0's part)"; do
    [[ $(grep -c "^$label: 100.0%" "$WORK/np2.err") -eq 1 ]] ||
      { cat "$WORK/np2.err"; fail "np=2: expected one final '$label' line, from rank 0 only"; }
  done
fi
echo "PASS: progress"
