#!/usr/bin/env bash
# Phrase search at scale, one host (docs/PERFORMANCE.md, "Phrase search"): builds this tree,
# writes a SIZE corpus with gtadoc_gen (model trained on /usr/include, seed 1) to /dev/shm and
# compresses it, then times
#   - gtadoc_search_bench: resident phrase search (what `gtadoc serve` runs for POST /v1/search)
#     on every core, 1-, 2- and 3-word phrases sampled from the corpus, with the search index and
#     with one pass over every grammar; the index's build time and memory;
#   - `gtadoc serve` (one GPU): seconds until ready, then uncached POST /v1/search p50 for
#     sampled phrases (rare and common), every answer compared with `gtadoc grep`'s;
#   - `gtadoc grep --count` end to end, and the raw-text baseline over the same corpus from the
#     page cache: `rg -c -F` when ripgrep is installed, else `grep -r -c -F` (LC_ALL=C).
#
#   SIZE=32G OUT=/tmp/out scripts/bench/search-scale.sh
#   STAGE=prepare ...; STAGE=measure ...   # two calls on one machine (the archive and corpus
#                                          # stay in /tmp and /dev/shm between them)
#   SHARES=0.0625,0.25 BENCH_ONLY=1 ...     # also the index's full-pass shares; the bench alone
# SAMPLE (20) phrases per length, REPEAT (5) timed runs each.
# CMAKE_PREFIX_PATH points the build at libraries outside the system's (e.g. libdeflate).
# Writes $OUT/s-results.txt and $OUT/search-logs.tgz.
set -u
OUT=${OUT:-./device-out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
L=$(mktemp -d)/logs; mkdir -p $L
export PATH=/usr/local/cuda/bin:$PATH NCCL_NVLS_ENABLE=0 LC_ALL=C
START=$EPOCHREALTIME
el() { awk -v a="$EPOCHREALTIME" -v b="$START" 'BEGIN{printf "%.0f", a-b}'; }
R=$OUT/s-results.txt
say() { echo "[$(el)s] $*" | tee -a "$R"; }
since() { awk -v a="$EPOCHREALTIME" -v b="$1" 'BEGIN{printf "%.3f", a-b}'; }
W=/tmp/gtadoc-search-scale; C=/dev/shm/gtadoc-search-corpus
STAGE=${STAGE:-all}; SIZE=${SIZE:-32G}
trap 'tar -czf $OUT/search-logs.tgz -C "$(dirname $L)" logs 2>/dev/null' EXIT
B=./build-search; N=$B/gtadoc
nproc | tee -a $R
if [ "$STAGE" != measure ]; then
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > $L/build.log 2>&1
  cmake --build $B -j $(nproc) --target gtadoc gtadoc_gen gtadoc_search_bench >> $L/build.log 2>&1 ||
    { say "BUILD FAILED"; tail -30 $L/build.log >> $R; exit 1; }
  say "build done"
  rm -rf $W $C; mkdir -p $W
  $B/scripts/datasets/gtadoc_gen train /usr/include -o $W/model.bin > $L/gen.log 2>&1
  $B/scripts/datasets/gtadoc_gen generate $W/model.bin -o $C --bytes $SIZE --seed 1 >> $L/gen.log 2>&1
  say "generated $(du -sh $C | cut -f1)"
  s=$EPOCHREALTIME; $N compress $C -o $W/a.gtd 2> $L/compress.log; say "compressed in $(since $s) s"
  $N info $W/a.gtd | grep -E "documents|input bytes|vocabulary|shards|symbols|archive bytes" >> $R
  [ "$STAGE" = prepare ] && { say "prepared"; exit 0; }
fi
[ -d $W/a.gtd ] || { say "no archive: run STAGE=prepare first"; exit 1; }
# Resident search: the index against a full pass, phrases sampled from the archive.
timeout 330 $B/scripts/bench/gtadoc_search_bench $W/a.gtd --sample ${SAMPLE:-20} --repeat ${REPEAT:-5} \
  ${SHARES:+--shares $SHARES} > $W/bench.tsv 2> $L/bench.err
say "search bench rc=$?"
grep '^#' $W/bench.tsv | tee -a $R
cp $W/bench.tsv $OUT/search-bench.tsv
[ -n "${BENCH_ONLY:-}" ] && { say end; exit 0; }
# Phrases for the end-to-end runs: the rarest and a mid-frequency one of 1 and of 3 words.
awk -F '\t' '!/^#/ && NR > 2 && $2 > 0 { print $1 "\t" $2 "\t" $6 }' $W/bench.tsv | sort -t$'\t' -k1,1n -k2,2n > $W/ranked.tsv
: > $W/phrases.txt
for k in 1 3; do
  awk -F '\t' -v k=$k '$1 == k' $W/ranked.tsv > $W/k.tsv
  n=$(wc -l < $W/k.tsv); [ "$n" -gt 0 ] || continue
  sed -n "1p;$(( (n + 1) / 2 ))p" $W/k.tsv | cut -f3 >> $W/phrases.txt
done
say "phrases: $(wc -l < $W/phrases.txt)"
# The service on one GPU: ready, then each phrase uncached, seven times.
port=$((20000 + RANDOM % 20000)); s=$EPOCHREALTIME
$N -vv serve $W/a.gtd --listen 127.0.0.1:$port --engine gpu > $L/serve.log 2>&1 & sp=$!
for i in $(seq 2400); do curl -sf localhost:$port/healthz > /dev/null && break; sleep 0.05; done
say "serve ready in $(since $s) s"
i=0
while IFS= read -r p; do
  i=$((i + 1))
  body=$(python3 -c 'import json,sys; print(json.dumps({"phrases": [sys.argv[1]], "format": "tsv"}))' "$p")
  ms=""
  for k in 1 2 3 4 5 6 7; do
    s2=$EPOCHREALTIME
    curl -sf localhost:$port/v1/search -H 'Cache-Control: no-cache' -d "$body" > $W/sv.$i
    ms="$ms $(awk -v a=$EPOCHREALTIME -v b=$s2 'BEGIN{printf "%.1f", (a-b)*1000}')"
  done
  s2=$EPOCHREALTIME; timeout 120 $N grep $W/a.gtd "$p" > $W/cli.$i 2>> $L/grep.err; g=$(since $s2)
  cmp -s $W/sv.$i $W/cli.$i && same=same || same=DIFFERENT
  docs=$(wc -l < $W/cli.$i)
  s2=$EPOCHREALTIME
  if command -v rg > /dev/null; then
    timeout 300 rg -c -F -- "$p" $C > /dev/null; base=rg
  else
    timeout 300 grep -r -c -F -- "$p" $C > /dev/null; base=grep
  fi
  b=$(since $s2)
  say "phrase $i ($docs docs, service $same as grep): serve ms:$ms; gtadoc grep ${g} s; $base -c -F ${b} s; '$p'"
done < $W/phrases.txt
kill $sp; wait $sp 2> /dev/null
grep -h "search indexes\|ready in" $L/serve.log | cut -c1-200 | tee -a $R
say end
