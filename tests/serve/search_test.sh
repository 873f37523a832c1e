#!/usr/bin/env bash
# `POST /v1/search` (gtadoc grep over HTTP) with curl, against the raw-text reference byte for
# byte: every mode, several phrases, normalization, TSV / JSON / NDJSON (by "format" and by
# Accept), on a service whose shards are resident as document-range pieces and on one under
# mpirun -np 2 (each rank searching its own shards); the cache answers a repeat with the same
# bytes; bad requests get a 400 with a JSON error and change nothing.
# Usage: search_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE. Needs curl (exit 77 without).
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 REF=$4
GREF=$(dirname "$REF")/gtadoc_grep_reference
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
# shellcheck source=tests/serve/lib.sh
source "$SRC/tests/serve/lib.sh"
serve_setup
# shellcheck source=tests/lib/corpus.sh
source "$SRC/tests/lib/corpus.sh"
make_test_corpus
printf 'end of\nthe line\n\n\nof the end' > "$WORK/in/lines"
"$BIN" compress "$WORK/in" -o "$WORK/a.gtd" --shards 4 --threads 2 2>/dev/null

# search URL BODY OUT [CURL ARGS...]: POSTs BODY to URL/v1/search; prints the status code.
search() {
  local url=$1 body=$2 out=$3
  shift 3
  curl -sS --max-time 60 -o "$out" -D "$out.h" -w '%{http_code}' \
    -H 'Content-Type: application/json' --data-binary "$body" "$@" "$url/v1/search" || echo 000
}
# json_to_ndjson: the reference's JSON array as one object per line.
json_to_ndjson() { sed -e '1d' -e '$d' -e 's/,$//'; }

# Cases: the reference's arguments ('#' joins the words of one phrase) | the request's fields.
cases=(
  'of#the|"phrases": ["of the"]'
  'alpha#alpha --count|"phrases": ["alpha alpha"], "count": true'
  'of#the the --any --ids|"phrases": ["of the", "the"], "any": true, "ids": true'
  'same text --lowercase --alnum|"phrases": ["same", "text"], "lowercase": true, "alnum": true'
  'end#of#the --lines|"phrases": ["end of the"], "lines": true'
  'no-such-word|"phrases": ["no-such-word"]'
)
check_service() {
  local url=$1 what=$2 c fields fmt code w
  for c in "${cases[@]}"; do
    fields=${c#*|}
    local args=()
    read -r -a words <<< "${c%%|*}"
    for w in "${words[@]}"; do args+=("${w//#/ }"); done
    for fmt in tsv json; do
      "$GREF" "$WORK/in" "${args[@]}" --format "$fmt" > "$WORK/want"
      code=$(search "$url" "{$fields, \"format\": \"$fmt\"}" "$WORK/got")
      [[ $code == 200 ]] || { cat "$WORK/got" >&2; fail "$what: $fields $fmt: status $code"; }
      cmp -s "$WORK/want" "$WORK/got" || { diff "$WORK/want" "$WORK/got" | head; fail "$what: $fields $fmt"; }
    done
    # NDJSON chosen by the Accept header.
    "$GREF" "$WORK/in" "${args[@]}" --format json | json_to_ndjson > "$WORK/want"
    code=$(search "$url" "{$fields}" "$WORK/got" -H 'Accept: application/x-ndjson')
    [[ $code == 200 ]] || fail "$what: $fields ndjson: status $code"
    cmp -s "$WORK/want" "$WORK/got" || { diff "$WORK/want" "$WORK/got" | head; fail "$what: $fields ndjson"; }
  done
}

# One process, the shards resident as pieces of at most 2,000 symbols.
GTADOC_MAX_PIECE_SYMBOLS=2000 start one "$WORK/a.gtd" --listen 127.0.0.1:0 --engine cpu --threads 2
URL=http://127.0.0.1:$PORT
check_service "$URL" "pieces"
# A repeat is answered from the cache, with the same bytes.
search "$URL" '{"phrases": ["of the"], "format": "tsv"}' "$WORK/r1" > /dev/null
search "$URL" '{"phrases": ["of the"], "format": "tsv"}' "$WORK/r2" > /dev/null
cmp -s "$WORK/r1" "$WORK/r2" || fail "a repeated search differs"
grep -qi '^X-Gtadoc-Rows: ' "$WORK/r1.h" || fail "no X-Gtadoc-Rows header"
# Bad requests: 400 with a JSON error; the service goes on.
for bad in '{"phrases": []}' '{"phrases": ["  "]}' '{"phrases": ["of the"], "count": true, "lines": true}' \
           '{"phrases": ["of the"], "all": true, "any": true}' '{"phrase": ["x"]}' '{"phrases": "x"}' \
           "{\"phrases\": [\"$(printf 'w %.0s' $(seq 65))\"]}" 'not json' '{"phrases": ["x"], "format": "xml"}'; do
  code=$(search "$URL" "$bad" "$WORK/bad")
  [[ $code == 400 ]] || fail "bad search $bad: status $code"
  grep -q '"error"' "$WORK/bad" || fail "bad search $bad: no JSON error"
done
code=$(curl -sS -o /dev/null -w '%{http_code}' "$URL/v1/search")
[[ $code == 405 ]] || fail "GET /v1/search: status $code"
check_service "$URL" "after bad requests"
# Read whole first: grep -q stops at its match, and curl, still writing a body larger than a pipe
# holds, would then fail (exit 23) under pipefail.
metrics=$(curl -sS "$URL/metrics")
grep -q 'endpoint="/v1/search"' <<<"$metrics" || fail "/metrics counts no search"
kill -TERM "$PID"
wait "$PID" || fail "the service did not exit 0 on SIGTERM"

# Under mpirun -np 2: each rank searches its shards, rank 0 answers.
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  : > "$WORK/mpi.log"
  mpirun --oversubscribe -np 2 "$BIN" serve "$WORK/a.gtd" --listen 127.0.0.1:0 --engine cpu \
    --threads 1 2> "$WORK/mpi.log" &
  MPI_PID=$!
  PIDS+=("$MPI_PID")
  PORT=$(listening_port "$WORK/mpi.log" "$MPI_PID" "the service under mpirun") || exit 1
  check_service "http://127.0.0.1:$PORT" "mpirun -np 2"
  # (how a service under mpirun stops is serve_mpi_test.sh's subject)
  kill -TERM "$MPI_PID"
  wait "$MPI_PID" || true
fi
echo "search_test: OK"
