#!/usr/bin/env bash
# Failures in the middle of a job on a simulated cluster of 2 nodes (sim.sh with Slurm), one rank
# per node, GTADOC_HEARTBEAT_TIMEOUT=5 (T). Rank 1 (on sim2) is held in a collective by the test
# hook GTADOC_FAULT_PAUSE while rank 0 waits in it; then sim2 gets one fault: kill (every process
# of the node), link (its eth0 down, processes alive) or stop (SIGSTOP to its rank).
# MODE batch, with the Slurm scripts (srun):
#  - gtadoc run inside the shuffle (alltoallv_records) and gtadoc compress in the gather of the
#    shard tables, each under the three faults: every gtadoc process gone within T + 5 s of the
#    fault, sim2's own rank included while its link is down; the batch script ended within 30 s;
#    a non-zero exit code; exactly one "lost rank 1 on host sim2" line; no output, no _SUCCESS,
#    no temporary left; the node back, the same job succeeds (equal to the single process);
#  - under mpirun: a rank paused longer than T in a collective is no loss (the job succeeds);
#    SIGINT to mpirun ends it without a loss line; a SIGSTOPped rank ends the job the same way
#    as under srun; a link down ends it within T + 5 s when mpirun's own connections have TCP
#    keepalives (mpirun then names the node); a bad GTADOC_HEARTBEAT_TIMEOUT is one usage error
#    (exit 2).
# MODE serve, with gtadoc-serve.sbatch: a query in flight when the fault strikes gets a 5xx or
#  a closed connection, the service's ranks are gone within T + 5 s, the script restarts the
#  service and it answers the same bytes again within 60 s of the fault (the time without service
#  is printed), for each fault in turn within one job; then SIGTERM ends the job COMPLETED.
# Usage: failure_test.sh GTADOC SOURCE_DIR SCRATCH MODE. Exit 77 (skipped) when the machine
# cannot run the simulated cluster, Slurm or mpirun.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 MODE=$4
# shellcheck source=sim.sh
source "$SRC/tests/cluster/sim/sim.sh"
# shellcheck source=faults.sh
source "$SRC/tests/cluster/sim/faults.sh"
if ! why=$(sim_check); then echo "SKIP: $why"; exit 77; fi
if ! why=$(slurm_cluster_check); then echo "SKIP: $why"; exit 77; fi
command -v mpirun >/dev/null || { echo "SKIP: mpirun is not installed"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
fail() { echo "FAIL: $MODE: $*" >&2; exit 1; }
T0=$SECONDS
note() { echo "[$((SECONDS - T0))s] $*"; }
export LC_ALL=C OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=5
export GTADOC=$BIN GTADOC_HEARTBEAT_TIMEOUT=$T
rm -rf "$WORK" && mkdir -p "$WORK/out"
O=$WORK/out
# shellcheck source=../../lib/corpus.sh
source "$SRC/tests/lib/corpus.sh"
make_test_corpus
"$BIN" compress "$WORK/in" -o "$WORK/one.gtd" --shards 4 --threads 1 2>/dev/null

C=$(mktemp -d /tmp/gtadoc-sim.XXXXXX)
trap sim_stop EXIT
trap 'exit 130' INT TERM
sim_start "$C" 2 || fail "the simulated cluster did not start"
sim_slurm_start 2 || fail "Slurm did not start on the simulated nodes"
note "2 nodes with Slurm up"
cd "$WORK"
SCRIPTS=$SRC/scripts/slurm
LOST="lost rank 1 on host sim2"
job_running() {
  case $(_slurm_job_field "$1" JobState) in PENDING | RUNNING | CONFIGURING) return 0 ;; esac
  return 1
}

# ---------------------------------------------------------------------------- batch
# batch_case KIND CALL NAME TARGET SBATCH_SCRIPT ARGS...: the job with rank 1 held in CALL, the
# fault, the checks; then the same job again on the recovered node, which must succeed. TARGET
# is the job's output (file or directory), which must not exist after the failure.
batch_case() {
  local kind=$1 call=$2 name=$3 target=$4 job log pids t gone ended rc=0
  shift 4
  job=$(GTADOC_FAULT_PAUSE=1:$call:120 slurm_submit --no-requeue -N 2 --ntasks-per-node=1 \
    --cpus-per-task=1 --output="$O/$name-$kind-%j.out" "$@") || fail "sbatch $name"
  log=$O/$name-$kind-$job.out
  slurm_wait_output "$log" "test hook: rank 1 pauses" "$job" 60 >/dev/null ||
    { cat "$log" >&2 || true; fail "$name: rank 1 never reached $call"; }
  pids=$(node_gtadoc)
  [[ $(wc -w <<<"$pids") -eq 2 ]] || fail "$name: expected 2 gtadoc processes, found: $pids"
  sleep 0.3
  t=$(now)
  fault "$kind" sim2
  wait_gone "$pids" $((T + 5)) || { cat "$log" >&2; fail "$name, $kind: gtadoc still runs $((T + 5)) s after the fault"; }
  gone=$(since "$t")
  while job_running "$job"; do
    at_most "$(since "$t")" 30 || { cat "$log" >&2; fail "$name, $kind: the job still runs 30 s after the fault"; }
    sleep 0.2
  done
  ended=$(since "$t")
  recover "$kind" sim2 || fail "$kind: sim2 did not come back"
  slurm_wait "$job" 60 || rc=$?
  [[ $rc -ne 0 ]] || { cat "$log" >&2; fail "$name, $kind: the job ended with exit code 0"; }
  [[ $(grep -c "$LOST" "$log") -eq 1 ]] || { cat "$log" >&2; fail "$name, $kind: expected one '$LOST' line"; }
  [[ ! -e $target ]] || fail "$name, $kind: $target exists after the failure"
  [[ -z $(find "$(dirname "$target")" -name '*.tmp-*' -o -name _SUCCESS) ]] ||
    fail "$name, $kind: temporaries left: $(find "$(dirname "$target")" -name '*.tmp-*' -o -name _SUCCESS)"
  note "$name, $kind: every rank gone ${gone} s, batch script ended ${ended} s after the fault; exit code $rc ($SLURM_JOB_STATE), one '$LOST' line, nothing written"
  sim_slurm_wait_idle 60 || fail "$name, $kind: the nodes did not come back"
  job=$(slurm_submit --no-requeue -N 2 --ntasks-per-node=1 --cpus-per-task=1 \
    --output="$O/$name-$kind-again-%j.out" "$@") || fail "sbatch $name again"
  rc=0
  slurm_wait "$job" 90 || rc=$?
  [[ $rc -eq 0 ]] || { cat "$O/$name-$kind-again-$job.out" >&2; fail "$name, $kind: the same job failed after the node came back"; }
}

if [[ $MODE == batch ]]; then
  # ---- under mpirun: no false alarm on long work or a stop request; a stopped rank; bad value
  sim_hostfile "$WORK/hosts" 1
  MPIRUN=(sim_mpirun --hostfile "$WORK/hosts" -np 2 -x GTADOC_HEARTBEAT_TIMEOUT -x GTADOC_FAULT_PAUSE)
  "$BIN" run "$WORK/one.gtd" sequence-count --n 3 --engine cpu --threads 1 -o "$WORK/want-seq" 2>/dev/null
  GTADOC_FAULT_PAUSE=1:alltoallv_records:$((T + 3)) "${MPIRUN[@]}" "$BIN" run "$WORK/one.gtd" \
    sequence-count --n 3 --engine cpu --threads 1 -o "$O/long.tsv" </dev/null >"$O/long.log" 2>&1 ||
    { cat "$O/long.log" >&2; fail "a rank busy for $((T + 3)) s in a collective failed the job"; }
  cmp -s "$WORK/want-seq" "$O/long.tsv" || fail "the run with a long pause differs from the single process"
  ! grep -q "lost rank" "$O/long.log" || fail "a rank busy for $((T + 3)) s was taken for lost"
  note "mpirun: rank 1 busy $((T + 3)) s in the shuffle (timeout $T s): no loss, same result"

  sim_mpirun_argv
  GTADOC_FAULT_PAUSE=1:alltoallv_records:120 "${SIM_MPIRUN[@]}" --hostfile "$WORK/hosts" -np 2 \
    -x GTADOC_HEARTBEAT_TIMEOUT -x GTADOC_FAULT_PAUSE "$BIN" run "$WORK/one.gtd" sequence-count \
    --engine cpu --threads 1 -o "$O/int.tsv" </dev/null >"$O/int.log" 2>&1 &
  mp=$!
  for _ in $(seq 300); do grep -q "test hook" "$O/int.log" && break; sleep 0.1; done
  kill -INT "$mp"
  rc=0
  timeout 20 tail --pid="$mp" -f /dev/null || fail "mpirun still runs 20 s after SIGINT"
  wait "$mp" || rc=$?
  [[ $rc -ne 0 ]] || fail "SIGINT to mpirun: exit code 0"
  ! grep -q "lost rank" "$O/int.log" || { cat "$O/int.log" >&2; fail "SIGINT to mpirun was reported as a lost rank"; }
  note "mpirun: SIGINT ends the job (exit code $rc) without a loss line"

  GTADOC_FAULT_PAUSE=1:alltoallv_records:120 "${SIM_MPIRUN[@]}" --hostfile "$WORK/hosts" -np 2 \
    -x GTADOC_HEARTBEAT_TIMEOUT -x GTADOC_FAULT_PAUSE "$BIN" run "$WORK/one.gtd" sequence-count \
    --engine cpu --threads 1 -o "$O/stop.tsv" </dev/null >"$O/stop.log" 2>&1 &
  mp=$!
  for _ in $(seq 300); do grep -q "test hook" "$O/stop.log" && break; sleep 0.1; done
  sleep 0.3
  t=$(now)
  fault stop sim2
  rc=0
  timeout $((T + 5)) tail --pid="$mp" -f /dev/null || { cat "$O/stop.log" >&2; fail "mpirun: a stopped rank did not end the job within $((T + 5)) s"; }
  ended=$(since "$t")
  wait "$mp" || rc=$?
  [[ $rc -ne 0 ]] || fail "mpirun: a stopped rank, exit code 0"
  [[ $(grep -c "$LOST: no heartbeat for $T s" "$O/stop.log") -eq 1 ]] || { cat "$O/stop.log" >&2; fail "mpirun: expected one '$LOST' line"; }
  [[ ! -e $O/stop.tsv && -z $(find "$O" -name 'stop.tsv.tmp-*') ]] || fail "mpirun: output left by the stopped job"
  note "mpirun, stop: the job ended ${ended} s after the fault (exit code $rc), one '$LOST' line"

  # A link down under mpirun: mpirun gives the node up itself with TCP keepalives on its own
  # connections shorter than the heartbeat's timeout (docs/DEPLOY.md); without them it waits for
  # the node's daemon forever, whatever the ranks do.
  GTADOC_FAULT_PAUSE=1:alltoallv_records:120 "${SIM_MPIRUN[@]}" --hostfile "$WORK/hosts" -np 2 \
    --mca oob_tcp_keepalive_time 1 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 2 \
    -x GTADOC_HEARTBEAT_TIMEOUT -x GTADOC_FAULT_PAUSE "$BIN" run "$WORK/one.gtd" sequence-count \
    --engine cpu --threads 1 -o "$O/link.tsv" </dev/null >"$O/link.log" 2>&1 &
  mp=$!
  for _ in $(seq 300); do grep -q "test hook" "$O/link.log" && break; sleep 0.1; done
  pids=$(node_gtadoc)
  sleep 0.3
  t=$(now)
  fault link sim2
  rc=0
  timeout $((T + 5)) tail --pid="$mp" -f /dev/null || { cat "$O/link.log" >&2; fail "mpirun: a link down did not end the job within $((T + 5)) s"; }
  ended=$(since "$t")
  wait "$mp" || rc=$?
  wait_gone "$pids" 5 || fail "mpirun, link: gtadoc processes left"
  recover link sim2 || fail "link: sim2 did not come back"
  [[ $rc -ne 0 ]] || fail "mpirun: a link down, exit code 0"
  grep -q "lost communication with a remote daemon" "$O/link.log" && grep -qF "on node $(sim_addr sim2)" "$O/link.log" ||
    { cat "$O/link.log" >&2; fail "mpirun, link: no message naming sim2's address"; }
  [[ ! -e $O/link.tsv && -z $(find "$O" -name 'link.tsv.tmp-*') ]] || fail "mpirun: output left by the job"
  note "mpirun, link (oob keepalive 1+1x2 s): the job ended ${ended} s after the fault (exit code $rc), mpirun names sim2's address"

  rc=0
  GTADOC_HEARTBEAT_TIMEOUT=5s sim_mpirun --hostfile "$WORK/hosts" -np 2 -x GTADOC_HEARTBEAT_TIMEOUT "$BIN" run "$WORK/one.gtd" word-count -o "$O/bad.tsv" \
    </dev/null >"$O/bad.log" 2>&1 || rc=$?
  [[ $(grep -c "^gtadoc: error: GTADOC_HEARTBEAT_TIMEOUT" "$O/bad.log") -eq 1 ]] ||
    { cat "$O/bad.log" >&2; fail "a bad GTADOC_HEARTBEAT_TIMEOUT: expected one error line"; }
  [[ $rc -eq 2 ]] || fail "a bad GTADOC_HEARTBEAT_TIMEOUT: exit code $rc, expected 2"
  note "a bad GTADOC_HEARTBEAT_TIMEOUT: one usage error line, exit code 2"

  # ---- Slurm: run inside the shuffle, compress in the gather, each fault
  for kind in kill link stop; do
    part=()
    target=$O/run-$kind/seq.tsv
    if [[ $kind == link ]]; then part=(--partitioned) target=$O/run-$kind/parts; fi
    mkdir -p "$O/run-$kind"
    batch_case "$kind" alltoallv_records run "$target" "$SCRIPTS/gtadoc-run.sbatch" \
      "$WORK/one.gtd" sequence-count "$target" --n 3 --engine cpu --threads 1 "${part[@]}"
    if [[ $kind == link ]]; then
      cat "$target"/part-*.tsv | cmp -s "$WORK/want-seq" - || fail "run after link: parts differ"
    else
      cmp -s "$WORK/want-seq" "$target" || fail "run after $kind: the result differs"
    fi
    mkdir -p "$O/compress-$kind"
    batch_case "$kind" gather compress "$O/compress-$kind/c.gtd" "$SCRIPTS/gtadoc-compress.sbatch" \
      "$O/compress-$kind/c.gtd" "$WORK/in" --shards 4
    "$BIN" verify "$O/compress-$kind/c.gtd" >/dev/null 2>&1 || fail "compress after $kind: verify"
    rm -rf "$O/round"
    "$BIN" decompress "$O/compress-$kind/c.gtd" -o "$O/round" 2>/dev/null &&
      diff -r "$WORK/in" "$O/round" >/dev/null || fail "compress after $kind: the round trip differs"
  done
  echo "PASS: run and compress end within $((T + 5)) s of a node killed, a link down, a rank stopped"
  exit 0
fi

# ---------------------------------------------------------------------------- serve
[[ $MODE == serve ]] || fail "MODE is batch or serve"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/token"
chmod 600 "$WORK/token"
auth="Authorization: Bearer $(cat "$WORK/token")"
port=$(_slurm_free_port) || fail "no free port for serve"
QUERY='{"task":"sequence-count","n":2,"top":9,"format":"tsv"}'
"$BIN" run "$WORK/one.gtd" sequence-count --n 2 --top 9 --engine cpu --threads 1 -o "$WORK/want" 2>/dev/null
job=$(GTADOC_PORT=$port GTADOC_FAULT_PAUSE=1:alltoallv_records:120:$WORK/pause \
  GTADOC_SERVE_RESTART_PAUSE=1 slurm_submit -N 2 --ntasks-per-node=1 --output="$O/serve-%j.out" \
  "$SCRIPTS/gtadoc-serve.sbatch" "$WORK/one.gtd" --token-file "$WORK/token" --engine cpu --threads 1) ||
  fail "sbatch serve"
log=$O/serve-$job.out
slurm_wait_output "$log" "ready at http://" "$job" 60 >/dev/null || { cat "$log" >&2 || true; fail "serve never got ready"; }
url=http://$(sim_addr sim1):$port
query() { curl -sS -m "$1" -H "$auth" -H 'Content-Type: application/json' -d "$QUERY" "$url/v1/query"; }
query 30 >"$WORK/got" && cmp -s "$WORK/want" "$WORK/got" || fail "the first answer differs from the single process"
note "serve (job $job) ready and answering"
k=0
for kind in stop link kill; do
  k=$((k + 1))
  hooks=$(grep -c "test hook" "$log" || true)
  lost=$(grep -c "$LOST" "$log" || true)
  : >"$WORK/pause"  # rank 1 holds the next query in its shuffle
  (rc=0
   curl -sS -m 60 -o "$O/inflight-$kind" -w '%{http_code}' -H "$auth" \
     -d "{\"task\":\"word-count\",\"top\":$k,\"format\":\"tsv\"}" "$url/v1/query" \
     >"$O/inflight-$kind.code" 2>"$O/inflight-$kind.err" || rc=$?
   echo "$rc" >"$O/inflight-$kind.rc") &
  cpid=$!
  for _ in $(seq 300); do (($(grep -c "test hook" "$log" || true) > hooks)) && break; sleep 0.1; done
  (($(grep -c "test hook" "$log" || true) > hooks)) || fail "$kind: the query in flight never reached rank 1's shuffle"
  pids=$(node_gtadoc)
  sleep 0.3
  t=$(now)
  fault "$kind" sim2
  wait_gone "$pids" $((T + 5)) || { cat "$log" >&2; fail "serve, $kind: its ranks still run $((T + 5)) s after the fault"; }
  gone=$(since "$t")
  wait "$cpid" || true
  code=$(cat "$O/inflight-$kind.code") crc=$(cat "$O/inflight-$kind.rc")
  [[ $code == 5?? || ($crc -ne 0 && $code == 000) ]] ||
    fail "serve, $kind: the query in flight got HTTP $code (curl exit $crc), expected a 5xx or a closed connection"
  recover "$kind" sim2 || fail "$kind: sim2 did not come back"
  while ! { query 5 >"$WORK/got" 2>/dev/null && cmp -s "$WORK/want" "$WORK/got"; }; do
    at_most "$(since "$t")" 60 || { cat "$log" >&2; fail "serve, $kind: no correct answer 60 s after the fault"; }
    sleep 0.2
  done
  down=$(since "$t")
  (($(grep -c "$LOST" "$log") == lost + 1)) || { cat "$log" >&2; fail "serve, $kind: expected one new '$LOST' line"; }
  note "serve, $kind: in flight: $(if [[ $code == 000 ]]; then echo "connection closed"; else echo "HTTP $code"; fi); ranks gone ${gone} s; correct answers again ${down} s after the fault (time without service)"
done
grep -q "restarting in" "$log" || fail "serve: the script never said it restarted"
scancel --signal=TERM "$job"
slurm_wait "$job" 60 || fail "serve after SIGTERM: $SLURM_JOB_STATE"
[[ $SLURM_JOB_STATE == COMPLETED ]] || fail "serve after SIGTERM: $SLURM_JOB_STATE, expected COMPLETED"
echo "PASS: serve restarted and answered the same bytes after a rank stopped, a link down, a node killed"
