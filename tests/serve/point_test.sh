#!/usr/bin/env bash
# Point queries (`POST /v1/query` with "words"): every task that takes the filter, answered from
# the search indexes (GTADOC_POINT_LOOKUP=index), by a traversal (=traversal) and as the service
# chooses (=auto), equal byte for byte to the raw-text reference's output filtered with awk:
# words present, absent, repeated, at document starts and ends, normalized, with --top, --ids,
# --per-doc, n from 2 to 5, with a "docs" filter beside; one process, shards resident as
# document-range pieces, and under mpirun -np 2. The n-gram tasks on words held by every
# document (under auto, the GPU engine's service traverses for them): the same bytes.
# Usage: point_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE [ENGINE]. Needs curl (exit 77 without).
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 REF=$4 ENGINE=${5:-cpu}
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
# shellcheck source=tests/serve/lib.sh
source "$SRC/tests/serve/lib.sh"
serve_setup
# shellcheck source=tests/lib/corpus.sh
source "$SRC/tests/lib/corpus.sh"
make_test_corpus
printf 'the end of it\nof the end the\n' > "$WORK/in/ends"
"$BIN" compress "$WORK/in" -o "$WORK/a.gtd" --shards 4 --threads 2 2>/dev/null

query() {  # query URL BODY OUT: POSTs BODY to URL/v1/query; prints the status code
  curl -sS --max-time 120 -o "$3" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "$2" "$1/v1/query" || echo 000
}
lines() { echo "$*"; }  # a set of words, separated by spaces
# The words of a row's key, for the awk programs: word tasks' first field; term-vector's and
# ranked-inverted-index's lists filtered; n-grams' words.
by_word='$1 in S'
ngram='any_word($1)'
ngram_per_doc='any_word($2)'
vector='{ m = split($2, p, " "); r = ""; for (i = 1; i <= m; i++) { w = p[i]; sub(/:[0-9]+$/, "", w); if (w in S) r = r (r == "" ? "" : " ") p[i] }; print $1 "\t" r }'
# Cases (one line each): NAME | request fields | the words S (after normalization) | awk | reference args
W=$(lines the of same alpha end zzz-absent)
Wjson='"the", "of", "same", "alpha", "end", "zzz-absent", "the"'
cases=(
  "word-count|\"task\": \"word-count\", \"words\": [$Wjson]|$W|$by_word|word-count"
  "word-count top|\"task\": \"word-count\", \"top\": 2, \"words\": [$Wjson]|$W|($by_word) && ++c <= 2|word-count"
  "word-count norm|\"task\": \"word-count\", \"lowercase\": true, \"alnum\": true, \"words\": [\"(The\", \"TEXT\", \"same.\"]|$(lines the text same)|$by_word|word-count --lowercase --alnum"
  "word-count lowercase|\"task\": \"word-count\", \"lowercase\": true, \"words\": [\"TEXT,\", \"two\"]|$(lines text, two)|$by_word|word-count --lowercase"
  "sort|\"task\": \"sort\", \"words\": [$Wjson]|$W|$by_word|sort"
  "inverted-index|\"task\": \"inverted-index\", \"words\": [$Wjson]|$W|$by_word|inverted-index"
  "inverted-index ids norm|\"task\": \"inverted-index\", \"ids\": true, \"alnum\": true, \"words\": [\"same\", \"b\"]|$(lines same b)|$by_word|inverted-index --ids --alnum"
  "term-vector|\"task\": \"term-vector\", \"top\": 0, \"words\": [$Wjson]|$W|$vector|term-vector --top 0"
  "term-vector norm|\"task\": \"term-vector\", \"top\": 0, \"lowercase\": true, \"alnum\": true, \"words\": [\"Text\", \"SAME\"]|$(lines text same)|$vector|term-vector --top 0 --lowercase --alnum"
  "sequence-count n 2|\"task\": \"sequence-count\", \"n\": 2, \"words\": [$Wjson]|$W|$ngram|sequence-count --n 2"
  "sequence-count n 3 norm|\"task\": \"sequence-count\", \"n\": 3, \"lowercase\": true, \"words\": [\"TEXT\", \"the\"]|$(lines text the)|$ngram|sequence-count --n 3 --lowercase"
  "sequence-count per-doc|\"task\": \"sequence-count\", \"n\": 2, \"per_doc\": true, \"words\": [\"alpha\", \"end\"]|$(lines alpha end)|$ngram_per_doc|sequence-count --n 2 --per-doc"
  "sequence-count top|\"task\": \"sequence-count\", \"n\": 2, \"top\": 3, \"words\": [\"alpha\", \"same\"]|$(lines alpha same)|$ngram && ++c <= 3|sequence-count --n 2"
  "ranked-inverted-index n 2|\"task\": \"ranked-inverted-index\", \"n\": 2, \"words\": [$Wjson]|$W|$ngram|ranked-inverted-index --n 2"
  "ranked-inverted-index n 5 ids|\"task\": \"ranked-inverted-index\", \"n\": 5, \"ids\": true, \"words\": [\"alpha\", \"of\"]|$(lines alpha of)|$ngram|ranked-inverted-index --n 5 --ids"
  "nothing|\"task\": \"inverted-index\", \"words\": [\"zzz-absent\"]||$by_word|inverted-index"
)
# The "docs" filter beside "words": the reference filtered by both.
D=$(cd "$WORK/in" && find . -type f | sed 's|^\./||' | LC_ALL=C sort | awk 'NR == 3 || NR == 7')
Djson=$(printf '%s\n' "$D" | awk '{ printf "%s\"%s\"", (NR > 1 ? ", " : ""), $0 }')
postings_in_docs='$1 in S { m = split($2, p, ","); r = ""; for (i = 1; i <= m; i++) if (p[i] in DS) r = r (r == "" ? "" : ",") p[i]; if (r != "") print $1 "\t" r }'

check_case() {  # check_case URL WHAT CASE
  local url=$1 what=$2 name fields set prog args code
  IFS='|' read -r name fields set prog args <<< "$3"
  # shellcheck disable=SC2086
  "$REF" "$WORK/in" $args > "$WORK/full"
  awk -F '\t' -v set="$set" -v dset="$D" 'BEGIN { ns = split(set, a, " "); for (i = 1; i <= ns; i++) S[a[i]] = 1
    nd = split(dset, b, "\n"); for (i = 1; i <= nd; i++) DS[b[i]] = 1 }
    function any_word(field,  m, p, i) { m = split(field, p, " "); for (i = 1; i <= m; i++) if (p[i] in S) return 1; return 0 }
    '"$prog" "$WORK/full" > "$WORK/want"
  code=$(query "$url" "{$fields, \"format\": \"tsv\"}" "$WORK/got")
  [[ $code == 200 ]] || { cat "$WORK/got" >&2; fail "$what: $name: status $code"; }
  cmp -s "$WORK/want" "$WORK/got" || { diff "$WORK/want" "$WORK/got" | head; fail "$what: $name"; }
  [[ -s $WORK/want || $name == nothing ]] || fail "$name selects nothing: a weak test"
}
check_service() {  # check_service URL WHAT
  local c
  for c in "${cases[@]}"; do check_case "$1" "$2" "$c"; done
  check_case "$1" "$2" "words and docs|\"task\": \"inverted-index\", \"words\": [$Wjson], \"docs\": [$Djson]|$W|$postings_in_docs|inverted-index"
}

for mode in index traversal auto; do
  GTADOC_POINT_LOOKUP=$mode GTADOC_MAX_PIECE_SYMBOLS=3000 start "$mode" "$WORK/a.gtd" \
    --listen 127.0.0.1:0 --engine "$ENGINE" --threads 2 -vv
  check_service "http://127.0.0.1:$PORT" "$mode"
  # Words in every document: under auto the GPU engine traverses for them, forced the index answers.
  check_case "http://127.0.0.1:$PORT" "$mode" \
    "common n-grams|\"task\": \"sequence-count\", \"n\": 2, \"words\": [\"the\", \"a\", \"one\", \"same\", \"Two\", \"alpha\"]|$(lines the a one same Two alpha)|$ngram|sequence-count --n 2"
  kill -TERM "$PID"
  wait "$PID" || fail "$mode: the service did not exit 0 on SIGTERM"
  looked=$(grep -c 'point lookup: .* records' "$WORK/$mode.log" || true)
  case $mode in
    index) [[ $looked -ge ${#cases[@]} ]] || fail "index: $looked queries from the indexes, expected every one" ;;
    traversal) [[ $looked -eq 0 ]] || fail "traversal: $looked queries took the indexes" ;;
  esac
done

if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  : > "$WORK/mpi.log"
  GTADOC_POINT_LOOKUP=index mpirun --oversubscribe -np 2 -x GTADOC_POINT_LOOKUP "$BIN" serve \
    "$WORK/a.gtd" --listen 127.0.0.1:0 --engine "$ENGINE" --threads 1 2> "$WORK/mpi.log" &
  MPI_PID=$!
  PIDS+=("$MPI_PID")
  PORT=$(listening_port "$WORK/mpi.log" "$MPI_PID" "the service under mpirun") || exit 1
  check_service "http://127.0.0.1:$PORT" "mpirun -np 2"
  kill -TERM "$MPI_PID"
  wait "$MPI_PID" || true
fi
echo "point_test: OK"
