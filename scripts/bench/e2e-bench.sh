#!/usr/bin/env bash
# Whole-`gtadoc run` benchmark: real corpora built on the machine itself, every
# task x engine configuration end to end (process wall time and the `--stats` phases), and a
# byte-for-byte check of every output in the same run. After a build of gtadoc (and, for the
# raw-text check, gtadoc_reference), e.g. the one scripts/device-check.sh makes:
#
#   scripts/bench/e2e-bench.sh                                   # GPU machine, defaults
#   BUILD_DIR=build LARGE_MB=40 REPS=1 OUT=/tmp/e2e-out scripts/bench/e2e-bench.sh   # dev box
#
# Steps:
#  1. Corpora in $DATA (kept between runs; rebuilt only when their file list changes): real source
#     and documentation files (*.py *.pyi *.h *.hpp *.c *.cc *.cu *.cuh *.rst *.txt *.md *.html,
#     0 < size < 2 MiB, no symlinks, hard links once) found under $ROOTS, in byte order of their
#     paths, copied with `cp --parents` so document names are real paths (usr/include/stdio.h).
#     `large` = the sorted list's prefix up to >= LARGE_MB MB (1 MB = 10^6 bytes); `smallN` (N MB)
#     = disjoint consecutive chunks of the same files ordered by crc32(path) (a deterministic mix of
#     every root; small2 first, then small8, small30, ...). Any other name in CORPORA is taken as
#     an existing directory $DATA/NAME.
#  2. Compression of each corpus (all cores) with the default shard size and, for `large` (and
#     other corpora of at least SMALL_MAX_MB), once more per size in LARGE_SHARD_SIZES (archive
#     `large-256M`), timed. Small corpora: smallN, and other corpora under SMALL_MAX_MB.
#  3. For each archive x task x config: `gtadoc run ARCHIVE TASK -o FILE --force --stats FILE`,
#     timed by bash ($EPOCHREALTIME around the process, or around mpirun), REPS repetitions
#     keeping the one with the smallest `total_s`. A config whose first run took >= REPEAT_UNDER_S
#     wall seconds is not repeated (long runs vary by a few percent), and once the whole script
#     has run BUDGET_S seconds every later config runs once (noted in the table). A failed run is
#     retried once, then recorded as failed.
#     configs: gpu (--engine gpu), gpu-np2 (mpirun -np 2, --engine gpu; needs >= 2 GPUs; the
#              shuffle a one-query run on one node picks: records staged through host memory and
#              pulled across the processes), gpu-np2-nccl (the same with the NCCL shuffle forced,
#              GTADOC_SHUFFLE=nccl), gpu-np2-mpi (MPI forced), gpu-gpus2 (`--gpus 2`: two GPUs
#              of one process, no launcher), gpu-hostrows (--engine gpu with the row
#              order of count-ordered tasks planned on the host, GTADOC_DEVICE_ROW_ORDER=0),
#              cpu (--engine cpu, all cores), cpu-np2 (mpirun -np 2, --engine cpu),
#              auto (no --engine), cpu1 (--engine cpu --threads 1; small corpora only).
#     Without a GPU the gpu configs are skipped with a note, and the default list runs cpu-np2 in
#     place of gpu-np2 so the two-rank path is still measured.
#  4. Correctness: every config's output must equal (cmp) the first successful config's output
#     for that (archive, task): `match`; on the small corpora every output is also compared
#     with the raw-text reference (gtadoc_reference, timed as config `reference`): `ref_match`.
#     Outputs are deleted once compared (only their sizes are kept).
#  5. scripts/bench/e2e_table.py renders $OUT/e2e.json and $OUT/e2e.md (also after every archive,
#     so a cut-off run keeps what it measured). Raw rows: $OUT/e2e-rows.jsonl, log: $OUT/e2e.log.
#     scripts/bench/plot_e2e.py --e2e $OUT/e2e.json --out DIR draws stacked phase times.
# Exit status 1 when any run failed or any output differed.
#
# Knobs (environment): BUILD_DIR (build-device), OUT (./device-out), DATA (/tmp/gtadoc-e2e),
#   REPS (2), REPEAT_UNDER_S (5), BUDGET_S (300; 0 = no limit), LARGE_MB (450),
#   CORPORA ("small2 small8 small30 large", run in that order), LARGE_SHARD_SIZES ("256M"; "" =
#   default shards only), SMALL_MAX_MB (100: other corpora below it count as small),
#   TASKS (comma-separated; default "word-count,word-count --top 100,sort,inverted-index,
#   term-vector,sequence-count,ranked-inverted-index"), CONFIGS ("gpu gpu-np2 cpu auto cpu1";
#   with two GPUs also gpu-gpus2),
#   ROOTS (directories searched for corpus files; default: those of /usr/include,
#   /usr/local/include, /usr/lib/python3*, /usr/local/lib/python3*, /usr/share/doc,
#   /usr/local/cuda/include, /opt/conda/lib/python3* that exist), KEEP_ARCHIVES (1 keeps the
#   archives in $DATA/.archives/NAME.gtd, e.g. for serve-bench.sh), MPIRUN_ARGS ("--oversubscribe
#   --bind-to none": Open MPI would otherwise pin each of 2 ranks to one core).
#
# Running time. Dev box (2 cores, no GPU), `BUILD_DIR=build LARGE_MB=40 REPS=1`: 3 minutes
# (147 runs). GPU machine (16 cores, one H100/H200), defaults: not measured yet; estimated at
# 5-6 minutes from the dev box and docs/PERFORMANCE.md: ~290 runs, ~140 of them on the GPU with
# ~0.5 s of CUDA start-up each; most of the time goes to the two 450 MB archives'
# inverted-index, sequence-count and ranked-inverted-index (outputs of 0.1-1.5 GB, formatted and
# written on the host by every engine) and to the small corpora's cpu1 and reference runs;
# building the 450 MB corpus adds ~0.5 min on a fresh machine. BUDGET_S limits an overrun to
# single runs. To cut it down: REPS=1; LARGE_MB=200; LARGE_SHARD_SIZES=""; CORPORA="small8
# large"; CONFIGS="gpu cpu auto"; TASKS="word-count,inverted-index,sequence-count".
set -uo pipefail
export LC_ALL=C  # $EPOCHREALTIME and awk agree on the decimal point
[ -n "${EPOCHREALTIME:-}" ] || { echo "needs bash 5 (\$EPOCHREALTIME)" >&2; exit 1; }
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)
OUT=${OUT:-./device-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD_DIR=${BUILD_DIR:-build-device}
BUILD_DIR=$(cd "$BUILD_DIR" 2>/dev/null && pwd) || { echo "no build directory ${BUILD_DIR}" >&2; exit 1; }
DATA=${DATA:-/tmp/gtadoc-e2e}
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)
REPS=${REPS:-2}
REPEAT_UNDER_S=${REPEAT_UNDER_S:-5}
BUDGET_S=${BUDGET_S:-300}
LARGE_MB=${LARGE_MB:-450}
SMALL_MAX_MB=${SMALL_MAX_MB:-100}
CORPORA=${CORPORA:-small2 small8 small30 large}
# Lists may also be comma-separated (device-check's E2E_ENV cannot carry spaces).
CORPORA=${CORPORA//,/ }
CONFIGS=${CONFIGS:-}
CONFIGS=${CONFIGS//,/ }
LARGE_SHARD_SIZES=${LARGE_SHARD_SIZES-256M}
LARGE_SHARD_SIZES=${LARGE_SHARD_SIZES//,/ }
TASKS=${TASKS:-word-count,word-count --top 100,sort,inverted-index,term-vector,sequence-count,ranked-inverted-index}
read -r -a MPIRUN_ARGS <<<"${MPIRUN_ARGS:---oversubscribe --bind-to none}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
# mpirun's topology discovery without hwloc's GPU plugins: with them (OpenCL starts the CUDA
# driver on every GPU) an `mpirun -np 4` of a trivial program took 1.5 s on the H200 x4 host,
# without them 0.4 s (docs/ARCHITECTURE.md, "GPU and MPI internals"). HWLOC_COMPONENTS set by the caller wins.
export HWLOC_COMPONENTS=${HWLOC_COMPONENTS-"-opencl,-gl,-cuda,-nvml,-rsmi,-levelzero"}
export PATH=/usr/local/cuda/bin:$PATH

GTADOC=$BUILD_DIR/gtadoc
[ -x "$GTADOC" ] || { echo "no $GTADOC: build gtadoc first" >&2; exit 1; }
REFERENCE=
for r in "$BUILD_DIR/tests/gtadoc_reference" "$BUILD_DIR/gtadoc_reference"; do
  [ -x "$r" ] && REFERENCE=$r && break
done
if [ -z "$REFERENCE" ] && [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake --build "$BUILD_DIR" --target gtadoc_reference >/dev/null 2>&1 &&
    REFERENCE=$BUILD_DIR/tests/gtadoc_reference
  [ -x "$REFERENCE" ] || REFERENCE=
fi

LOG=$OUT/e2e.log
ROWS=$OUT/e2e-rows.jsonl
ARCHIVES=$OUT/e2e-archives.jsonl
NOTES=$OUT/e2e-notes.txt
: >"$LOG"
: >"$ROWS"
: >"$ARCHIVES"
: >"$NOTES"
say() { echo "$*" | tee -a "$LOG"; }
note() { say "note: $*"; echo "$*" >>"$NOTES"; }
failed=0
START=$EPOCHREALTIME

GPUS=0
if command -v nvidia-smi >/dev/null 2>&1; then
  GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
if [ -z "${CONFIGS:-}" ]; then
  if [ "$GPUS" -ge 2 ]; then CONFIGS="gpu gpu-np2 gpu-gpus2 cpu auto cpu1"
  elif [ "$GPUS" -ge 1 ]; then CONFIGS="gpu gpu-np2 cpu auto cpu1"; else CONFIGS="gpu cpu-np2 cpu auto cpu1"; fi
fi
HAVE_MPI=0
command -v mpirun >/dev/null 2>&1 && HAVE_MPI=1

# shellcheck source=scripts/bench/json_str.sh
. "$ROOT/scripts/bench/json_str.sh"
fsize() { stat -c %s "$1" 2>/dev/null || echo 0; }
elapsed() { awk -v s="$1" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.4f", e - s }'; }

{
  printf '{"host": %s, "date": %s, "cores": %s, "cpu": %s, "gpus": %s, "gpu_names": %s, ' \
    "$(json_str "$(hostname)")" "$(json_str "$(date -u +%Y-%m-%dT%H:%M:%SZ)")" "$(nproc)" \
    "$(json_str "$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)")" "$GPUS" \
    "$(json_str "$(nvidia-smi -L 2>/dev/null | sed 's/ (UUID.*//' | paste -sd';' -)")"
  printf '"sources": %s, "build_dir": %s, "reps": %s, "repeat_under_s": %s, "budget_s": %s, "large_mb": %s, ' \
    "$(json_str "$("$ROOT/scripts/source-fingerprint.sh" 2>/dev/null)")" "$(json_str "$BUILD_DIR")" \
    "$REPS" "$REPEAT_UNDER_S" "$BUDGET_S" "$LARGE_MB"
  printf '"configs": %s, "tasks": %s, "corpora": %s, "reference": %s, "output_fs": %s}\n' \
    "$(json_str "$CONFIGS")" "$(json_str "$TASKS")" "$(json_str "$CORPORA")" \
    "$(json_str "$REFERENCE")" "$(json_str "$(stat -f -c %T "$DATA" 2>/dev/null)")"
} >"$OUT/e2e-meta.json"
say "gtadoc e2e bench: $(nproc) cores, $GPUS GPU(s), configs: $CONFIGS, reps $REPS, data $DATA"
[ -n "$REFERENCE" ] || note "gtadoc_reference not found in $BUILD_DIR: no raw-text comparison"

# ---- 1. corpora --------------------------------------------------------------------------------
if [ -z "${ROOTS:-}" ]; then
  ROOTS=
  for r in /usr/include /usr/local/include /usr/lib/python3 /usr/lib/python3.* \
    /usr/local/lib/python3.* /usr/share/doc /usr/local/cuda/include /opt/conda/lib/python3.* \
    /usr/local/cuda/share /usr/share/cmake* /usr/share/perl /usr/share/perl5 /usr/lib/cmake \
    /usr/local/share /opt; do
    [ -d "$r" ] && ROOTS+="${ROOTS:+ }$r"
  done
fi
wanted=()
for c in $CORPORA; do
  case $c in large | small[0-9]*) wanted+=("$c") ;; esac
done
if [ "${#wanted[@]}" -gt 0 ]; then
  say "collecting files under: $ROOTS"
  # Writes DATA/.lists/NAME.list (NUL-separated paths) for every generated corpus.
  # shellcheck disable=SC2086
  PYTHONPATH="scripts/bench${PYTHONPATH:+:$PYTHONPATH}" \
    python3 - "$DATA/.lists" "$LARGE_MB" "${wanted[*]}" $ROOTS <<'PY' 2>&1 | tee -a "$LOG"
import os, re, sys, zlib
from corpus_files import corpus_files
out, large_mb, wanted, roots = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
files = corpus_files(roots)
total = sum(s for _, s in files)
print(f"found {len(files)} files, {total / 1e6:.1f} MB")
os.makedirs(out, exist_ok=True)

def write(name, chosen):
    with open(os.path.join(out, name + ".list"), "wb") as f:
        f.write(b"".join(p + b"\0" for p, _ in chosen))

if "large" in wanted:
    chosen, acc = [], 0
    for p, s in files:
        if acc >= large_mb * 1e6:
            break
        chosen.append((p, s))
        acc += s
    if acc < large_mb * 1e6:
        print(f"warning: only {acc / 1e6:.1f} MB found for large (LARGE_MB={large_mb:g})")
    write("large", chosen)
smalls = sorted({int(w[5:]) for w in wanted if re.fullmatch(r"small\d+", w)} | {2, 8, 30})
mixed = sorted(files, key=lambda f: (zlib.crc32(f[0]), f[0]))
i = 0
for mb in smalls:
    chosen, acc = [], 0
    while i < len(mixed) and acc < mb * 1e6:
        chosen.append(mixed[i])
        acc += mixed[i][1]
        i += 1
    if f"small{mb}" in wanted:
        write(f"small{mb}", chosen)
PY
fi
for c in "${wanted[@]}"; do
  list=$DATA/.lists/$c.list
  [ -f "$list" ] || { note "no file list for $c"; continue; }
  if [ -d "$DATA/$c" ] && [ -f "$DATA/.lists/$c.done" ] && cmp -s "$list" "$DATA/.lists/$c.done"; then
    say "corpus $c: reusing $DATA/$c"
    continue
  fi
  rm -rf "${DATA:?}/$c" "$DATA/.lists/$c.done"
  mkdir -p "$DATA/$c"
  s=$EPOCHREALTIME
  xargs -0 -r -n 2000 cp --parents -t "$DATA/$c" <"$list" || note "copying corpus $c had errors"
  cp "$list" "$DATA/.lists/$c.done"
  say "corpus $c: built in $(elapsed "$s") s"
done
declare -A CORPUS_BYTES CORPUS_FILES
for c in $CORPORA; do
  if [ ! -d "$DATA/$c" ]; then
    note "corpus $c: no directory $DATA/$c, skipped"
    continue
  fi
  CORPUS_FILES[$c]=$(find "$DATA/$c" -type f | wc -l)
  CORPUS_BYTES[$c]=$(find "$DATA/$c" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%d", s }')
  say "corpus $c: ${CORPUS_FILES[$c]} files, ${CORPUS_BYTES[$c]} bytes"
done

# ---- 2.-4. per archive: compress, then task x config -------------------------------------------
WORK=$DATA/.work
ARCH_DIR=$DATA/.archives
mkdir -p "$WORK" "$ARCH_DIR"
IFS=',' read -r -a TASK_LIST <<<"$TASKS"
declare -A NOTED

config_cmd() {  # config archive outfile statsfile task-args... -> CMD array; returns 1 = skip
  local cfg=$1 arch=$2 out=$3 stats=$4
  shift 4
  local base=("$GTADOC" run "$arch" "$@" -o "$out" --force --stats "$stats")
  case $cfg in
    gpu) CMD=("${base[@]}" --engine gpu) ;;
    gpu-hostrows) CMD=(env GTADOC_DEVICE_ROW_ORDER=0 "${base[@]}" --engine gpu) ;;
    cpu) CMD=("${base[@]}" --engine cpu) ;;
    auto) CMD=("${base[@]}") ;;
    cpu1) CMD=("${base[@]}" --engine cpu --threads 1) ;;
    gpu-np2) CMD=(mpirun "${MPIRUN_ARGS[@]}" -np 2 "${base[@]}" --engine gpu) ;;
    gpu-np2-nccl) CMD=(mpirun "${MPIRUN_ARGS[@]}" -np 2 -x GTADOC_SHUFFLE=nccl "${base[@]}" --engine gpu) ;;
    gpu-np2-mpi) CMD=(mpirun "${MPIRUN_ARGS[@]}" -np 2 -x GTADOC_SHUFFLE=mpi "${base[@]}" --engine gpu) ;;
    gpu-gpus2) CMD=("${base[@]}" --gpus 2) ;;
    cpu-np2) CMD=(mpirun "${MPIRUN_ARGS[@]}" -np 2 "${base[@]}" --engine cpu) ;;
    *) return 2 ;;
  esac
}

skip_reason() {  # config small(0/1) -> prints a reason when the config does not apply
  case $1 in
    gpu | gpu-hostrows) [ "$GPUS" -ge 1 ] || echo "no GPU" ;;
    gpu-gpus2) [ "$GPUS" -ge 2 ] || echo "needs 2 GPUs ($GPUS found)" ;;
    gpu-np2 | gpu-np2-nccl | gpu-np2-mpi) if [ "$GPUS" -lt 2 ]; then echo "needs 2 GPUs ($GPUS found)";
             elif [ "$HAVE_MPI" = 0 ]; then echo "no mpirun"; fi ;;
    cpu-np2) [ "$HAVE_MPI" = 1 ] || echo "no mpirun" ;;
    cpu1) [ "$2" = 1 ] || echo "large corpus" ;;
    cpu | auto) ;;
    *) echo "unknown config" ;;
  esac
}

over_budget() {  # true once the run is past BUDGET_S: later configs run once (noted once)
  [ "$BUDGET_S" = 0 ] && return 1
  awk -v s="$START" -v e="$EPOCHREALTIME" -v b="$BUDGET_S" 'BEGIN { exit !(e - s > b) }' || return 1
  if [ -z "${NOTED[budget]:-}" ]; then
    NOTED[budget]=1
    note "past BUDGET_S=$BUDGET_S s after $(elapsed "$START") s: no more repetitions"
  fi
  return 0
}

stat_total() { sed -n 's/.*"total_s": *\([0-9.eE+-]*\).*/\1/p' "$1" 2>/dev/null | head -1; }

# emit_row archive corpus task config rc reps wall walls totals bytes match ref_match baseline stats err
emit_row() {
  printf '{"archive": %s, "corpus": %s, "task": %s, "config": %s, "rc": %s, "reps": %s, "wall_s": %s, "walls": [%s], "totals": [%s], "output_bytes": %s, "match": %s, "ref_match": %s, "baseline": %s, "stats": %s, "error": %s}\n' \
    "$(json_str "$1")" "$(json_str "$2")" "$(json_str "$3")" "$(json_str "$4")" "$5" "$6" "$7" \
    "$8" "$9" "${10}" "${11}" "${12}" "$(json_str "${13}")" "${14}" "$(json_str "${15}")" >>"$ROWS"
}

render() { python3 "$ROOT/scripts/bench/e2e_table.py" --out "$OUT" >/dev/null 2>>"$LOG" || say "e2e_table.py failed"; }

bench_archive() {  # archive corpus small(0/1)
  local arch_name=$1 c=$2 small=$3 arch=$ARCH_DIR/$1.gtd
  local corpus=$DATA/$c
  for task in "${TASK_LIST[@]}"; do
    read -r -a targs <<<"$task"
    local base_out=$WORK/base.out ref_out=$WORK/ref.out out=$WORK/run.out stats=$WORK/stats.json
    local baseline="" have_ref=0
    rm -f "$base_out" "$ref_out" "$out"
    if [ "$small" = 1 ] && [ -n "$REFERENCE" ]; then
      local best="" walls="" rc=0 r n=0 w s
      for ((r = 1; r <= REPS; r++)); do
        s=$EPOCHREALTIME
        "$REFERENCE" "$corpus" "${targs[@]}" >"$ref_out" 2>"$WORK/err"
        rc=$?
        w=$(elapsed "$s")
        [ "$rc" = 0 ] || break
        n=$((n + 1))
        walls+="${walls:+, }$w"
        if [ -z "$best" ] || awk -v a="$w" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$w; fi
        awk -v a="$w" -v b="$REPEAT_UNDER_S" 'BEGIN { exit !(a >= b) }' && break
        over_budget && break
      done
      if [ "$rc" = 0 ]; then
        have_ref=1
        emit_row "$arch_name" "$c" "$task" reference 0 "$n" "$best" "$walls" "" "$(fsize "$ref_out")" \
          true true "" null ""
        say "  $arch_name | $task | reference: wall $best s, $(fsize "$ref_out") bytes"
      else
        emit_row "$arch_name" "$c" "$task" reference "$rc" 0 null "" "" 0 false false "" null \
          "$(tail -c 300 "$WORK/err")"
        say "  $arch_name | $task | reference FAILED (exit $rc): $(tail -c 300 "$WORK/err")"
        failed=1
      fi
    fi
    for cfg in $CONFIGS; do
      local why
      why=$(skip_reason "$cfg" "$small")
      if [ -n "$why" ]; then
        if [ -z "${NOTED[$cfg/$why]:-}" ]; then
          NOTED[$cfg/$why]=1
          note "config $cfg skipped ($why)"
        fi
        continue
      fi
      local r rc=1 tries=0 best_total="" best_wall="" best_stats="null" walls="" totals="" err=""
      local w s tot
      r=0
      while ((r < REPS)); do
        config_cmd "$cfg" "$arch" "$out" "$stats" "${targs[@]}"
        rm -f "$stats"
        s=$EPOCHREALTIME
        "${CMD[@]}" >/dev/null 2>"$WORK/err"
        rc=$?
        w=$(elapsed "$s")
        tot=$(stat_total "$stats")
        if [ "$rc" != 0 ] || [ -z "$tot" ]; then
          err=$(tail -c 400 "$WORK/err")
          tries=$((tries + 1))
          if ((tries <= 1)); then
            say "  $arch_name | $task | $cfg: run failed (exit $rc), retrying: $err"
            continue
          fi
          [ "$rc" = 0 ] && rc=99
          break
        fi
        r=$((r + 1))
        walls+="${walls:+, }$w"
        totals+="${totals:+, }$tot"
        if [ -z "$best_total" ] || awk -v a="$tot" -v b="$best_total" 'BEGIN { exit !(a < b) }'; then
          best_total=$tot
          best_wall=$w
          best_stats=$(tr -d '\n' <"$stats")
        fi
        awk -v a="$w" -v b="$REPEAT_UNDER_S" 'BEGIN { exit !(a >= b) }' && break
        over_budget && break
      done
      if [ "$rc" != 0 ] || [ -z "$best_total" ]; then
        emit_row "$arch_name" "$c" "$task" "$cfg" "$rc" "$r" null "$walls" "$totals" 0 false \
          "$([ "$have_ref" = 1 ] && echo false || echo null)" "$baseline" null "$err"
        say "  $arch_name | $task | $cfg: FAILED (exit $rc): $err"
        failed=1
        rm -f "$out"
        continue
      fi
      local bytes match ref_match=null
      bytes=$(fsize "$out")
      if [ -z "$baseline" ]; then
        baseline=$cfg
        match=true
        mv "$out" "$base_out"
        cmpfile=$base_out
      else
        if cmp -s "$out" "$base_out"; then match=true; else match=false; fi
        cmpfile=$out
      fi
      if [ "$have_ref" = 1 ]; then
        if cmp -s "$cmpfile" "$ref_out"; then ref_match=true; else ref_match=false; fi
      fi
      rm -f "$out"
      { [ "$match" = false ] || [ "$ref_match" = false ]; } && failed=1
      emit_row "$arch_name" "$c" "$task" "$cfg" 0 "$r" "$best_wall" "$walls" "$totals" "$bytes" \
        "$match" "$ref_match" "$baseline" "$best_stats" ""
      say "  $arch_name | $task | $cfg: wall $best_wall s, total $best_total s, $bytes bytes, match=$match ref_match=$ref_match"
    done
    rm -f "$base_out" "$ref_out" "$out"
  done
}

for c in $CORPORA; do
  [ -n "${CORPUS_BYTES[$c]:-}" ] || continue
  case $c in  # generated corpora by name, others by size
    small[0-9]*) small=1 ;;
    large*) small=0 ;;
    *) small=0
       awk -v b="${CORPUS_BYTES[$c]}" -v m="$SMALL_MAX_MB" 'BEGIN { exit !(b < m * 1e6) }' && small=1 ;;
  esac
  sizes=(default)
  [ "$small" = 0 ] && for z in $LARGE_SHARD_SIZES; do sizes+=("$z"); done
  for z in "${sizes[@]}"; do
    name=$c
    zargs=()
    if [ "$z" != default ]; then
      name=$c-$z
      zargs=(--shard-size "$z")
    fi
    arch=$ARCH_DIR/$name.gtd
    rm -rf "$arch"
    s=$EPOCHREALTIME
    "$GTADOC" compress "$DATA/$c" -o "$arch" --force "${zargs[@]}" >"$WORK/err" 2>&1
    rc=$?
    cs=$(elapsed "$s")
    info=null
    if [ "$rc" = 0 ]; then
      info=$("$GTADOC" info "$arch" --json 2>/dev/null | python3 -c \
        'import json,sys; j=json.load(sys.stdin); j.pop("shard_table", None); print(json.dumps(j))' 2>/dev/null)
      [ -n "$info" ] || info=null
    fi
    printf '{"archive": %s, "corpus": %s, "shard_size": %s, "small": %s, "files": %s, "input_bytes": %s, "compress_s": %s, "rc": %s, "info": %s}\n' \
      "$(json_str "$name")" "$(json_str "$c")" "$(json_str "$z")" \
      "$([ "$small" = 1 ] && echo true || echo false)" "${CORPUS_FILES[$c]}" "${CORPUS_BYTES[$c]}" \
      "$cs" "$rc" "$info" >>"$ARCHIVES"
    if [ "$rc" != 0 ]; then
      say "archive $name: compress FAILED (exit $rc): $(tail -c 300 "$WORK/err")"
      failed=1
      continue
    fi
    say "archive $name: compressed in $cs s ($(du -sb --apparent-size "$arch" | cut -f1) bytes)"
    bench_archive "$name" "$c" "$small"
    [[ ${KEEP_ARCHIVES:-0} == 1 ]] || rm -rf "$arch"
    render
  done
done
rm -rf "$WORK"
render
python3 "$ROOT/scripts/bench/e2e_table.py" --out "$OUT" | tee -a "$LOG"
say "e2e bench finished in $(elapsed "$START") s; tables: $OUT/e2e.md, $OUT/e2e.json"
exit "$failed"
