#!/usr/bin/env bash
# Service latency benchmark: `gtadoc serve` with a >= 400 MB real-text
# archive resident, per task: uncached p50/p99 for one client, cached p50/p99, and (for the tasks
# with small results) 64 concurrent clients uncached; each against a fresh `gtadoc run` of the same
# query, and against the service's own server-side time (Server-Timing: traversal + collect +
# shuffle + rows in the header, render in the trailer). Every configuration's first response is
# compared byte for byte with `gtadoc run`'s output.
#
#   scripts/bench/serve-bench.sh                    # after a build (scripts/device-check.sh)
#   ARCHIVE=big.gtd CONFIGS="cpu" BUILD_DIR=build scripts/bench/serve-bench.sh
#
# Knobs: BUILD_DIR (build-device), OUT (./device-out), ARCHIVE (default: the `large` archive of
# scripts/bench/e2e-bench.sh in $DATA, built through it when missing: LARGE_MB, DATA), CONFIGS
# ("gpu gpu-np2 gpu-gpus2 cpu"; gpu-npN = mpirun -np N with one GPU each, skipped with fewer than N GPUs,
# records moved by NCCL; gpu-np2-mpi = two ranks with GTADOC_SHUFFLE=mpi; gpu-gpusN = `serve
# --gpus N`, N ranks as threads of one process, no launcher),
# TASKS_FILE (lines "name<TAB>json body<TAB>uncached reps<TAB>concurrent (0/1)"; e.g.
# scripts/bench/serve-tasks-small.tsv, the tasks with small results), CACHED_REPS (200),
# SERVE_ARGS (extra `gtadoc serve` words, e.g. "-vv"; the server's log is then kept as
# $OUT/server-CONFIG.log).
# Writes $OUT/serve-bench.jsonl (one row per config x task x mode) and $OUT/serve-bench.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
BUILD_DIR=${BUILD_DIR:-build-device}
OUT=${OUT:-./device-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
DATA=${DATA:-/tmp/gtadoc-e2e}
GTADOC=$ROOT/$BUILD_DIR/gtadoc
LOAD=$ROOT/$BUILD_DIR/scripts/bench/gtadoc_serve_load
CACHED_REPS=${CACHED_REPS:-200}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
# mpirun's topology discovery without hwloc's GPU plugins: with them (OpenCL starts the CUDA
# driver on every GPU) an `mpirun -np 4` of a trivial program took 1.5 s on the H200 x4 host,
# without them 0.4 s (docs/ARCHITECTURE.md, "GPU and MPI internals"). HWLOC_COMPONENTS set by the caller wins.
export HWLOC_COMPONENTS=${HWLOC_COMPONENTS-"-opencl,-gl,-cuda,-nvml,-rsmi,-levelzero"}
ROWS=$OUT/serve-bench.jsonl
LOG=$OUT/serve-bench.log
WORK=$(mktemp -d /tmp/serve-bench.XXXXXX)
: >"$ROWS"
: >"$LOG"
say() { echo "$*" | tee -a "$LOG"; }
cleanup() {
  [[ -n ${SERVER_PID:-} ]] && kill -TERM "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

cmake --build "$BUILD_DIR" --target gtadoc gtadoc_serve_load >/dev/null || exit 1

ARCHIVE=${ARCHIVE:-$DATA/.archives/large.gtd}
if [[ ! -f $ARCHIVE/manifest.h5 ]]; then
  say "building the archive through e2e-bench.sh (CORPORA=large)"
  env OUT="$WORK/e2e" BUILD_DIR="$BUILD_DIR" DATA="$DATA" CORPORA=large CONFIGS=cpu KEEP_ARCHIVES=1 \
    TASKS="word-count --top 100" LARGE_SHARD_SIZES="" REPS=1 "$ROOT/scripts/bench/e2e-bench.sh" \
    >>"$LOG" 2>&1
fi
[[ -f $ARCHIVE/manifest.h5 ]] || { say "no archive at $ARCHIVE"; exit 1; }
say "archive: $ARCHIVE ($(du -sb --apparent-size "$ARCHIVE" | cut -f1) bytes)"
"$GTADOC" info "$ARCHIVE" | tee -a "$LOG"

TASKS_FILE=${TASKS_FILE:-$WORK/tasks}
if [[ ! -s $TASKS_FILE ]]; then
  printf '%s\t%s\t%s\t%s\n' \
    "word-count --top 100" '{"task":"word-count","top":100,"format":"tsv"}' 50 1 \
    "word-count" '{"task":"word-count","format":"tsv"}' 10 0 \
    "sort" '{"task":"sort","format":"tsv"}' 10 0 \
    "inverted-index" '{"task":"inverted-index","format":"tsv"}' 5 0 \
    "term-vector" '{"task":"term-vector","format":"tsv"}' 5 0 \
    "sequence-count --top 100" '{"task":"sequence-count","top":100,"format":"tsv"}' 10 1 \
    "sequence-count" '{"task":"sequence-count","format":"tsv"}' 5 0 \
    "ranked-inverted-index" '{"task":"ranked-inverted-index","format":"tsv"}' 3 0 \
    >"$TASKS_FILE"
fi

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
read -r -a CONFIG_LIST <<<"${CONFIGS:-gpu gpu-np2 gpu-gpus2 cpu}"

start_server() {  # start_server CONFIG -> SERVER_PID, PORT
  local cfg=$1 cmd
  case $cfg in
    gpu) cmd=("$GTADOC" serve "$ARCHIVE" --engine gpu) ;;
    cpu) cmd=("$GTADOC" serve "$ARCHIVE" --engine cpu) ;;
    gpu-np2-mpi) cmd=(mpirun -np 2 --bind-to none -x GTADOC_SHUFFLE=mpi "$GTADOC" serve "$ARCHIVE"
      --engine gpu) ;;
    gpu-np[0-9]*) cmd=(mpirun -np "${cfg#gpu-np}" --bind-to none "$GTADOC" serve "$ARCHIVE" --engine gpu) ;;
    gpu-gpus[0-9]*) cmd=("$GTADOC" serve "$ARCHIVE" --gpus "${cfg#gpu-gpus}") ;;
    cpu-np2) cmd=(mpirun -np 2 --bind-to none --oversubscribe "$GTADOC" serve "$ARCHIVE" --engine cpu) ;;
  esac
  : >"$WORK/server.err"
  local t0=$EPOCHREALTIME
  # shellcheck disable=SC2086  # SERVE_ARGS: extra words, e.g. "-vv"
  "${cmd[@]}" --listen 127.0.0.1:0 --cache-bytes 4G --queue 256 --query-timeout 600 \
    ${SERVE_ARGS:-} 2>"$WORK/server.err" </dev/null &
  SERVER_PID=$!
  PORT=""
  for _ in $(seq 1 1200); do
    PORT=$(grep -o 'listening on http://[^ ]*' "$WORK/server.err" | sed 's/.*://')
    [[ -n $PORT ]] && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  STARTUP_S=$(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')
  [[ -n $PORT ]]
}

run_wall() {  # run_wall CONFIG TASKARGS... -> seconds of a fresh gtadoc run to a file
  local cfg=$1
  shift
  local pre=() eng=(--engine gpu)
  case $cfg in
    cpu) eng=(--engine cpu) ;;
    gpu-np2-mpi) pre=(mpirun -np 2 --bind-to none) ;;
    gpu-np[0-9]*) pre=(mpirun -np "${cfg#gpu-np}" --bind-to none) ;;
    gpu-gpus[0-9]*) eng=(--gpus "${cfg#gpu-gpus}") ;;
    cpu-np2) pre=(mpirun -np 2 --bind-to none --oversubscribe) eng=(--engine cpu) ;;
  esac
  local t0=$EPOCHREALTIME
  "${pre[@]}" "$GTADOC" run "$ARCHIVE" "$@" "${eng[@]}" -o "$WORK/run.out" --force \
    2>>"$LOG" </dev/null || return 1
  awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.3f", a - b }'
}

for cfg in "${CONFIG_LIST[@]}"; do
  need=0
  [[ $cfg == gpu* ]] && need=1
  [[ $cfg =~ ^gpu-(np|gpus)([0-9]+) ]] && need=${BASH_REMATCH[2]}
  if ((gpus < need)); then
    say "config $cfg: skipped ($gpus GPUs)"
    continue
  fi
  if ! start_server "$cfg"; then
    say "config $cfg: the service did not start: $(tail -c 400 "$WORK/server.err")"
    continue
  fi
  say "config $cfg: serving on port $PORT after ${STARTUP_S}s"
  while IFS=$'\t' read -r name body reps concurrent; do
    [[ -z $name ]] && continue
    # shellcheck disable=SC2086
    wall=$(run_wall "$cfg" $name) || wall=null
    first=$WORK/first.out
    "$LOAD" --port "$PORT" --body "$body" --requests 1 --no-cache --save "$first" >/dev/null
    if cmp -s "$first" "$WORK/run.out"; then match=true; else match=false; fi
    rm -f "$WORK/run.out"
    bytes=$(stat -c %s "$first")
    rm -f "$first"
    for mode in uncached cached concurrent64; do
      args=(--port "$PORT" --body "$body")
      case $mode in
        uncached) args+=(--no-cache --requests "$reps") ;;
        cached)  # at most ~1 GB of cached responses per task
          n=$((1000000000 / (bytes + 1)))
          ((n > CACHED_REPS)) && n=$CACHED_REPS
          ((n < 3)) && n=3
          args+=(--requests "$n") ;;
        concurrent64)
          [[ $concurrent == 1 ]] || continue
          args+=(--no-cache --connections 64 --requests 64) ;;
      esac
      res=$("$LOAD" "${args[@]}" </dev/null) || say "  $name $mode: errors: $res"
      printf '{"config": "%s", "task": "%s", "mode": "%s", "run_wall_s": %s, "match": %s, "bytes": %s, "startup_s": %s, "load": %s}\n' \
        "$cfg" "$name" "$mode" "$wall" "$match" "$bytes" "$STARTUP_S" "${res:-null}" >>"$ROWS"
      say "  $name $mode: $res"
    done
  done <"$TASKS_FILE"
  # (mpirun itself exits 1 when it is signalled, even though every rank drained and exited 0)
  kill -TERM "$SERVER_PID"
  wait "$SERVER_PID"
  say "config $cfg: service exited with $? ($(grep -c 'error' "$WORK/server.err") error lines)"
  grep 'error' "$WORK/server.err" | head -5 >>"$LOG"
  [[ -n ${SERVE_ARGS:-} ]] && cp "$WORK/server.err" "$OUT/server-$cfg.log"
  SERVER_PID=""
done

python3 "$ROOT/scripts/bench/serve_table.py" "$ROWS" >"$OUT/serve-bench.md" 2>>"$LOG" &&
  cat "$OUT/serve-bench.md"
grep -q '"match": false' "$ROWS" && { say "FAIL: a service response differs from gtadoc run"; exit 1; }
exit 0
