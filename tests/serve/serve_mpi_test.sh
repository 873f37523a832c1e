#!/usr/bin/env bash
# `gtadoc serve` under mpirun (CPU engine), run by CTest with NP = 2 and 3 (oversubscribed):
#  - rank 0 listens; answers equal `gtadoc run` for all six tasks (TSV and JSON, a few options,
#    filters), also for concurrent clients; GET /v1/docs gives every document's bytes (rank 0
#    alone, shards of other ranks included); /metrics shows one resident entry per rank;
#  - SIGTERM to rank 0: every rank stops and mpirun exits 0;
#  - a rank that throws on a shard (GTADOC_FAULT_INJECT=1:S:throw; shards are tried until rank
#    1 holds S): the query gets a 500 naming the rank and the shard; the service keeps serving
#    (/healthz, /v1/archive, further queries answered, not hung) and still stops cleanly;
#  - a rank killed mid-query (1:S:kill): the job ends within 60 s with a non-zero exit and a
#    message naming rank 1; the client gets no 200.
# NP = localN: the same service as N ranks that are threads of one process, no launcher
# (GTADOC_LOCAL_RANKS=N, what `gtadoc serve --gpus N` runs on N GPUs): the same checks, SIGTERM to
# the process; a killed rank is the whole process there, so that check is mpirun's only.
# Usage: serve_mpi_test.sh GTADOC SOURCE_DIR SCRATCH NP REFERENCE. Needs curl (exit 77 without).
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 NP=$4
LOCAL=
if [[ $NP == local* ]]; then LOCAL=1 NP=${NP#local}; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export LC_ALL=C
MPIRUN=(mpirun --oversubscribe -np "$NP")
fail() { echo "FAIL: np=$NP: $*" >&2; exit 1; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
[[ -n $LOCAL ]] || command -v mpirun >/dev/null || { echo "SKIP: mpirun is not installed"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK/in"

MPI_PID=
cleanup() {  # stop a service still running: SIGTERM to mpirun (forwarded to the ranks), then KILL
  [[ -n $MPI_PID ]] || return 0
  kill -TERM "$MPI_PID" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$MPI_PID" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$MPI_PID" 2>/dev/null || true
}
trap cleanup EXIT

# shellcheck source=tests/serve/lib.sh
source "$(dirname "$0")/lib.sh"
sample_archive 60
SHARDS=3

# start LOG [ENV...]: the service under mpirun; sets MPI_PID, URL.
start() {
  local log=$1 i port=
  shift
  : > "$log"  # now, not in the background job: the wait below must never read an older log
  if [[ -n $LOCAL ]]; then
    env GTADOC_FAULT_INJECT=none "$@" GTADOC_LOCAL_RANKS="$NP" "$BIN" serve "$A" --listen 127.0.0.1:0 \
      --engine cpu --threads 1 2> "$log" &
  else
    env GTADOC_FAULT_INJECT=none "$@" "${MPIRUN[@]}" -x GTADOC_FAULT_INJECT "$BIN" serve "$A" --listen 127.0.0.1:0 --engine cpu \
      --threads 1 2> "$log" &
  fi
  MPI_PID=$!
  port=$(listening_port "$log" "$MPI_PID" "the service") || exit 1  # it failed the test
  URL=http://127.0.0.1:$port
}
# rank0_pid: the process of rank 0 (a child of mpirun on this single node).
rank0_pid() {
  local c d
  [[ -z $LOCAL ]] || { echo "$MPI_PID"; return 0; }  # every rank is a thread of that process
  for d in /proc/[0-9]*; do  # mpirun's children (no pgrep: procps may be absent)
    c=${d#/proc/}
    [[ $(sed 's/.*) //' "$d/stat" 2>/dev/null | cut -d' ' -f2) == "$MPI_PID" ]] || continue
    if tr '\0' '\n' < "/proc/$c/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0'; then
      echo "$c"
      return 0
    fi
  done
  fail "cannot find rank 0 among mpirun's children"
}
# stop_cleanly LOG: SIGTERM to rank 0; the job must end within 60 s with exit 0.
stop_cleanly() {
  local r0 rc=0
  r0=$(rank0_pid) && [[ -n $r0 ]] || fail "no rank 0 process found"
  kill -TERM "$r0"
  timeout 60 tail --pid="$MPI_PID" -f /dev/null || fail "the job did not end within 60 s of SIGTERM to rank 0"
  wait "$MPI_PID" || rc=$?
  MPI_PID=
  [[ $rc -eq 0 ]] || { cat "$1" >&2; fail "SIGTERM to rank 0: mpirun exit code $rc, expected 0"; }
}
post() {  # post BODY OUT: prints the status
  curl -sS --max-time 60 -o "$2" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "$1" "$URL/v1/query" || echo " curl-failed"
}
same() {
  cmp -s "$1" "$2" || { diff "$1" "$2" | head -10 >&2 || true; fail "$3: service output differs from gtadoc run"; }
}
run() {  # run OUT TASK [OPTIONS...]: single-process gtadoc run (the reference the service must equal)
  local out=$1
  shift
  rm -f "$out"
  "$BIN" run "$A" "$@" --engine cpu -o "$out"
}

# ---- answers equal gtadoc run -------------------------------------------------------------
start "$WORK/serve.log"
queries=(
  "word-count|{\"task\": \"word-count\""
  "word-count --top 10 --lowercase --alnum|{\"task\": \"word-count\", \"top\": 10, \"lowercase\": true, \"alnum\": true"
  "sort|{\"task\": \"sort\""
  "inverted-index|{\"task\": \"inverted-index\""
  "inverted-index --ids|{\"task\": \"inverted-index\", \"ids\": true"
  "term-vector|{\"task\": \"term-vector\""
  "term-vector --top 0 --min-count 2|{\"task\": \"term-vector\", \"top\": 0, \"min_count\": 2"
  "sequence-count|{\"task\": \"sequence-count\""
  "sequence-count --n 2 --per-doc --top 3|{\"task\": \"sequence-count\", \"n\": 2, \"per-doc\": true, \"top\": 3"
  "ranked-inverted-index|{\"task\": \"ranked-inverted-index\""
  "ranked-inverted-index --n 2 --lowercase|{\"task\": \"ranked-inverted-index\", \"n\": 2, \"lowercase\": true"
)
for q in "${queries[@]}"; do
  opts=${q%%|*} fields=${q#*|}
  for fmt in tsv json; do
    # shellcheck disable=SC2086
    run "$WORK/want" $opts --format "$fmt"
    code=$(post "$fields, \"format\": \"$fmt\"}" "$WORK/got")
    [[ $code == 200 ]] || { cat "$WORK/got" >&2; fail "$opts --format $fmt: status $code"; }
    same "$WORK/want" "$WORK/got" "$opts --format $fmt"
  done
done
# A filter: postings of two words in three documents, from every rank's slice.
run "$WORK/full" inverted-index
docs=$(cd "$WORK/in" && find . -type f | sed 's|^\./||' | sort | awk 'NR == 1 || NR == 20 || NR == 45')
awk -F '\t' -v set="$docs" 'BEGIN { ns = split(set, a, "\n"); for (i = 1; i <= ns; i++) S[a[i]] = 1 }
  $1 == "the" || $1 == "import" || $1 == "Python" { m = split($2, p, ","); r = ""
    for (i = 1; i <= m; i++) if (p[i] in S) r = r (r == "" ? "" : ",") p[i]; if (r != "") print $1 "\t" r }' \
  "$WORK/full" > "$WORK/want"
[[ -s $WORK/want ]] || fail "filter test selects nothing"
docs_json=$(printf '%s\n' "$docs" | awk '{ printf "%s\"%s\"", (NR > 1 ? ", " : ""), $0 }')
code=$(post "{\"task\": \"inverted-index\", \"words\": [\"the\", \"import\", \"Python\"], \"docs\": [$docs_json], \"format\": \"tsv\"}" "$WORK/got")
[[ $code == 200 ]] || fail "filtered inverted-index: status $code"
same "$WORK/want" "$WORK/got" "inverted-index filtered by words and docs"
# Concurrent clients: queries queue and run one at a time on the cluster; every answer whole.
run "$WORK/want-sc" sequence-count --n 2 --top 0
run "$WORK/want-tv" term-vector --top 0
cpids=()
for i in 1 2 3 4 5 6; do
  if (( i % 2 )); then b='{"task": "sequence-count", "n": 2, "format": "tsv"}'; else b='{"task": "term-vector", "top": 0, "format": "tsv"}'; fi
  curl -sS --max-time 60 -o "$WORK/conc$i" -w '%{http_code}' -H 'Cache-Control: no-cache' \
    --data-binary "$b" "$URL/v1/query" > "$WORK/conc$i.code" &
  cpids+=($!)
done
wait "${cpids[@]}" || true
for i in 1 2 3 4 5 6; do
  [[ $(cat "$WORK/conc$i.code") == 200 ]] || fail "concurrent query $i: status $(cat "$WORK/conc$i.code")"
  if (( i % 2 )); then same "$WORK/want-sc" "$WORK/conc$i" "concurrent sequence-count"; else same "$WORK/want-tv" "$WORK/conc$i" "concurrent term-vector"; fi
done
# GET /v1/docs: rank 0 rebuilds every document alone, also those of shards resident on other
# ranks; by name, by id and a range.
mapfile -t DOCS < <(cd "$WORK/in" && find . -type f | sed 's|^\./||' | sort)
for i in "${!DOCS[@]}"; do
  code=$(curl -sS --max-time 30 -o "$WORK/doc" -w '%{http_code}' "$URL/v1/docs/$(urlencode "${DOCS[$i]}")")
  [[ $code == 200 ]] && cmp -s "$WORK/in/${DOCS[$i]}" "$WORK/doc" || fail "GET /v1/docs/${DOCS[$i]}: status $code or bytes differ"
  code=$(curl -sS --max-time 30 -o "$WORK/doc" -w '%{http_code}' "$URL/v1/docs?id=$i")
  [[ $code == 200 ]] && cmp -s "$WORK/in/${DOCS[$i]}" "$WORK/doc" || fail "GET /v1/docs?id=$i: status $code or bytes differ"
done
code=$(curl -sS --max-time 30 -o "$WORK/doc" -w '%{http_code}' -r 10-19 "$URL/v1/docs?id=$((${#DOCS[@]} - 1))")
[[ $code == 206 ]] && cmp -s <(tail -c +11 "$WORK/in/${DOCS[-1]}" | head -c 10) "$WORK/doc" || fail "a range of the last document: status $code or bytes differ"
curl -sS -o "$WORK/metrics" "$URL/metrics"
[[ $(grep -c '^gtadoc_resident_bytes{rank="[0-9]*"} [0-9]*$' "$WORK/metrics") -eq $NP ]] ||
  fail "gtadoc_resident_bytes should have one sample per rank"
[[ $(awk '/^gtadoc_resident_bytes\{/ { s += $NF } END { print s + 0 }' "$WORK/metrics") -gt 0 ]] || fail "nothing resident"
stop_cleanly "$WORK/serve.log"
echo "ok: np=$NP answers equal gtadoc run; SIGTERM to rank 0 stops every rank with exit 0"

# ---- a rank that throws: 500 for the query, the service goes on ----------------------------
hit=
for s in $(seq 0 $((SHARDS - 1))); do
  start "$WORK/throw.log" GTADOC_FAULT_INJECT="1:$s:throw"
  code=$(post '{"task": "word-count", "top": 5, "format": "tsv"}' "$WORK/got")
  if [[ $code == 200 ]]; then  # rank 1 does not hold shard s: a normal answer
    run "$WORK/want" word-count --top 5
    same "$WORK/want" "$WORK/got" "word-count with a fault injected on a shard rank 1 does not hold"
    stop_cleanly "$WORK/throw.log"
    continue
  fi
  hit=$s
  [[ $code == 5?? ]] || { cat "$WORK/got" >&2; fail "throwing rank: status $code, expected a 5xx"; }
  grep -q '"status": *5' "$WORK/got" || fail "throwing rank: no JSON error body"
  grep -q "rank 1" "$WORK/got" && grep -q "shard $s" "$WORK/got" || { cat "$WORK/got" >&2; fail "the 5xx does not name rank 1 and shard $s"; }
  # The service keeps serving: health, archive info, and further queries are answered (the
  # injected fault fires on every query that reaches shard s, so they are 5xx too, promptly).
  [[ $(curl -sS --max-time 10 "$URL/healthz") == ok ]] || fail "/healthz after a failed query"
  curl -sS --max-time 10 -o "$WORK/archive.json" "$URL/v1/archive" || fail "/v1/archive after a failed query"
  "$BIN" info "$A" --json | cmp -s - "$WORK/archive.json" || fail "/v1/archive after a failed query"
  for t in sort inverted-index; do
    code=$(post "{\"task\": \"$t\", \"format\": \"tsv\"}" "$WORK/got")
    [[ $code == 5?? ]] || fail "$t after a failed query: status $code (expected the same 5xx)"
  done
  curl -sS -o "$WORK/metrics" "$URL/metrics"
  grep -q '^gtadoc_queries_total{task="word-count",code="500"} 1$' "$WORK/metrics" || fail "500 not counted"
  stop_cleanly "$WORK/throw.log"
  break
done
[[ -n $hit ]] || fail "no shard made rank 1 throw"
echo "ok: np=$NP a throwing rank gives a 5xx naming rank 1 / shard $hit; the service keeps serving"

# ---- a rank killed mid-query: the job ends, non-zero, naming the rank, no hang ----------------
[[ -z $LOCAL ]] || { echo "PASS: np=local$NP"; exit 0; }
start "$WORK/kill.log" GTADOC_FAULT_INJECT="1:$hit:kill"
code=$(post '{"task": "word-count", "top": 5, "format": "tsv"}' "$WORK/got" 2>/dev/null) || true
[[ $code != 200 ]] || fail "a query with a killed rank got a 200"
rc=0
timeout 60 tail --pid="$MPI_PID" -f /dev/null || { cat "$WORK/kill.log" >&2; fail "the job did not end within 60 s of rank 1's death"; }
wait "$MPI_PID" || rc=$?
MPI_PID=
[[ $rc -ne 0 ]] || fail "the job exited 0 although rank 1 was killed"
grep -qi "rank 1" "$WORK/kill.log" || { cat "$WORK/kill.log" >&2; fail "no message names rank 1"; }
echo "ok: np=$NP a killed rank ends the job (exit $rc) with a message naming it"
echo "PASS: np=$NP"
