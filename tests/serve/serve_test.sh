#!/usr/bin/env bash
# `gtadoc serve` with curl on loopback (docs/REFERENCE.md §8), CPU engine, one process:
#  1. every task x options x format (tsv, json by "format" and by Accept, ndjson) equals
#     `gtadoc run` with the same options byte for byte (ndjson: the JSON rows one per line);
#  2. "words"/"docs" filters equal `gtadoc run`'s output filtered with awk;
#  3. the result cache: a repeated query is a cache hit with the same bytes; If-None-Match -> 304;
#  4. bad requests get the right 4xx (JSON error body) and the service keeps serving the same
#     data: malformed / non-object JSON, unknown task / field, bad values, unknown document,
#     oversized body (413), oversized headers (431), a half-sent request (408 and close), a
#     slowloris trickle (closed by the read timeout), a second service off loopback with a
#     token (401 without / with a wrong token, /healthz open), path traversal (404), wrong
#     method (405);
#  5. /metrics passes `promtool check metrics` and its counters equal what was sent;
#  6. SIGTERM with queries in flight and queued: every one is answered whole, exit 0; a
#     non-loopback listen without --token-file exits 2;
#  7. with GTADOC_SERVE_WARM_UP=1 the warm-up queries run before the service says it is ready,
#     and are not counted in /metrics; the CPU engine's default (auto) and 0 run none; a value
#     that is none of auto|1|0 exits 2.
# Usage: serve_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE. Needs curl (exit 77 without).
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
# A failed check after which the rest of the test still means something: reported, counted,
# and the test fails at the end.
DEFECTS=0
defect() { echo "FAIL: $*" >&2; DEFECTS=$((DEFECTS + 1)); }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
# shellcheck source=tests/serve/lib.sh
source "$(dirname "$0")/lib.sh"
serve_setup
# Corpus: 60 files of the bundled sample, 3 shards; the whole sample for the SIGTERM test.
sample_archive 60
mapfile -t DOCS < <(cd "$WORK/in" && find . -type f | sed 's|^\./||' | sort)
[[ ${#DOCS[@]} -eq 60 ]] || fail "expected 60 documents, got ${#DOCS[@]}"


start main "$A" --listen 127.0.0.1:0 --engine cpu --threads 2 --max-body 4k --read-timeout 2
MAIN_PID=$PID
URL=http://127.0.0.1:$PORT
MAINPORT=$PORT
SENT=$WORK/sent.log  # one line "TASK CODE" per query sent to the main service (for /metrics)
: > "$SENT"

# post BODY OUT [CURL ARGS...]: POSTs BODY to the main service's /v1/query; body -> OUT,
# headers -> OUT.h; prints the status code and records it for the metrics check.
post() {
  local body=$1 out=$2 code task
  shift 2
  code=$(curl -sS --max-time 60 -o "$out" -D "$out.h" -w '%{http_code}' \
    -H 'Content-Type: application/json' --data-binary "$body" "$@" "$URL/v1/query") || code=000
  task=$(printf '%s' "$body" | sed -n 's/.*"task": *"\([a-z-]*\)".*/\1/p' | head -1)
  [[ $code == 400 ]] && task=invalid
  case $code in 200 | 304 | 400 | 500 | 503) echo "$task $code" >> "$SENT" ;; esac
  echo "$code"
}
# header FILE NAME: the value of a response header (case-insensitive), without CR.
header() { sed -n "s/^$2: *//Ip" "$1" | tr -d '\r' | head -1; }
# run OUT TASK [OPTIONS...]: gtadoc run on the main archive with the CPU engine.
run() {
  local out=$1
  shift
  rm -f "$out"
  "$BIN" run "$A" "$@" --engine cpu --threads 2 -o "$out"
}
same() {  # same WANT GOT WHAT
  cmp -s "$1" "$2" || { diff "$1" "$2" | head -10 >&2 || true; fail "$3: service output differs from gtadoc run"; }
}
# JSON array of gtadoc run -> NDJSON: drop "[" and "]", and the "," that ends each row line.
to_ndjson() { sed '1d;$d;s/,$//' "$1"; }

# to_json TASK [RUN OPTIONS...]: the request fields (without the closing brace) for these
# options; the two spellings of per-doc / min-count alternate with the parity of $SPELL.
SPELL=0
to_json() {
  local out="{\"task\": \"$1\"" pd=per-doc mc=min-count
  shift
  if (( SPELL % 2 )); then pd=per_doc mc=min_count; fi
  while (($#)); do
    case $1 in
      --lowercase | --alnum | --ids) out+=", \"${1#--}\": true"; shift ;;
      --per-doc) out+=", \"$pd\": true"; shift ;;
      --top | --n) out+=", \"${1#--}\": $2"; shift 2 ;;
      --min-count) out+=", \"$mc\": $2"; shift 2 ;;
      --traversal) out+=", \"traversal\": \"$2\""; shift 2 ;;
      *) fail "to_json: unexpected $1" ;;
    esac
  done
  printf '%s' "$out"
}

# ---- 1. every task x options x format equals gtadoc run ---------------------------------------
[[ $(curl -sS "$URL/healthz") == ok ]] || fail "/healthz is not ok"
"$BIN" info "$A" --json > "$WORK/info.json"
curl -sS -o "$WORK/archive.json" "$URL/v1/archive"
same "$WORK/info.json" "$WORK/archive.json" "GET /v1/archive"
cases=(
  "word-count"
  "word-count --top 20 --lowercase"
  "word-count --alnum --traversal bottom-up"
  "sort"
  "sort --lowercase --alnum --traversal top-down"
  "inverted-index"
  "inverted-index --ids --lowercase"
  "term-vector"
  "term-vector --top 0 --min-count 3 --alnum"
  "term-vector --top 3 --ids --traversal bottom-up"
  "sequence-count"
  "sequence-count --n 2 --top 50"
  "sequence-count --n 4 --per-doc --top 2 --lowercase"
  "sequence-count --n 2 --per-doc --ids --traversal top-down"
  "ranked-inverted-index"
  "ranked-inverted-index --n 2 --lowercase --alnum"
  "ranked-inverted-index --n 4 --ids --traversal bottom-up"
)
k=0
for c in "${cases[@]}"; do
  SPELL=$((SPELL + 1))
  # shellcheck disable=SC2086
  fields=$(to_json $c)
  for fmt in tsv json; do
    # shellcheck disable=SC2086
    run "$WORK/want" $c --format "$fmt"
    code=$(post "$fields, \"format\": \"$fmt\"}" "$WORK/got")
    [[ $code == 200 ]] || { cat "$WORK/got" >&2; fail "$c --format $fmt: status $code"; }
    same "$WORK/want" "$WORK/got" "$c --format $fmt"
    ctype=$(header "$WORK/got.h" Content-Type)
    case $fmt in
      tsv) [[ $ctype == text/tab-separated-values* ]] || fail "$c tsv: Content-Type $ctype" ;;
      json) [[ $ctype == application/json* ]] || fail "$c json: Content-Type $ctype" ;;
    esac
    [[ $(header "$WORK/got.h" ETag) == \"*\" ]] || fail "$c: no ETag"
    [[ $(header "$WORK/got.h" Cache-Control) == no-cache ]] || fail "$c: Cache-Control is not no-cache"
    rows=$(header "$WORK/got.h" X-Gtadoc-Rows)
    if [[ $fmt == tsv ]]; then
      [[ $rows == "$(wc -l < "$WORK/want")" ]] || fail "$c: X-Gtadoc-Rows '$rows', expected $(wc -l < "$WORK/want")"
      # The first answer is a fresh run, streamed chunked.
      grep -qi '^Transfer-Encoding: chunked' "$WORK/got.h" || fail "$c: fresh response not chunked"
    fi
    if [[ $fmt == json ]]; then
      # The same rows by the Accept header (no "format" field), and as NDJSON both ways.
      code=$(post "$fields}" "$WORK/got" -H 'Accept: application/json')
      [[ $code == 200 ]] || fail "$c Accept json: status $code"
      same "$WORK/want" "$WORK/got" "$c with Accept: application/json"
      to_ndjson "$WORK/want" > "$WORK/want.nd"
      if (( k++ % 2 )); then
        code=$(post "$fields, \"format\": \"ndjson\"}" "$WORK/got")
      else
        code=$(post "$fields}" "$WORK/got" -H 'Accept: application/x-ndjson')
      fi
      [[ $code == 200 ]] || fail "$c ndjson: status $code"
      same "$WORK/want.nd" "$WORK/got" "$c as ndjson"
      [[ $(header "$WORK/got.h" Content-Type) == application/x-ndjson* ]] || fail "$c ndjson: Content-Type"
    fi
  done
done
# Without "format" and Accept (curl sends */*): JSON. Accept text/tab-separated-values: TSV.
run "$WORK/want" sort --alnum --format json
[[ $(post '{"task": "sort", "alnum": true}' "$WORK/got" -H 'Accept:') == 200 ]] || fail "sort default format"
same "$WORK/want" "$WORK/got" "sort without format or Accept (JSON)"
run "$WORK/want" sort --alnum --lowercase
[[ $(post '{"lowercase": true, "task": "sort", "alnum": true}' "$WORK/got" -H 'Accept: text/tab-separated-values') == 200 ]] || fail "sort Accept tsv"
same "$WORK/want" "$WORK/got" "sort with Accept: text/tab-separated-values"
echo "ok 1: ${#cases[@]} option sets x tsv/json/Accept/ndjson equal gtadoc run"

# ---- 2. point filters equal filtering gtadoc run's output --------------------------------------
# filter NAME FIELDS AWK_PROGRAM RUN_ARGS...: the query FIELDS + filter in TSV must equal
# gtadoc run RUN_ARGS filtered by AWK_PROGRAM (which sees the set S of words or documents).
check_filter() {
  local what=$1 fields=$2 set=$3 prog=$4
  shift 4
  run "$WORK/full" "$@"
  awk -F '\t' -v set="$set" 'BEGIN { ns = split(set, a, "\n"); for (i = 1; i <= ns; i++) S[a[i]] = 1 }
    '"$prog" "$WORK/full" > "$WORK/want"
  code=$(post "$fields, \"format\": \"tsv\"}" "$WORK/got")
  [[ $code == 200 ]] || { cat "$WORK/got" >&2; fail "filter $what: status $code"; }
  same "$WORK/want" "$WORK/got" "filter $what"
  [[ -s $WORK/want ]] || [[ $what == *nothing* ]] || fail "filter $what selects nothing: a weak test"
}
lines() { printf '%s\n' "$@"; }
W=$(lines the Python of module zzz-not-a-word)
words_json='"the", "Python", "of", "module", "zzz-not-a-word", "the"'
by_word='$1 in S'
check_filter "word-count words" "{\"task\": \"word-count\", \"words\": [$words_json]" "$W" "$by_word" word-count
check_filter "word-count words top 2" "{\"task\": \"word-count\", \"top\": 2, \"words\": [$words_json]" "$W" \
  "($by_word) && ++c <= 2" word-count
check_filter "word-count words normalized" \
  '{"task": "word-count", "lowercase": true, "alnum": true, "words": ["(The", "PYTHON.", "Of"]' \
  "$(lines the python of)" "$by_word" word-count --lowercase --alnum
check_filter "sort words" "{\"task\": \"sort\", \"words\": [$words_json]" "$W" "$by_word" sort
check_filter "word-count nothing" '{"task": "word-count", "words": ["zzz-not-a-word"]' "" "$by_word" word-count
check_filter "word-count empty words nothing" '{"task": "word-count", "words": []' "" "$by_word" word-count
check_filter "inverted-index words" "{\"task\": \"inverted-index\", \"words\": [$words_json]" "$W" \
  "$by_word" inverted-index
# Documents by name and by id (id = index in byte order of the names).
D=$(lines "${DOCS[2]}" "${DOCS[10]}" "${DOCS[25]}" "${DOCS[59]}")
docs_json="\"${DOCS[2]}\", \"${DOCS[10]}\", 25, \"${DOCS[59]}\", 10"
DI=$(lines 2 10 25 59)
postings='{ m = split($2, p, ","); r = ""; for (i = 1; i <= m; i++) if (p[i] in S) r = r (r == "" ? "" : ",") p[i]
  if (r != "") print $1 "\t" r }'
check_filter "inverted-index docs" "{\"task\": \"inverted-index\", \"docs\": [$docs_json]" "$D" "$postings" inverted-index
check_filter "inverted-index docs ids" "{\"task\": \"inverted-index\", \"ids\": true, \"docs\": [$docs_json]" "$DI" \
  "$postings" inverted-index --ids
check_filter "inverted-index words and docs" \
  "{\"task\": \"inverted-index\", \"words\": [\"the\", \"Python\"], \"docs\": [$docs_json]" "$D" \
  "(\$1 == \"the\" || \$1 == \"Python\") $postings" inverted-index
check_filter "term-vector docs" "{\"task\": \"term-vector\", \"top\": 0, \"docs\": [$docs_json]" "$D" '$1 in S' \
  term-vector --top 0
check_filter "term-vector docs ids" "{\"task\": \"term-vector\", \"top\": 0, \"ids\": true, \"docs\": [$docs_json]" \
  "$DI" '$1 in S' term-vector --top 0 --ids
check_filter "term-vector words" "{\"task\": \"term-vector\", \"top\": 0, \"words\": [$words_json]" "$W" \
  '{ m = split($2, p, " "); r = ""; for (i = 1; i <= m; i++) { w = p[i]; sub(/:[0-9]+$/, "", w)
     if (w in S) r = r (r == "" ? "" : " ") p[i] }; print $1 "\t" r }' term-vector --top 0
check_filter "sequence-count n 2 words" "{\"task\": \"sequence-count\", \"n\": 2, \"words\": [$words_json]" "$W" \
  '{ m = split($1, p, " "); for (i = 1; i <= m; i++) if (p[i] in S) { print; next } }' sequence-count --n 2
check_filter "sequence-count per-doc docs" \
  "{\"task\": \"sequence-count\", \"per_doc\": true, \"n\": 2, \"docs\": [$docs_json]" "$D" '$1 in S' \
  sequence-count --n 2 --per-doc
check_filter "ranked-inverted-index docs" "{\"task\": \"ranked-inverted-index\", \"docs\": [$docs_json]" "$D" \
  '{ m = split($2, p, " "); r = ""; for (i = 1; i <= m; i++) { d = p[i]; sub(/:[0-9]+$/, "", d)
     if (d in S) r = r (r == "" ? "" : " ") p[i] }; if (r != "") print $1 "\t" r }' ranked-inverted-index
check_filter "ranked-inverted-index n 2 words" \
  "{\"task\": \"ranked-inverted-index\", \"n\": 2, \"words\": [\"Python\"]" "Python" \
  '{ split($1, p, " "); if (p[1] in S || p[2] in S) print }' ranked-inverted-index --n 2
echo "ok 2: words/docs filters equal filtered gtadoc run output"

# ---- 3. cache and conditional requests -------------------------------------------------------
metric() {  # metric LINE_PREFIX: the value of a /metrics sample ("0" when absent)
  curl -sS "$URL/metrics" | awk -v p="$1" 'index($0, p " ") == 1 { v = $NF } END { print v == "" ? 0 : v }'
}
body='{"task": "sequence-count", "n": 3, "top": 25, "lowercase": true, "format": "tsv"}'
run "$WORK/want" sequence-count --n 3 --top 25 --lowercase
h0=$(metric gtadoc_cache_hits_total) m0=$(metric gtadoc_cache_misses_total)
[[ $(post "$body" "$WORK/c1") == 200 ]] || fail "cache: first query"
h1=$(metric gtadoc_cache_hits_total) m1=$(metric gtadoc_cache_misses_total)
[[ $h1 -eq $h0 && $m1 -eq $((m0 + 1)) ]] || fail "cache: a new query should miss (hits $h0->$h1, misses $m0->$m1)"
[[ $(post "$body" "$WORK/c2" -H 'Accept: application/json') == 200 ]] || fail "cache: repeated query"
[[ $(post '{"top": 25, "format": "tsv", "task": "sequence-count", "lowercase": true, "traversal": "bottom-up"}' "$WORK/c3") == 200 ]] ||
  fail "cache: equivalent query"
h2=$(metric gtadoc_cache_hits_total)
[[ $h2 -eq $((h1 + 2)) ]] || fail "cache: repeated queries should be 2 hits (hits $h1->$h2)"
same "$WORK/want" "$WORK/c1" "cache: first answer"
same "$WORK/want" "$WORK/c2" "cache: cached answer"
same "$WORK/want" "$WORK/c3" "cache: cached answer to an equivalent query"
etag=$(header "$WORK/c1.h" ETag)
[[ $(header "$WORK/c2.h" ETag) == "$etag" ]] || fail "cache: ETag changed"
[[ $(header "$WORK/c2.h" Cache-Control) == no-cache ]] || fail "cache: cached answer without Cache-Control"
[[ $(header "$WORK/c2.h" X-Gtadoc-Rows) == 25 ]] || defect "cache: the cached answer has no X-Gtadoc-Rows: 25"
[[ $(metric gtadoc_cache_bytes) -ge $(wc -c < "$WORK/want") ]] || fail "cache: gtadoc_cache_bytes too small"
[[ $(post "$body" "$WORK/c4" -H "If-None-Match: $etag") == 304 ]] || fail "If-None-Match with the ETag: not 304"
[[ ! -s $WORK/c4 ]] || fail "304 with a body"
[[ $(post "$body" "$WORK/c5" -H 'If-None-Match: "other"') == 200 ]] || fail "If-None-Match with another ETag"
same "$WORK/want" "$WORK/c5" "If-None-Match with another ETag"
# Another query has another ETag.
[[ $(post '{"task": "sequence-count", "n": 3, "top": 24, "lowercase": true, "format": "tsv"}' "$WORK/c6") == 200 ]] || fail "cache: top 24"
[[ $(header "$WORK/c6.h" ETag) != "$etag" ]] || fail "different queries share an ETag"
echo "ok 3: cache hits, ETag, 304"

# ---- 4. bad requests: the right status, and the service keeps serving ------------------------
expect_error() {  # expect_error CODE WHAT FILE: FILE holds a JSON error body with this status
  grep -q "\"status\": *$1" "$3" && grep -q '"error": *"' "$3" || { cat "$3" >&2; fail "$2: no JSON error body with status $1"; }
}
bad() {  # bad CODE BODY WHAT
  local code
  code=$(post "$2" "$WORK/bad")
  [[ $code == "$1" ]] || { cat "$WORK/bad" >&2; fail "$3: status $code, expected $1"; }
  expect_error "$1" "$3" "$WORK/bad"
}
bad 400 '{"task": "word-count", "top": 3' "malformed JSON"
bad 400 '' "empty body"
bad 400 'task=word-count' "form data"
bad 400 '["word-count"]' "non-object JSON"
bad 400 '"word-count"' "JSON string"
bad 400 '{"task": "word-counts"}' "unknown task"
bad 400 '{"top": 3}' "no task"
bad 400 '{"task": "word-count", "colour": "red"}' "unknown field"
bad 400 '{"task": "word-count", "threads": 64}' "process option threads"
bad 400 '{"task": "word-count", "output": "/tmp/x"}' "process option output"
bad 400 '{"task": "sequence-count", "n": 9}' "n 9"
bad 400 '{"task": "sequence-count", "n": 1}' "n 1"
bad 400 '{"task": "word-count", "top": -1}' "top -1"
bad 400 '{"task": "word-count", "top": "x"}' "top x"
bad 400 '{"task": "word-count", "top": 2.5}' "top 2.5"
bad 400 '{"task": "sort", "top": 5}' "top on sort"
bad 400 '{"task": "word-count", "per_doc": true}' "per_doc on word-count"
bad 400 '{"task": "word-count", "lowercase": "yes"}' "lowercase yes"
bad 400 '{"task": "word-count", "traversal": "sideways"}' "unknown traversal"
bad 400 '{"task": "word-count", "format": "xml"}' "unknown format"
bad 400 '{"task": "word-count", "docs": ["index.rst.txt"]}' "docs on word-count"
bad 400 '{"task": "sequence-count", "docs": [0]}' "docs on sequence-count without per_doc"
bad 400 '{"task": "inverted-index", "docs": ["no/such/doc.txt"]}' "unknown document name"
bad 400 '{"task": "inverted-index", "docs": [60]}' "document id out of range"
bad 400 '{"task": "inverted-index", "docs": [-1]}' "negative document id"
bad 400 '{"task": "inverted-index", "words": "the"}' "words not an array"
post '{"task": "inverted-index", "docs": ["no/such/doc.txt"]}' "$WORK/bad" > /dev/null
grep -q 'no/such/doc.txt' "$WORK/bad" || fail "the error for an unknown document does not name it"
# Body limit 4 KiB: 4096 bytes are read (and answered), 4097 are a 413.
pad() { printf '{"task": "word-count", "top": 1, "format": "tsv"}'; head -c $(($1 - 49)) /dev/zero | tr '\0' ' '; }
[[ $(pad 4096 | wc -c) -eq 4096 ]] || fail "pad"
code=$(post "$(pad 4096)" "$WORK/b4096")
[[ $code == 200 ]] || { cat "$WORK/b4096"; fail "a 4096-byte body under --max-body 4k: status $code"; }
code=$(post "$(pad 4097)" "$WORK/bad")
[[ $code == 413 ]] || fail "a 4097-byte body under --max-body 4k: status $code, expected 413"
expect_error 413 "oversized body" "$WORK/bad"
code=$(curl -sS -o "$WORK/bad" -w '%{http_code}' -H "X-Big: $(head -c 20000 /dev/zero | tr '\0' a)" "$URL/healthz")
[[ $code == 431 ]] || fail "20 KB of headers: status $code, expected 431"
# Wrong methods.
for m in "GET /v1/query POST" "PUT /v1/query POST" "POST /healthz GET" "DELETE /metrics GET" "POST /v1/archive GET"; do
  read -r verb path allow <<< "$m"
  code=$(curl -sS -o "$WORK/bad" -D "$WORK/bad.h" -w '%{http_code}' -X "$verb" "$URL$path")
  [[ $code == 405 ]] || fail "$verb $path: status $code, expected 405"
  expect_error 405 "$verb $path" "$WORK/bad"
  [[ $(header "$WORK/bad.h" Allow) == "$allow" ]] || fail "$verb $path: no Allow: $allow"
done
# Path traversal and other unknown paths: 404 (nothing is ever mapped to a file).
n404=0
for p in /../../etc/passwd /v1/../v1/query /v1/query/../../etc/passwd //etc/passwd /%2e%2e/%2e%2e/etc/passwd \
  /v1%2fquery /v1/%2e%2e/v1/archive '/..%2f..%2fetc%2fpasswd' /etc/passwd /v1 / /v1/archive/ /healthz/..; do
  for verb in GET POST; do
    code=$(curl -sS --path-as-is -o "$WORK/bad" -w '%{http_code}' -X "$verb" -d '{"task": "word-count"}' "$URL$p")
    [[ $code == 404 ]] || fail "$verb $p: status $code, expected 404"
    n404=$((n404 + 1))
    expect_error 404 "$verb $p" "$WORK/bad"
    ! grep -q 'root:' "$WORK/bad" || fail "$verb $p served /etc/passwd"
  done
done
# Raw requests over bash's /dev/tcp: malformed HTTP, a half-sent request, a slowloris trickle.
now_ms() { date +%s%3N; }
exec 3<> "/dev/tcp/127.0.0.1/$MAINPORT"
printf 'HELLO THERE\r\n\r\n' >&3
timeout 10 cat <&3 > "$WORK/raw" || fail "malformed request line: connection not closed"
exec 3<&-
head -1 "$WORK/raw" | grep -q '^HTTP/1.1 400' || { cat "$WORK/raw"; fail "malformed request line: not a 400"; }

exec 3<> "/dev/tcp/127.0.0.1/$MAINPORT"
printf 'POST /v1/query HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"task": "' >&3
t0=$(now_ms)
timeout 15 cat <&3 > "$WORK/raw" || fail "half-sent request: connection still open after 15 s (read timeout 2 s)"
t1=$(now_ms)
exec 3<&-
head -1 "$WORK/raw" | grep -q '^HTTP/1.1 408' || defect "half-sent request: closed without a 408 response"
(( t1 - t0 >= 1500 && t1 - t0 <= 8000 )) || fail "half-sent request closed after $((t1 - t0)) ms (read timeout 2 s)"

slow_req=$'GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n'
exec 3<> "/dev/tcp/127.0.0.1/$MAINPORT"
(
  trap '' PIPE
  for ((i = 0; i < ${#slow_req}; i++)); do
    printf '%s' "${slow_req:i:1}" >&3 2>/dev/null || exit 0
    sleep 0.5
  done
) &
trickle=$!
t0=$(now_ms)
# Meanwhile the service answers everyone else.
sleep 0.6
[[ $(curl -sS --max-time 5 "$URL/healthz") == ok ]] || fail "/healthz not answered during a slowloris trickle"
timeout 20 cat <&3 > "$WORK/raw" || fail "slowloris: connection still open after 20 s (read timeout 2 s)"
t1=$(now_ms)
exec 3<&-
kill "$trickle" 2>/dev/null || true
wait "$trickle" 2>/dev/null || true
(( t1 - t0 <= 8000 )) || fail "slowloris: closed after $((t1 - t0)) ms (read timeout 2 s, trickle takes 30 s)"
[[ ! -s $WORK/raw ]] || head -1 "$WORK/raw" | grep -q '^HTTP/1.1 408' || { cat "$WORK/raw"; fail "slowloris: answered with something other than 408"; }

# An HTTP/1.0 client (no chunked coding, RFC 9112 6.1): a fresh result is delimited by the
# close (or a Content-Length), its body exactly gtadoc run's bytes.
b10='{"task": "word-count", "top": 3, "alnum": true, "format": "tsv"}'
exec 3<> "/dev/tcp/127.0.0.1/$MAINPORT"
printf 'POST /v1/query HTTP/1.0\r\nContent-Type: application/json\r\nCache-Control: no-cache\r\nContent-Length: %d\r\n\r\n%s' \
  "${#b10}" "$b10" >&3
timeout 15 cat <&3 > "$WORK/raw" || fail "HTTP/1.0 request: connection not closed after the response"
exec 3<&-
head -1 "$WORK/raw" | grep -q '^HTTP/1\.[01] 200' || { cat "$WORK/raw" >&2; fail "HTTP/1.0 request: not a 200"; }
echo "word-count 200" >> "$SENT"
if sed '/^\r$/q' "$WORK/raw" | grep -qi '^Transfer-Encoding:'; then
  defect "HTTP/1.0 request answered with Transfer-Encoding (chunked is HTTP/1.1 only)"
else
  sed '1,/^\r$/d' "$WORK/raw" > "$WORK/got"
  run "$WORK/want" word-count --top 3 --alnum
  same "$WORK/want" "$WORK/got" "HTTP/1.0 response body"
fi

# Resident data unchanged: queries after all that still match.
run "$WORK/want" word-count --top 100 --lowercase
[[ $(post '{"task": "word-count", "top": 100, "lowercase": true, "format": "tsv"}' "$WORK/got" -H 'Cache-Control: no-cache') == 200 ]] ||
  fail "query after bad requests"
same "$WORK/want" "$WORK/got" "word-count after bad requests"
run "$WORK/want" ranked-inverted-index --n 2 --format json
[[ $(post '{"task": "ranked-inverted-index", "n": 2, "format": "json"}' "$WORK/got") == 200 ]] || fail "query after bad requests"
same "$WORK/want" "$WORK/got" "ranked-inverted-index after bad requests"
curl -sS -o "$WORK/archive.json" "$URL/v1/archive"
same "$WORK/info.json" "$WORK/archive.json" "GET /v1/archive after bad requests"
kill -0 "$MAIN_PID" || fail "the service died"

# Token: a second service off loopback (all addresses) with --token-file.
printf 'sEcReT-t0ken-%s\n' "$RANDOM$RANDOM" > "$WORK/token"
TOKEN=$(head -1 "$WORK/token")
start token "$A" --listen 0.0.0.0:0 --token-file "$WORK/token" --engine cpu --threads 1
TOKEN_PID=$PID
grep -q "listening on http://0.0.0.0:$PORT\$" "$WORK/token.log" || fail "token service: listening line does not show 0.0.0.0"
TURL=http://127.0.0.1:$PORT
tq() {  # tq PATH [CURL ARGS...]: status of a request to the token service
  local path=$1
  shift
  curl -sS -o "$WORK/tok" -D "$WORK/tok.h" -w '%{http_code}' "$@" "$TURL$path"
}
qbody=(-H 'Content-Type: application/json' --data-binary '{"task": "word-count", "top": 10, "format": "tsv"}')
for auth in "" "Bearer" "Bearer " "Bearer wrong" "Bearer ${TOKEN}x" "Bearer ${TOKEN%?}" "Basic $TOKEN" "$TOKEN"; do
  args=()
  [[ -n $auth ]] && args=(-H "Authorization: $auth")
  code=$(tq /v1/query "${qbody[@]}" "${args[@]}")
  [[ $code == 401 ]] || fail "token service: Authorization '$auth' got $code, expected 401"
  expect_error 401 "token service" "$WORK/tok"
  grep -qi '^WWW-Authenticate: Bearer' "$WORK/tok.h" || fail "401 without WWW-Authenticate: Bearer"
done
[[ $(tq /metrics) == 401 ]] || fail "token service: /metrics without token"
[[ $(tq /v1/archive) == 401 ]] || fail "token service: /v1/archive without token"
[[ $(tq /v1/archive -H "Authorization: Bearer wrong") == 401 ]] || fail "token service: /v1/archive with a wrong token"
[[ $(tq /healthz) == 200 && $(cat "$WORK/tok") == ok ]] || fail "token service: /healthz must stay open"
[[ $(tq /v1/query "${qbody[@]}" -H "Authorization: Bearer $TOKEN") == 200 ]] || fail "token service: right token refused"
run "$WORK/want" word-count --top 10
same "$WORK/want" "$WORK/tok" "token service query"
[[ $(tq /v1/archive -H "Authorization: Bearer $TOKEN") == 200 ]] || fail "token service: /v1/archive with token"
kill -TERM "$TOKEN_PID"
wait "$TOKEN_PID" || fail "token service: SIGTERM exit code $?"
echo "ok 4: bad requests get their 4xx; the data served is unchanged"

# ---- 5. /metrics -----------------------------------------------------------------------------
# Every query this script sent to the main service, by task and status, must appear in
# gtadoc_queries_total (the executor may count a response just after its last byte: retry).
sort "$SENT" | uniq -c | awk '{ printf "gtadoc_queries_total{task=\"%s\",code=\"%s\"} %s\n", $2, $3, $1 }' > "$WORK/want.q"
n200=$(grep -c ' 200$' "$SENT")
for i in $(seq 50); do
  curl -sS -o "$WORK/metrics" "$URL/metrics"
  grep '^gtadoc_queries_total{' "$WORK/metrics" | sort > "$WORK/got.q"
  cmp -s <(sort "$WORK/want.q") "$WORK/got.q" && break
  sleep 0.1
done
same <(sort "$WORK/want.q") "$WORK/got.q" "gtadoc_queries_total"
grep -q 'gtadoc_queries_total{task="word-count",code="200"}' "$WORK/got.q" || fail "no word-count 200 counter"
grep -q 'gtadoc_queries_total{task="invalid",code="400"}' "$WORK/got.q" || fail "no invalid 400 counter"
val() { awk -v p="$1" 'index($0, p " ") == 1 { v = $NF } END { print v == "" ? 0 : v }' "$WORK/metrics"; }
[[ $(val 'gtadoc_http_requests_total{endpoint="/v1/query",code="200"}') -eq $n200 ]] ||
  fail "http_requests_total /v1/query 200: $(val 'gtadoc_http_requests_total{endpoint="/v1/query",code="200"}'), sent $n200"
[[ $(val 'gtadoc_http_requests_total{endpoint="/v1/query",code="405"}') -eq 2 ]] || fail "http_requests_total /v1/query 405"
[[ $(val 'gtadoc_http_requests_total{endpoint="other",code="413"}') -eq 1 ]] || fail "http_requests_total 413"
[[ $(val 'gtadoc_http_requests_total{endpoint="other",code="408"}') -ge 1 ]] || fail "http_requests_total 408"
[[ $(val 'gtadoc_http_requests_total{endpoint="other",code="404"}') -eq $n404 ]] || fail "http_requests_total 404"
wc200=$(grep -c '^word-count 200$' "$SENT")
[[ $(val 'gtadoc_query_duration_seconds_count{task="word-count"}') -eq $wc200 ]] || fail "latency histogram count for word-count"
[[ $(val 'gtadoc_query_duration_seconds_bucket{task="word-count",le="+Inf"}') -eq $wc200 ]] || fail "latency histogram +Inf bucket"
[[ $(val gtadoc_cache_hits_total) -ge 3 ]] || fail "gtadoc_cache_hits_total"
[[ $(val gtadoc_cache_hits_total) -eq $(awk '/^gtadoc_cached_query_duration_seconds_count/ { s += $NF } END { print s + 0 }' "$WORK/metrics") ]] ||
  fail "cache hits and the cached latency histogram disagree"
[[ $(val gtadoc_queue_depth) -eq 0 ]] || fail "gtadoc_queue_depth not 0 when idle"
[[ $(val 'gtadoc_resident_bytes{rank="0"}') -gt 0 ]] || fail "gtadoc_resident_bytes{rank=0}"
grep -q '^gtadoc_gpu_memory_used_bytes{rank="0"} 0$' "$WORK/metrics" || fail "gtadoc_gpu_memory_used_bytes (CPU engine: 0)"
if command -v promtool >/dev/null; then
  promtool check metrics < "$WORK/metrics" || fail "promtool check metrics"
else
  echo "NOTE: promtool not installed (Debian package prometheus): skipping promtool check metrics"
fi
echo "ok 5: /metrics counters match what was sent"

# ---- 6. SIGTERM drains: queries in flight and queued are answered whole, exit 0 ----------------
kill -TERM "$MAIN_PID"
wait "$MAIN_PID" || fail "main service: SIGTERM exit code $?"
"$BIN" compress "$SRC/data/sample" -o "$WORK/full.gtd" --shards 3 2>/dev/null
start drain "$WORK/full.gtd" --listen 127.0.0.1:0 --engine cpu --threads 1 --cache-bytes 0
DRAIN_PID=$PID
DURL=http://127.0.0.1:$PORT
for n in 8 7 6 5; do
  curl -sS --max-time 120 -o "$WORK/drain$n" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "{\"task\": \"sequence-count\", \"n\": $n, \"top\": 10, \"format\": \"tsv\"}" \
    "$DURL/v1/query" > "$WORK/drain$n.code" &
  sleep 0.05
done
# Wait until one query runs and others wait, then stop.
busy=0
for i in $(seq 200); do
  curl -sS -o "$WORK/dm" "$DURL/metrics" || break
  if grep -q '^gtadoc_queries_in_flight 1$' "$WORK/dm" && ! grep -q '^gtadoc_queue_depth 0$' "$WORK/dm"; then busy=1; break; fi
  sleep 0.02
done
[[ $busy == 1 ]] || fail "drain: never saw a query in flight with others queued"
kill -TERM "$DRAIN_PID"
t0=$(now_ms)
rc=0
timeout 120 tail --pid="$DRAIN_PID" -f /dev/null || fail "drain: the service did not exit within 120 s"
wait "$DRAIN_PID" || rc=$?
[[ $rc -eq 0 ]] || { cat "$WORK/drain.log" >&2; fail "drain: exit code $rc after SIGTERM"; }
wait
for n in 8 7 6 5; do
  [[ $(cat "$WORK/drain$n.code") == 200 ]] || fail "drain: queued query n=$n got $(cat "$WORK/drain$n.code")"
  rm -f "$WORK/want"
  "$BIN" run "$WORK/full.gtd" sequence-count --n "$n" --top 10 --engine cpu -o "$WORK/want"
  same "$WORK/want" "$WORK/drain$n" "drain: sequence-count n=$n"
done
! curl -sS --max-time 5 -o /dev/null "$DURL/healthz" 2>/dev/null || fail "drain: still answering after exit"
echo "ok 6a: SIGTERM answered the running and queued queries and exited 0 after $(( $(now_ms) - t0 )) ms"

# A non-loopback listen without a token refuses to start (exit 2, one line naming the option).
rc=0
timeout 60 "$BIN" serve "$A" --listen 0.0.0.0:0 --engine cpu 2> "$WORK/noloop.err" || rc=$?
[[ $rc -eq 2 ]] || { cat "$WORK/noloop.err" >&2; fail "non-loopback listen without --token-file: exit $rc, expected 2"; }
grep -q -- '--token-file' "$WORK/noloop.err" || fail "the refusal does not name --token-file"
! grep -q 'listening on' "$WORK/noloop.err" || fail "non-loopback listen without a token listened"
printf '\n' > "$WORK/empty-token"
rc=0
timeout 60 "$BIN" serve "$A" --listen 0.0.0.0:0 --token-file "$WORK/empty-token" --engine cpu 2> "$WORK/noloop.err" || rc=$?
[[ $rc -eq 2 ]] || fail "empty token file: exit $rc, expected 2"
echo "ok 6b: non-loopback listen without a token exits 2"
# Warm-up queries (docs/SERVICE.md): with GTADOC_SERVE_WARM_UP=1 the service runs its two
# before it says it is ready, and logs them (-v); the answers that follow are gtadoc run's. The
# CPU engine's default (auto) and 0 run none.
GTADOC_SERVE_WARM_UP=1 start warm "$A" --listen 127.0.0.1:0 --engine cpu --threads 2 -v
WARM_PID=$PID WARM_URL=http://127.0.0.1:$PORT
grep -q 'warm-up: 2 queries in ' "$WORK/warm.log" || { cat "$WORK/warm.log" >&2; fail "warm-up: no 'warm-up: 2 queries' line"; }
# Before the ready point: the log says so before it says the service is listening.
warm_line=$(grep -n 'warm-up: ' "$WORK/warm.log" | head -1 | cut -d: -f1)
ready_line=$(grep -n 'listening on' "$WORK/warm.log" | head -1 | cut -d: -f1)
((warm_line < ready_line)) || { cat "$WORK/warm.log" >&2; fail "warm-up after the ready point"; }
for t in sequence-count word-count; do
  curl -sS --max-time 60 -o "$WORK/warm.got" -H 'Cache-Control: no-cache' \
    --data-binary "{\"task\": \"$t\", \"top\": 10, \"format\": \"tsv\"}" "$WARM_URL/v1/query"
  run "$WORK/want" "$t" --top 10
  same "$WORK/want" "$WORK/warm.got" "$t after the warm-up"
done
curl -sS -o "$WORK/warm.metrics" "$WARM_URL/metrics"
[[ $(grep -c '^gtadoc_queries_total{' "$WORK/warm.metrics") -eq 2 ]] || { grep '^gtadoc_queries_total' "$WORK/warm.metrics" >&2; fail "warm-up queries counted in /metrics"; }
kill -TERM "$WARM_PID"; wait "$WARM_PID" || fail "warm-up service: exit code $? after SIGTERM"
for v in auto 0; do
  GTADOC_SERVE_WARM_UP=$v start "cold-$v" "$A" --listen 127.0.0.1:0 --engine cpu --threads 2 -v
  COLD_PID=$PID
  [[ $(curl -sS --max-time 60 "http://127.0.0.1:$PORT/healthz") == ok ]] || fail "GTADOC_SERVE_WARM_UP=$v: /healthz"
  if [[ $v == auto ]]; then  # the CPU engine's layouts built in the background after the ready point
    for _ in $(seq 1 300); do grep -q 'prepared in the background' "$WORK/cold-$v.log" && break; sleep 0.1; done
    grep -q 'resident shards prepared in the background' "$WORK/cold-$v.log" || { cat "$WORK/cold-$v.log" >&2; fail "auto: no background preparation"; }
  fi
  kill -TERM "$COLD_PID"; wait "$COLD_PID" || fail "GTADOC_SERVE_WARM_UP=$v: exit code $? after SIGTERM"
  ! grep -q 'warm-up: ' "$WORK/cold-$v.log" || fail "GTADOC_SERVE_WARM_UP=$v ran warm-up queries on the CPU engine"
  [[ $v == auto ]] || ! grep -q 'prepared in the background' "$WORK/cold-$v.log" || fail "GTADOC_SERVE_WARM_UP=0 prepared shards in the background"
done
rc=0
GTADOC_SERVE_WARM_UP=yes timeout 60 "$BIN" serve "$A" --listen 127.0.0.1:0 --engine cpu 2> "$WORK/badwarm.err" || rc=$?
[[ $rc -eq 2 ]] && grep -q GTADOC_SERVE_WARM_UP "$WORK/badwarm.err" || { cat "$WORK/badwarm.err" >&2; fail "GTADOC_SERVE_WARM_UP=yes: exit $rc, expected 2 naming the variable"; }
echo "ok 7: warm-up queries before the ready point, uncounted; auto (CPU engine) and 0 run none; auto prepares the CPU layouts in the background, 0 does not"

[[ $DEFECTS -eq 0 ]] || fail "$DEFECTS check(s) failed (above)"
echo "PASS: gtadoc serve answers like gtadoc run and survives bad requests"
