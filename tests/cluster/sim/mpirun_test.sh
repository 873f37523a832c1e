#!/usr/bin/env bash
# gtadoc under mpirun across the nodes of a simulated cluster (sim.sh): NODES nodes x PER_NODE
# ranks, launched from this machine through the rsh agent, ranks on different nodes talking TCP.
#  - compress across the nodes: decompress gives the input back, verify passes;
#  - six run cases (every task among the layouts, with normalization, --top, --per-doc, JSON)
#    and one --partitioned case: byte-identical to the single-process result on the
#    single-process archive, which equals the raw-text reference tool's;
#  - the logs (-vv) of every run: MPI's grouping of ranks by node as the hostfile says, no
#    shared-memory pml forced, no cross-memory reads, the shuffle by MPI; and Open MPI's own
#    verbose output once: the TCP btl between every pair of ranks on different nodes, shared
#    memory (vader) only within a node;
#  - with SERVE=1: `gtadoc serve` across the nodes, rank 0 on sim1 listening on its address with
#    a token; curl from this machine: healthz, 401 without the token, queries equal to the
#    single-process results; SIGTERM to mpirun stops every rank on every node.
# Usage: mpirun_test.sh GTADOC SOURCE_DIR SCRATCH NODES PER_NODE REFERENCE [SERVE]
# Exit 77 (skipped) when the machine cannot run the simulated cluster or has no mpirun.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 NODES=$4 PER=$5 REF=$6 SERVE=${7:-0}
NP=$((NODES * PER))
# shellcheck source=sim.sh
source "$SRC/tests/cluster/sim/sim.sh"
if ! why=$(sim_check); then echo "SKIP: $why"; exit 77; fi
command -v mpirun >/dev/null || { echo "SKIP: mpirun is not installed"; exit 77; }
((SERVE == 0)) || command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
fail() { echo "FAIL: ${NODES}x$PER: $*" >&2; exit 1; }
T0=$SECONDS
note() { echo "[$((SECONDS - T0))s] $*"; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LC_ALL=C
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=../../lib/corpus.sh
source "$SRC/tests/lib/corpus.sh"
make_test_corpus

C=$(mktemp -d /tmp/gtadoc-sim.XXXXXX)
MPI_PID=""
cleanup() {
  local rc=$?
  [[ -z $MPI_PID ]] || kill -KILL "$MPI_PID" 2>/dev/null || true
  sim_stop
  return "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
sim_start "$C" "$NODES" || fail "the simulated cluster did not start"
sim_hostfile "$WORK/hosts" "$PER"
MPIRUN=(sim_mpirun --hostfile "$WORK/hosts" -np "$NP")

# What every log must say: MPI's nodes as the hostfile fills them (PER ranks each, in order).
layout="MPI: $NP ranks on $NODES nodes ("
for ((i = 0; i < NODES; i++)); do
  first=$((i * PER)) last=$((i * PER + PER - 1))
  ranks=$first
  ((last > first)) && ranks="$first-$last"
  ((i > 0)) && layout+="; "
  layout+="sim$((i + 1)): ranks $ranks"
done
layout+=")"
check_log() {  # check_log LOG WHAT
  grep -qF -- "$layout" "$1" || { cat "$1" >&2; fail "$2: no '$layout' in the log"; }
  ! grep -q "cross-memory pull" "$1" || { grep "cross-memory" "$1" >&2; fail "$2: cross-memory reads between nodes"; }
  ! grep -q "pml ob1" "$1" || fail "$2: the shared-memory pml was forced across nodes"
}
# check_btl LOG: Open MPI's "Using X btl for send to [[J,1],R] on node N": tcp between nodes,
# vader or self within one.
check_btl() {
  local line from to btl n_tcp=0 i
  while IFS= read -r line; do
    [[ $line =~ ^\[([a-z0-9]+):[0-9]+\]\ mca:\ bml:\ Using\ ([a-z]+)\ btl\ for\ send\ to\ .*\ on\ node\ ([^ ]+) ]] || continue
    from=${BASH_REMATCH[1]} btl=${BASH_REMATCH[2]} to=${BASH_REMATCH[3]}
    for i in "${!SIM_ADDRS[@]}"; do [[ $to == "${SIM_ADDRS[i]}" ]] && to=${SIM_NODES[i]}; done
    if [[ $from == "$to" ]]; then
      [[ $btl == vader || $btl == self ]] || fail "$btl between ranks of $from"
    else
      [[ $btl == tcp ]] || fail "$btl between $from and $to (expected tcp)"
      n_tcp=$((n_tcp + 1))
    fi
  done <"$1"
  # every rank sends to every rank of the other nodes
  ((n_tcp == NP * (NP - PER))) || { grep "bml: Using" "$1" >&2; fail "$n_tcp TCP pairs, expected $((NP * (NP - PER)))"; }
}

# ---- compress across the nodes; the single-process archive for the expected results
"$BIN" compress "$WORK/in" -o "$WORK/one.gtd" --shards 7 --threads 1 2>/dev/null
"${MPIRUN[@]}" "$BIN" -vv compress "$WORK/in" -o "$WORK/c.gtd" --shards 7 --threads 1 \
  </dev/null >"$WORK/compress.log" 2>&1 || { cat "$WORK/compress.log"; fail "compress across nodes"; }
check_log "$WORK/compress.log" compress
"$BIN" decompress "$WORK/c.gtd" -o "$WORK/round" && diff -r "$WORK/in" "$WORK/round" >/dev/null ||
  fail "decompress after the compress across nodes differs from the input"
"$BIN" verify "$WORK/c.gtd" >/dev/null 2>&1 || fail "verify of the archive compressed across nodes"
note "compress across $NODES nodes x $PER ranks"

# ---- run: the layout's cases (each pool entry runs in two of the four layouts)
case "${NODES}x$PER" in
  2x1) cases=("word-count --lowercase --top 7" "sort --alnum" "inverted-index --lowercase --alnum"
              "term-vector --top 0 --min-count 2" "sequence-count --n 2 --top 9 --lowercase"
              "ranked-inverted-index --n 2 --lowercase")
       part="sort" ;;
  2x2) cases=("word-count --alnum --format json" "sort --lowercase" "inverted-index --ids --format json"
              "term-vector --lowercase" "sequence-count --n 4 --per-doc --top 2 --alnum"
              "ranked-inverted-index --format json")
       part="sequence-count --per-doc --top 2" ;;
  3x1) cases=("word-count --lowercase --top 7" "sort --lowercase" "inverted-index --ids --format json"
              "term-vector --top 0 --min-count 2" "sequence-count --n 4 --per-doc --top 2 --alnum"
              "ranked-inverted-index --n 2 --lowercase")
       part="inverted-index --alnum" ;;
  *)   cases=("word-count --alnum --format json" "sort --alnum" "inverted-index --lowercase --alnum"
              "term-vector --lowercase" "sequence-count --n 2 --top 9 --lowercase"
              "ranked-inverted-index --format json")
       part="word-count --top 7" ;;
esac
k=0
for c in "${cases[@]}"; do
  k=$((k + 1))
  # shellcheck disable=SC2086
  "$REF" "$WORK/in" $c >"$WORK/want-ref"
  # shellcheck disable=SC2086
  "$BIN" run "$WORK/one.gtd" $c --engine cpu --threads 1 -o "$WORK/want" --force 2>/dev/null
  cmp -s "$WORK/want-ref" "$WORK/want" || fail "single process: $c differs from the reference"
  extra=()
  ((k == 1)) && extra=(--mca btl_base_verbose 10)  # Open MPI's transport choices, once
  rm -f "$WORK/got"
  # shellcheck disable=SC2086
  "${MPIRUN[@]}" "${extra[@]}" "$BIN" -vv run "$WORK/c.gtd" $c --engine cpu --threads 1 \
    -o "$WORK/got" </dev/null >"$WORK/run.log" 2>&1 || { tail -30 "$WORK/run.log"; fail "$c"; }
  cmp -s "$WORK/want" "$WORK/got" || { diff "$WORK/want" "$WORK/got" | head; fail "$c differs from the single process"; }
  check_log "$WORK/run.log" "$c"
  grep -q "shuffle: MPI (" "$WORK/run.log" || fail "$c: no 'shuffle: MPI' line"
  ((k == 1)) && check_btl "$WORK/run.log"
done
note "${#cases[@]} run cases equal the single process and the reference"
rm -rf "$WORK/parts"
# shellcheck disable=SC2086
"${MPIRUN[@]}" "$BIN" -vv run "$WORK/c.gtd" $part --engine cpu --threads 1 --partitioned \
  -o "$WORK/parts/" </dev/null >"$WORK/run.log" 2>&1 || { tail -30 "$WORK/run.log"; fail "$part --partitioned"; }
check_log "$WORK/run.log" "$part --partitioned"
[[ -f $WORK/parts/_SUCCESS ]] || fail "no _SUCCESS for $part --partitioned"
[[ $(find "$WORK/parts" -name 'part-*' | wc -l) -eq $NP ]] || fail "expected $NP parts for $part"
# shellcheck disable=SC2086
"$BIN" run "$WORK/one.gtd" $part --engine cpu --threads 1 -o "$WORK/want" --force 2>/dev/null
cat "$WORK"/parts/part-*.tsv | cmp -s - "$WORK/want" || fail "the parts of $part do not make the single-process result"
note "--partitioned: $NP parts"

# ---- serve across the nodes
if ((SERVE)); then
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/token"
  chmod 600 "$WORK/token"
  auth="Authorization: Bearer $(cat "$WORK/token")"
  sim_mpirun_argv  # SIM_MPIRUN: $! below is mpirun itself
  "${SIM_MPIRUN[@]}" --hostfile "$WORK/hosts" -np "$NP" "$BIN" -vv serve "$WORK/c.gtd" --listen 0.0.0.0:8080 --token-file "$WORK/token" \
    --engine cpu --threads 1 </dev/null >"$WORK/serve.log" 2>&1 &
  MPI_PID=$!
  for _ in $(seq 600); do
    grep -q "listening on http://0.0.0.0:8080" "$WORK/serve.log" && break
    kill -0 "$MPI_PID" 2>/dev/null || { cat "$WORK/serve.log"; fail "serve exited before listening"; }
    sleep 0.1
  done
  grep -q "listening on http://0.0.0.0:8080" "$WORK/serve.log" || fail "serve: no listening line in 60 s"
  check_log "$WORK/serve.log" serve
  url=http://$(sim_addr sim1):8080
  [[ $(curl -fsS -m 20 "$url/healthz") == ok* ]] || fail "GET /healthz from this machine"
  code=$(curl -s -m 20 -o /dev/null -w '%{http_code}' -d '{"task":"word-count"}' "$url/v1/query" || true)
  [[ $code == 401 ]] || fail "a query without the token got HTTP $code"
  # shellcheck disable=SC2089,SC2090  # "CASE|JSON": the case split into words on purpose
  for q in 'word-count --lowercase|{"task":"word-count","lowercase":true,"format":"tsv"}' \
    'inverted-index --alnum|{"task":"inverted-index","alnum":true,"format":"tsv"}' \
    'sequence-count --n 2 --top 9 --format json|{"task":"sequence-count","n":2,"top":9,"format":"json"}' \
    'ranked-inverted-index --n 2|{"task":"ranked-inverted-index","n":2,"format":"tsv"}'; do
    # shellcheck disable=SC2086,SC2090
    "$BIN" run "$WORK/one.gtd" ${q%%|*} --engine cpu --threads 1 -o "$WORK/want" --force 2>/dev/null
    curl -fsS -m 60 -H "$auth" -H 'Content-Type: application/json' -d "${q#*|}" "$url/v1/query" \
      >"$WORK/got" || fail "POST /v1/query ${q#*|}"
    cmp -s "$WORK/want" "$WORK/got" || fail "serve: ${q%%|*} differs from the single process"
  done
  # sim2's ranks answered too (they hold shards): the service's ranks span the nodes.
  [[ $(grep -c "rank [0-9]*\]" "$WORK/serve.log") -gt 0 ]] || fail "no rank's lines in the serve log"
  kill -TERM "$MPI_PID"
  for _ in $(seq 300); do kill -0 "$MPI_PID" 2>/dev/null || break; sleep 0.1; done
  ! kill -0 "$MPI_PID" 2>/dev/null || fail "serve still running 30 s after SIGTERM to mpirun"
  wait "$MPI_PID" 2>/dev/null || true
  MPI_PID=""
  for n in "${SIM_NODES[@]}"; do
    ! sim_exec "$n" sh -c 'for p in /proc/[0-9]*; do tr "\0" " " <$p/cmdline 2>/dev/null; echo; done' |
      grep -q "gtadoc.* serve" || fail "a rank of serve outlived mpirun on $n"
  done
  note "serve across the nodes: answers equal, stopped on every node"
fi
echo "PASS: mpirun across $NODES nodes x $PER ranks"
