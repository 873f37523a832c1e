#!/usr/bin/env bash
# Before/after at scale, in one run on one machine: builds this tree and another version of
# gtadoc (OLD_SRC: its source tree, e.g. `git worktree add ../old <commit>`), runs the GPU unit
# tests, generates a SIZE corpus with gtadoc_gen (model trained on /usr/include, seed 1),
# compresses it with both builds, and times, every output compared with the new one-GPU output:
# raw_wordcount on every core, the archive's `cat` floor (cold where drop_caches is writable, and
# warm), `word-count --top 100` and `sequence-count --top 100` on 1 GPU and `--gpus 2` with both
# builds, the new build on the old build's archive and with host-built bags
# (GTADOC_GPU_HOST_BAGS=1), the new load's profile (per-shard waits and GPU load phases), the CPU
# engine (the old one limited to 60 s), and `gtadoc serve` (ready, then uncached word-count and
# sequence-count queries). The GPU machine gives a command 10 minutes: 16G fills them on 32 cores.
#
#   OLD_SRC=../old SIZE=8G OUT=/tmp/out scripts/bench/scale-compare.sh
#
# Knobs: SAME_FORMAT=1 when the old version writes the same archive format (its runs then read
# the new archive: no second compression), RAW=0 skips raw_wordcount, LANES="1 8" adds one-GPU
# word counts of the new build with GTADOC_GPU_LOAD_LANES set to each value, SERVE_OLD=0 skips
# the old build's service.
#
# Writes $OUT/a-results.txt (the figures of docs/PERFORMANCE.md, "Scale") and $OUT/logs/.
set -u
OUT=${OUT:-./device-out}; mkdir -p "$OUT"; OLD_SRC=${OLD_SRC:?OLD_SRC: the source tree of the version to compare with}
export PATH=/usr/local/cuda/bin:$PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 LC_ALL=C
START=$EPOCHREALTIME
el() { awk -v a="$EPOCHREALTIME" -v b="$START" 'BEGIN{printf "%.0f", a-b}'; }
R=$OUT/a-results.txt; mkdir -p $OUT/logs
say() { echo "[$(el)s] $*" | tee -a "$R"; }
SIZE=${SIZE:-8G}
nproc | tee -a "$R"; nvidia-smi -L | tee -a "$R"
( cmake -S "$OLD_SRC" -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DGTADOC_BUILD_TESTS=OFF -DGTADOC_BUILD_BENCH=OFF >/dev/null && cmake --build build-old -j 12 --target gtadoc ) > $OUT/logs/build-old.log 2>&1 &
OLDPID=$!
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > $OUT/logs/build.log 2>&1
cmake --build build-device -j 24 --target gtadoc worker_tests cluster_tests gtadoc_gen raw_wordcount >> $OUT/logs/build.log 2>&1 || { say "BUILD FAILED"; tail -30 $OUT/logs/build.log >> "$R"; }
say "new build done"
W=/tmp/sc; rm -rf $W; mkdir -p $W
( ./build-device/scripts/datasets/gtadoc_gen train /usr/include -o $W/model.bin > $OUT/logs/gen.log 2>&1 && ./build-device/scripts/datasets/gtadoc_gen generate $W/model.bin -o $W/corpus --bytes $SIZE --seed 1 >> $OUT/logs/gen.log 2>&1; echo gen-done >> $OUT/logs/gen.log ) &
GENPID=$!
./build-device/tests/worker_tests --gtest_filter='Gpu*:*Memory*:Vocab*:ShardLayout*:BatchPlan*' > $OUT/logs/gpu-tests.log 2>&1; say "worker gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/logs/gpu-tests.log | tr '\n' ' ')"
./build-device/tests/cluster_tests --gtest_filter='Device*' > $OUT/logs/cluster-gpu.log 2>&1; say "cluster device tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $OUT/logs/cluster-gpu.log | tr '\n' ' ')"
wait $OLDPID; say "old build rc=$?"
wait $GENPID; say "gen: $(tail -2 $OUT/logs/gen.log | head -1)"
N=./build-device/gtadoc O=./build-old/gtadoc
t() { local name=$1; shift; local s=$EPOCHREALTIME; timeout ${TMO:-100} "$@" > $W/out.$name 2> $OUT/logs/err.$name; local rc=$?; say "$name rc=$rc $(awk -v a=$EPOCHREALTIME -v b=$s 'BEGIN{printf "%.2f", a-b}') s $(grep -o 'timings:.*' $OUT/logs/err.$name | tail -1)"; }
t compress-new /usr/bin/time -v $N compress $W/corpus -o $W/v2.gtd
grep -E "Maximum resident|Elapsed" $OUT/logs/err.compress-new >> "$R"
if [ "${SAME_FORMAT:-0}" = 1 ]; then ln -s v2.gtd $W/v1.gtd; else t compress-old /usr/bin/time -v $O compress $W/corpus -o $W/v1.gtd; fi
$N info $W/v2.gtd >> "$R"
[ "${RAW:-1}" = 1 ] && s=$EPOCHREALTIME && ./build-device/scripts/bench/raw_wordcount --threads $(nproc) $W/corpus > $W/raw.tsv&& say "raw_wordcount $(nproc) threads $(awk -v a=$EPOCHREALTIME -v b=$s 'BEGIN{printf "%.2f", a-b}') s"
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null && { s=$EPOCHREALTIME; cat $W/v2.gtd/* > /dev/null; say "cat v2 cold $(awk -v a=$EPOCHREALTIME -v b=$s 'BEGIN{printf "%.3f", a-b}') s"; }
s=$EPOCHREALTIME; cat $W/v2.gtd/* > /dev/null; s=$EPOCHREALTIME; cat $W/v2.gtd/* > /dev/null; say "cat v2 warm $(awk -v a=$EPOCHREALTIME -v b=$s 'BEGIN{printf "%.3f", a-b}') s"
cat $W/v1.gtd/* > /dev/null
for cfg in "gpu1:--engine gpu" "gpu2:--gpus 2"; do n=${cfg%%:*}; a=${cfg#*:}
  t old-wc-$n $O -v run $W/v1.gtd word-count --top 100 $a
  t new-wc-$n $N -v run $W/v2.gtd word-count --top 100 $a
  t old-seq-$n $O -v run $W/v1.gtd sequence-count --top 100 $a
  t new-seq-$n $N -v run $W/v2.gtd sequence-count --top 100 $a
done
[ "${SAME_FORMAT:-0}" = 1 ] || t newv1-wc-gpu1 $N -v run $W/v1.gtd word-count --top 100 --engine gpu
for l in ${LANES:-}; do GTADOC_GPU_LOAD_LANES=$l t new-wc-gpu1-lanes$l $N -v run $W/v2.gtd word-count --top 100 --engine gpu; done
GTADOC_GPU_HOST_BAGS=1 t new-hostbags-wc-gpu1 $N -v run $W/v2.gtd word-count --top 100 --engine gpu
# Where the new load's time goes: per shard, the wait for its read and the load onto the GPU,
# and the load's phases (GTADOC_GPU_PHASES=1 synchronizes at each, so this run is slower).
GTADOC_GPU_PHASES=1 t new-wc-gpu1-vv $N -vv run $W/v2.gtd word-count --top 100 --engine gpu
awk '/waited .* for the read/ { for (i=1;i<=NF;i++) { if ($i=="waited") w+=$(i+1); if ($i=="in" && $(i-1)=="loaded") l+=$(i+1); if ($i=="shards:") n+=$(i-1) } } END { if (n) printf "1 gpu, %d shards: waited for reads %.3f s, loading %.3f s (%.2f ms each)\n", n, w, l, 1000*l/n }' $OUT/logs/err.new-wc-gpu1-vv | tee -a "$R"
grep -h "gpu load phases" $OUT/logs/err.new-wc-gpu1-vv | grep -o '[a-z]*=[0-9.]*ms' | awk -F= '{ sub("ms","",$2); s[$1]+=$2; c[$1]++ } END { for (k in s) printf "%s=%.2fms ", k, s[k]/c[k]; print "(mean per shard)" }' | tee -a "$R"
t new-wc-cpu $N -v run $W/v2.gtd word-count --top 100 --engine cpu
t new-seq-cpu $N -v run $W/v2.gtd sequence-count --top 100 --engine cpu
TMO=60 t old-wc-cpu $O -v run $W/v1.gtd word-count --top 100 --engine cpu
for f in $W/out.*wc*; do cmp -s $f $W/out.new-wc-gpu1 || say "DIFF $f"; done
for f in $W/out.*seq*; do cmp -s $f $W/out.new-seq-gpu1 || say "DIFF $f"; done
say "compared"; [ -f $W/raw.tsv ] && { head -100 $W/raw.tsv | cmp -s - $W/out.new-wc-gpu1 || say "DIFF raw_wordcount"; }; rm -rf $W/corpus
for cfg in "gpu1:--engine gpu" "gpu2:--gpus 2"; do n=${cfg%%:*}; a=${cfg#*:}
  for b in new $([ "${SERVE_OLD:-1}" = 1 ] && echo old); do arc=$W/v2.gtd; bin=$N; [ $b = old ] && { arc=$W/v1.gtd; bin=$O; }
    port=$((20000 + RANDOM % 20000)); s=$EPOCHREALTIME
    $bin serve $arc --listen 127.0.0.1:$port $a > $OUT/logs/serve-$b-$n.log 2>&1 & sp=$!
    for i in $(seq 600); do curl -sf localhost:$port/healthz >/dev/null && break; sleep 0.05; done
    ready=$(awk -v a=$EPOCHREALTIME -v b=$s 'BEGIN{printf "%.2f", a-b}'); q=""
    for k in 1 2 3 4 5 6; do s2=$EPOCHREALTIME; curl -sf localhost:$port/v1/query -H 'Cache-Control: no-cache' -d "{\"task\":\"word-count\",\"top\":100,\"format\":\"tsv\"}" > $W/sv.$b.$n.$k; q="$q $(awk -v a=$EPOCHREALTIME -v b=$s2 'BEGIN{printf "%.1f", (a-b)*1000}')"; done
    say "serve $b $n ready ${ready}s word-count --top 100 ms:$q"
    q=""; for k in 1 2 3 4; do s2=$EPOCHREALTIME; curl -sf localhost:$port/v1/query -H 'Cache-Control: no-cache' -d "{\"task\":\"sequence-count\",\"top\":100,\"format\":\"tsv\"}" > $W/sq.$b.$n.$k; q="$q $(awk -v a=$EPOCHREALTIME -v b=$s2 'BEGIN{printf "%.1f", (a-b)*1000}')"; done
    say "serve $b $n sequence-count --top 100 ms:$q"
    cmp -s $W/sv.$b.$n.1 $W/out.new-wc-gpu1 || say "DIFF serve wc $b $n"
    kill $sp; wait $sp 2>/dev/null
  done
done
say "end"
