#!/usr/bin/env bash
# The whole pipeline on the GPU (device machine only; CI has no GPU): the bundled sample
# compressed into 4 shards, every task through `gtadoc run --engine gpu` (1 rank and, with two
# GPUs, `mpirun -np 2`) and through `gtadoc serve --engine gpu` (resident shards, one merged
# batch), each compared byte for byte with the raw-text reference.
#   scripts/gpu-pipeline-check.sh BUILD_DIR     (after building gtadoc and gtadoc_reference)
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-device}
BIN=$PWD/$B/gtadoc REF=$PWD/$B/tests/gtadoc_reference
W=$(mktemp -d /tmp/gpu-pipeline.XXXXXX)
trap 'kill $SP 2>/dev/null; rm -rf "$W"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
bad=0
"$BIN" compress data/sample -o "$W/s.gtd" --shards 4 || exit 1
TASKS=("word-count" "word-count --top 7 --lowercase" "sort --alnum" "inverted-index --ids"
  "term-vector --top 0" "sequence-count --n 2" "sequence-count --per-doc" "ranked-inverted-index")
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
"$BIN" serve "$W/s.gtd" --engine gpu --listen 127.0.0.1:0 2>"$W/serve.err" </dev/null &
SP=$!
for _ in $(seq 300); do grep -q 'listening on' "$W/serve.err" && break; sleep 0.1; done
PORT=$(grep -o 'listening on http://[^ ]*' "$W/serve.err" | sed 's/.*://')
for t in "${TASKS[@]}"; do
  # shellcheck disable=SC2086
  "$REF" data/sample $t >"$W/want"
  # shellcheck disable=SC2086
  "$BIN" run "$W/s.gtd" $t --engine gpu >"$W/got" && cmp -s "$W/want" "$W/got" &&
    echo "ok   run gpu: $t" || { echo "FAIL run gpu: $t"; bad=1; }
  if [[ $gpus -ge 2 ]]; then
    # shellcheck disable=SC2086
    mpirun -np 2 --bind-to none "$BIN" run "$W/s.gtd" $t --engine gpu >"$W/got" </dev/null &&
      cmp -s "$W/want" "$W/got" && echo "ok   run gpu np2: $t" || { echo "FAIL run gpu np2: $t"; bad=1; }
  fi
  # The same options as a JSON body ("--top 7 --lowercase" -> "top": 7, "lowercase": true).
  body=$(echo "$t" | awk '{ printf "{\"task\":\"%s\",\"format\":\"tsv\"", $1
    for (i = 2; i <= NF; i++) { o = substr($i, 3); gsub("-", "_", o)
      if (i < NF && $(i + 1) !~ /^--/) { printf ",\"%s\":%s", o, $(i + 1); i++ } else printf ",\"%s\":true", o }
    print "}" }')
  curl -s -d "$body" "127.0.0.1:$PORT/v1/query" >"$W/got" && cmp -s "$W/want" "$W/got" &&
    echo "ok   serve gpu: $body" || { echo "FAIL serve gpu: $body"; bad=1; }
done
kill -TERM $SP && wait $SP || { echo "FAIL serve did not exit 0"; bad=1; }
exit $bad
