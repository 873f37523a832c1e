#!/usr/bin/env bash
# Scaling benchmark over the GPUs of one host: weak and strong scaling of
# `gtadoc run` (end to end, a fresh process per query) and of `gtadoc serve` (resident queries),
# on synthetic corpora written by gtadoc_gen from a model trained on real text
# (scripts/datasets/README.md: the text is synthetic, the answers are exact), with
#   - every output compared byte for byte with the one-GPU output of the same archive;
#   - the compression of each corpus on all cores (MB/s per core, peak RSS);
#   - NCCL's plain all-to-all between the same GPUs, the yardstick of the shuffle.
#
#   scripts/bench/scaling-bench.sh                    # after a build (scripts/device-check.sh)
#   GPUS="1 2" PER_GPU=64M CONFIG_ENGINE=cpu BUILD_DIR=build scripts/bench/scaling-bench.sh  # no GPU
#
# Runs: corpus synth-A (A x PER_GPU bytes) for every A in GPUS, each on every N <= A GPUs.
# Weak series = the diagonal (the same bytes per GPU): efficiency = time(1 GPU, synth-1) /
# time(N, synth-N); strong series = one corpus on 1..A GPUs: speed-up = time(1) / time(N).
# N = 1 runs without a launcher (what a one-GPU user runs); N > 1 under
# `mpirun -np N --bind-to none` (one GPU per rank, chosen by local rank).
#
# Knobs: BUILD_DIR (build-device), OUT (./device-out), WORK (/dev/shm/gtadoc-scaling when /dev/shm
#   has room, else /tmp/...: corpora, archives, outputs; outputs land in memory so the write phase
#   measures the ranks' parallel writes, not a disk), GPUS ("1 2 4"; counts above the host's GPUs
#   are dropped), PER_GPU (512M), SEED (1), TRAIN (real text the model learns from; default
#   /usr/include), TASKS (comma-separated; default "word-count,inverted-index,sequence-count,
#   ranked-inverted-index"), SERVE (1 = the resident series: scripts/bench/serve-bench.sh with
#   configs gpu and gpu-npN on the weak archives and the largest one), SERVE_TASKS_FILE
#   (scripts/bench/serve-tasks-gpus.tsv), A2A_BYTES ("67108864 268435456": bytes each rank
#   sends), RUN_TIMEOUT (600 s per run), CONFIG_ENGINE (gpu; cpu runs the same series with CPU
#   ranks, to try the script without a GPU).
# Writes $OUT/scaling-rows.jsonl (one row per run), $OUT/scaling.md (tables), $OUT/compress.md,
# $OUT/alltoall.txt, $OUT/serve-*/ and $OUT/scaling.log. Exit 1 when a run failed or differed.
set -uo pipefail
export LC_ALL=C
[ -n "${EPOCHREALTIME:-}" ] || { echo "needs bash 5 (\$EPOCHREALTIME)" >&2; exit 1; }
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)
BUILD_DIR=${BUILD_DIR:-build-device}
BUILD_DIR=$(cd "$BUILD_DIR" 2>/dev/null && pwd) || { echo "no build directory ${BUILD_DIR}" >&2; exit 1; }
OUT=${OUT:-./device-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
GTADOC=$BUILD_DIR/gtadoc
GEN=$BUILD_DIR/scripts/datasets/gtadoc_gen
A2A=$BUILD_DIR/scripts/bench/gtadoc_nccl_alltoall_bench
PER_GPU=${PER_GPU:-512M}
SEED=${SEED:-1}
TRAIN=${TRAIN:-/usr/include}
ENGINE=${CONFIG_ENGINE:-gpu}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
IFS=',' read -r -a TASK_LIST <<<"${TASKS:-word-count,inverted-index,sequence-count,ranked-inverted-index}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
# mpirun's topology discovery without hwloc's GPU plugins: with them (OpenCL starts the CUDA
# driver on every GPU) an `mpirun -np 4` of a trivial program took 1.5 s on the H200 x4 host,
# without them 0.4 s (docs/ARCHITECTURE.md, "GPU and MPI internals"). HWLOC_COMPONENTS set by the caller wins.
export HWLOC_COMPONENTS=${HWLOC_COMPONENTS-"-opencl,-gl,-cuda,-nvml,-rsmi,-levelzero"}
LOG=$OUT/scaling.log
ROWS=$OUT/scaling-rows.jsonl
: >"$LOG"
: >"$ROWS"
say() { echo "$*" | tee -a "$LOG" >&2; }
for exe in "$GTADOC" "$GEN"; do
  [[ -x $exe ]] || { say "missing $exe (build gtadoc and gtadoc_gen)"; exit 1; }
done
command -v /usr/bin/time >/dev/null || { say "needs /usr/bin/time (GNU time)"; exit 1; }

host_gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[[ $ENGINE == cpu ]] && host_gpus=$(nproc)
COUNTS=()
for n in ${GPUS:-1 2 4}; do
  if ((n <= host_gpus)); then COUNTS+=("$n"); else say "GPU count $n: skipped ($host_gpus GPUs)"; fi
done
((${#COUNTS[@]} > 0)) || { say "no GPU count to run"; exit 1; }
MAX=${COUNTS[-1]}

per_gpu_bytes=$(numfmt --from=iec "${PER_GPU%B}")
need=$((per_gpu_bytes * MAX * 4))  # corpora, archives and the largest outputs at once, roughly
WORK=${WORK:-}
if [[ -z $WORK ]]; then
  shm=$(df --output=avail -B1 /dev/shm 2>/dev/null | tail -1 || echo 0)
  if ((shm > need)); then WORK=/dev/shm/gtadoc-scaling; else WORK=/tmp/gtadoc-scaling; fi
fi
mkdir -p "$WORK"
say "host: $(nproc) cores, $host_gpus GPUs ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | xargs)); work in $WORK"
say "sources $(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo '?'); counts ${COUNTS[*]}; $PER_GPU per GPU; engine $ENGINE"

# ------------------------------------------------------------------ corpora and archives
MODEL=$WORK/model.bin
if [[ ! -f $MODEL ]]; then
  t0=$EPOCHREALTIME
  "$GEN" train "$TRAIN" -o "$MODEL" >>"$LOG" 2>&1 || { say "training on $TRAIN failed"; exit 1; }
  say "model trained on $TRAIN in $(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN{printf "%.1f", a-b}') s"
fi
echo "| corpus | bytes | documents | shards | compress wall s | cores | MB/s | MB/s per core | peak RSS MiB | archive MB | ratio |" >"$OUT/compress.md"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" >>"$OUT/compress.md"
declare -A ARCHIVE SHARDS
for n in "${COUNTS[@]}"; do
  name=synth-$n
  corpus=$WORK/$name
  arch=$WORK/$name.gtd
  if [[ ! -f $arch/manifest.h5 ]]; then
    rm -rf "$corpus" "$arch"
    "$GEN" generate "$MODEL" -o "$corpus" --bytes $((per_gpu_bytes * n)) --seed "$SEED" >>"$LOG" 2>&1 ||
      { say "generating $name failed"; exit 1; }
    /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$GTADOC" compress "$corpus" -o "$arch" -vv \
      >"$WORK/compress-$name.log" 2>&1 || { cat "$WORK/compress-$name.log" >>"$LOG"; say "compressing $name failed"; exit 1; }
    # The phases (where a many-core compression spends its time) under the table.
    grep -E "inputs listed|read [0-9]+ shards|words sorted|dictionary of|encoded [0-9]+ shards|manifest written" \
      "$WORK/compress-$name.log" | sed -E "s/^gtadoc: [a-z]+: compress: /- $name: /" >>"$WORK/compress-phases.md"
    read -r wall rss <"$WORK/time.txt"
    bytes=$(du -sb --apparent-size "$corpus" | cut -f1)
    docs=$(find "$corpus" -type f | wc -l)
    abytes=$(du -sb --apparent-size "$arch" | cut -f1)
    shards=$("$GTADOC" info "$arch" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["shards"])')
    awk -v c="$name (synthetic, seed $SEED)" -v by="$bytes" -v d="$docs" -v s="$shards" -v w="$wall" \
      -v t="$(nproc)" -v r="$rss" -v a="$abytes" 'BEGIN {
        printf "| %s | %d | %d | %d | %.2f | %d | %.1f | %.2f | %d | %.1f | %.2f |\n",
          c, by, d, s, w, t, by / w / 1e6, by / w / t / 1e6, r / 1024, a / 1e6, by / a }' \
      >>"$OUT/compress.md"
    rm -rf "$corpus"  # runs need only the archive
  fi
  ARCHIVE[$n]=$arch
  SHARDS[$n]=$("$GTADOC" info "$arch" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["shards"], d["input_bytes"])')
  say "archive $name: shards and input bytes ${SHARDS[$n]}"
done
if [[ -s $WORK/compress-phases.md ]]; then
  { echo; echo "Phases (\`gtadoc compress -vv\`):"; echo; cat "$WORK/compress-phases.md"; } >>"$OUT/compress.md"
  rm -f "$WORK/compress-phases.md"
fi
cat "$OUT/compress.md" >&2

# ------------------------------------------------------------------ NCCL's own all-to-all
: >"$OUT/alltoall.txt"
if [[ $ENGINE == gpu && -x $A2A ]]; then
  for n in "${COUNTS[@]}"; do
    ((n > 1)) || continue
    echo "## $n GPUs" >>"$OUT/alltoall.txt"
    timeout 120 mpirun -np "$n" --bind-to none "$A2A" ${A2A_BYTES:-67108864 268435456} \
      >>"$OUT/alltoall.txt" 2>>"$LOG" || say "all-to-all on $n GPUs failed"
  done
  cat "$OUT/alltoall.txt" >&2
fi

# ------------------------------------------------------------------ end to end
# Every archive a runs on every count n <= a: the diagonal (n = a) is the weak series, each row
# (a fixed) a strong series; every output is compared with the archive's one-GPU output.
failed=0
one_run() {  # one_run N A TASK... -> a row in $ROWS; output kept as $WORK/out-A-TASK-N
  local n=$1 an=$2
  shift 2
  local task="$*" slug out pre=() t0 t1 rc wall
  slug=$(echo "$task" | tr -c 'a-z0-9\n' '_')
  out=$WORK/out-$an-$slug-$n
  ((n > 1)) && pre=(mpirun -np "$n" --bind-to none)
  [[ $ENGINE == cpu && $n -gt 1 ]] && pre+=(--oversubscribe)
  local eng=(--engine "$ENGINE")
  [[ $ENGINE == cpu && $n -gt 1 ]] && eng+=(--threads 1)
  rm -f "$WORK/stats.json"
  t0=$EPOCHREALTIME
  # shellcheck disable=SC2086
  timeout "$RUN_TIMEOUT" "${pre[@]}" "$GTADOC" run "${ARCHIVE[$an]}" $task "${eng[@]}" -o "$out" \
    --force --stats "$WORK/stats.json" 2>>"$LOG" </dev/null
  rc=$?
  t1=$EPOCHREALTIME
  wall=$(awk -v a="$t1" -v b="$t0" 'BEGIN{printf "%.3f", a-b}')
  local match=null first=$WORK/out-$an-$slug-1
  if ((rc == 0)); then
    if [[ $n == 1 ]]; then
      match=true
    elif [[ -f $first ]]; then
      if cmp -s "$first" "$out"; then match=true; else match=false; fi
    fi
  fi
  [[ $rc != 0 || $match == false ]] && failed=1
  local obytes=0 stats=null
  [[ -f $out ]] && obytes=$(stat -c %s "$out")
  [[ $n != 1 ]] && rm -f "$out"
  [[ -s $WORK/stats.json ]] && stats=$(tr -d '\n' <"$WORK/stats.json")
  read -r shards ibytes <<<"${SHARDS[$an]}"
  printf '{"task": "%s", "gpus": %d, "archive": "synth-%s", "shards": %d, "input_bytes": %d, "rc": %d, "wall_s": %s, "match": %s, "output_bytes": %d, "stats": %s}\n' \
    "$task" "$n" "$an" "$shards" "$ibytes" "$rc" "$wall" "$match" "$obytes" "$stats" >>"$ROWS"
  say "  $task, synth-$an on $n: rc $rc, wall $wall s, identical to one GPU: $match"
}

for task in "${TASK_LIST[@]}"; do
  say "task $task"
  for a in "${COUNTS[@]}"; do
    for n in "${COUNTS[@]}"; do
      ((n <= a)) && one_run "$n" "$a" "$task"
    done
    rm -f "$WORK"/out-*
  done
done
python3 "$ROOT/scripts/bench/scaling_table.py" "$ROWS" >"$OUT/scaling.md" 2>>"$LOG" && cat "$OUT/scaling.md" >&2

# ------------------------------------------------------------------ resident (gtadoc serve)
# The weak diagonal and the largest corpus on every count, through serve-bench.sh (each
# configuration's first response compared with `gtadoc run`'s output).
if [[ ${SERVE:-1} == 1 && $ENGINE == gpu ]]; then
  for a in "${COUNTS[@]}"; do
    cfgs=()
    for n in "${COUNTS[@]}"; do
      if ((n == a)) || { ((a == MAX)) && ((n < a)); }; then
        if ((n == 1)); then cfgs+=(gpu); else cfgs+=("gpu-np$n"); fi
      fi
    done
    OUT=$OUT/serve-synth-$a ARCHIVE=${ARCHIVE[$a]} CONFIGS="${cfgs[*]}" BUILD_DIR=${BUILD_DIR#"$ROOT"/} \
      TASKS_FILE=${SERVE_TASKS_FILE:-$ROOT/scripts/bench/serve-tasks-gpus.tsv} CACHED_REPS=3 \
      "$ROOT/scripts/bench/serve-bench.sh" >>"$LOG" 2>&1 || { say "serve-bench on synth-$a failed"; failed=1; }
    say "resident, synth-$a (${cfgs[*]}):"
    cat "$OUT/serve-synth-$a/serve-bench.md" >&2 2>/dev/null
    python3 "$ROOT/scripts/bench/scaling_table.py" "$ROWS" "$OUT"/serve-synth-*/serve-bench.jsonl \
      >"$OUT/scaling.md" 2>>"$LOG"
  done
fi
exit $failed
