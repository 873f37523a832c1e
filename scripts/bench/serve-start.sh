#!/usr/bin/env bash
# The service's start at scale, one GPU machine, one run: builds this tree (and, given OLD_SRC,
# another version of gtadoc to compare with), writes a SIZE corpus with gtadoc_gen (model trained
# on /usr/include, seed 1) to /dev/shm, compresses it there, and starts `gtadoc serve --gpus
# GPUS` ROUNDS times per build, the builds alternating, each with GTADOC_GPU_PHASES=1 and -vv.
# For each start: seconds until /healthz answers, uncached `word-count --top 100` x5 and
# `sequence-count --top 100` x3 (ms each; the first of each compared byte for byte with a fresh
# `gtadoc run`), and the log's lines on the merged DAG's build by phase, the sequence order, the
# warm-up queries and the ready point. 16 GB (513 shards) on one GPU is what each GPU of a
# two-GPU service holds at 32 GB.
#
#   SIZE=16G OUT=/tmp/out scripts/bench/serve-start.sh                 # ~4 min on 16 cores
#   OLD_SRC=../old SIZE=16G scripts/bench/serve-start.sh               # and the old build's
# CMAKE_PREFIX_PATH (CMake's own variable) points the builds at libraries outside the system's,
# e.g. `CMAKE_PREFIX_PATH=$(scripts/device-deps.sh unpack /tmp/deps)` for libdeflate. Knobs:
# ROUNDS (2), SERVE_ARGS ("--gpus 1"), NEW_BUILD (a build directory of this tree to use instead
# of building one, with gtadoc and gtadoc_gen built).
#
# Writes $OUT/serve-start.txt and each start's log, $OUT/serve-BUILD-ROUND.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-./device-out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
SIZE=${SIZE:-16G} ROUNDS=${ROUNDS:-2} OLD=${OLD_SRC:-} SERVE_ARGS=${SERVE_ARGS:---gpus 1}
NEW=${NEW_BUILD:-build-new}
export PATH=/usr/local/cuda/bin:$PATH LC_ALL=C
R=$OUT/serve-start.txt
START=$EPOCHREALTIME
since() { awk -v a="$EPOCHREALTIME" -v b="$1" 'BEGIN{printf "%.2f", a-b}'; }
say() { echo "[$(since $START) s] $*" | tee -a "$R"; }
W=/dev/shm/gtadoc-serve-start; C=$W/corpus
trap 'rm -rf "$W"' EXIT
cfg() {  # SRC DIR EXTRA...
  local src=$1 dir=$2; shift 2
  cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 "$@" \
    > "$OUT/cfg-$(basename "$dir").log" 2>&1
}
BUILDS=new
if [ -n "$OLD" ]; then
  BUILDS="old new"
  ( cfg "$OLD" build-old -DGTADOC_BUILD_TESTS=OFF -DGTADOC_BUILD_BENCH=OFF &&
      cmake --build build-old -j $(( $(nproc) / 3 + 1 )) --target gtadoc ) > "$OUT/build-old.log" 2>&1 &
  OLDPID=$!
fi
if [ -z "${NEW_BUILD:-}" ]; then
  cfg . build-new -DGTADOC_BUILD_BENCH=ON || { say "configure failed"; exit 1; }
  cmake --build build-new -j "$(nproc)" --target gtadoc gtadoc_gen > "$OUT/build-new.log" 2>&1 ||
    { say "BUILD FAILED"; tail -30 "$OUT/build-new.log" >> "$R"; exit 1; }
fi
say "built; $(grep -o 'archive chunks: [a-z]*' "$NEW/CMakeCache.txt" "$OUT/cfg-build-new.log" 2>/dev/null | head -1); $(nvidia-smi -L 2>/dev/null | head -1)"
rm -rf "$W"; mkdir -p "$W"
G=$NEW/scripts/datasets/gtadoc_gen
$G train /usr/include -o "$W/model.bin" > "$OUT/gen.log" 2>&1 &&
  $G generate "$W/model.bin" -o "$C" --bytes "$SIZE" --seed 1 >> "$OUT/gen.log" 2>&1 ||
  { say "generation failed"; exit 1; }
[ -n "$OLD" ] && { wait $OLDPID || { say "old build failed"; exit 1; }; }
s=$EPOCHREALTIME
/usr/bin/time -f "peak RSS %M KiB" $NEW/gtadoc compress "$C" -o "$W/a.gtd" 2> "$OUT/compress.log" ||
  { say "compress failed"; exit 1; }
say "compressed in $(since $s) s, $(tail -1 "$OUT/compress.log")"
rm -rf "$C"
$NEW/gtadoc info "$W/a.gtd" | grep -E "documents|input bytes|vocabulary|shards|archive bytes" | tee -a "$R"
cat "$W"/a.gtd/* > /dev/null
$NEW/gtadoc run "$W/a.gtd" word-count --top 100 -o "$W/wc.tsv" 2> /dev/null
$NEW/gtadoc run "$W/a.gtd" sequence-count --top 100 -o "$W/sc.tsv" 2> /dev/null
port=$((20000 + RANDOM % 20000))
q_ms() {  # TASK COUNT: uncached queries, ms each; the first compared with `gtadoc run`'s
  local q="" k s2
  for k in $(seq "$2"); do
    s2=$EPOCHREALTIME
    curl -sf "localhost:$port/v1/query" -H 'Cache-Control: no-cache' \
      -d "{\"task\":\"$1\",\"top\":100,\"format\":\"tsv\"}" > "$W/q.$k"
    q="$q $(awk -v a="$EPOCHREALTIME" -v b="$s2" 'BEGIN{printf "%.1f", (a-b)*1000}')"
    [ "$k" = 1 ] && { cmp -s "$W/q.1" "$W/$3" || say "  DIFF: $1 differs from gtadoc run"; }
  done
  say "  $1 --top 100 ms:$q"
}
for r in $(seq "$ROUNDS"); do
  for b in $BUILDS; do
    port=$((port + 1)); log=$OUT/serve-$b-$r.log; s=$EPOCHREALTIME
    bin=$NEW/gtadoc; [ "$b" = old ] && bin=build-old/gtadoc
    # shellcheck disable=SC2086  # SERVE_ARGS: words
    GTADOC_GPU_PHASES=1 $bin -vv serve "$W/a.gtd" --listen "127.0.0.1:$port" $SERVE_ARGS \
      > "$log" 2>&1 & sp=$!
    for i in $(seq 6000); do
      curl -sf "localhost:$port/healthz" > /dev/null && break
      kill -0 $sp 2> /dev/null || break
      sleep 0.01
    done
    kill -0 $sp 2> /dev/null || { say "$b: serve exited: $(grep -i error "$log" | head -2)"; continue; }
    say "$b round $r: ready after $(since "$s") s"
    q_ms word-count 5 wc.tsv
    q_ms sequence-count 3 sc.tsv
    kill $sp; wait $sp 2> /dev/null
    grep -E "merged in|phases: batch|prepared for queries|sequence order|warm-up:|ready in" "$log" |
      sed 's/^gtadoc: [a-z]*: /    /' | cut -c1-250 | tee -a "$R"
  done
done
say end
