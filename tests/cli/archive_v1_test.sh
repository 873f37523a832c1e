#!/usr/bin/env bash
# Archives of format version 1 (dictionary ids in every shard, written before shard-local word
# ids): tests/data/archive-v1/ was written by a version 1 build from tests/data/archive-v1-src/.
# This build reads it as it reads a version 2 archive: info, verify and decompress (byte-exact),
# and every task on both engines' paths (top-down and bottom-up, normalization, under mpirun
# -np 2 and resident) equal to the raw-text reference; a shard of version 1 under a version 2
# manifest, and a version 3 file, are refused with a clear message.
# Usage: archive_v1_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 REF=$4
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
V1=$SRC/tests/data/archive-v1
IN=$SRC/tests/data/archive-v1-src

"$BIN" info "$V1" --json >info.json || fail "info on a version 1 archive"
grep -q '"format_version": *1' info.json || fail "info does not say version 1: $(cat info.json)"
"$BIN" verify "$V1" >verify.txt || fail "verify on a version 1 archive: $(tail -2 verify.txt)"
"$BIN" decompress "$V1" -o restored >/dev/null || fail "decompress of a version 1 archive"
diff -r "$IN" restored >/dev/null || fail "decompressed version 1 archive differs from its source"

"$BIN" compress "$IN" -o v2.gtd --shards 3 >/dev/null
"$BIN" info v2.gtd --json | grep -q '"format_version": *2' || fail "new archives are not version 2"

CASES=(
  "word-count"
  "word-count --top 9 --lowercase --alnum"
  "sort --lowercase"
  "inverted-index --ids"
  "term-vector --top 0 --min-count 2 --alnum"
  "sequence-count --n 2"
  "sequence-count --n 3 --per-doc --top 4"
  "ranked-inverted-index --n 2 --lowercase"
)
for c in "${CASES[@]}"; do
  # shellcheck disable=SC2086
  "$REF" "$IN" $c >want
  for t in top-down bottom-up; do
    # shellcheck disable=SC2086
    "$BIN" run "$V1" $c --engine cpu --traversal $t -o got --force 2>log ||
      fail "run $c ($t) on version 1: $(tail -1 log)"
    cmp -s want got || fail "version 1: $c ($t) differs from the reference"
  done
  # shellcheck disable=SC2086
  "$BIN" run v2.gtd $c --engine cpu -o got2 --force
  cmp -s want got2 || fail "version 2: $c differs from the reference"
done
if command -v mpirun >/dev/null; then
  "$REF" "$IN" sequence-count --n 2 >want
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 \
    "$BIN" run "$V1" sequence-count --n 2 --engine cpu -o got3 --force 2>log3 ||
    fail "mpirun -np 2 on version 1: $(tail -1 log3)"
  cmp -s want got3 || fail "version 1 under mpirun -np 2 differs from the reference"
fi
if command -v curl >/dev/null; then
  port=$((20000 + RANDOM % 20000))
  "$BIN" serve "$V1" --listen "127.0.0.1:$port" --engine cpu 2>serve.log &
  pid=$!
  trap 'kill $pid 2>/dev/null || true' EXIT
  for _ in $(seq 100); do curl -sf "localhost:$port/healthz" >/dev/null && break; sleep 0.1; done
  curl -sf "localhost:$port/v1/query" -d '{"task": "inverted-index", "format": "tsv"}' >got4 ||
    fail "serve on version 1: $(tail -2 serve.log)"
  "$REF" "$IN" inverted-index >want4
  cmp -s want4 got4 || fail "serve on version 1: inverted-index differs from the reference"
  kill $pid
  wait $pid 2>/dev/null || true
  trap - EXIT
fi

# Mixed versions: a version 1 shard under a version 2 manifest is refused, naming the file.
cp -r v2.gtd mixed.gtd
cp "$V1/shard-00000.h5" mixed.gtd/shard-00000.h5
if "$BIN" run mixed.gtd word-count --engine cpu -o x --force 2>err; then
  fail "a version 1 shard in a version 2 archive was accepted"
fi
grep -q "shard-00000.h5" err || fail "the mixed-version error does not name the shard: $(cat err)"
echo "archive_v1_test: ok"
