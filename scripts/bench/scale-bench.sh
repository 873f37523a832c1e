#!/usr/bin/env bash
# Scale benchmark: how gtadoc's costs grow with the corpus size, on one machine. Corpora: the
# real text the machine holds ("real") and synthetic corpora of SIZES written by gtadoc_gen from
# a model trained on that text (scripts/datasets/README.md: the text is synthetic, the answers
# are exact). For each corpus, smallest first (the real text placed by its size):
#   1. raw-text baselines on the corpus itself, page cache warm: scripts/bench/raw_wordcount on
#      every core (--threads) and, with a GPU, the raw GPU baseline (raw_gpu, RAW_GPU_TASKS);
#   2. `gtadoc compress` on every core: seconds, MB/s, peak RSS (/usr/bin/time -v), archive size;
#      a synthetic corpus is then deleted (unless KEEP=1): the rest needs only the archive;
#   3. the floor: seconds to `cat` every file of the archive to /dev/null, page cache warm, and
#      after `echo 3 > /proc/sys/vm/drop_caches` where that is writable ("n/a" otherwise, and on
#      tmpfs, which keeps its pages);
#   4. every task end to end, a fresh `gtadoc run ARCHIVE TASK -o FILE --stats FILE -v` per
#      config: gpu (--engine gpu), gpus (--gpus N, with N > 1 GPUs), cpu (--engine cpu, every
#      core); wall time ($EPOCHREALTIME around the process), its CPU seconds (user + system, every
#      thread) and peak RSS (/usr/bin/time), the `--stats` phases and the `-v` timings line
#      (open, load, init, traversal, shuffle, merge, write; max over ranks);
#   5. resident: `gtadoc serve` per RESIDENT config: seconds until /healthz answers 200, the
#      first uncached query and the median of RESIDENT_REPS more (gtadoc_serve_load, as
#      serve-bench.sh measures; serve-bench.sh itself times neither the ready point nor the
#      first query, and repeats every query with `gtadoc run`, hence this step).
# Every output is compared byte for byte (one over DIGEST_OVER bytes by its sha256): each
# config's with the first config's output of the same (corpus, task); the service's first
# response with `gtadoc run`'s; raw_gpu's with gtadoc's and raw_wordcount's first K rows with
# `word-count --top K` (all rows for plain word-count).
# Outputs are deleted once compared (only their sizes are kept).
#
#   scripts/bench/scale-bench.sh                         # GPU machine, after a build
#   SIZES="1G 4G" TASKS="word-count --top 100,sequence-count --top 100" scripts/bench/scale-bench.sh
#   BUILD_DIR=build CONFIGS=cpu SIZES="64M 256M" TRAIN=/usr/include OUT=/tmp/scale-out \
#     WORK=/tmp/gtadoc-scale scripts/bench/scale-bench.sh    # no GPU (dev box)
#   KEEP=1 SIZES=16G scripts/bench/scale-bench.sh         # keep corpora/archives for a next call
#
# Knobs (environment):
#   BUILD_DIR (build-device), OUT (./device-out), WORK (/tmp/gtadoc-scale: corpora, archives,
#     outputs; /dev/shm/... keeps them in memory, and then no cold floor),
#   SIZES ("1G 4G 16G 32G": gtadoc_gen sizes, powers of 1024; a size whose corpus + archive
#     would not fit the free disk of WORK is skipped with a note, and so is a run whose output,
#     estimated from the same task's at the last corpus, would not fit), REAL (1: the real text
#     is a corpus of its own, "real"; 0: not), SEED (1),
#   TRAIN (directories of real text; default those of /usr/lib/python3/dist-packages,
#     /usr/local/lib/python3*/dist-packages, /usr/share/doc, /usr/include that exist): their
#     text files (known text extensions, or no NUL byte in the first 4 KiB; no symlinks, hard
#     links once, each < 64 MiB) are linked into WORK/real/<absolute path>, and that folder is
#     the corpus (symlinks: document names are the real paths, and two roots holding the same
#     relative path, e.g. two dist-packages, do not stop `gtadoc compress` with a duplicate
#     document name, as the roots given as inputs side by side would); the model learns from
#     a mix of them (ordered by crc32 of the path) of up to TRAIN_MB MB (500; 0 = all:
#     `gtadoc_gen train` reads on one thread, ~10-20 MB/s); REAL_MB (0 = all) caps the real
#     corpus the same way,
#   TASKS (comma-separated; default "word-count --top 100,sort,inverted-index,term-vector --top
#     100,sequence-count --top 100,ranked-inverted-index": `--top` where the task takes it,
#     docs/OUTPUT.md; the other answers are corpus-sized and measured by their bytes; a task's
#     words may be joined by + instead of spaces, and every list may use commas),
#   CONFIGS ("gpu gpus cpu"; gpu configs are skipped with a note where no GPU is visible, gpus
#     with fewer than 2), GPUS (N of the gpus config; default: every GPU of the host),
#   RESIDENT (configs of step 5; default "gpu gpus" of CONFIGS, "cpu" when there is no GPU;
#     "" = none), RESIDENT_TASKS ("word-count --top 100,sequence-count --top 100"),
#     RESIDENT_REPS (5),
#   RAW (1; 0 skips step 1), RAW_GPU_TASKS ("word-count --top 100,sequence-count --top 100"),
#     RAW_GPU_FACTOR (6: raw_gpu is skipped where the text times this exceeds the GPU's memory),
#   BUDGET (540 s; 0 = none): once past it every remaining step and size is skipped with a note,
#     and a size is not started when the last one's time scaled to its bytes would pass it; no
#     command runs past BUDGET + GRACE (50 s: the GPU machine stops a command at 600 s),
#     RUN_TIMEOUT (600 s per command; a run stopped by it is a failure),
#   DIGEST_OVER (4000000000 bytes: the first config's output of a task, kept to compare the
#     others with, is kept as its sha256 instead where it is larger),
#   KEEP (0; 1 keeps the model, corpora and archives in WORK and reuses those there, with
#     their compression row, instead of training, generating and compressing again).
# Writes $OUT/scale-rows.jsonl (one row per measurement: kind corpus, compress, floor, run,
# resident, raw), $OUT/scale-meta.json, $OUT/scale-notes.txt, $OUT/scale.log, and through
# scripts/bench/scale_table.py (after every corpus, so a cut-off run keeps what it measured)
# $OUT/scale.md and $OUT/scale.png (seconds per GB against corpus size; 1 GB = 10^9 bytes).
# Exit status 1 when a step of gtadoc failed or any output differed (raw baselines that fail,
# e.g. out of GPU memory on a large corpus, are noted, not failures).
#
# Running time: the dev box (2 shared cores, no GPU), `CONFIGS=cpu SIZES="256M 1G"
# TRAIN=/usr/include`: 7.5 minutes (real = 0.25 GB; each of its 6 tasks, compression and the
# resident queries). One H100 host (16 cores, 126 GiB, a 128 GB tmpfs at /dev/shm), WORK in
# /dev/shm (corpora and archives in memory: 34 GB generated in 21 s, against 344 s on its 64 GB
# disk, where past the page cache's dirty limit the disk sets the pace), each line one command
# under the machine's 10-minute limit, KEEP=1 throughout:
#   SIZES=32G REAL=0 TASKS="word-count --top 100" CONFIGS=gpu RAW=0 RESIDENT=   150 s (train 8,
#     generate 21, compress 113); then the same with TASKS="word-count --top 100,sort,
#     sequence-count --top 100,term-vector --top 100" CONFIGS="gpu cpu" RAW=1: 225 s;
#   SIZES="1G 4G" REAL_MB=500 (every task, config, baseline and the service): 158 s;
#   SIZES=16G REAL=0 (the 32G corpus removed first): 287 s. Outputs are kept in WORK for the
#     comparison: ranked-inverted-index's (39 GB at 17 GB) twice in tmpfs beside a run's own
#     memory fill such a host (docs/PERFORMANCE.md); KEEP=0 at least drops each corpus once
#     compressed.
set -uo pipefail
export LC_ALL=C  # $EPOCHREALTIME and awk agree on the decimal point
[ -n "${EPOCHREALTIME:-}" ] || { echo "needs bash 5 (\$EPOCHREALTIME)" >&2; exit 1; }
cd "$(dirname "$0")/../.." || exit 1
ROOT=$(pwd)
START_US=${EPOCHREALTIME/./}
BUILD_DIR=${BUILD_DIR:-build-device}
BUILD_DIR=$(cd "$BUILD_DIR" 2>/dev/null && pwd) || { echo "no build directory ${BUILD_DIR}" >&2; exit 1; }
OUT=${OUT:-./device-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=${WORK:-/tmp/gtadoc-scale}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
GTADOC=$BUILD_DIR/gtadoc
GEN=$BUILD_DIR/scripts/datasets/gtadoc_gen
RAWWC=$BUILD_DIR/scripts/bench/raw_wordcount
RAWGPU=$BUILD_DIR/scripts/bench/raw_gpu
LOAD=$BUILD_DIR/scripts/bench/gtadoc_serve_load
SIZES=${SIZES-1G 4G 16G 32G}
SIZES=${SIZES//,/ }
REAL=${REAL:-1}
SEED=${SEED:-1}
TRAIN_MB=${TRAIN_MB:-500}
REAL_MB=${REAL_MB:-0}
TASKS=${TASKS:-word-count --top 100,sort,inverted-index,term-vector --top 100,sequence-count --top 100,ranked-inverted-index}
CONFIGS=${CONFIGS:-gpu gpus cpu}
CONFIGS=${CONFIGS//,/ }
RESIDENT_TASKS=${RESIDENT_TASKS:-word-count --top 100,sequence-count --top 100}
RESIDENT_REPS=${RESIDENT_REPS:-5}
RAW=${RAW:-1}
RAW_GPU_TASKS=${RAW_GPU_TASKS-word-count --top 100,sequence-count --top 100}
BUDGET=${BUDGET:-540}
GRACE=${GRACE:-50}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
KEEP=${KEEP:-0}
DIGEST_OVER=${DIGEST_OVER:-4000000000}
CORES=$(nproc)
# A task's words may be joined by + (device-check's SCALE_ENV cannot carry spaces).
IFS=',' read -r -a TASK_LIST <<<"${TASKS//+/ }"
IFS=',' read -r -a RESIDENT_TASK_LIST <<<"${RESIDENT_TASKS//+/ }"
IFS=',' read -r -a RAW_GPU_TASK_LIST <<<"${RAW_GPU_TASKS//+/ }"
export NCCL_NVLS_ENABLE=0
export PATH=/usr/local/cuda/bin:$PATH

LOG=$OUT/scale.log
ROWS=$OUT/scale-rows.jsonl
NOTES=$OUT/scale-notes.txt
: >"$LOG"
: >"$ROWS"
: >"$NOTES"
say() { echo "$*" | tee -a "$LOG" >&2; }
note() { say "note: $*"; echo "$*" >>"$NOTES"; }
failed=0
fail() { say "FAIL: $*"; echo "FAIL: $*" >>"$NOTES"; failed=1; }

# shellcheck source=scripts/bench/json_str.sh
. "$ROOT/scripts/bench/json_str.sh"
secs_since() {  # seconds (6 decimals) since $1, a time in microseconds (${EPOCHREALTIME/./})
  local d=$((${EPOCHREALTIME/./} - $1))
  printf '%d.%06d' $((d / 1000000)) $((d % 1000000))
}
elapsed_s() { echo $(((${EPOCHREALTIME/./} - START_US) / 1000000)); }
over_budget() { ((BUDGET > 0 && $(elapsed_s) >= BUDGET)); }
limit_s() {  # timeout of the next command: RUN_TIMEOUT, cut to what is left before BUDGET + GRACE
  local l=$RUN_TIMEOUT
  if ((BUDGET > 0)); then
    local left=$((BUDGET + GRACE - $(elapsed_s)))
    ((left < l)) && l=$left
  fi
  ((l < 1)) && l=1
  echo "$l"
}
# Whether a command run under a timeout of $1 s that ran $2 s was stopped by a timeout cut
# from the budget: it ran to that limit (a SIGKILL well before it came from elsewhere, e.g. the
# kernel's OOM killer: killed_why says so, and the run is a failure).
cut_by_budget() { ((BUDGET > 0 && $1 < RUN_TIMEOUT)) && awk -v w="$2" -v l="$1" 'BEGIN { exit !(w >= l - 1) }'; }
killed_why() {  # exit status $1: " (killed: the kernel's last OOM kill ...)" where it applies
  ((${1:-0} == 137)) || return 0
  local oom
  oom=$(dmesg 2>/dev/null | grep -i 'out of memory: killed process' | tail -1 | sed 's/^\[[^]]*\] *//')
  if [[ -n $oom ]]; then echo " (killed; the kernel's last OOM kill: ${oom:0:160})"; else echo " (killed by SIGKILL)"; fi
}
fsize() { stat -c %s "$1" 2>/dev/null || echo 0; }
per_gb() { awk -v s="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f", s / (b / 1e9); else printf "null" }'; }
slug_of() { echo "$1" | tr -c 'a-zA-Z0-9\n' '_'; }
avail_bytes() { df --output=avail -B1 "$WORK" 2>/dev/null | tail -1 | tr -d ' '; }
# The last "timings:" lines of `gtadoc -v` (one per rank) -> {"open": s, "load": s, ...}, max
# over ranks; null without one.
phases_json() {
  grep -o 'timings: .*' "$1" 2>/dev/null | awk '
    { for (i = 2; i < NF; i += 2) { v = $(i + 1); sub(/s$/, "", v)
        if (!(($i) in m)) { order[++n] = $i; m[$i] = v } else if (v + 0 > m[$i] + 0) m[$i] = v } }
    END { if (!n) { print "null"; exit }
          s = ""; for (k = 1; k <= n; k++) s = s (k > 1 ? ", " : "") "\"" order[k] "\": " m[order[k]]
          print "{" s "}" }'
}
body_of() {  # task words -> the JSON body of a /v1/query request (TSV)
  local -a a
  read -r -a a <<<"$1"
  local j i k
  j="{\"task\": $(json_str "${a[0]}")"
  for ((i = 1; i < ${#a[@]}; i++)); do
    k=${a[i]#--}
    if ((i + 1 < ${#a[@]})) && [[ ${a[i + 1]} != --* ]]; then
      if [[ ${a[i + 1]} =~ ^[0-9]+$ ]]; then j+=", \"$k\": ${a[i + 1]}"; else j+=", \"$k\": $(json_str "${a[i + 1]}")"; fi
      i=$((i + 1))
    else
      j+=", \"$k\": true"
    fi
  done
  echo "$j, \"format\": \"tsv\"}"
}

for exe in "$GTADOC" "$GEN"; do
  [[ -x $exe ]] || { say "missing $exe (build gtadoc and gtadoc_gen)"; exit 1; }
done
HAVE_TIME=0
[[ -x /usr/bin/time ]] && HAVE_TIME=1

HOST_GPUS=0
command -v nvidia-smi >/dev/null 2>&1 && HOST_GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
NGPUS=${GPUS:-$HOST_GPUS}
# The raw GPU baseline holds the text and its tokens on one GPU: about RAW_GPU_FACTOR times the
# text's bytes (17.2 GB of text asked for 16.6 GB more with 83.4 GB in use on an 80 GB H100;
# 4.3 GB ran). A larger corpus skips it with a note rather than spend minutes failing.
RAW_GPU_FACTOR=${RAW_GPU_FACTOR:-6}
GPU_MEM_BYTES=0
if ((HOST_GPUS > 0)); then
  mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | sort -n | head -1)
  [[ $mib =~ ^[0-9]+$ ]] && GPU_MEM_BYTES=$((mib * 1048576))  # unknown: raw_gpu is tried
fi
config_why() {  # why config $1 cannot run here (empty: it can)
  case $1 in
    gpu) ((HOST_GPUS >= 1)) || echo "no GPU" ;;
    gpus) if ((HOST_GPUS < 2)); then echo "needs 2 or more GPUs ($HOST_GPUS found)";
          elif ((NGPUS < 2 || NGPUS > HOST_GPUS)); then echo "GPUS=$NGPUS of $HOST_GPUS GPUs"; fi ;;
    cpu) ;;
    *) echo "unknown config" ;;
  esac
}
config_label() { if [[ $1 == gpus ]]; then echo "gpus$NGPUS"; else echo "$1"; fi; }
config_args() {  # the engine words of config $1
  case $1 in
    gpu) echo "--engine gpu" ;;
    gpus) echo "--gpus $NGPUS" ;;
    cpu) echo "--engine cpu" ;;
  esac
}
RUN_CONFIGS=()
for c in $CONFIGS; do
  why=$(config_why "$c")
  if [[ -n $why ]]; then note "config $c skipped ($why)"; else RUN_CONFIGS+=("$c"); fi
done
RESIDENT=${RESIDENT-auto}
if [[ $RESIDENT == auto ]]; then
  RESIDENT=""
  for c in "${RUN_CONFIGS[@]}"; do [[ $c == gpu* ]] && RESIDENT+="${RESIDENT:+ }$c"; done
  ((HOST_GPUS == 0)) && RESIDENT=cpu
fi
RESIDENT_CONFIGS=()
for c in ${RESIDENT//,/ }; do
  [[ $c == 0 ]] && continue
  why=$(config_why "$c")
  if [[ -n $why ]]; then note "resident config $c skipped ($why)"; else RESIDENT_CONFIGS+=("$c"); fi
done
if ((${#RESIDENT_CONFIGS[@]} > 0)) && [[ ! -x $LOAD ]]; then
  note "no $LOAD (build gtadoc_serve_load): no resident step"
  RESIDENT_CONFIGS=()
fi
HAVE_RAWWC=0 HAVE_RAWGPU=0
if [[ $RAW == 1 ]]; then
  if [[ -x $RAWWC ]]; then HAVE_RAWWC=1; else note "no $RAWWC (build raw_wordcount): no raw CPU baseline"; fi
  if ((HOST_GPUS >= 1)) && ((${#RAW_GPU_TASK_LIST[@]} > 0)); then
    if [[ -x $RAWGPU ]]; then HAVE_RAWGPU=1; else note "no $RAWGPU (a CUDA build of raw_gpu): no raw GPU baseline"; fi
  fi
fi

if [[ -z ${TRAIN:-} ]]; then
  TRAIN=
  for r in /usr/lib/python3/dist-packages /usr/local/lib/python3*/dist-packages /usr/share/doc /usr/include; do
    [[ -d $r ]] && TRAIN+="${TRAIN:+ }$r"
  done
fi
TRAIN=${TRAIN//,/ }
WORK_FS=$(stat -f -c %T "$WORK" 2>/dev/null)
say "scale bench: $CORES cores, $HOST_GPUS GPU(s), configs ${RUN_CONFIGS[*]:-none}, resident ${RESIDENT_CONFIGS[*]:-none}; work in $WORK ($WORK_FS, $(($(avail_bytes) / 1000000000)) GB free); budget ${BUDGET}s"
((${#RUN_CONFIGS[@]} > 0)) || { say "no config to run"; exit 1; }

# ------------------------------------------------------------------ real text and the model
# WORK/real: a symlink per text file of TRAIN at its absolute path; WORK/train: the mix the
# model learns from (files ordered by crc32 of the path, up to TRAIN_MB).
[[ $KEEP == 1 ]] || rm -rf "${WORK:?}/real" "$WORK/train" "$WORK/model.bin" "$WORK"/synth-* "$WORK"/*.gtd \
  "$WORK"/*.stamp "$WORK"/*.compress.json "$WORK"/out-* "$WORK"/base-* "$WORK"/raw-*
t0=${EPOCHREALTIME/./}
# shellcheck disable=SC2086
read -r REAL_FILES REAL_BYTES TRAIN_FILES TRAIN_BYTES REAL_STAMP < <(python3 - "$WORK" "$TRAIN_MB" "$REAL_MB" "$KEEP" $TRAIN <<'PY' 2>>"$LOG"
import hashlib, os, stat, sys, zlib
from concurrent.futures import ThreadPoolExecutor
work, train_mb, real_mb, keep, roots = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1", sys.argv[5:]
TEXT = {".py", ".pyi", ".pyx", ".pxd", ".h", ".hh", ".hpp", ".hxx", ".c", ".cc", ".cpp", ".cxx", ".inl",
        ".ipp", ".tcc", ".cu", ".cuh", ".rst", ".txt", ".md", ".html", ".htm", ".tex", ".pm", ".pl",
        ".cmake", ".sh", ".js", ".ts", ".css", ".xml", ".json", ".yaml", ".yml", ".toml", ".cfg",
        ".ini", ".csv", ".tsv", ".in", ".am", ".el", ".java", ".rs", ".go", ".f90", ".sql", ".svg",
        ".def", ".inc", ".mk", ".rb", ".lua", ".tcl", ".m4", ".ac", ".texi", ".man", ".1", ".3",
        ".5", ".8", ".rsp", ".map", ".log", ".jinja", ".j2", ".tmpl", ".template", ".bat", ".ps1"}
BINARY = {".so", ".a", ".o", ".pyc", ".pyo", ".gz", ".xz", ".bz2", ".zst", ".zip", ".whl", ".egg",
          ".jar", ".png", ".jpg", ".jpeg", ".gif", ".ico", ".bmp", ".tif", ".tiff", ".webp", ".pdf",
          ".ttf", ".otf", ".woff", ".woff2", ".npy", ".npz", ".pkl", ".pickle", ".pt", ".pth",
          ".bin", ".dat", ".db", ".sqlite", ".h5", ".hdf5", ".mo", ".gmo", ".wasm", ".dll", ".exe",
          ".dylib", ".mat", ".onnx", ".parquet", ".arrow", ".mp3", ".wav", ".ogg", ".mp4", ".tar",
          ".lzma", ".br", ".cubin", ".fatbin", ".ptx", ".node"}
real = sorted({os.path.realpath(r) for r in roots if os.path.isdir(r)})
real = [r for r in real if not any(r != o and r.startswith(o.rstrip("/") + "/") for o in real)]
found, unsure, seen = [], [], set()
for root in real:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for f in sorted(filenames):
            p = os.path.join(dirpath, f)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or not 0 < st.st_size < 64 << 20 or (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            ext = os.path.splitext(f)[1].lower()
            if ext in BINARY:
                continue
            (found if ext in TEXT else unsure).append((p, st.st_size))
def texty(item):
    try:
        with open(item[0], "rb") as fh:
            return b"\0" not in fh.read(4096)
    except OSError:
        return False
with ThreadPoolExecutor(32) as ex:
    found += [it for it, ok in zip(unsure, ex.map(texty, unsure)) if ok]
found = [it for it in found if os.access(it[0], os.R_OK)]
found.sort()
if real_mb > 0:
    mixed = sorted(found, key=lambda f: (zlib.crc32(os.fsencode(f[0])), f[0]))
    keep_set, acc = set(), 0
    for p, s in mixed:
        if acc >= real_mb * 1e6:
            break
        keep_set.add(p)
        acc += s
    found = [it for it in found if it[0] in keep_set]
mixed = sorted(found, key=lambda f: (zlib.crc32(os.fsencode(f[0])), f[0]))
train, acc = [], 0
for p, s in mixed:
    if train_mb > 0 and acc >= train_mb * 1e6:
        break
    train.append((p, s))
    acc += s
h = hashlib.sha256()
for p, s in found:
    h.update(os.fsencode(p) + b"\0" + str(s).encode() + b"\n")
h.update(f"train {train_mb}".encode())
stamp = h.hexdigest()[:16]
def farm(name, files):
    top = os.path.join(work, name)
    mark = os.path.join(work, name + ".stamp")
    if keep and os.path.isdir(top) and os.path.exists(mark) and open(mark).read() == stamp:
        return
    if os.path.isdir(top):
        import shutil
        shutil.rmtree(top)
    made = set()
    for p, _ in files:
        link = os.path.join(top, p.lstrip("/"))
        d = os.path.dirname(link)
        if d not in made:
            os.makedirs(d, exist_ok=True)
            made.add(d)
        os.symlink(p, link)
    with open(mark, "w") as fh:
        fh.write(stamp)
farm("real", found)
if train_mb > 0:
    farm("train", train)
print(len(found), sum(s for _, s in found), len(train), acc, stamp)
PY
)
if [[ -z ${REAL_FILES:-} || ${REAL_FILES:-0} == 0 ]]; then
  say "no real text found under TRAIN ($TRAIN)"
  exit 1
fi
TRAIN_DIR=$WORK/train
((${TRAIN_MB%.*} > 0)) || TRAIN_DIR=$WORK/real
say "real text under $TRAIN: $REAL_FILES files, $REAL_BYTES bytes (linked in $(secs_since "$t0") s); model learns from $TRAIN_FILES files, $TRAIN_BYTES bytes"
MODEL=$WORK/model.bin
if [[ $KEEP == 1 && -f $MODEL && "$(cat "$WORK/model.stamp" 2>/dev/null)" == "$REAL_STAMP" ]]; then
  TRAIN_S=null
  say "model: reusing $MODEL"
else
  rm -f "$MODEL" "$WORK"/synth-*.stamp
  t0=${EPOCHREALTIME/./}
  "$GEN" train "$TRAIN_DIR" -o "$MODEL" >>"$LOG" 2>&1 || { say "training on $TRAIN_DIR failed (see $LOG)"; exit 1; }
  TRAIN_S=$(secs_since "$t0")
  echo "$REAL_STAMP" >"$WORK/model.stamp"
  say "model trained in $TRAIN_S s ($(fsize "$MODEL") bytes)"
fi

{
  printf '{"host": %s, "date": %s, "cores": %s, "cpu": %s, "memory_gib": %s, "gpus": %s, "gpu_names": %s, ' \
    "$(json_str "$(hostname)")" "$(json_str "$(date -u +%Y-%m-%dT%H:%M:%SZ)")" "$CORES" \
    "$(json_str "$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)")" \
    "$(awk '/MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)" "$HOST_GPUS" \
    "$(json_str "$(nvidia-smi -L 2>/dev/null | sed 's/ (UUID.*//' | paste -sd';' -)")"
  printf '"sources": %s, "build_dir": %s, "work": %s, "work_fs": %s, "train": %s, "real_files": %s, "real_bytes": %s, ' \
    "$(json_str "$("$ROOT/scripts/source-fingerprint.sh" 2>/dev/null)")" "$(json_str "$BUILD_DIR")" \
    "$(json_str "$WORK")" "$(json_str "$WORK_FS")" "$(json_str "$TRAIN")" "$REAL_FILES" "$REAL_BYTES"
  printf '"train_files": %s, "train_bytes": %s, "train_s": %s, "model_bytes": %s, "seed": %s, "sizes": %s, ' \
    "$TRAIN_FILES" "$TRAIN_BYTES" "$TRAIN_S" "$(fsize "$MODEL")" "$SEED" "$(json_str "$SIZES")"
  printf '"tasks": %s, "configs": %s, "gpus_n": %s, "resident": %s, "budget_s": %s}\n' \
    "$(json_str "$TASKS")" "$(json_str "${RUN_CONFIGS[*]}")" "$NGPUS" \
    "$(json_str "${RESIDENT_CONFIGS[*]:-}")" "$BUDGET"
} >"$OUT/scale-meta.json"

render() {
  python3 "$ROOT/scripts/bench/scale_table.py" --out "$OUT" >/dev/null 2>>"$LOG" || say "scale_table.py failed (see $LOG)"
}

# ------------------------------------------------------------------ one corpus
# row_common: the first fields of every row of the current corpus.
row_common() {
  printf '"corpus": %s, "synthetic": %s, "input_bytes": %s' "$(json_str "$CNAME")" "$SYNTH" "$CBYTES"
}
declare -A RATIO  # output bytes / input bytes of a task at the last corpus (disk estimates)
PENDING_RAW=()    # raw rows waiting for gtadoc's outputs: "tool|task|threads|rc|wall|bytes|timings|file|cut"

raw_baselines() {  # step 1: on $CDIR
  local lim t0 rc wall
  # The text into the page cache first (a just generated corpus is there already; the real
  # text or a kept corpus may not be, e.g. after a cold floor).
  if [[ $SYNTH == false || $REUSED == 1 ]] && ((HAVE_RAWWC || HAVE_RAWGPU)); then
    find -L "$CDIR" -type f -print0 | xargs -0 cat >/dev/null 2>&1
  fi
  if ((HAVE_RAWWC)); then
    over_budget && { note "$CNAME: raw_wordcount skipped (past BUDGET)"; return; }
    lim=$(limit_s)
    t0=${EPOCHREALTIME/./}
    timeout -k 10 "$lim" "$RAWWC" --threads "$CORES" "$CDIR" >"$WORK/raw-wc.out" 2>"$WORK/err"
    rc=$?
    wall=$(secs_since "$t0")
    local bytes
    bytes=$(fsize "$WORK/raw-wc.out")
    PENDING_RAW+=("raw_wordcount|word-count|$CORES|$rc|$wall|$bytes|null|$WORK/raw-wc.out|$lim")
    say "  $CNAME | raw_wordcount --threads $CORES: rc $rc, $wall s, $bytes bytes"
  fi
  if ((HAVE_RAWGPU && GPU_MEM_BYTES > 0 && CBYTES * RAW_GPU_FACTOR > GPU_MEM_BYTES)); then
    note "$CNAME: raw_gpu skipped (needs ~$((CBYTES * RAW_GPU_FACTOR / 1000000000)) GB of GPU memory, RAW_GPU_FACTOR=$RAW_GPU_FACTOR; the GPU has $((GPU_MEM_BYTES / 1000000000)) GB)"
  elif ((HAVE_RAWGPU)); then
    local task slug timings
    local -a targs
    for task in "${RAW_GPU_TASK_LIST[@]}"; do
      over_budget && { note "$CNAME: raw_gpu $task skipped (past BUDGET)"; continue; }
      read -r -a targs <<<"$task"
      slug=$(slug_of "$task")
      lim=$(limit_s)
      t0=${EPOCHREALTIME/./}
      timeout -k 10 "$lim" "$RAWGPU" "$CDIR" "${targs[@]}" --timings >"$WORK/raw-gpu-$slug.out" 2>"$WORK/err"
      rc=$?
      wall=$(secs_since "$t0")
      timings=$(grep '^{' "$WORK/err" | tail -1)
      [[ -n $timings ]] || timings=null
      PENDING_RAW+=("raw_gpu|$task|1|$rc|$wall|$(fsize "$WORK/raw-gpu-$slug.out")|$timings|$WORK/raw-gpu-$slug.out|$lim")
      say "  $CNAME | raw_gpu $task: rc $rc, $wall s"
      ((rc == 0)) || note "$CNAME: raw_gpu $task exited $rc: $(grep -v '^{' "$WORK/err" | tail -c 200)"
    done
  fi
}

flush_raw() {  # the raw rows, their outputs compared with gtadoc's (base-SLUG of this corpus)
  local p tool task threads rc wall bytes timings file lim match base k t
  local -a w
  for p in "${PENDING_RAW[@]}"; do
    IFS='|' read -r tool task threads rc wall bytes timings file lim <<<"$p"
    match=null
    base=""
    if ((rc == 0)); then
      if [[ $tool == raw_wordcount ]]; then
        for t in "${TASK_LIST[@]}"; do  # word-count with --top K: K first rows; plain: all
          read -r -a w <<<"$t"
          [[ ${w[0]} == word-count && -f $WORK/base-$(slug_of "$t") ]] || continue
          k=0
          [[ "${w[*]}" =~ --top\ ([0-9]+) ]] && k=${BASH_REMATCH[1]}
          if ((${#w[@]} == 1 || (${#w[@]} == 3 && k > 0))); then
            base=$WORK/base-$(slug_of "$t")
            if ((k > 0)); then
              if head -n "$k" "$file" | cmp -s - "$base"; then match=true; else match=false; fi
            else
              if cmp -s "$file" "$base"; then match=true; else match=false; fi
            fi
            break
          fi
        done
      else
        base=$WORK/base-$(slug_of "$task")
        if [[ -f $base ]]; then
          if cmp -s "$file" "$base"; then match=true; else match=false; fi
        fi
      fi
    elif ((rc == 124 || rc == 137)) && cut_by_budget "$lim" "$wall"; then
      note "$CNAME: $tool $task stopped at the budget's limit ($lim s)"
    else
      note "$CNAME: $tool $task failed (exit $rc)$(killed_why "$rc")"
    fi
    [[ $match == false ]] && fail "$CNAME: $tool $task differs from gtadoc's output"
    printf '{"kind": "raw", %s, "tool": %s, "task": %s, "threads": %s, "rc": %s, "wall_s": %s, "s_per_gb": %s, "output_bytes": %s, "match": %s, "timings": %s}\n' \
      "$(row_common)" "$(json_str "$tool")" "$(json_str "$task")" "$threads" "$rc" "$wall" \
      "$(per_gb "$wall" "$CBYTES")" "$bytes" "$match" "$timings" >>"$ROWS"
    rm -f "$file"
  done
  PENDING_RAW=()
}

compress_corpus() {  # step 2: $CDIR -> $ARCH; returns 1 when there is no archive
  local saved=$WORK/$CNAME.compress.json
  if [[ $KEEP == 1 && -f $ARCH/manifest.h5 && -f $saved ]]; then
    sed 's/"reused": false/"reused": true/' "$saved" >>"$ROWS"
    say "  $CNAME: reusing $ARCH"
    return 0
  fi
  over_budget && { note "$CNAME: compression skipped (past BUDGET)"; return 1; }
  rm -rf "$ARCH"
  local lim t0 rc wall rss=null pre=()
  lim=$(limit_s)
  ((HAVE_TIME)) && pre=(/usr/bin/time -v -o "$WORK/time.txt")
  t0=${EPOCHREALTIME/./}
  timeout -k 10 "$lim" "${pre[@]}" "$GTADOC" compress "$CDIR" -o "$ARCH" --threads "$CORES" -v \
    >"$WORK/compress.log" 2>&1
  rc=$?
  wall=$(secs_since "$t0")
  if ((HAVE_TIME)); then
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): *//p' "$WORK/time.txt")
    [[ -n $rss ]] || rss=null
  fi
  cat "$WORK/compress.log" >>"$LOG"
  local abytes=0 info=null
  if ((rc == 0)); then
    abytes=$(du -sb --apparent-size "$ARCH" | cut -f1)
    info=$("$GTADOC" info "$ARCH" --json 2>/dev/null | python3 -c \
      'import json,sys; j=json.load(sys.stdin); j.pop("shard_table", None); print(json.dumps(j))' 2>/dev/null)
    [[ -n $info ]] || info=null
  fi
  printf '{"kind": "compress", %s, "rc": %s, "wall_s": %s, "mb_s": %s, "threads": %s, "peak_rss_kib": %s, "archive_bytes": %s, "reused": false, "info": %s}\n' \
    "$(row_common)" "$rc" "$wall" "$(awk -v b="$CBYTES" -v w="$wall" 'BEGIN { printf "%.2f", (w > 0 ? b / w / 1e6 : 0) }')" \
    "$CORES" "$rss" "$abytes" "$info" | tee "$saved" >>"$ROWS"
  if ((rc != 0)); then
    rm -f "$saved"
    if ((rc == 124 || rc == 137)) && cut_by_budget "$lim" "$wall"; then
      note "$CNAME: compression stopped at the budget's limit ($lim s)"
    else
      fail "$CNAME: compression failed (exit $rc)$(killed_why "$rc"): $(tail -c 300 "$WORK/compress.log")"
    fi
    rm -rf "$ARCH"
    return 1
  fi
  say "  $CNAME: compressed in $wall s, archive $abytes bytes, peak RSS ${rss} KiB"
}

floor() {  # step 3: cat every file of the archive, warm and (where possible) cold
  local warm cold=null why="" t0
  read_archive() { find "$ARCH" -type f -print0 | xargs -0 cat >/dev/null; }
  if [[ $WORK_FS == tmpfs ]]; then
    why="tmpfs keeps its pages"
  elif ! { sync && echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
    why="/proc/sys/vm/drop_caches not writable"
  else
    t0=${EPOCHREALTIME/./}
    read_archive
    cold=$(secs_since "$t0")
  fi
  read_archive
  t0=${EPOCHREALTIME/./}
  read_archive
  warm=$(secs_since "$t0")
  printf '{"kind": "floor", %s, "archive_bytes": %s, "warm_s": %s, "cold_s": %s, "cold_note": %s}\n' \
    "$(row_common)" "$(du -sb --apparent-size "$ARCH" | cut -f1)" "$warm" "$cold" "$(json_str "$why")" >>"$ROWS"
  say "  $CNAME: floor (cat the archive) warm $warm s, cold ${cold/null/n/a${why:+ ($why)}}"
}

run_tasks() {  # step 4
  local task cfg slug out base lim t0 rc wall bytes match stats phases est need label cpu rss
  local u_s s_s rss_k
  local pre=()
  ((HAVE_TIME)) && pre=(/usr/bin/time -f '%U %S %M' -o "$WORK/time-run.txt")
  for task in "${TASK_LIST[@]}"; do
    read -r -a targs <<<"$task"
    slug=$(slug_of "$task")
    base=$WORK/base-$slug
    rm -f "$base"
    for cfg in "${RUN_CONFIGS[@]}"; do
      label=$(config_label "$cfg")
      if over_budget; then
        note "$CNAME: $task on $label skipped (past BUDGET)"
        continue
      fi
      est=${RATIO[$slug]:-}
      if [[ -n $est ]]; then  # this output (the ratio of the last output of this task), + 20 %
        need=$(awk -v r="$est" -v b="$CBYTES" 'BEGIN { printf "%.0f", r * b * 1.2 }')
        if ((need > $(avail_bytes))); then
          note "$CNAME: $task on $label skipped (its output, ~$((need / 1000000)) MB, would not fit $WORK)"
          continue
        fi
      fi
      out=$WORK/out-$slug
      rm -f "$out" "$WORK/stats.json" "$WORK/time-run.txt"
      lim=$(limit_s)
      t0=${EPOCHREALTIME/./}
      # shellcheck disable=SC2046  # the config's engine words
      timeout -k 10 "$lim" "${pre[@]}" "$GTADOC" run "$ARCH" "${targs[@]}" $(config_args "$cfg") \
        -o "$out" --force --stats "$WORK/stats.json" -v >/dev/null 2>"$WORK/err" </dev/null
      rc=$?
      wall=$(secs_since "$t0")
      # CPU seconds (user + system, every thread) and peak RSS, where /usr/bin/time gave them.
      cpu=null rss=null
      if [[ -s $WORK/time-run.txt ]] &&
        read -r u_s s_s rss_k < <(tail -n 1 "$WORK/time-run.txt") &&
        [[ $u_s =~ ^[0-9.]+$ && $s_s =~ ^[0-9.]+$ && $rss_k =~ ^[0-9]+$ ]]; then
        cpu=$(awk -v u="$u_s" -v s="$s_s" 'BEGIN { printf "%.2f", u + s }')
        rss=$rss_k
      fi
      stats=null
      [[ -s $WORK/stats.json ]] && stats=$(tr -d '\n' <"$WORK/stats.json")
      phases=$(phases_json "$WORK/err")
      bytes=$(fsize "$out")
      match=null
      if ((rc == 0)); then
        if [[ ! -f $base && ! -f $base.sha256 ]]; then
          # An output larger than DIGEST_OVER is kept as its digest only: the next config's
          # output and this one need not sit side by side in WORK (tmpfs: in memory).
          if ((bytes > DIGEST_OVER)); then
            sha256sum <"$out" | cut -d' ' -f1 >"$base.sha256"
          else
            mv "$out" "$base"
          fi
          match=true
          RATIO[$slug]=$(awk -v o="$bytes" -v b="$CBYTES" 'BEGIN { printf "%.6f", (b > 0 ? o / b : 0) }')
        elif [[ -f $base.sha256 ]]; then
          if [[ $(sha256sum <"$out" | cut -d' ' -f1) == "$(cat "$base.sha256")" ]]; then
            match=true
          else
            match=false
            fail "$CNAME: $task on $label differs from $(config_label "${RUN_CONFIGS[0]}")'s output (sha256)"
          fi
        elif cmp -s "$out" "$base"; then
          match=true
        else
          match=false
          fail "$CNAME: $task on $label differs from $(config_label "${RUN_CONFIGS[0]}")'s output"
        fi
      elif ((rc == 124 || rc == 137)) && cut_by_budget "$lim" "$wall"; then
        note "$CNAME: $task on $label stopped at the budget's limit ($lim s)"
      else
        fail "$CNAME: $task on $label failed (exit $rc)$(killed_why "$rc"): $(grep -v ': info:' "$WORK/err" | tail -c 300)"
      fi
      rm -f "$out"
      printf '{"kind": "run", %s, "task": %s, "config": %s, "args": %s, "rc": %s, "wall_s": %s, "s_per_gb": %s, "cpu_s": %s, "peak_rss_kib": %s, "output_bytes": %s, "match": %s, "phases": %s, "stats": %s}\n' \
        "$(row_common)" "$(json_str "$task")" "$(json_str "$label")" "$(json_str "$(config_args "$cfg")")" \
        "$rc" "$wall" "$(per_gb "$wall" "$CBYTES")" "$cpu" "$rss" "$bytes" "$match" "$phases" "$stats" >>"$ROWS"
      say "  $CNAME | $task | $label: rc $rc, $wall s$([[ $cpu == null ]] || echo " (CPU $cpu s)"), $bytes bytes, match $match"
    done
  done
}

resident() {  # step 5
  local cfg label task slug body pid port t0 listening ready lim first rest fms med match f r
  local -a targs
  for task in "${RESIDENT_TASK_LIST[@]}"; do  # gtadoc run's answer where TASKS had no such run
    slug=$(slug_of "$task")
    [[ -f $WORK/base-$slug ]] || over_budget && continue
    read -r -a targs <<<"$task"
    # shellcheck disable=SC2046  # the config's engine words
    timeout -k 10 "$(limit_s)" "$GTADOC" run "$ARCH" "${targs[@]}" $(config_args "${RUN_CONFIGS[0]}") \
      -o "$WORK/base-$slug" --force 2>>"$LOG" </dev/null || rm -f "$WORK/base-$slug"
  done
  for cfg in "${RESIDENT_CONFIGS[@]}"; do
    label=$(config_label "$cfg")
    if over_budget; then
      note "$CNAME: resident $label skipped (past BUDGET)"
      continue
    fi
    : >"$WORK/server.err"
    t0=${EPOCHREALTIME/./}
    # shellcheck disable=SC2046  # the config's engine words
    "$GTADOC" serve "$ARCH" $(config_args "$cfg") --listen 127.0.0.1:0 --query-timeout 600 \
      2>"$WORK/server.err" </dev/null &
    pid=$!
    SERVER_PID=$pid
    port="" listening=null ready=null
    lim=$(limit_s)
    while :; do  # the port, then /healthz
      if [[ -z $port ]]; then
        port=$(grep -o 'listening on http://[^ ]*' "$WORK/server.err" | sed 's/.*://')
        [[ -n $port ]] && listening=$(secs_since "$t0")
      fi
      if [[ -n $port ]] && healthz "$port"; then
        ready=$(secs_since "$t0")
        break
      fi
      kill -0 "$pid" 2>/dev/null || break
      (((${EPOCHREALTIME/./} - t0) / 1000000 >= lim)) && break
      sleep 0.05
    done
    if [[ $ready == null ]]; then
      fail "$CNAME: gtadoc serve ($label) did not become ready: $(tail -c 300 "$WORK/server.err")"
      kill -TERM "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      SERVER_PID=""
      continue
    fi
    say "  $CNAME | serve $label: listening after $listening s, /healthz 200 after $ready s"
    for task in "${RESIDENT_TASK_LIST[@]}"; do
      if over_budget; then
        note "$CNAME: resident $label $task skipped (past BUDGET)"
        continue
      fi
      slug=$(slug_of "$task")
      body=$(body_of "$task")
      f=$WORK/first-$slug
      lim=$(limit_s)
      first=$(timeout -k 5 "$lim" "$LOAD" --port "$port" --body "$body" --requests 1 --no-cache --save "$f" </dev/null)
      r=$?
      rest=null
      if ((r == 0)) && ! over_budget; then
        lim=$(limit_s)
        rest=$(timeout -k 5 "$lim" "$LOAD" --port "$port" --body "$body" --requests "$RESIDENT_REPS" --no-cache </dev/null)
        r=$?
        [[ -n $rest ]] || rest=null
      fi
      [[ -n $first ]] || first=null
      match=null
      if [[ -f $f ]] && ((r == 0)); then
        if [[ -f $WORK/base-$slug ]]; then
          if cmp -s "$f" "$WORK/base-$slug"; then match=true; else match=false; fi
        elif [[ -f $WORK/rbase-$slug ]]; then
          if cmp -s "$f" "$WORK/rbase-$slug"; then match=true; else match=false; fi
        else
          cp "$f" "$WORK/rbase-$slug"
        fi
      fi
      ((r == 0)) || fail "$CNAME: resident $label $task: errors: $first $rest"
      [[ $match == false ]] && fail "$CNAME: resident $label $task differs from gtadoc run's output"
      fms=$(echo "$first" | python3 -c 'import json,sys; print(json.load(sys.stdin)["p50_ms"])' 2>/dev/null)
      med=$(echo "$rest" | python3 -c 'import json,sys; print(json.load(sys.stdin)["p50_ms"])' 2>/dev/null)
      printf '{"kind": "resident", %s, "config": %s, "task": %s, "listening_s": %s, "ready_s": %s, "first_ms": %s, "median_ms": %s, "reps": %s, "output_bytes": %s, "match": %s, "first": %s, "rest": %s}\n' \
        "$(row_common)" "$(json_str "$label")" "$(json_str "$task")" "$listening" "$ready" \
        "${fms:-null}" "${med:-null}" "$RESIDENT_REPS" "$(fsize "$f")" "$match" "$first" "$rest" >>"$ROWS"
      say "  $CNAME | serve $label | $task: first ${fms:-?} ms, median of $RESIDENT_REPS ${med:-?} ms, match $match"
      rm -f "$f"
    done
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    SERVER_PID=""
  done
  rm -f "$WORK"/rbase-*
}

healthz() {  # GET /healthz on 127.0.0.1:$1 answers 200
  if command -v curl >/dev/null 2>&1; then
    curl -sf -m 2 -o /dev/null "http://127.0.0.1:$1/healthz"
  else
    # shellcheck disable=SC2016  # expanded by the inner bash
    timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1 && printf "GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3 &&
      read -r line <&3 && [[ $line == *" 200 "* ]]' healthz "$1" 2>/dev/null
  fi
}

SERVER_PID=""
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  [[ -n $SERVER_PID ]] && kill -TERM "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -f "$WORK"/out-* "$WORK"/base-* "$WORK"/raw-* "$WORK"/first-* "$WORK"/rbase-* "$WORK"/err \
    "$WORK"/stats.json "$WORK"/time.txt "$WORK"/compress.log "$WORK"/server.err "$WORK"/gen.log
  if [[ $KEEP != 1 ]]; then
    rm -rf "${WORK:?}/real" "$WORK/train" "$WORK"/synth-* "$WORK"/*.gtd "$WORK/model.bin" \
      "$WORK"/*.stamp "$WORK"/*.compress.json
    rmdir "$WORK" 2>/dev/null
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------------ the corpora, smallest first
CORPORA=()
{
  [[ $REAL == 1 ]] && echo "$REAL_BYTES real"
  for s in $SIZES; do
    b=$(numfmt --from=iec "${s%[bB]}" 2>/dev/null) || { note "size $s: not a size, skipped"; continue; }
    echo "$b $s"
  done
} | sort -n -s -k1,1 >"$WORK/corpora.txt"
while read -r _ c; do CORPORA+=("$c"); done <"$WORK/corpora.txt"
rm -f "$WORK/corpora.txt"
LAST_BYTES=0 LAST_S=0 ARCH_RATIO=0.5
for c in "${CORPORA[@]}"; do
  if [[ $c == real ]]; then
    CNAME=real SYNTH=false CDIR=$WORK/real CBYTES=$REAL_BYTES
  else
    CNAME=synth-$c SYNTH=true CDIR=$WORK/synth-$c CBYTES=$(numfmt --from=iec "${c%[bB]}")
  fi
  ARCH=$WORK/$CNAME.gtd
  if over_budget; then
    note "$CNAME skipped: past BUDGET=$BUDGET s after $(elapsed_s) s"
    continue
  fi
  if ((BUDGET > 0 && LAST_BYTES > 0)); then
    pred=$(awk -v s="$LAST_S" -v a="$LAST_BYTES" -v b="$CBYTES" 'BEGIN { printf "%d", s * b / a }')
    if (($(elapsed_s) + pred > BUDGET)); then
      note "$CNAME skipped: ~$pred s (the last corpus's time scaled to its size), $((BUDGET - $(elapsed_s))) s of BUDGET left"
      continue
    fi
  fi
  cstart=${EPOCHREALTIME/./}
  # Disk: the corpus (unless linked or kept) and its archive.
  have=0
  [[ $SYNTH == true && -f $WORK/$CNAME.stamp ]] && have=$CBYTES
  [[ -f $ARCH/manifest.h5 ]] && have=$((have + $(du -sb --apparent-size "$ARCH" | cut -f1)))
  need=$(awk -v b="$CBYTES" -v r="$ARCH_RATIO" -v s="$SYNTH" -v h="$have" \
    'BEGIN { n = (s == "true" ? b : 0) + b * r - h; printf "%.0f", (n > 0 ? n : 0) }')
  if ((need > $(avail_bytes))); then
    note "$CNAME skipped: corpus + archive need ~$((need / 1000000)) MB, $WORK has $(($(avail_bytes) / 1000000)) MB free"
    continue
  fi
  say "corpus $CNAME"
  stamp="model=$(cat "$WORK/model.stamp") seed=$SEED bytes=$CBYTES"
  gen_s=null files=$REAL_FILES REUSED=0
  if [[ $SYNTH == true ]]; then
    # WORK/NAME.stamp: the stamp, then "DOCUMENTS BYTES" of the corpus written.
    if [[ $KEEP == 1 && -d $CDIR && "$(sed -n 1p "$WORK/$CNAME.stamp" 2>/dev/null)" == "$stamp" ]]; then
      say "  $CNAME: reusing $CDIR"
      REUSED=1
    else
      rm -rf "$CDIR" "$ARCH" "$WORK/$CNAME.stamp" "$WORK/$CNAME.compress.json"
      t0=${EPOCHREALTIME/./}
      lim=$(limit_s)
      timeout -k 10 "$lim" "$GEN" generate "$MODEL" -o "$CDIR" --bytes "$CBYTES" --seed "$SEED" \
        >"$WORK/gen.log" 2>&1
      rc=$?
      gen_s=$(secs_since "$t0")
      cat "$WORK/gen.log" >>"$LOG"
      if ((rc != 0)); then
        if ((rc == 124 || rc == 137)) && cut_by_budget "$lim" "$gen_s"; then
          note "$CNAME: generation stopped at the budget's limit"
        else
          fail "$CNAME: generation failed (exit $rc): $(tail -c 300 "$WORK/gen.log")"
        fi
        rm -rf "$CDIR" "$WORK"/.synth-*
        continue
      fi
      wrote=$(sed -n 's/.*wrote \([0-9]*\) documents ([0-9]* folders), \([0-9]*\) bytes.*/\1 \2/p' "$WORK/gen.log" | head -1)
      [[ -n $wrote ]] || wrote="$(find "$CDIR" -type f | wc -l) $(du -sb --apparent-size "$CDIR" | cut -f1)"
      printf '%s\n%s\n' "$stamp" "$wrote" >"$WORK/$CNAME.stamp"
      say "  $CNAME: generated in $gen_s s: $(grep -o 'wrote [0-9]* documents.*' "$WORK/gen.log" | head -1)"
    fi
    read -r files CBYTES < <(sed -n 2p "$WORK/$CNAME.stamp")
  fi
  printf '{"kind": "corpus", %s, "files": %s, "gen_s": %s, "seed": %s, "train": %s}\n' \
    "$(row_common)" "$files" "$gen_s" "$([[ $SYNTH == true ]] && echo "$SEED" || echo null)" \
    "$(json_str "$TRAIN")" >>"$ROWS"
  raw_baselines
  if compress_corpus; then
    ARCH_RATIO=$(awk -v a="$(du -sb --apparent-size "$ARCH" | cut -f1)" -v b="$CBYTES" \
      'BEGIN { printf "%.4f", (b > 0 ? a / b * 1.1 : 0.5) }')
    # The runs need only the archive.
    [[ $SYNTH == true && $KEEP != 1 ]] && rm -rf "$CDIR"
    floor
    run_tasks
    ((${#RESIDENT_CONFIGS[@]} > 0)) && resident
  fi
  flush_raw
  rm -f "$WORK"/base-* "$WORK"/out-*
  [[ $KEEP == 1 ]] || rm -rf "$ARCH" "$WORK/$CNAME.compress.json"
  [[ $SYNTH == true && $KEEP != 1 ]] && rm -rf "$CDIR" "$WORK/$CNAME.stamp"
  LAST_BYTES=$CBYTES
  LAST_S=$(((${EPOCHREALTIME/./} - cstart) / 1000000))
  say "corpus $CNAME done in $LAST_S s ($(elapsed_s) s so far)"
  render
done
render
cat "$OUT/scale.md" >&2 2>/dev/null
say "scale bench finished in $(elapsed_s) s: $OUT/scale.md"
exit "$failed"
