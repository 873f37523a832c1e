#!/usr/bin/env bash
# Document-range pieces (docs/REFERENCE.md §7): shards loaded as pieces of a few thousand
# symbols (GTADOC_MAX_PIECE_SYMBOLS) give, for every task, exactly the raw-text reference's
# output, streaming (gtadoc run) and resident (gtadoc serve), on one rank and under mpirun -np 2.
# Usage: pieces_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 REF=$4
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
# A corpus with many documents per shard: a slice of the bundled sample plus edge documents.
mkdir in
cp -r "$SRC/data/sample/faq" "$SRC/data/sample/howto" in/
printf '' > in/empty.txt
printf 'one\n' > in/one-word.txt
printf 'a b a b a b a b\n\n\ta b\n' > in/repeats.txt
"$BIN" compress in -o c.gtd --shards 2 >/dev/null

# shellcheck source=tests/lib/corpus.sh
source "$SRC/tests/lib/corpus.sh"
CASES=("${EVERY_TASK_CASES[@]}")
pieces_seen=0
for c in "${CASES[@]}"; do
  # shellcheck disable=SC2086
  "$REF" in $c >want
  # shellcheck disable=SC2086
  GTADOC_MAX_PIECE_SYMBOLS=3000 "$BIN" -v run c.gtd $c --engine cpu -o got --force 2>log
  grep -q "document-range pieces" log && pieces_seen=$((pieces_seen + 1))
  cmp -s want got || fail "pieces: $c differs from the reference"
  if command -v mpirun >/dev/null; then
    # shellcheck disable=SC2086
    GTADOC_MAX_PIECE_SYMBOLS=3000 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      mpirun --oversubscribe -np 2 -x GTADOC_MAX_PIECE_SYMBOLS "$BIN" run c.gtd $c --engine cpu \
      -o got2 --force 2>log2 || fail "mpirun -np 2 $c: $(tail -1 log2)"
    cmp -s want got2 || fail "pieces under mpirun -np 2: $c differs from the reference"
  fi
done
[[ $pieces_seen -eq ${#CASES[@]} ]] || fail "only $pieces_seen runs loaded pieces"

# Resident: the service loads the pieces once and answers from them.
if command -v curl >/dev/null; then
  # shellcheck source=tests/serve/lib.sh
  source "$SRC/tests/serve/lib.sh"  # listening_port: the port the service chose, up to 60 s
  : >serve.log
  GTADOC_MAX_PIECE_SYMBOLS=3000 "$BIN" -v serve c.gtd --listen 127.0.0.1:0 --engine cpu \
    2>serve.log &
  pid=$!
  trap 'kill $pid 2>/dev/null || true' EXIT
  port=$(listening_port serve.log "$pid" serve) || exit 1
  grep -q "document-range pieces" serve.log || fail "serve did not load pieces"
  curl -sf "localhost:$port/v1/query" -d '{"task": "inverted-index", "format": "tsv"}' >got3
  "$REF" in inverted-index >want3
  cmp -s want3 got3 || fail "serve over pieces: inverted-index differs from the reference"
  curl -sf "localhost:$port/v1/query" -d '{"task": "sequence-count", "n": 2, "format": "tsv"}' >got4
  "$REF" in sequence-count --n 2 >want4
  cmp -s want4 got4 || fail "serve over pieces: sequence-count differs from the reference"
  kill "$pid" && wait "$pid" || true
fi
echo "pieces: every task equals the reference (${#CASES[@]} cases)"
