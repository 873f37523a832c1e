#!/usr/bin/env bash
# `gtadoc grep` under mpirun (each rank counts the phrases on its own shards; rank 0 writes the
# documents in id order) equals the raw-text reference byte for byte, for every mode.
# Usage: grep_test.sh GTADOC SOURCE_DIR SCRATCH NP REFERENCE
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 NP=$4 REF=$5
GREF=$(dirname "$REF")/gtadoc_grep_reference
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
MPIRUN=(mpirun --oversubscribe -np "$NP")
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }

# shellcheck source=tests/lib/corpus.sh
source "$SRC/tests/lib/corpus.sh"
make_test_corpus
"$BIN" compress in -o c.gtd --shards 7 --threads 1 2>/dev/null

cases=(
  "of the"
  "same --lowercase --alnum --count"
  "alpha#alpha --lines"
  "of#the the --any --ids"
  "of#the the --all --format json"
  "text same --any --lines --lowercase --alnum --format json"
)
for c in "${cases[@]}"; do
  # '#' joins the words of one phrase here; each case's first words are its phrases.
  read -r -a words <<< "$c"
  args=()
  for w in "${words[@]}"; do args+=("${w//#/ }"); done
  "$GREF" in "${args[@]}" > want
  rm -f got
  "${MPIRUN[@]}" "$BIN" grep c.gtd "${args[@]}" --threads 1 -o got
  cmp -s want got || { diff want got | head -10; fail "np=$NP: grep $c"; }
done
echo "grep under mpirun -np $NP: OK"
