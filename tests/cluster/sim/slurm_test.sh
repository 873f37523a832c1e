#!/usr/bin/env bash
# The Slurm batch scripts (scripts/slurm/) across the nodes of a simulated cluster (sim.sh with
# Slurm: munged and slurmctld on this machine, one slurmd per node), with sbatch -N NODES:
#  - compress (--ntasks-per-node=2): decompress gives the input back, verify passes;
#  - run, three jobs at once: srun with 1 rank per node, srun with 2 ranks per node and
#    --partitioned, and GTADOC_LAUNCH=mpirun (Open MPI's mpirun inside the allocation): each
#    byte-identical to the single-process result (itself equal to the reference tool's), the
#    logs (-vv) grouping the ranks by node as Slurm placed them, no cross-memory reads;
#  - serve (1 rank per node): "ready at http://sim1:PORT", curl from this machine with the
#    generated token, answers equal to the single process, scancel --signal=TERM ends the job
#    COMPLETED on every node.
# Usage: slurm_test.sh GTADOC SOURCE_DIR SCRATCH NODES REFERENCE. Exit 77 (skipped) when the
# machine cannot run the simulated cluster or lacks the Slurm packages.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 NODES=$4 REF=$5
# shellcheck source=sim.sh
source "$SRC/tests/cluster/sim/sim.sh"
if ! why=$(sim_check); then echo "SKIP: $why"; exit 77; fi
if ! why=$(slurm_cluster_check); then echo "SKIP: $why"; exit 77; fi
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
fail() { echo "FAIL: -N $NODES: $*" >&2; exit 1; }
T0=$SECONDS
note() { echo "[$((SECONDS - T0))s] $*"; }
export LC_ALL=C
rm -rf "$WORK" && mkdir -p "$WORK/out"
# shellcheck source=../../lib/corpus.sh
source "$SRC/tests/lib/corpus.sh"
make_test_corpus

C=$(mktemp -d /tmp/gtadoc-sim.XXXXXX)
trap sim_stop EXIT
trap 'exit 130' INT TERM
sim_start "$C" "$NODES" || fail "the simulated cluster did not start"
sim_slurm_start 4 || fail "Slurm did not start on the simulated nodes"
note "$NODES nodes with Slurm up"

cd "$WORK"  # the jobs' working directory (the serve job writes its token file here)
export GTADOC=$BIN
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
SCRIPTS=$SRC/scripts/slurm
O=$WORK/out
declare -A SUBMITTED  # job id -> the slurm_submit arguments that made it
submit() {  # submit VAR ARGS...: slurm_submit ARGS, the job's id into VAR
  local id
  id=$(slurm_submit "${@:2}") || return 1
  SUBMITTED[$id]=$(printf '%q ' "${@:2}")
  printf -v "$1" '%s' "$id"
}
# Open MPI 4.1 under srun on the loaded simulated nodes now and then crashes rank 0 inside
# MPI_Init (a segmentation fault in its TCP transport, before gtadoc runs a line of its own): the
# job's output then holds Open MPI's crash report and not gtadoc's first line after MPI's start.
startup_crash() {
  grep -q "Failing at address" "$1" 2>/dev/null && ! grep -q "info: MPI: " "$1"
}
job_ok() {  # job_ok VAR NAME [SECONDS]: waits for the job whose id VAR holds (output NAME-ID.out)
  local var=$1 rc=0 id=${!1}
  slurm_wait "$id" "${3:-90}" || rc=$?
  if [[ $rc -ne 0 ]] && startup_crash "$O/$2-$id.out"; then
    note "$2 (job $id): Open MPI crashed during MPI_Init; submitted again once"
    scancel "$id" 2>/dev/null || true
    eval "submit $var ${SUBMITTED[$id]}" || fail "sbatch $2 again"
    id=${!var} rc=0
    slurm_wait "$id" "${3:-90}" || rc=$?
  fi
  if [[ $rc -ne 0 ]]; then
    cat "$O/$2-$id.out" >&2 || true
    fail "$2 (job $id) ended $SLURM_JOB_STATE with exit code $rc"
  fi
  note "$2 (job $id): $SLURM_JOB_STATE"
}
# layout NP PER: the log line of NP ranks, PER on each node in node order.
layout() {
  local np=$1 per=$2 i s="MPI: $1 ranks on $(($1 / $2)) nodes (" first last
  for ((i = 0; i < np / per; i++)); do
    first=$((i * per)) last=$((i * per + per - 1))
    ((i > 0)) && s+="; "
    s+="sim$((i + 1)): ranks $first"
    ((last > first)) && s+="-$last"
  done
  echo "$s)"
}
check_log() {  # check_log FILE NP PER WHAT
  local want
  want=$(layout "$2" "$3")
  grep -qF -- "$want" "$1" || { cat "$1" >&2; fail "$4: no '$want' in the job's output"; }
  ! grep -q "cross-memory pull" "$1" || fail "$4: cross-memory reads between nodes"
}

"$BIN" compress "$WORK/in" -o "$WORK/one.gtd" --shards 6 --threads 1 2>/dev/null
# want NAME CASE...: the single-process result in $WORK/want-NAME, checked against the reference.
want() {
  local name=$1
  shift
  "$REF" "$WORK/in" "$@" >"$WORK/ref-$name"
  "$BIN" run "$WORK/one.gtd" "$@" --engine cpu --threads 1 -o "$WORK/want-$name" 2>/dev/null
  cmp -s "$WORK/ref-$name" "$WORK/want-$name" || fail "single process: $* differs from the reference"
}

# ---- compress across the nodes, 2 ranks on each
submit job -N "$NODES" --ntasks-per-node=2 --cpus-per-task=1 --output="$O/compress-%j.out" \
  "$SCRIPTS/gtadoc-compress.sbatch" "$WORK/c.gtd" "$WORK/in" --shards 6 -vv || fail "sbatch compress"
job_ok job compress
check_log "$O/compress-$job.out" $((2 * NODES)) 2 compress
"$BIN" decompress "$WORK/c.gtd" -o "$WORK/round" && diff -r "$WORK/in" "$WORK/round" >/dev/null ||
  fail "decompress after the Slurm compress across nodes differs from the input"
"$BIN" verify "$WORK/c.gtd" >/dev/null 2>&1 || fail "verify of the archive compressed across nodes"

# ---- serve, 1 rank per node (submitted first: it holds its CPUs while the runs come and go)
port=$(_slurm_free_port) || fail "no free port for serve"
serve=$(GTADOC_PORT=$port slurm_submit -N "$NODES" --ntasks-per-node=1 --output="$O/serve-%j.out" \
  "$SCRIPTS/gtadoc-serve.sbatch" "$WORK/c.gtd" --engine cpu --threads 1 -vv) || fail "sbatch serve"

# ---- run: three layouts at once
submit wc -N "$NODES" --ntasks-per-node=1 --cpus-per-task=1 --output="$O/wc-%j.out" \
  "$SCRIPTS/gtadoc-run.sbatch" "$WORK/c.gtd" word-count "$O/wc.tsv" --lowercase --alnum --top 20 -vv ||
  fail "sbatch run"
submit seq -N "$NODES" --ntasks-per-node=2 --cpus-per-task=1 --output="$O/seq-partitioned-%j.out" \
  "$SCRIPTS/gtadoc-run.sbatch" "$WORK/c.gtd" sequence-count "$O/seq" --n 2 --per-doc --top 3 \
  --partitioned -vv || fail "sbatch run"
submit ii --export=ALL,GTADOC_LAUNCH=mpirun -N "$NODES" --ntasks-per-node=1 \
  --output="$O/mpirun-%j.out" "$SCRIPTS/gtadoc-run.sbatch" "$WORK/c.gtd" ranked-inverted-index \
  "$O/rii.json" --n 2 --format json -vv || fail "sbatch run"
want wc word-count --lowercase --alnum --top 20
want seq sequence-count --n 2 --per-doc --top 3
want rii ranked-inverted-index --n 2 --format json

job_ok wc wc
cmp -s "$WORK/want-wc" "$O/wc.tsv" || fail "word-count across $NODES nodes differs from the single process"
check_log "$O/wc-$wc.out" "$NODES" 1 word-count
grep -q "launch: srun --mpi=pmix" "$O/wc-$wc.out" || fail "word-count was not launched by srun"

job_ok seq seq-partitioned
[[ -f $O/seq/_SUCCESS ]] || fail "sequence-count --partitioned wrote no _SUCCESS"
[[ $(find "$O/seq" -name 'part-*' | wc -l) -eq $((2 * NODES)) ]] || fail "expected $((2 * NODES)) parts"
cat "$O"/seq/part-*.tsv | cmp -s "$WORK/want-seq" - || fail "sequence-count parts differ from the single process"
check_log "$O/seq-partitioned-$seq.out" $((2 * NODES)) 2 sequence-count

job_ok ii mpirun
cmp -s "$WORK/want-rii" "$O/rii.json" || fail "ranked-inverted-index under mpirun in Slurm differs from the single process"
check_log "$O/mpirun-$ii.out" "$NODES" 1 "mpirun in the allocation"

# ---- serve: ready line, token, queries, clean stop
out=$O/serve-$serve.out
ready=$(slurm_wait_output "$out" "ready at http://" "$serve" 120) ||
  { cat "$out" >&2 || true; fail "serve never said where it listens"; }
note "serve (job $serve): $ready"
[[ $ready == *"http://sim1:$port" ]] || fail "serve's ready line does not name sim1:$port: $ready"
check_log "$out" "$NODES" 1 serve
token=$(sed -n 's/.*bearer token in \(.*\):  *curl.*/\1/p' "$out" | head -1)
[[ -n $token && -f $token ]] || fail "serve printed no token file"
auth="Authorization: Bearer $(cat "$token")"
url=http://$(sim_addr sim1):$port  # sim1 resolves on the nodes, not here
[[ $(curl -fsS -m 20 "$url/healthz") == ok* ]] || fail "GET /healthz"
curl -fsS -m 60 -H "$auth" -H 'Content-Type: application/json' \
  -d '{"task":"word-count","lowercase":true,"alnum":true,"top":20,"format":"tsv"}' "$url/v1/query" \
  >"$O/serve-wc.tsv" || fail "POST /v1/query"
cmp -s "$WORK/want-wc" "$O/serve-wc.tsv" || fail "serve's word-count differs from the single process"
curl -fsS -m 60 -H "$auth" -H 'Content-Type: application/json' \
  -d '{"task":"ranked-inverted-index","n":2,"format":"json"}' "$url/v1/query" >"$O/serve-rii.json" ||
  fail "POST /v1/query"
cmp -s "$WORK/want-rii" "$O/serve-rii.json" || fail "serve's ranked-inverted-index differs from the single process"
slurm_stop_serve "$serve" "$out" "$token" || fail "serve did not stop cleanly after SIGTERM"
note "serve across $NODES nodes answered and stopped cleanly"
echo "PASS: Slurm compress, run (srun 1 and 2 per node, --partitioned, mpirun) and serve across $NODES nodes"
