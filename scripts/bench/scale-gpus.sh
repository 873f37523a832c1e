#!/usr/bin/env bash
# Scale on every GPU of one host, one run: builds this tree (and, given OLD_SRC, another version
# of gtadoc to compare with), runs the GPU, read and validation unit tests, writes a SIZE corpus
# with gtadoc_gen (model trained on /usr/include, seed 1) to /dev/shm (no write-back of the
# corpus competes with the runs), compresses it, and times, every output compared with the first
# one-GPU output: the warm `cat` of the archive; gtadoc_read_bench (the shards' reads by step,
# half the cores' reads at once, by the chunk maps and through HDF5); `word-count --top 100`
# on 1 GPU (twice, alternating with GTADOC_CHUNK_MAPS=0 and the old build), on every GPU
# (--gpus N, also with GTADOC_CHUNK_MAPS=0) and on 2; the CPU engine; `sequence-count --top 100` on 1
# GPU and on every GPU (-vv: where the shuffle's time goes); `sequence-count --top 100 --per-doc`
# on 1 GPU (the one query here that prints document names); the one-GPU load by shard (-vv: the read steps,
# the waits for reads); then `gtadoc serve --gpus N`, started twice (without its warm-up queries,
# then with them, queried once they are done): seconds until /healthz answers, uncached
# `word-count --top 100` x7 and `sequence-count --top 100` x4 (ms each, Server-Timing of the first
# two); a third start with GTADOC_GPU_PHASES=1: the merged DAGs'
# build by phase. On a one-GPU machine the runs on every GPU and on two are left out.
#
#   SIZE=32G OUT=/tmp/out scripts/bench/scale-gpus.sh            # GPU machine, 64 cores: ~9 min
#   OLD_SRC=../old SIZE=32G scripts/bench/scale-gpus.sh            # and the old build's runs
#   STAGE=prepare ...; STAGE=measure ...   # in two calls on one machine: the first builds, tests,
#                                          # writes and compresses the corpus and keeps the archive
#                                          # (in /tmp), the second times it (same OLD_SRC and SIZE)
# CMAKE_PREFIX_PATH (CMake's own variable) points the builds at libraries outside the system's,
# e.g. an unpacked libdeflate where the machine has none.
#
# Writes $OUT/a-results.txt (the figures of docs/PERFORMANCE.md, "Scale") and $OUT/logs.tgz.
set -u
OUT=${OUT:-./device-out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
L=$(mktemp -d)/logs; mkdir -p $L
export PATH=/usr/local/cuda/bin:$PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 LC_ALL=C
START=$EPOCHREALTIME
el() { awk -v a="$EPOCHREALTIME" -v b="$START" 'BEGIN{printf "%.0f", a-b}'; }
R=$OUT/a-results.txt
say() { echo "[$(el)s] $*" | tee -a "$R"; }
since() { awk -v a="$EPOCHREALTIME" -v b="$1" 'BEGIN{printf "%.2f", a-b}'; }
W=/tmp/gtadoc-scale-gpus; C=/dev/shm/gtadoc-scale-corpus
STAGE=${STAGE:-all}
pack() { tar -czf $OUT/logs.tgz -C "$(dirname $L)" logs 2>/dev/null; rm -rf "$C"; }
trap pack EXIT
SIZE=${SIZE:-32G}; NG=$(nvidia-smi -L | grep -c ^GPU)
nproc | tee -a $R; nvidia-smi -L | tee -a $R
OLD=${OLD_SRC:-}
N=./build-device/gtadoc O=./build-old/gtadoc
t() { local name=$1; shift; local s=$EPOCHREALTIME; timeout ${TMO:-60} "$@" > $W/out.$name 2> $L/err.$name; local rc=$?; say "$name rc=$rc $(since $s) s $(grep -o 'timings:.*' $L/err.$name | tail -1)"; }
if [ "$STAGE" != measure ]; then
if [ -n "$OLD" ]; then
  ( cmake -S "$OLD" -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DGTADOC_BUILD_TESTS=OFF -DGTADOC_BUILD_BENCH=OFF >/dev/null && cmake --build build-old -j 24 --target gtadoc ) > $L/build-old.log 2>&1 &
  OLDPID=$!
fi
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > $L/build.log 2>&1
cmake --build build-device -j $(nproc) --target gtadoc worker_tests formats_tests common_tests gtadoc_gen gtadoc_read_bench >> $L/build.log 2>&1 || { say "BUILD FAILED"; tail -30 $L/build.log >> $R; exit 1; }
say "build done; $(grep -o "archive chunks: [a-z]*" $L/build.log | head -1)"
rm -rf $W $C; mkdir -p $W
( ./build-device/scripts/datasets/gtadoc_gen train /usr/include -o $W/model.bin > $L/gen.log 2>&1 && ./build-device/scripts/datasets/gtadoc_gen generate $W/model.bin -o $C --bytes $SIZE --seed 1 >> $L/gen.log 2>&1; echo gen-done >> $L/gen.log ) &
GENPID=$!
for tst in "worker_tests:Gpu*:*Memory*:Vocab*:ShardLayout*:BatchPlan*" "formats_tests:ParallelValidate*:*Crafted*:*Read*" "common_tests:Recycled*"; do
  b=${tst%%:*}; f=${tst#*:}
  ./build-device/tests/$b --gtest_filter="$f" > $L/$b.log 2>&1; say "$b ($f) rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/$b.log | tr '\n' ' ')"
done
[ -n "$OLD" ] && { wait $OLDPID; say "old build rc=$?"; }
wait $GENPID; say "gen: $(tail -2 $L/gen.log | head -1)"
TMO=300 t compress /usr/bin/time -v $N compress $C -o $W/a.gtd
grep -E "Maximum resident|Elapsed" $L/err.compress >> "$R"
$N info $W/a.gtd | grep -E "documents|input bytes|vocabulary|shards|archive bytes" >> $R
rm -rf $C
[ "$STAGE" = prepare ] && { say "prepared $W/a.gtd"; exit 0; }
fi
[ -d $W/a.gtd ] || { say "no archive $W/a.gtd: run STAGE=prepare first"; exit 1; }
cat $W/a.gtd/* > /dev/null; s=$EPOCHREALTIME; cat $W/a.gtd/* > /dev/null; say "cat warm $(since $s) s"
./build-device/scripts/bench/gtadoc_read_bench $W/a.gtd $(( $(nproc) / 2 )) 2 2 2>&1 | tee -a $R
for k in 1 2; do
  t new-wc-g1-$k $N -v run $W/a.gtd word-count --top 100 --engine gpu
  GTADOC_CHUNK_MAPS=0 t new-wc-g1-hdf5-$k $N -v run $W/a.gtd word-count --top 100 --engine gpu
  [ -n "$OLD" ] && t old-wc-g1-$k $O -v run $W/a.gtd word-count --top 100 --engine gpu
done
if [ "$NG" -gt 1 ]; then
  GTADOC_CHUNK_MAPS=0 t new-wc-g$NG-hdf5 $N -v run $W/a.gtd word-count --top 100 --gpus $NG
  t new-wc-g$NG $N -v run $W/a.gtd word-count --top 100 --gpus $NG
  [ -n "$OLD" ] && t old-wc-g$NG $O -v run $W/a.gtd word-count --top 100 --gpus $NG
  t new-wc-g2 $N -v run $W/a.gtd word-count --top 100 --gpus 2
fi
for lanes in 1 8 16; do
  GTADOC_GPU_LOAD_LANES=$lanes t new-wc-g1-lanes$lanes $N -v run $W/a.gtd word-count --top 100 --engine gpu
done
t new-wc-cpu $N -v run $W/a.gtd word-count --top 100 --engine cpu
t new-seq-g1 $N -v run $W/a.gtd sequence-count --top 100 --engine gpu
[ -n "$OLD" ] && t old-seq-g1 $O -v run $W/a.gtd sequence-count --top 100 --engine gpu
for k in 1 2; do  # rows that name documents: the names are read only by such queries
  t new-pd-g1-$k $N -v run $W/a.gtd sequence-count --top 100 --per-doc --engine gpu
  [ -n "$OLD" ] && t old-pd-g1-$k $O -v run $W/a.gtd sequence-count --top 100 --per-doc --engine gpu
done
t new-seq-g$NG-vv $N -vv run $W/a.gtd sequence-count --top 100 --gpus $NG
t new-wc-g1-vv $N -vv run $W/a.gtd word-count --top 100 --engine gpu
grep -h "ms: lock wait" $L/err.new-wc-g1-vv | awk '{for(i=1;i<=NF;i++){if($i=="wait")lw+=$(i+1); if($i=="open")op+=$(i+1); if($i=="checks")ck+=$(i+1); if($i=="[locate")lo+=$(i+1); if($i=="touch")to+=$(i+1); if($i=="validate")va+=$(i+1); if($i=="data")da+=$(i+1); if($i=="inflate")inf+=$(i+1)} n++} END {if(n) printf "wc 1 gpu reads: %d shards, ms per shard: lock wait %.2f open %.2f locate %.2f touch %.2f data %.2f inflate (thread-ms) %.2f checks %.2f validate %.2f\n", n, lw/n, op/n, lo/n, to/n, da/n, inf/n, ck/n, va/n}' | tee -a $R
awk '/waited .* for the read/ { for (i=1;i<=NF;i++) { if ($i=="waited") w+=$(i+1); if ($i=="in" && $(i-1)=="loaded") l+=$(i+1); if ($i=="shards:") n+=$(i-1) } } END { if (n) printf "wc 1 gpu, %d shards: waited for reads %.3f s, loading %.3f s\n", n, w, l }' $L/err.new-wc-g1-vv | tee -a "$R"
grep -h "device shuffle\|local reduce\|row exchange\|merged in" $L/err.new-seq-g$NG-vv | head -12 | cut -c1-220 | tee -a $R
for f in $W/out.*wc*; do cmp -s $f $W/out.new-wc-g1-1 || say "DIFF $f"; done
for f in $W/out.*seq*; do cmp -s $f $W/out.new-seq-g1 || say "DIFF $f"; done
for f in $W/out.*pd-g1*; do cmp -s $f $W/out.new-pd-g1-1 || say "DIFF $f"; done
say compared
# The service, twice: without its warm-up queries (the first query of each task builds what
# later ones reuse), then with them, timed once the log says they are done; Server-Timing of each
# task's first two queries.
port=$((20000 + RANDOM % 20000))
q_ms() {  # TASK COUNT LABEL: COUNT uncached queries, ms each; Server-Timing of the first two
  local q="" k s2
  for k in $(seq $2); do
    s2=$EPOCHREALTIME
    curl -sf -D $W/h.$3.$k localhost:$port/v1/query -H 'Cache-Control: no-cache' -d "{\"task\":\"$1\",\"top\":100,\"format\":\"tsv\"}" > $W/$3.$k
    q="$q $(awk -v a=$EPOCHREALTIME -v b=$s2 'BEGIN{printf "%.1f", (a-b)*1000}')"
  done
  say "  $1 --top 100 ms:$q"
  for k in 1 2; do say "    $k: $(grep -i '^server-timing' $W/h.$3.$k | tr -d '\r' | tr '\n' ' ' | cut -c1-300)"; done
}
for mode in cold warm; do
  port=$((port + 1)); s=$EPOCHREALTIME
  warm=0; [ $mode = warm ] && warm=1
  env GTADOC_SERVE_WARM_UP=$warm $N -vv serve $W/a.gtd --listen 127.0.0.1:$port --gpus $NG > $L/serve-$mode.log 2>&1 & sp=$!
  for i in $(seq 1200); do curl -sf localhost:$port/healthz >/dev/null && break; kill -0 $sp 2>/dev/null || break; sleep 0.05; done
  kill -0 $sp 2>/dev/null || { say "serve exited: $(grep -i 'error' $L/serve-$mode.log | head -2 | cut -c1-200)"; break; }
  ready=$(since $s)
  if [ $mode = warm ]; then
    for i in $(seq 1200); do grep -q "warm-up:" $L/serve-$mode.log && break; sleep 0.05; done
    say "serve --gpus $NG ready ${ready}s; $(grep -o 'warm-up:.*' $L/serve-$mode.log) (done $(since $s) s after the start)"
  else
    say "serve --gpus $NG ready ${ready}s, no warm-up queries"
  fi
  q_ms word-count 7 sv-$mode
  q_ms sequence-count 4 sq-$mode
  cmp -s $W/sv-$mode.1 $W/out.new-wc-g1-1 || say "DIFF serve wc"; cmp -s $W/sq-$mode.1 $W/out.new-seq-g1 || say "DIFF serve seq"
  kill $sp; wait $sp 2>/dev/null
  grep -h "ready\|warm\|prepar\|merged\|listening\|manifest read\|sequence order" $L/serve-$mode.log | grep -v "shard [0-9]*:" | head -14 | cut -c1-220 | tee -a $R
done
# Where the service's start goes: the merged DAGs' build by phase (a second start, not queried).
port=$((port + 1))
GTADOC_GPU_PHASES=1 $N -vv serve $W/a.gtd --listen 127.0.0.1:$port --gpus $NG > $L/serve-phases.log 2>&1 & sp=$!
for i in $(seq 1200); do curl -sf localhost:$port/healthz >/dev/null && break; sleep 0.05; done
kill $sp; wait $sp 2>/dev/null
grep -h "phases: batch\|manifest read\|ready in" $L/serve-phases.log | cut -c1-400 | tee -a $R
rm -rf $W
say end
