#!/usr/bin/env bash
# The Slurm batch scripts (scripts/slurm/) on a real single-node Slurm cluster that this test
# starts and always stops (tests/slurm/cluster.sh: munged, slurmctld and slurmd from Debian, as
# root, private ports and key; the node declares 2 GPUs without devices so the one-rank-per-GPU
# layout runs on CPUs):
#   compress with 3 tasks: gtadoc decompress gives the input back;
#   run with 2 tasks (--cpus-per-task=1: 2 ranks of 1 thread), 4 tasks (--partitioned),
#     3 tasks under GTADOC_LAUNCH=mpirun, and --gpus-per-node=2 --cpus-per-task=2 (one rank per
#     GPU, CPUs capped to the allotment): the reference tool's output, byte for byte;
#   serve with 2 tasks: "ready at http://HOST:PORT" in the job's output, a generated token file
#     (mode 600), curl /healthz and a word-count query equal to the reference, then
#     scancel --signal=TERM ends the job with exit code 0 (skipped while gtadoc has no serve).
# Usage: slurm_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE. Exit 77 (skipped) when not root or
# without the Slurm packages.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 REF=$4
# shellcheck source=../slurm/cluster.sh
source "$SRC/tests/slurm/cluster.sh"
if ! why=$(slurm_cluster_check); then echo "SKIP: $why"; exit 77; fi
fail() { echo "FAIL: $*" >&2; exit 1; }
T0=$SECONDS
note() { echo "[$((SECONDS - T0))s] $*"; }

rm -rf "$WORK" && mkdir -p "$WORK/in" "$WORK/out"
(cd "$SRC/data/sample" && find . -type f | LC_ALL=C sort | awk 'NR <= 20' |
   while read -r f; do mkdir -p "$WORK/in/$(dirname "$f")"; cp "$f" "$WORK/in/$f"; done)
printf 'Slurm slurm SLURM, once more: slurm.\n' >"$WORK/in/slurm.txt"

# The cluster lives in a short /tmp path: its munge and slurmd sockets must fit sun_path.
CLUSTER=$(mktemp -d /tmp/gtadoc-slurm.XXXXXX)
trap slurm_cluster_stop EXIT
trap 'exit 130' INT TERM
slurm_cluster_start "$CLUSTER" 8 2 || fail "the Slurm cluster did not start"
note "cluster up"

cd "$WORK"   # the jobs' working directory (the serve job writes its token file here)
export GTADOC=$BIN
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
SCRIPTS=$SRC/scripts/slurm
O=$WORK/out
# job_ok JOB NAME [SECONDS]: the job ended with exit code 0 (in 60 s), else its output and a failure.
job_ok() {
  local rc=0
  slurm_wait "$1" "${3:-60}" || rc=$?
  if [[ $rc -ne 0 ]]; then
    cat "$O/$2-$1.out" >&2 || true
    fail "$2 (job $1) ended $SLURM_JOB_STATE with exit code $rc"
  fi
  note "$2 (job $1): $SLURM_JOB_STATE"
}
stat_of() { sed -n "s/^ *\"$2\": \\([0-9]*\\),*\$/\\1/p" "$1"; }

# ---- compress: shards spread over 3 ranks, byte-exact round trip
job=$(slurm_submit --ntasks=3 --cpus-per-task=1 --output="$O/compress-%j.out" \
  "$SCRIPTS/gtadoc-compress.sbatch" "$WORK/c.gtd" "$WORK/in" --shards 6 -v) || fail "sbatch compress"
job_ok "$job" compress
grep -q "3 ranks" "$O/compress-$job.out" || { cat "$O/compress-$job.out"; fail "compress did not run 3 ranks"; }
"$BIN" decompress "$WORK/c.gtd" -o "$WORK/round"
diff -r "$WORK/in" "$WORK/round" >/dev/null || fail "decompress after the Slurm compress differs from the input"

# ---- serve (submitted first: it holds its CPUs while the run jobs come and go)
serve=""
if "$BIN" serve --help 2>&1 | grep -q -- --listen; then
  port=$(_slurm_free_port) || fail "no free port for serve"
  serve=$(GTADOC_PORT=$port slurm_submit --ntasks=2 --output="$O/serve-%j.out" \
    "$SCRIPTS/gtadoc-serve.sbatch" "$WORK/c.gtd") || fail "sbatch serve"
else
  echo "SKIP serve part: $BIN has no serve command"
fi

# ---- run: several layouts at once, each checked against the reference tool
wc=$(slurm_submit --ntasks=2 --cpus-per-task=1 --output="$O/wc-%j.out" \
  "$SCRIPTS/gtadoc-run.sbatch" "$WORK/c.gtd" word-count "$O/wc.tsv" --lowercase --stats "$O/wc.json") || fail "sbatch run"
sorted=$(slurm_submit --ntasks=4 --output="$O/sort-%j.out" \
  "$SCRIPTS/gtadoc-run.sbatch" "$WORK/c.gtd" sort "$O/sorted" --partitioned) || fail "sbatch run"
ii=$(GTADOC_LAUNCH=mpirun slurm_submit --ntasks=3 --output="$O/mpirun-%j.out" \
  "$SCRIPTS/gtadoc-run.sbatch" "$WORK/c.gtd" inverted-index "$O/ii.tsv" --stats "$O/ii.json") || fail "sbatch run"
gpu=$(slurm_submit --gpus-per-node=2 --cpus-per-task=2 --output="$O/gpu-%j.out" \
  "$SCRIPTS/gtadoc-run.sbatch" "$WORK/c.gtd" sequence-count "$O/seq.tsv" --n 2 --stats "$O/seq.json") || fail "sbatch run"

"$REF" "$WORK/in" word-count --lowercase >"$WORK/want-wc"
"$REF" "$WORK/in" sort >"$WORK/want-sort"
"$REF" "$WORK/in" inverted-index >"$WORK/want-ii"
"$REF" "$WORK/in" sequence-count --n 2 >"$WORK/want-seq"

job_ok "$wc" run-2-tasks
cmp "$WORK/want-wc" "$O/wc.tsv" || fail "word-count with 2 Slurm tasks differs from the reference"
[[ $(stat_of "$O/wc.json" ranks) == 2 ]] || fail "word-count did not run 2 ranks"
[[ $(stat_of "$O/wc.json" threads) == 1 ]] || fail "--cpus-per-task=1 did not give 1 thread per rank"

job_ok "$sorted" run-4-tasks-partitioned
[[ -f $O/sorted/_SUCCESS ]] || fail "sort --partitioned wrote no _SUCCESS"
parts=("$O"/sorted/part-*.tsv)
[[ ${#parts[@]} -eq 4 ]] || fail "sort --partitioned wrote ${#parts[@]} parts, not 4"
cat "${parts[@]}" | cmp "$WORK/want-sort" - || fail "sort parts with 4 Slurm tasks differ from the reference"

job_ok "$ii" run-mpirun
cmp "$WORK/want-ii" "$O/ii.tsv" || fail "inverted-index under mpirun in Slurm differs from the reference"
[[ $(stat_of "$O/ii.json" ranks) == 3 ]] || fail "GTADOC_LAUNCH=mpirun did not run 3 ranks"

job_ok "$gpu" run-per-gpu
cmp "$WORK/want-seq" "$O/seq.tsv" || fail "sequence-count with one rank per GPU differs from the reference"
[[ $(stat_of "$O/seq.json" ranks) == 2 ]] || fail "--gpus-per-node=2 did not give one rank per GPU"
grep -q -- "--gpus-per-task=1" "$O/gpu-$gpu.out" || fail "the per-GPU layout did not use --gpus-per-task=1"

# ---- serve: ready line, token, queries, clean stop
if [[ -n $serve ]]; then
  out=$O/serve-$serve.out
  ready=$(slurm_wait_output "$out" "ready at http://" "$serve" 90) ||
    { cat "$out" >&2 || true; fail "serve never said where it listens"; }
  note "serve (job $serve): $ready"
  [[ $ready == *":$port" ]] || fail "serve ready line names another port: $ready"
  token=$(sed -n 's/.*bearer token in \(.*\):  *curl.*/\1/p' "$out" | head -1)
  [[ -n $token && -f $token ]] || fail "serve printed no token file"
  [[ $(stat -c %a "$token") == 600 ]] || fail "token file $token is not mode 600"
  auth="Authorization: Bearer $(cat "$token")"
  url=http://127.0.0.1:$port
  curl -fsS -m 20 -H "$auth" "$url/healthz" >/dev/null || fail "GET /healthz failed"
  code=$(curl -s -m 20 -o /dev/null -w '%{http_code}' -d '{"task":"word-count"}' "$url/v1/query" || true)
  [[ $code == 401 || $code == 403 ]] || fail "a query without the token got HTTP $code"
  curl -fsS -m 60 -H "$auth" -H 'Content-Type: application/json' \
    -d '{"task":"word-count","lowercase":true,"format":"tsv"}' "$url/v1/query" >"$O/serve-wc.tsv" ||
    fail "POST /v1/query failed"
  cmp "$WORK/want-wc" "$O/serve-wc.tsv" || fail "serve's word-count differs from the reference"
  slurm_stop_serve "$serve" "$out" "$token" || fail "serve did not stop cleanly after SIGTERM"
  note "serve stopped cleanly"
fi

echo "PASS: Slurm compress, run (2, 3, 4 tasks, mpirun, per GPU) and serve scripts match the reference"
