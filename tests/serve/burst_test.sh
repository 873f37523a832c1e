#!/usr/bin/env bash
# A burst against `gtadoc serve`: 1,000 requests from 200 concurrent clients (ApacheBench) on a
# service with a small queue (8), once with the result cache off and once with it on. Every
# response must be a 200 or a 503 with Retry-After (ab's per-response status lines and the
# service's /metrics agree), no connection may fail, and answers must be correct: while ab runs,
# a few curl clients (retrying after 503s) must get exactly `gtadoc run`'s bytes. Prints ab's
# p50/p99 per round.
# Usage: burst_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE. Needs ab (apache2-utils) and curl.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v ab >/dev/null || { echo "SKIP: ab is not installed (Debian package apache2-utils)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
# shellcheck source=tests/serve/lib.sh
source "$(dirname "$0")/lib.sh"
serve_setup
sample_archive 60

printf '{"task": "word-count", "top": 100, "lowercase": true, "format": "tsv"}' > "$WORK/body.json"
# Samples for the correctness check: request body | gtadoc run options.
samples=(
  '{"task": "word-count", "top": 100, "lowercase": true, "format": "tsv"}|word-count --top 100 --lowercase'
  '{"task": "sort", "format": "json"}|sort --format json'
  '{"task": "inverted-index", "alnum": true, "format": "tsv"}|inverted-index --alnum'
  '{"task": "term-vector", "top": 0, "format": "tsv"}|term-vector --top 0'
  '{"task": "sequence-count", "n": 2, "top": 500, "format": "tsv"}|sequence-count --n 2 --top 500'
  '{"task": "ranked-inverted-index", "n": 2, "format": "json"}|ranked-inverted-index --n 2 --format json'
)
for i in "${!samples[@]}"; do
  # shellcheck disable=SC2086
  "$BIN" run "$A" ${samples[$i]#*|} --engine cpu -o "$WORK/want$i"
done

# sample I URL: POSTs sample I until it is not a 503 (at most 300 tries); writes the last
# status to $WORK/got$I.code and the body to $WORK/got$I.
sample() {
  local i=$1 url=$2 code try
  for try in $(seq 300); do
    code=$(curl -sS --max-time 60 -o "$WORK/got$i" -D "$WORK/got$i.h" -w '%{http_code}' \
      -H 'Content-Type: application/json' --data-binary "${samples[$i]%%|*}" "$url/v1/query") || code=000
    [[ $code == 503 ]] || break
    grep -qi '^Retry-After: [0-9]' "$WORK/got$i.h" || { echo "503-without-Retry-After" > "$WORK/got$i.code"; return 0; }
    sleep 0.05
  done
  echo "$code" > "$WORK/got$i.code"
}

round() {  # round NAME CACHE_BYTES
  local name=$1 cache=$2 port pid i ok503 n200 n503 nall m200 m503 mall p50 p99
  start "$name" "$A" --listen 127.0.0.1:0 --engine cpu --threads 2 --queue 8 --cache-bytes "$cache"
  port=$PORT
  pid=$PID
  local url=http://127.0.0.1:$port

  # ab -v 2 prints every response's header block: count the status lines.
  ab -v 2 -n 1000 -c 200 -s 60 -p "$WORK/body.json" -T application/json "$url/v1/query" \
    > "$WORK/$name.ab" 2> "$WORK/$name.ab.err" &
  local abpid=$!
  local spids=()
  for i in "${!samples[@]}"; do
    sample "$i" "$url" &
    spids+=($!)
  done
  wait "$abpid" || { cat "$WORK/$name.ab.err" >&2; fail "$name: ab failed"; }
  wait "${spids[@]}"

  grep -q '^Complete requests: *1000$' "$WORK/$name.ab" || fail "$name: ab did not complete 1000 requests"
  # ab prints the breakdown only when some request "failed" (a length differing from the first
  # response's, e.g. 503 bodies): no failure at all, or only length ones, is fine.
  grep -q '^Failed requests: *0$' "$WORK/$name.ab" ||
    grep -q 'Connect: 0, Receive: 0, Length: [0-9]*, Exceptions: 0' "$WORK/$name.ab" ||
    { grep 'Failed requests' -A1 "$WORK/$name.ab" >&2; fail "$name: connections failed"; }
  n200=$(grep -c '^HTTP/1.1 200 ' "$WORK/$name.ab" || true)
  n503=$(grep -c '^HTTP/1.1 503 ' "$WORK/$name.ab" || true)
  nall=$(grep -c '^HTTP/1\.[01] [0-9]' "$WORK/$name.ab" || true)
  [[ $nall -eq 1000 ]] || fail "$name: ab saw $nall responses, expected 1000"
  [[ $((n200 + n503)) -eq 1000 ]] || { grep '^HTTP/1' "$WORK/$name.ab" | sort | uniq -c >&2; fail "$name: responses other than 200 and 503"; }
  [[ $n200 -ge 1 ]] || fail "$name: not a single 200"
  ok503=$(grep -c '^Retry-After: 1' "$WORK/$name.ab" || true)
  [[ $ok503 -eq $n503 ]] || fail "$name: $n503 503s but $ok503 Retry-After headers"

  for i in "${!samples[@]}"; do
    [[ $(cat "$WORK/got$i.code") == 200 ]] || fail "$name: sample '${samples[$i]%%|*}' ended with $(cat "$WORK/got$i.code")"
    cmp -s "$WORK/want$i" "$WORK/got$i" || fail "$name: sample '${samples[$i]%%|*}' differs from gtadoc run"
  done

  # The service's own count: every /v1/query response was a 200 or a 503.
  curl -sS -o "$WORK/$name.metrics" "$url/metrics"
  m200=$(awk '/^gtadoc_http_requests_total\{endpoint="\/v1\/query",code="200"\}/ { print $NF }' "$WORK/$name.metrics")
  m503=$(awk '/^gtadoc_http_requests_total\{endpoint="\/v1\/query",code="503"\}/ { print $NF }' "$WORK/$name.metrics")
  mall=$(awk '/^gtadoc_http_requests_total\{endpoint="\/v1\/query",/ { s += $NF } END { print s + 0 }' "$WORK/$name.metrics")
  [[ $((m200 + ${m503:-0})) -eq $mall ]] || fail "$name: /metrics counts /v1/query responses other than 200 and 503"
  [[ $mall -ge 1000 ]] || fail "$name: /metrics counts $mall /v1/query responses, expected at least 1000"
  grep -q '^gtadoc_queue_depth 0$' "$WORK/$name.metrics" || fail "$name: queue not empty after the burst"
  local hits
  hits=$(awk '/^gtadoc_cache_hits_total / { print $NF }' "$WORK/$name.metrics")
  if [[ $cache == 0 ]]; then
    [[ $hits -eq 0 ]] || fail "$name: cache hits with the cache off"
    grep -q '^gtadoc_cache_entries 0$' "$WORK/$name.metrics" || fail "$name: entries in a disabled cache"
  else
    [[ $hits -ge 1 ]] || fail "$name: no cache hits with the cache on"
  fi
  kill -TERM "$pid"
  wait "$pid" || fail "$name: exit code $? after SIGTERM"
  p50=$(awk '$1 == "50%" { print $2 }' "$WORK/$name.ab")
  p99=$(awk '$1 == "99%" { print $2 }' "$WORK/$name.ab")
  echo "$name: 1000 requests, 200 clients, queue 8: $n200 x 200, $n503 x 503 (Retry-After), cache hits $hits; p50 ${p50} ms, p99 ${p99} ms"
}

round uncached 0
round cached 256M
echo "PASS: bursts answered with correct 200s or 503s only"
