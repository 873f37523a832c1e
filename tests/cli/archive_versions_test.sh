#!/usr/bin/env bash
# Archives of older format versions, written by those builds from tests/data/archive-v1-src/:
# tests/data/archive-v1/ (version 1: dictionary ids in every shard) and tests/data/archive-v2/
# (version 2: shard-local word ids, symbols shuffled and deflated with boundaries as they are in
# memory). This build (version 3: symbols packed by HDF5's N-bit filter) reads both as it reads
# its own: info, verify and decompress (byte-exact), and every task on both engines' paths
# (top-down and bottom-up, normalization, under mpirun -np 2 and resident) equal to the raw-text
# reference; a shard of another version than its manifest is refused with a clear message.
# Usage: archive_versions_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 REF=$4
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
IN=$SRC/tests/data/archive-v1-src

for v in 1 2; do
  old=$SRC/tests/data/archive-v$v
  "$BIN" info "$old" --json >info.json || fail "info on a version $v archive"
  grep -q "\"format_version\": *$v" info.json ||
    fail "info does not say version $v: $(cat info.json)"
  "$BIN" verify "$old" >verify.txt || fail "verify on a version $v archive: $(tail -2 verify.txt)"
  rm -rf restored
  "$BIN" decompress "$old" -o restored >/dev/null || fail "decompress of a version $v archive"
  diff -r "$IN" restored >/dev/null || fail "decompressed version $v archive differs from its source"
done

"$BIN" compress "$IN" -o v3.gtd --shards 3 >/dev/null
"$BIN" info v3.gtd --json | grep -q '"format_version": *3' || fail "new archives are not version 3"
"$BIN" verify v3.gtd >/dev/null || fail "verify on a new archive"

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
  for v in 1 2; do
    for t in top-down bottom-up; do
      # shellcheck disable=SC2086
      "$BIN" run "$SRC/tests/data/archive-v$v" $c --engine cpu --traversal $t -o got --force \
        2>log || fail "run $c ($t) on version $v: $(tail -1 log)"
      cmp -s want got || fail "version $v: $c ($t) differs from the reference"
    done
  done
  # shellcheck disable=SC2086
  "$BIN" run v3.gtd $c --engine cpu -o got3 --force
  cmp -s want got3 || fail "version 3: $c differs from the reference"
done
if command -v mpirun >/dev/null; then
  "$REF" "$IN" sequence-count --n 2 >want
  for v in 1 2; do
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 \
      "$BIN" run "$SRC/tests/data/archive-v$v" sequence-count --n 2 --engine cpu -o got3 \
      --force 2>log3 || fail "mpirun -np 2 on version $v: $(tail -1 log3)"
    cmp -s want got3 || fail "version $v under mpirun -np 2 differs from the reference"
  done
fi
if command -v curl >/dev/null; then
  # shellcheck source=tests/serve/lib.sh
  source "$SRC/tests/serve/lib.sh"  # listening_port: the port the service chose, up to 60 s
  "$REF" "$IN" inverted-index >want4
  for v in 1 2; do
    : >serve.log
    "$BIN" serve "$SRC/tests/data/archive-v$v" --listen 127.0.0.1:0 --engine cpu 2>serve.log &
    pid=$!
    trap 'kill $pid 2>/dev/null || true' EXIT
    port=$(listening_port serve.log "$pid" "serve on version $v") || exit 1
    curl -sf "localhost:$port/v1/query" -d '{"task": "inverted-index", "format": "tsv"}' >got4 ||
      fail "serve on version $v: $(tail -2 serve.log)"
    cmp -s want4 got4 || fail "serve on version $v: inverted-index differs from the reference"
    kill $pid
    wait $pid 2>/dev/null || true
    trap - EXIT
  done
fi

# Mixed versions: a version 1 or 2 shard under a version 3 manifest is refused, naming the file.
for v in 1 2; do
  rm -rf mixed.gtd
  cp -r v3.gtd mixed.gtd
  cp "$SRC/tests/data/archive-v$v/shard-00000.h5" mixed.gtd/shard-00000.h5
  if "$BIN" run mixed.gtd word-count --engine cpu -o x --force 2>err; then
    fail "a version $v shard in a version 3 archive was accepted"
  fi
  grep -q "shard-00000.h5" err || fail "the mixed-version error does not name the shard: $(cat err)"
done
echo "archive_versions_test: ok"
