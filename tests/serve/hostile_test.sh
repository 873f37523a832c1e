#!/usr/bin/env bash
# `gtadoc serve` against hostile clients (docs/REFERENCE.md §8: one client can never hold the
# cluster), CPU engine, one process, the whole bundled sample:
#  1. a client that never reads a large answer (ranked-inverted-index --n 2, 17 MB): while it
#     holds its socket (10 s), 6 uncached queries of other clients are answered (each within 10 s,
#     all within 8 s, byte-equal to `gtadoc run`); it is cut after --write-timeout (3 s), what it got being a prefix of the
#     answer; a client that pauses (2 s, under the write timeout) gets the whole answer although
#     most of it waited in a temporary file (GTADOC_SERVE_RESPONSE_MEMORY=256k);
#  2. connection floods: 150 idle or trickling connections from 127.0.0.2 (reopened when closed)
#     against --max-connections 40, and a normal client on 127.0.0.1 is served (each query within
#     10 s, 5 queries and 5 /healthz within 6 s); an idle connection is closed after --header-timeout (2 s);
#  3. strict framing: Transfer-Encoding other than chunked (with a smuggled second request), both
#     Content-Length and Transfer-Encoding, duplicate or conflicting Content-Length, a list as
#     Content-Length, Transfer-Encoding in HTTP/1.0: one 400, then the connection closes;
#  4. the bearer scheme in any case ("bearer", "BEARER"); JSON nested deeper than 64 levels, or
#     with more values than --max-body allows: 400; the service still answers afterwards.
# Usage: hostile_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE. Needs curl and python3 (exit 77).
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
CLIENT=$(dirname "$0")/hostile_client.py
# shellcheck source=tests/serve/lib.sh
source "$(dirname "$0")/lib.sh"
serve_setup
sample_archive 100000
now_ms() { date +%s%3N; }

# metric URL NAME: the value of an unlabelled metric.
metric() { curl -sS --max-time 10 "$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }
# fresh_query URL BODY OUT: an uncached query that must be a 200 within 10 s.
fresh_query() {
  local code
  code=$(curl -sS --max-time 10 -o "$3" -w '%{http_code}' -H 'Cache-Control: no-cache' \
    --data-binary "$2" "$1/v1/query") || fail "query $2 not answered within 10 s"
  [[ $code == 200 ]] || fail "query $2: status $code"
}

# ---- 1. a client that does not read its answer holds nothing shared
GTADOC_SERVE_RESPONSE_MEMORY=256k start stall "$A" --listen 127.0.0.1:0 --engine cpu --threads 2 \
  --write-timeout 3 --cache-bytes 0
URL=http://127.0.0.1:$PORT
"$BIN" run "$A" ranked-inverted-index --n 2 --engine cpu -o "$WORK/big.want"
"$BIN" run "$A" word-count --top 5 --engine cpu -o "$WORK/wc.want"
"$BIN" run "$A" sequence-count --n 3 --top 20 --engine cpu -o "$WORK/sc.want"
big_size=$(wc -c < "$WORK/big.want")
(( big_size > 8000000 )) || fail "the large answer has only $big_size bytes"
printf '{"task": "ranked-inverted-index", "n": 2, "format": "tsv"}' > "$WORK/big.json"
python3 "$CLIENT" stall 127.0.0.1 "$PORT" "$WORK/big.json" 10 "$WORK/stalled" > "$WORK/stalled.res" &
stall_pid=$!
sleep 1  # its query runs (or has run) now
t0=$(now_ms)
for i in 1 2 3; do
  fresh_query "$URL" '{"task": "word-count", "top": 5, "format": "tsv"}' "$WORK/wc.got"
  cmp -s "$WORK/wc.want" "$WORK/wc.got" || fail "word-count during a stalled client: wrong bytes"
  fresh_query "$URL" '{"task": "sequence-count", "n": 3, "top": 20, "format": "tsv"}' "$WORK/sc.got"
  cmp -s "$WORK/sc.want" "$WORK/sc.got" || fail "sequence-count during a stalled client: wrong bytes"
done
t1=$(now_ms)
# The stalling client reads nothing for 10 s after its request: all of them while it stalls.
(( t1 - t0 <= 8000 )) || fail "6 uncached queries took $((t1 - t0)) ms while a client stalled (bound 8 s)"
echo "6 uncached queries in $((t1 - t0)) ms while a client stalled on a $big_size-byte answer"
wait "$stall_pid" || fail "the stalling client failed"
read -r how code < "$WORK/stalled.res"
[[ $code == 200 && $how == truncated ]] || fail "stalled client: '$how $code', expected a cut 200"
got=$(wc -c < "$WORK/stalled")
(( got < big_size )) || fail "stalled client got the whole answer"
cmp -s -n "$got" "$WORK/stalled" "$WORK/big.want" || fail "stalled client: its bytes are not a prefix of the answer"
[[ $(metric "$URL" gtadoc_http_responses_cut_total) -ge 1 ]] || fail "gtadoc_http_responses_cut_total did not count the cut"
# A client that pauses under the write timeout gets every byte, most of them from the spill file.
python3 "$CLIENT" stall 127.0.0.1 "$PORT" "$WORK/big.json" 2 "$WORK/paused" > "$WORK/paused.res"
read -r how code < "$WORK/paused.res"
[[ $code == 200 && $how == complete ]] || fail "pausing client: '$how $code', expected a whole 200"
cmp -s "$WORK/paused" "$WORK/big.want" || fail "pausing client: wrong bytes"
[[ $(metric "$URL" gtadoc_response_spilled_bytes_total) -gt 0 ]] || fail "nothing was spilled with a 256k response memory"
fresh_query "$URL" '{"task": "word-count", "top": 5, "format": "tsv"}' "$WORK/wc.got"
cmp -s "$WORK/wc.want" "$WORK/wc.got" || fail "word-count after the stalls: wrong bytes"

# ---- 2. idle and slow connections at --max-connections do not lock others out
start flood "$A" --listen 127.0.0.1:0 --engine cpu --threads 2 --max-connections 40 \
  --header-timeout 2 --read-timeout 10
URL=http://127.0.0.1:$PORT
source_addr=127.0.0.2
python3 -c "import socket; s = socket.socket(); s.bind(('$source_addr', 0))" 2>/dev/null || source_addr=-
python3 "$CLIENT" flood 127.0.0.1 "$PORT" 150 8 "$source_addr" > "$WORK/flood.res" &
flood_pid=$!
sleep 2  # the flood holds every connection now
t0=$(now_ms)
for i in 1 2 3 4 5; do
  fresh_query "$URL" '{"task": "word-count", "top": 5, "format": "tsv"}' "$WORK/wc.got"
  cmp -s "$WORK/wc.want" "$WORK/wc.got" || fail "word-count during a connection flood: wrong bytes"
  [[ $(curl -sS --max-time 10 "$URL/healthz") == ok ]] || fail "/healthz not answered during a connection flood"
done
t1=$(now_ms)
(( t1 - t0 <= 6000 )) || fail "5 queries took $((t1 - t0)) ms during a connection flood (it lasts 8 s)"
echo "5 queries in $((t1 - t0)) ms during a flood of 150 connections (--max-connections 40, source $source_addr)"
wait "$flood_pid" || fail "the flooding client failed"
[[ $(metric "$URL" gtadoc_http_connections_evicted_total) -gt 0 ]] || fail "no connection was evicted"
idle_ms=$(python3 "$CLIENT" idle 127.0.0.1 "$PORT")
[[ $idle_ms != open ]] || fail "an idle connection was still open after 30 s (--header-timeout 2)"
(( idle_ms >= 1500 && idle_ms <= 6000 )) || fail "an idle connection was closed after $idle_ms ms (--header-timeout 2)"

# ---- 3. strict framing (on the flood service, now quiet)
# raw_400 NAME REQUEST: the request must get exactly one response, a 400, then the close.
raw_400() {
  local rc=0
  printf '%b' "$2" | python3 "$CLIENT" raw 127.0.0.1 "$PORT" > "$WORK/raw" || rc=$?
  [[ $rc -eq 0 ]] || fail "$1: the connection was not closed"
  head -1 "$WORK/raw" | grep -q '^HTTP/1.1 400 ' || { cat "$WORK/raw" >&2; fail "$1: not a 400"; }
  [[ $(grep -c '^HTTP/1' "$WORK/raw") -eq 1 ]] || { cat "$WORK/raw" >&2; fail "$1: more than one response"; }
  ! grep -q 'gtadoc_' "$WORK/raw" || fail "$1: a smuggled request was answered"
}
smuggled='GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n'
raw_400 "Transfer-Encoding: gzip" "POST /v1/query HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n$smuggled"
raw_400 "Transfer-Encoding: gzip, chunked" "POST /v1/query HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n$smuggled"
raw_400 "Transfer-Encoding: identity" "POST /v1/query HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: identity\r\nContent-Length: 36\r\n\r\n$smuggled"
raw_400 "Transfer-Encoding: gzip + Content-Length" "POST /v1/query HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\nContent-Length: 4\r\n\r\nabcd$smuggled"
raw_400 "Content-Length + Transfer-Encoding: chunked" "POST /v1/query HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n$smuggled"
raw_400 "two Content-Length" "POST /v1/query HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}$smuggled"
raw_400 "conflicting Content-Length" "POST /v1/query HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 38\r\n\r\n{}$smuggled"
raw_400 "Content-Length list" "POST /v1/query HTTP/1.1\r\nHost: t\r\nContent-Length: 2, 2\r\n\r\n{}$smuggled"
raw_400 "two Transfer-Encoding" "POST /v1/query HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n$smuggled"
raw_400 "HTTP/1.0 Transfer-Encoding" "POST /v1/query HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n$smuggled"
# A chunked request is fine (and a pipelined second request on the same connection is answered).
body='{"task": "word-count", "top": 5, "format": "tsv"}'
printf 'POST /v1/query HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n' \
  "${#body}" "$body" | python3 "$CLIENT" raw 127.0.0.1 "$PORT" > "$WORK/raw" || fail "chunked request: connection not closed"
[[ $(grep -c '^HTTP/1.1 200 ' "$WORK/raw") -eq 2 ]] || { cat "$WORK/raw" >&2; fail "chunked request + pipelined /healthz: not two 200s"; }

# ---- 4. bearer scheme in any case; JSON budget
printf 'sekrit-token\n' > "$WORK/token"
start auth "$A" --listen 127.0.0.1:0 --engine cpu --threads 2 --token-file "$WORK/token" --max-body 64k
URL=http://127.0.0.1:$PORT
for scheme in Bearer bearer BEARER bEaReR; do
  code=$(curl -sS --max-time 10 -o "$WORK/got" -w '%{http_code}' -H "Authorization: $scheme sekrit-token" "$URL/v1/archive")
  [[ $code == 200 ]] || fail "Authorization: $scheme: status $code"
done
for auth in 'Bearer wrong' 'Basic sekrit-token' 'Bearersekrit-token' 'bearer  sekrit-tokenX' ''; do
  code=$(curl -sS --max-time 10 -o "$WORK/got" -w '%{http_code}' -H "Authorization: $auth" "$URL/v1/archive")
  [[ $code == 401 ]] || fail "Authorization: '$auth': status $code, expected 401"
done
# json_status BODY_FILE: the status of POSTing the file.
json_status() {
  curl -sS --max-time 10 -o "$WORK/got" -w '%{http_code}' -H 'Authorization: bearer sekrit-token' \
    --data-binary "@$1" "$URL/v1/query"
}
python3 -c "print('{\"task\": \"word-count\", \"x\": ' + '[' * 65 + ']' * 65 + '}')" > "$WORK/deep.json"
[[ $(json_status "$WORK/deep.json") == 400 ]] || fail "JSON 65 levels deep: not a 400"
grep -q 'deeper than 64' "$WORK/got" || { cat "$WORK/got" >&2; fail "JSON 65 levels deep: not the depth message"; }
python3 -c "print('{\"task\": \"word-count\", \"words\": [' + ','.join(['0'] * 20000) + ']}')" > "$WORK/many.json"
[[ $(json_status "$WORK/many.json") == 400 ]] || fail "JSON with 20000 values (--max-body 64k): not a 400"
grep -q 'more than 8192 values' "$WORK/got" || { cat "$WORK/got" >&2; fail "JSON with 20000 values: not the budget message"; }
python3 -c "print('{\"task\": \"word-count\", \"top\": 5, \"format\": \"tsv\", \"words\": [' + ','.join(['\"the\"'] * 1000) + ']}')" > "$WORK/fine.json"
[[ $(json_status "$WORK/fine.json") == 200 ]] || { cat "$WORK/got" >&2; fail "JSON with 1000 words: not a 200"; }
printf '{"task": "word-count", "top": 5, "format": "tsv"}' > "$WORK/wc.json"
[[ $(json_status "$WORK/wc.json") == 200 ]] || fail "a query after the budget checks: not a 200"
cmp -s "$WORK/wc.want" "$WORK/got" || fail "a query after the budget checks: wrong bytes"
echo "PASS"
