#!/usr/bin/env bash
# GET /v1/docs of `gtadoc serve` with curl (docs/SERVICE.md "Documents"), CPU engine, one process:
#  1. every document of a small corpus (the sample's first 40 files plus names with a space, a
#     subdirectory, '%', '+', '?', '#', non-ASCII bytes, an empty document and one of 5 MB,
#     sent in pieces of 2 MiB), by its
#     percent-encoded name and by id, equals its file and `gtadoc decompress`'s; '/' sent as %2F
#     too; headers: Content-Type, Content-Length, ETag, Accept-Ranges; HEAD; If-None-Match -> 304;
#  2. ranges (curl -r): start, middle, suffix, open-ended, past the end (clamped) -> 206 with
#     Content-Range; a first byte at or past the end, bytes=-0 -> 416 with bytes */SIZE; the
#     empty document; a multi-range, malformed or other-unit Range, or an If-Range of another
#     version -> 200 with the whole document;
#  3. errors: unknown name or id -> 404, no name, a bad id, a malformed percent escape or %00 ->
#     400, POST -> 405 (Allow: GET, HEAD), all with the JSON error body; 401 without the token
#     when one is configured;
#  4. a shard file that cannot be read (replaced after the service started) -> 500 with a JSON
#     error, and the service goes on (other shards, /healthz, the shard again once restored);
#  5. /metrics counts /v1/docs requests by code and the grammar cache's hits; promtool accepts it.
# Usage: docs_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE. Needs curl (exit 77 without).
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
# shellcheck source=tests/serve/lib.sh
source "$(dirname "$0")/lib.sh"
serve_setup

# ---- the corpus ------------------------------------------------------------------------------
(cd "$SRC/data/sample" && find . -type f | sort | awk 'NR <= 40' |
   while read -r f; do mkdir -p "$WORK/in/$(dirname "$f")"; cp "$f" "$WORK/in/$f"; done)
mkdir -p "$WORK/in/dir with space/sub" "$WORK/in/odd"
printf 'a document whose name has a space\nand two  lines\n' > "$WORK/in/dir with space/my file.txt"
printf '  leading and trailing whitespace \t\n\n' > "$WORK/in/dir with space/sub/x+y=z&w.txt"
printf 'percent %% and hash # and question ? marks\n' > "$WORK/in/odd/100%?#1.txt"
printf 'caf\xc3\xa9 na\xc3\xafve \xff\xfe bytes\n' > "$WORK/in/odd/$(printf 'caf\xc3\xa9 \xff.txt')"
: > "$WORK/in/empty"
# A document of 5 MB: written in pieces of 2 MiB (ranges across their boundaries below).
for k in $(seq 60); do cat "$SRC/data/sample/library/ctypes.rst.txt"; echo "copy $k"; done \
  > "$WORK/in/large.txt"
truncate -s 5000000 "$WORK/in/large.txt"
"$BIN" compress "$WORK/in" -o "$WORK/a.gtd" --shards 3 2>/dev/null
A=$WORK/a.gtd
mapfile -t DOCS < <(cd "$WORK/in" && find . -type f | sed 's|^\./||' | sort)
[[ ${#DOCS[@]} -eq 46 ]] || fail "expected 46 documents, got ${#DOCS[@]}"
"$BIN" decompress "$A" -o "$WORK/out" 2>/dev/null

start main "$A" --listen 127.0.0.1:0 --engine cpu --threads 2
MAIN_PID=$PID
URL=http://127.0.0.1:$PORT
MAINURL=$URL
SENT=$WORK/sent.log  # one line "URL STATUS" per /v1/docs request (for /metrics)
: > "$SENT"

# get PATH OUT [CURL ARGS...]: GET $URL/PATH; body -> OUT, headers -> OUT.h; prints the status.
get() {
  local path=$1 out=$2 code
  shift 2
  code=$(curl -sS --path-as-is --max-time 30 -o "$out" -D "$out.h" -w '%{http_code}' "$@" \
    "$URL/$path") || code=000
  case $path in v1/docs*) echo "$URL $code" >> "$SENT" ;; esac
  echo "$code"
}
# header FILE NAME: the value of a response header (case-insensitive), without CR.
header() { sed -n "s/^$2: *//Ip" "$1" | tr -d '\r' | head -1; }
expect_error() {  # expect_error CODE WHAT FILE: a JSON error body with that status
  grep -q "\"status\":$1" "$3" || grep -q "\"status\": *$1" "$3" ||
    fail "$2: no JSON error body with status $1: $(head -c 300 "$3")"
  grep -q '"error"' "$3" || fail "$2: no \"error\" in the body"
}

# ---- 1. every document by name and by id -------------------------------------------------------
for i in "${!DOCS[@]}"; do
  name=${DOCS[$i]}
  want=$WORK/in/$name
  size=$(stat -c %s "$want")
  code=$(get "v1/docs/$(urlencode "$name")" "$WORK/got")
  [[ $code == 200 ]] || fail "GET /v1/docs/$name: status $code"
  cmp -s "$want" "$WORK/got" || fail "GET /v1/docs/$name differs from the file"
  cmp -s "$WORK/out/$name" "$WORK/got" || fail "GET /v1/docs/$name differs from gtadoc decompress"
  [[ $(header "$WORK/got.h" Content-Length) == "$size" ]] || fail "$name: Content-Length"
  [[ $(header "$WORK/got.h" Content-Type) == application/octet-stream ]] || fail "$name: Content-Type"
  [[ $(header "$WORK/got.h" Accept-Ranges) == bytes ]] || fail "$name: Accept-Ranges"
  etag=$(header "$WORK/got.h" ETag)
  [[ $etag =~ ^\"[0-9a-f]{16}-d$i\"$ ]] || fail "$name: ETag $etag, expected the archive id and document $i"
  # By id: the same bytes and ETag.
  code=$(get "v1/docs?id=$i" "$WORK/byid")
  [[ $code == 200 ]] || fail "GET /v1/docs?id=$i: status $code"
  cmp -s "$want" "$WORK/byid" || fail "GET /v1/docs?id=$i ($name) differs from the file"
  [[ $(header "$WORK/byid.h" ETag) == "$etag" ]] || fail "id $i: another ETag than by name"
  # Every '/' sent as %2F names the same document.
  if [[ $name == */* ]]; then
    code=$(get "v1/docs/$(urlencode "$name" all)" "$WORK/got2")
    [[ $code == 200 ]] && cmp -s "$want" "$WORK/got2" || fail "GET /v1/docs/$name with %2F: status $code or bytes differ"
  fi
  # The middle third as a range.
  if ((size > 0)); then
    a=$((size / 3)) b=$((2 * size / 3))
    code=$(get "v1/docs/$(urlencode "$name")" "$WORK/part" -r "$a-$b")
    [[ $code == 206 ]] || fail "$name: range $a-$b: status $code"
    cmp -s <(tail -c +$((a + 1)) "$want" | head -c $((b - a + 1))) "$WORK/part" || fail "$name: range $a-$b: bytes differ"
    [[ $(header "$WORK/part.h" Content-Range) == "bytes $a-$b/$size" ]] || fail "$name: Content-Range $(header "$WORK/part.h" Content-Range)"
  fi
done
# gtadoc decompress --doc agrees for the odd names.
"$BIN" decompress "$A" -o "$WORK/some" --doc "dir with space/my file.txt" --doc "odd/100%?#1.txt" \
  --doc empty 2>/dev/null
for n in "dir with space/my file.txt" "odd/100%?#1.txt" empty; do
  get "v1/docs/$(urlencode "$n")" "$WORK/got" > /dev/null
  cmp -s "$WORK/some/$n" "$WORK/got" || fail "$n: differs from gtadoc decompress --doc"
done
# HEAD: the headers of GET, no body (the largest document).
big=
for n in "${DOCS[@]}"; do
  s=$(stat -c %s "$WORK/in/$n")
  if [[ -z $big ]] || ((s > $(stat -c %s "$WORK/in/$big"))); then big=$n; fi
done
BIG=$WORK/in/$big
SIZE=$(stat -c %s "$BIG")
BIGURL=v1/docs/$(urlencode "$big")
code=$(get "$BIGURL" "$WORK/head" -I)
[[ $code == 200 ]] && cmp -s "$WORK/head" "$WORK/head.h" || fail "HEAD: status $code or a body"
[[ $(header "$WORK/head.h" Content-Length) == "$SIZE" ]] || fail "HEAD: Content-Length"
code=$(get "$BIGURL" "$WORK/head" -I -r 10-19)
[[ $code == 206 && $(header "$WORK/head.h" Content-Length) == 10 ]] || fail "HEAD with a range: status $code"
# A GET after a HEAD on the same connection: no body came after the HEAD's headers.
n=$(curl -sS --max-time 30 -o /dev/null -I "$URL/$BIGURL" \
  --next -sS --max-time 30 -o "$WORK/after" -w '%{num_connects}' "$URL/$BIGURL") ||
  fail "HEAD then GET on one connection"
[[ $n == 0 ]] || fail "GET after HEAD: not on the HEAD's connection ($n new connections)"
cmp -s "$BIG" "$WORK/after" || fail "GET after HEAD on one connection: bytes differ"
printf '%s 200\n%s 200\n' "$URL" "$URL" >> "$SENT"
# If-None-Match with the ETag: 304, no body.
etag=$(header "$WORK/head.h" ETag)
code=$(get "$BIGURL" "$WORK/nm" -H "If-None-Match: $etag")
[[ $code == 304 && ! -s $WORK/nm ]] || fail "If-None-Match: status $code"
[[ $(get "$BIGURL" "$WORK/nm" -H 'If-None-Match: "other"') == 200 ]] || fail "If-None-Match with another ETag"
echo "ok 1: ${#DOCS[@]} documents by name, by id and by ranges equal their files (largest $SIZE bytes)"

# ---- 2. ranges -------------------------------------------------------------------------------
range() {  # range CURL_RANGE_ARGS WANT_CODE WANT_CONTENT_RANGE EXPECTED_BYTES_COMMAND...
  local args=$1 want=$2 cr=$3 code
  shift 3
  # shellcheck disable=SC2086
  code=$(get "$BIGURL" "$WORK/r" $args)
  [[ $code == "$want" ]] || fail "range '$args': status $code, expected $want"
  [[ $(header "$WORK/r.h" Content-Range) == "$cr" ]] || fail "range '$args': Content-Range '$(header "$WORK/r.h" Content-Range)', expected '$cr'"
  if [[ $want == 416 ]]; then
    expect_error 416 "range '$args'" "$WORK/r"
  else
    cmp -s <("$@") "$WORK/r" || fail "range '$args': bytes differ"
    [[ $(header "$WORK/r.h" Content-Length) == $(stat -c %s "$WORK/r") ]] || fail "range '$args': Content-Length"
  fi
}
[[ $SIZE == 5000000 ]] || fail "the largest document is not large.txt"
range "-r 0-99" 206 "bytes 0-99/$SIZE" head -c 100 "$BIG"
range "-r 2097000-4200000" 206 "bytes 2097000-4200000/$SIZE" sh -c "tail -c +2097001 '$BIG' | head -c 2103001"
range "-r 100-1099" 206 "bytes 100-1099/$SIZE" sh -c "tail -c +101 '$BIG' | head -c 1000"
range "-r -50" 206 "bytes $((SIZE - 50))-$((SIZE - 1))/$SIZE" tail -c 50 "$BIG"
range "-r -$((SIZE * 2))" 206 "bytes 0-$((SIZE - 1))/$SIZE" cat "$BIG"
range "-r 1000-" 206 "bytes 1000-$((SIZE - 1))/$SIZE" tail -c +1001 "$BIG"
range "-r 5-99999999999" 206 "bytes 5-$((SIZE - 1))/$SIZE" tail -c +6 "$BIG"
range "-r $((SIZE - 1))-" 206 "bytes $((SIZE - 1))-$((SIZE - 1))/$SIZE" tail -c 1 "$BIG"
range "-r $SIZE-" 416 "bytes */$SIZE"
range "-r $((SIZE + 10))-$((SIZE + 20))" 416 "bytes */$SIZE"
range "-r 99999999999999999999999-" 416 "bytes */$SIZE"
range "-H Range:bytes=-0" 416 "bytes */$SIZE"
# Ignored: the whole document.
range "-r 0-1,5-6" 200 "" cat "$BIG"
range "-H Range:bytes=abc" 200 "" cat "$BIG"
range "-H Range:bytes=10-5" 200 "" cat "$BIG"
range "-H Range:items=0-5" 200 "" cat "$BIG"
range "-H Range:bytes=1-2-3" 200 "" cat "$BIG"
range "-r 0-9 -H If-Range:\"other\"" 200 "" cat "$BIG"
range "-r 0-9 -H If-Range:$etag" 206 "bytes 0-9/$SIZE" head -c 10 "$BIG"
range "-H Range:BYTES=0-9" 206 "bytes 0-9/$SIZE" head -c 10 "$BIG"
# The empty document: a first byte is never in it; a suffix range is the whole of it.
code=$(get v1/docs/empty "$WORK/e" -r 0-)
[[ $code == 416 && $(header "$WORK/e.h" Content-Range) == "bytes */0" ]] || fail "empty document, range 0-: status $code"
code=$(get v1/docs/empty "$WORK/e" -r -5)
[[ $code == 200 && ! -s $WORK/e && $(header "$WORK/e.h" Content-Length) == 0 ]] || fail "empty document, range -5: status $code"
code=$(get v1/docs/empty "$WORK/e")
[[ $code == 200 && ! -s $WORK/e ]] || fail "empty document: status $code"
echo "ok 2: ranges (206, 416, ignored ones, If-Range, the empty document)"

# ---- 3. errors -------------------------------------------------------------------------------
bad() {  # bad WANT_CODE PATH [CURL ARGS...]
  local want=$1 path=$2 code
  shift 2
  code=$(get "$path" "$WORK/bad" "$@")
  [[ $code == "$want" ]] || fail "/$path: status $code, expected $want"
  expect_error "$want" "/$path" "$WORK/bad"
}
bad 404 v1/docs/no-such-document
bad 404 "v1/docs/$(urlencode "${DOCS[0]}")x"
bad 404 v1/docs/
bad 404 v1/docs/..
bad 404 "v1/docs?id=${#DOCS[@]}"
bad 404 "v1/docs?id=99999999999"
bad 400 v1/docs
bad 400 "v1/docs?id="
bad 400 "v1/docs?id=-1"
bad 400 "v1/docs?id=1x"
bad 400 "v1/docs?name=empty"
bad 400 v1/docs/%zz
bad 400 v1/docs/abc%4
bad 400 v1/docs/abc%
bad 400 v1/docs/a%00b
bad 405 "$BIGURL" -X POST -d x
[[ $(header "$WORK/bad.h" Allow) == "GET, HEAD" ]] || fail "POST /v1/docs: no Allow: GET, HEAD"
bad 405 "$BIGURL" -X DELETE
# The token: a second service (loopback, with --token-file).
printf 'docs-t0ken-%s\n' "$RANDOM$RANDOM" > "$WORK/token"
TOKEN=$(head -1 "$WORK/token")
start token "$A" --listen 127.0.0.1:0 --token-file "$WORK/token" --engine cpu --threads 1
URL=http://127.0.0.1:$PORT
code=$(curl -sS -o "$WORK/tok" -w '%{http_code}' "$URL/$BIGURL")
[[ $code == 401 ]] || fail "token service: no token: status $code, expected 401"
expect_error 401 "token service" "$WORK/tok"
code=$(curl -sS -o "$WORK/tok" -w '%{http_code}' -H 'Authorization: Bearer wrong' "$URL/v1/docs?id=0")
[[ $code == 401 ]] || fail "token service: wrong token: status $code, expected 401"
code=$(curl -sS -o "$WORK/tok" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL/$BIGURL")
[[ $code == 200 ]] && cmp -s "$BIG" "$WORK/tok" || fail "token service: with the token: status $code or bytes differ"
kill -TERM "$PID" && wait "$PID" || fail "token service: SIGTERM exit code $?"
URL=$MAINURL
echo "ok 3: 404, 400, 405 and 401 with JSON error bodies"

# ---- 4. a shard that cannot be read: 500, and the service goes on ------------------------------
cp -r "$A" "$WORK/b.gtd"
start broken "$WORK/b.gtd" --listen 127.0.0.1:0 --engine cpu --threads 1
URL=http://127.0.0.1:$PORT
# The first document of shard 1 (the per-shard table of `gtadoc info --json`).
first1=$("$BIN" info "$A" --json | grep -o '"first_doc": *[0-9]*' | sed -n '2s/.*: *//p')
[[ -n $first1 && $first1 -gt 0 ]] || fail "cannot find shard 1's first document"
mv "$WORK/b.gtd/shard-00001.h5" "$WORK/shard-00001.h5"
head -c 5000 /dev/urandom > "$WORK/b.gtd/shard-00001.h5"
code=$(get "v1/docs?id=$first1" "$WORK/broken")
[[ $code == 500 ]] || fail "a document of a garbled shard: status $code, expected 500"
expect_error 500 "garbled shard" "$WORK/broken"
grep -q 'shard-00001.h5' "$WORK/broken" || fail "the 500 does not name the shard's file: $(cat "$WORK/broken")"
[[ $(curl -sS "$URL/healthz") == ok ]] || fail "/healthz after a 500"
[[ $(get "v1/docs?id=0" "$WORK/ok") == 200 ]] && cmp -s "$WORK/in/${DOCS[0]}" "$WORK/ok" ||
  fail "another shard's document after a 500"
mv "$WORK/shard-00001.h5" "$WORK/b.gtd/shard-00001.h5"
[[ $(get "v1/docs?id=$first1" "$WORK/ok") == 200 ]] && cmp -s "$WORK/in/${DOCS[$first1]}" "$WORK/ok" ||
  fail "the shard once restored"
kill -TERM "$PID" && wait "$PID" || fail "broken service: SIGTERM exit code $?"
URL=$MAINURL
echo "ok 4: a garbled shard gets a 500 naming it; the service goes on"

# ---- 5. /metrics -----------------------------------------------------------------------------
curl -sS -o "$WORK/metrics" "$URL/metrics"
val() { awk -v p="$1" 'index($0, p " ") == 1 { v = $NF } END { print v == "" ? 0 : v }' "$WORK/metrics"; }
# The main service's requests only (the token and broken services had their own).
for code in 200 206 304 400 404 405 416; do
  want=$(grep -c "^$MAINURL $code\$" "$SENT" || true)
  got=$(val "gtadoc_http_requests_total{endpoint=\"/v1/docs\",code=\"$code\"}")
  [[ $want -ge 1 && $got -eq $want ]] || fail "/metrics: /v1/docs $code: $got, sent $want"
done
[[ $(val gtadoc_doc_cache_entries) -eq 3 ]] || fail "/metrics: doc cache entries $(val gtadoc_doc_cache_entries), expected 3"
[[ $(val gtadoc_doc_cache_misses_total) -eq 3 ]] || fail "/metrics: doc cache misses $(val gtadoc_doc_cache_misses_total), expected 3"
[[ $(val gtadoc_doc_cache_hits_total) -gt 100 ]] || fail "/metrics: doc cache hits $(val gtadoc_doc_cache_hits_total)"
[[ $(val gtadoc_doc_cache_capacity_bytes) -eq $((256 << 20)) ]] || fail "/metrics: doc cache capacity"
if command -v promtool >/dev/null; then
  promtool check metrics < "$WORK/metrics" || fail "promtool check metrics"
fi
echo "ok 5: /metrics counts /v1/docs and the grammar cache"

# Latency on the warm service (reported, not checked): the sample's document nearest 100 KB,
# and the 5 MB one.
near=
for n in "${DOCS[@]}"; do
  s=$(stat -c %s "$WORK/in/$n")
  d=$((s > 100000 ? s - 100000 : 100000 - s))
  if [[ -z $near ]] || ((d < best)); then near=$n best=$d; fi
done
for n in "$near" "$big"; do
  u=$URL/v1/docs/$(urlencode "$n")
  t=$(curl -sS -o /dev/null -w '%{time_total}' "$u")
  st=$(curl -sS -o /dev/null -D - "$u" | tr -d '\r' | sed -n 's/^Server-Timing: doc;dur=//Ip')
  echo "NOTE: GET of a $(stat -c %s "$WORK/in/$n")-byte document, warm: curl ${t}s, server ${st} ms (first piece)"
done
kill -TERM "$MAIN_PID" 2>/dev/null || true
echo PASS
