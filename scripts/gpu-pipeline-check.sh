#!/usr/bin/env bash
# The whole pipeline on the GPU (device machine only; CI has no GPU): the bundled sample
# compressed into 4 shards, every task through `gtadoc run --engine gpu` (1 rank; with two GPUs
# `mpirun -np 2`, with four also `-np 4`, each with the records moved by NCCL, by MPI staged
# through host memory, and by the host shuffle and merge; and `--gpus 2` / `--gpus 4`, ranks
# that are threads of one process, records through its memory or by NCCL) and through `gtadoc serve --engine gpu`
# (resident shards, one merged batch; with two GPUs also under `mpirun -np 2` and as `--gpus 2`,
# where the records move by NCCL), and on one GPU with the engine's memory capped below the archive (loads in
# rounds), each compared byte for byte with the raw-text reference.
#   scripts/gpu-pipeline-check.sh BUILD_DIR     (after building gtadoc and gtadoc_reference)
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-device}
BIN=$PWD/$B/gtadoc REF=$PWD/$B/tests/gtadoc_reference
W=$(mktemp -d /tmp/gpu-pipeline.XXXXXX)
trap 'kill $SP ${SP2:-} ${SP3:-} 2>/dev/null; rm -rf "$W"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
bad=0
"$BIN" compress data/sample -o "$W/s.gtd" --shards 4 || exit 1
TASKS=("word-count" "word-count --top 7 --lowercase" "sort --alnum" "inverted-index --ids"
  "term-vector --top 0" "sequence-count --n 2" "sequence-count --top 5" "sequence-count --per-doc"
  "ranked-inverted-index")
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
"$BIN" serve "$W/s.gtd" --engine gpu --listen 127.0.0.1:0 2>"$W/serve.err" </dev/null &
SP=$!
for _ in $(seq 300); do grep -q 'listening on' "$W/serve.err" && break; sleep 0.1; done
PORT=$(grep -o 'listening on http://[^ ]*' "$W/serve.err" | sed 's/.*://')
if [[ $gpus -ge 2 ]]; then  # the service on two GPUs of one process (--gpus 2): NCCL in-process
  "$BIN" serve "$W/s.gtd" --gpus 2 --listen 127.0.0.1:0 -v 2>"$W/serve3.err" </dev/null &
  SP3=$!
  for _ in $(seq 300); do grep -q 'listening on' "$W/serve3.err" && break; sleep 0.1; done
  PORT3=$(grep -o 'listening on http://[^ ]*' "$W/serve3.err" | sed 's/.*://')
  grep -q 'shuffle: NCCL' "$W/serve3.err" && echo "ok   serve --gpus 2 uses NCCL" ||
    { echo "FAIL serve --gpus 2 does not use NCCL"; tail -5 "$W/serve3.err"; bad=1; }
fi
if [[ $gpus -ge 2 ]]; then  # the service on two GPUs: resident shards, the NCCL shuffle
  mpirun -np 2 --bind-to none "$BIN" serve "$W/s.gtd" --engine gpu --listen 127.0.0.1:0 -v \
    2>"$W/serve2.err" </dev/null &
  SP2=$!
  for _ in $(seq 300); do grep -q 'listening on' "$W/serve2.err" && break; sleep 0.1; done
  PORT2=$(grep -o 'listening on http://[^ ]*' "$W/serve2.err" | sed 's/.*://')
  grep -q 'shuffle: NCCL' "$W/serve2.err" && echo "ok   serve gpu np2 uses NCCL" ||
    { echo "FAIL serve gpu np2 does not use NCCL"; tail -5 "$W/serve2.err"; bad=1; }
fi
for t in "${TASKS[@]}"; do
  # shellcheck disable=SC2086
  "$REF" data/sample $t >"$W/want"
  # shellcheck disable=SC2086
  "$BIN" run "$W/s.gtd" $t --engine gpu >"$W/got" && cmp -s "$W/want" "$W/got" &&
    echo "ok   run gpu: $t" || { echo "FAIL run gpu: $t"; bad=1; }
  # The engine's memory capped below the archive (GTADOC_GPU_MEMORY_LIMIT): loads run out of
  # memory, what is loaded runs as a batch and is dropped, loading goes on; the log must say so.
  # shellcheck disable=SC2086
  GTADOC_GPU_MEMORY_LIMIT=$((16 << 20)) "$BIN" run "$W/s.gtd" $t --engine gpu -v >"$W/got" \
    2>"$W/lim.err" && cmp -s "$W/want" "$W/got" && grep -q 'engine memory full' "$W/lim.err" &&
    echo "ok   run gpu, memory capped: $t" ||
    { echo "FAIL run gpu, memory capped: $t"; tail -3 "$W/lim.err"; bad=1; }
  for np in 2 4; do
    [[ $gpus -ge $np ]] || continue
    # N GPUs of one process, no launcher (`--gpus N`: ranks are threads): the records move
    # through the process's memory by default, by NCCL when forced.
    # shellcheck disable=SC2086
    "$BIN" run "$W/s.gtd" $t --gpus $np -v >"$W/got" 2>"$W/np.err" && cmp -s "$W/want" "$W/got" &&
      grep -q "shuffle: this process's memory" "$W/np.err" &&
      echo "ok   run --gpus $np: $t" || { echo "FAIL run --gpus $np: $t"; tail -5 "$W/np.err"; bad=1; }
    # shellcheck disable=SC2086
    GTADOC_SHUFFLE=nccl "$BIN" run "$W/s.gtd" $t --gpus $np -v >"$W/got" 2>"$W/np.err" &&
      cmp -s "$W/want" "$W/got" && grep -q 'shuffle: NCCL' "$W/np.err" &&
      echo "ok   run --gpus $np nccl: $t" ||
      { echo "FAIL run --gpus $np nccl: $t"; tail -5 "$W/np.err"; bad=1; }
    # Two (four) GPUs: the records shuffled by NCCL (forced; the log must say NCCL), ...
    # shellcheck disable=SC2086
    mpirun -np $np --bind-to none -x GTADOC_SHUFFLE=nccl "$BIN" run "$W/s.gtd" $t --engine gpu -v \
      >"$W/got" \
      2>"$W/np.err" </dev/null && cmp -s "$W/want" "$W/got" &&
      grep -q 'shuffle: NCCL' "$W/np.err" && echo "ok   run gpu np$np nccl: $t" ||
      { echo "FAIL run gpu np$np nccl: $t"; tail -5 "$W/np.err"; bad=1; }
    # ... by MPI, staged through host memory and reduced on the GPUs (GTADOC_SHUFFLE=mpi; the
    # log must say so), and by the host shuffle and merge (GTADOC_SHUFFLE=host).
    # shellcheck disable=SC2086
    mpirun -np $np --bind-to none -x GTADOC_SHUFFLE=mpi "$BIN" run "$W/s.gtd" $t --engine gpu -vv \
      >"$W/got" 2>"$W/np.err" </dev/null && cmp -s "$W/want" "$W/got" &&
      grep -q 'MPI via host memory' "$W/np.err" && echo "ok   run gpu np$np mpi: $t" ||
      { echo "FAIL run gpu np$np mpi: $t"; tail -5 "$W/np.err"; bad=1; }
    # shellcheck disable=SC2086
    mpirun -np $np --bind-to none -x GTADOC_SHUFFLE=host "$BIN" run "$W/s.gtd" $t --engine gpu \
      >"$W/got" </dev/null && cmp -s "$W/want" "$W/got" && echo "ok   run gpu np$np host: $t" ||
      { echo "FAIL run gpu np$np host: $t"; bad=1; }
  done
  # The same options as a JSON body ("--top 7 --lowercase" -> "top": 7, "lowercase": true).
  body=$(echo "$t" | awk '{ printf "{\"task\":\"%s\",\"format\":\"tsv\"", $1
    for (i = 2; i <= NF; i++) { o = substr($i, 3); gsub("-", "_", o)
      if (i < NF && $(i + 1) !~ /^--/) { printf ",\"%s\":%s", o, $(i + 1); i++ } else printf ",\"%s\":true", o }
    print "}" }')
  curl -s -d "$body" "127.0.0.1:$PORT/v1/query" >"$W/got" && cmp -s "$W/want" "$W/got" &&
    echo "ok   serve gpu: $body" || { echo "FAIL serve gpu: $body"; bad=1; }
  if [[ -n ${SP2:-} ]]; then
    curl -s -d "$body" "127.0.0.1:$PORT2/v1/query" >"$W/got" && cmp -s "$W/want" "$W/got" &&
      echo "ok   serve gpu np2: $body" || { echo "FAIL serve gpu np2: $body"; bad=1; }
  fi
  if [[ -n ${SP3:-} ]]; then
    curl -s -d "$body" "127.0.0.1:$PORT3/v1/query" >"$W/got" && cmp -s "$W/want" "$W/got" &&
      echo "ok   serve --gpus 2: $body" || { echo "FAIL serve --gpus 2: $body"; bad=1; }
  fi
done
kill -TERM $SP && wait $SP || { echo "FAIL serve did not exit 0"; tail -20 "$W/serve.err"; bad=1; }
if [[ -n ${SP3:-} ]]; then
  kill -TERM $SP3 && wait $SP3 || { echo "FAIL serve --gpus 2 did not exit 0"; tail -20 "$W/serve3.err"; bad=1; }
fi
if [[ -n ${SP2:-} ]]; then  # SIGTERM to rank 0 drains the service: mpirun must exit 0
  r0=
  for c in $(pgrep -P "$SP2"); do
    tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0' && r0=$c
  done
  [[ -n $r0 ]] && kill -TERM "$r0" && wait $SP2 ||
    { echo "FAIL serve np2 did not exit 0"; tail -20 "$W/serve2.err"; bad=1; }
fi
exit $bad
