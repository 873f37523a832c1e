#!/usr/bin/env bash
# Point queries through `gtadoc serve` (docs/PERFORMANCE.md, "Point queries"): on an archive
# already made (ARCHIVE; scripts/bench/search-scale.sh STAGE=prepare makes the 32 GB one), for each
# configuration in CONFIGS (gpu: one GPU, gpus2: two GPUs in one process, cpu: the CPU engine on
# every core, traversal: one GPU with GTADOC_POINT_LOOKUP=traversal, the path without indexes,
# gpu-index: one GPU with GTADOC_POINT_LOOKUP=index, the indexes even where auto traverses), it
# starts the service, waits until it is ready and its search indexes are built, then times
# uncached (Cache-Control: no-cache) POST /v1/query requests with "words": one word at a time,
# words spread over the frequencies (the first configuration picks them: the words of a few
# random documents and of the word-count's head, by their counts), for word-count, inverted-index,
# ranked-inverted-index --n 2 and sequence-count --n 3; REPEAT (7) runs each (the traversal
# configurations REPEAT_TRAVERSAL, 3), p50 and max.
# Every answer is compared with the first configuration's (the same bytes, whichever path).
#
#   ARCHIVE=/tmp/gtadoc-search-scale/a.gtd OUT=/tmp/out CONFIGS="gpu traversal gpus2" \
#     scripts/bench/point-bench.sh
# WORDS (space-separated) replaces the picked words. BUILD_DIR (./build-search) holds gtadoc. Writes $OUT/point-bench.tsv and $OUT/point-logs.tgz.
set -u
OUT=${OUT:-./device-out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
L=$(mktemp -d)/logs; mkdir -p "$L"
export NCCL_NVLS_ENABLE=0 LC_ALL=C
B=${BUILD_DIR:-./build-search}; N=$B/gtadoc
A=${ARCHIVE:?ARCHIVE: the archive to serve}
CONFIGS=${CONFIGS:-gpu traversal gpus2 cpu}
REPEAT=${REPEAT:-7}
T=$OUT/point-bench.tsv
W=$(mktemp -d)
trap 'tar -czf $OUT/point-logs.tgz -C "$(dirname $L)" logs 2>/dev/null; rm -rf $W' EXIT
printf 'config\ttask\tword\tcount\tdocs\tbytes\tp50_ms\tmax_ms\tsame\n' > "$T"
say() { echo "$*" | tee -a "$OUT/point-results.txt"; }
ms_since() { awk -v a="$EPOCHREALTIME" -v b="$1" 'BEGIN{printf "%.2f", (a-b)*1000}'; }
post() {  # post PORT BODY OUT: prints the milliseconds from connecting to the last byte (curl's
  # own clock: a curl process takes tens of milliseconds to start and end on some machines)
  curl -sf "localhost:$1/v1/query" -H 'Cache-Control: no-cache' -H 'Content-Type: application/json' \
    -d "$2" -o "$3" -w '%{time_total}' | awk '{ printf "%.2f", $1 * 1000 }'
}
json_words() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$@"; }

first=""
for config in $CONFIGS; do
  args=(--engine gpu); envs=()
  case $config in
    gpus2) args=(--engine gpu --gpus 2) ;;
    cpu) args=(--engine cpu) ;;
    cpu-traversal) args=(--engine cpu); envs=(GTADOC_POINT_LOOKUP=traversal) ;;
    traversal) envs=(GTADOC_POINT_LOOKUP=traversal) ;;
    gpu-index) envs=(GTADOC_POINT_LOOKUP=index) ;;
  esac
  s=$EPOCHREALTIME
  env "${envs[@]}" "$N" -vv serve "$A" --listen 127.0.0.1:0 "${args[@]}" > "$L/serve-$config.log" 2>&1 &
  sp=$!
  port=""
  while [ -z "$port" ] && kill -0 $sp 2> /dev/null; do
    sleep 0.05
    port=$(sed -n 's|^gtadoc serve: listening on http://[^ ]*:\([0-9][0-9]*\)$|\1|p' "$L/serve-$config.log")
  done
  [ -n "$port" ] || { say "$config: the service exited: $(tail -1 "$L/serve-$config.log")"; continue; }
  ready=$(ms_since "$s")
  # A search waits for the search indexes: answered, they are built.
  curl -sf "localhost:$port/v1/search" -d '{"phrases": ["the"], "count": true}' -o /dev/null
  say "$config: ready in $ready ms, indexes built by $(ms_since "$s") ms"
  if [ -z "$first" ] && [ -n "${WORDS:-}" ]; then
    first=$config
    printf '%s\n' $WORDS > "$W/words"
    : > "$W/head.tsv"; : > "$W/rare.tsv"
  elif [ -z "$first" ]; then
    first=$config
    # Candidate words: the word-count's head and the words of 8 random documents, by count.
    post $port '{"task": "word-count", "top": 30000, "format": "tsv"}' "$W/head.tsv" > /dev/null
    docs=$("$N" info "$A" | awk '$1 == "documents" { print $NF; exit }')
    : > "$W/docwords"
    for d in 1 2 3 4 5 6 7 8; do
      curl -sf "localhost:$port/v1/docs?id=$(( (RANDOM * 32768 + RANDOM) % ${docs:-1} ))" |
        tr -s ' \t\r\n' '\n' | awk 'length($0) > 0 && length($0) < 40' | sort -u | shuf -n 300 --random-source=<(yes) >> "$W/docwords"
    done
    # shellcheck disable=SC2046
    post $port "{\"task\": \"word-count\", \"format\": \"tsv\", \"words\": $(json_words $(sort -u "$W/docwords"))}" "$W/rare.tsv" > /dev/null
    # Words at counts spread over the range: head ranks 1, 10, 100, 1000, 10000, 30000 and the
    # rarest, middle and a quarter of the random documents' words.
    { sed -n '1p;10p;100p;1000p;10000p;30000p' "$W/head.tsv"
      sort -t$'\t' -k2,2n "$W/rare.tsv" | awk '{ a[NR] = $0 } END { print a[1]; print a[int(NR / 4) + 1]; print a[int(NR / 2) + 1] }'
    } | sort -t$'\t' -k2,2n -u | cut -f1 | grep -v '^$' > "$W/words"
    say "words: $(tr '\n' ' ' < "$W/words")"
  fi
  q=0
  began=$EPOCHREALTIME
  while IFS= read -r word; do
    # BUDGET (300) seconds per configuration: the words left then are skipped.
    awk -v a="$EPOCHREALTIME" -v b="$began" -v m="${BUDGET:-300}" 'BEGIN { exit !(a - b > m) }' &&
      { say "$config: budget spent, words from '$word' on skipped"; break; }
    for task in word-count inverted-index "ranked-inverted-index 2" "sequence-count 3"; do
      q=$((q + 1))
      name=${task% *}; n=""
      [ "$name" != "$task" ] && n=", \"n\": ${task#* }"
      body="{\"task\": \"$name\"$n, \"format\": \"tsv\", \"words\": $(json_words "$word")}"
      times=()
      reps=$REPEAT
      [ "${config#*traversal}" != "$config" ] && reps=${REPEAT_TRAVERSAL:-3}
      for r in $(seq "$reps"); do
        t=$(post $port "$body" "$W/got") || echo "FAILED: $config $body" >> "$OUT/point-results.txt"
        times+=("$t")
      done
      [ "$config" = "$first" ] && cp "$W/got" "$W/want.$q"
      cmp -s "$W/got" "$W/want.$q" && same=same || same=DIFFERENT
      count=$(awk -F '\t' -v w="$word" '$1 == w { print $2 }' "$W/head.tsv" "$W/rare.tsv" | head -1)
      docs=$(awk -F '\t' '{ print split($2, p, ",") }' "$W/want.$q" | head -1)
      [ "$name" = inverted-index ] || docs=""
      stats=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "%s\t%s", a[int((NR + 1) / 2)], a[NR] }')
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$config" "$task" "$word" "${count:-?}" "${docs:-}" \
        "$(wc -c < "$W/got")" "$stats" "$same" >> "$T"
    done
  done < "$W/words"
  kill $sp; wait $sp 2> /dev/null
  grep -h "search indexes\|point lookup" "$L/serve-$config.log" | tail -3 | cut -c1-200 >> "$OUT/point-results.txt"
done
column -t -s$'\t' "$T" | tee -a "$OUT/point-results.txt"
