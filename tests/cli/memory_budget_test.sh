#!/usr/bin/env bash
# compress --memory-budget: a budget small enough to spill every shard's tokens and the
# dictionary gives the same archive as no budget (every file's h5dump equal once the random
# archive id and the digests derived from it are left out) and a byte-exact round trip, on the
# bundled sample, on a corpus of many shards, and under `mpirun -np 3`; bad values are usage
# errors (exit 2, one line naming the option); SIGTERM during a budgeted run leaves no debris
# (the spill files live inside the archive's temporary directory).
# Usage: memory_budget_test.sh GTADOC SOURCE_DIR SCRATCH [REFERENCE].
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
command -v h5dump >/dev/null || { echo "h5dump not found: skipped"; exit 77; }
[[ -d $SRC/data/sample ]] || { echo "no data/sample: skipped"; exit 77; }
sample=$SRC/data/sample

# Bad values: exit 2, one line under 200 characters naming --memory-budget, nothing on stdout.
printf 'alpha beta\n' > a.txt
for v in 0 -5 12x '' 1.5G 99999999999999999999 16E; do
  rc=0
  "$BIN" compress a.txt -o bad.gtd --memory-budget "$v" >out 2>err || rc=$?
  [[ $rc -eq 2 ]] || fail "--memory-budget '$v': exit $rc, want 2: $(cat err)"
  [[ $(wc -l <err) -eq 1 ]] || fail "--memory-budget '$v': not one line: $(cat err)"
  [[ $(wc -c <err) -lt 200 ]] || fail "--memory-budget '$v': message too long: $(cat err)"
  grep -qF -- --memory-budget err || fail "--memory-budget '$v': option not named: $(cat err)"
  [[ ! -s out && ! -e bad.gtd ]] || fail "--memory-budget '$v': output written"
done
for v in 64M 1g 512MiB 1048576 2GB; do
  rm -rf ok.gtd
  "$BIN" compress a.txt -o ok.gtd --memory-budget "$v" 2>err || fail "--memory-budget $v refused: $(cat err)"
done

# dump FILE: h5dump without its first line (the path), the archive id attribute, and what is
# derived from it: the manifest's content digest, the shard files' SHA-256, and archive_bytes
# (the deflated SHA-256 dataset's size varies with the digests, so it differs between any two
# runs, budget or not).
dump() {
  h5dump "$1" | sed 1d | awk '
    skip == 0 && /^ *(ATTRIBUTE "(archive_id|archive_bytes|content_sha256)"|DATASET "sha256") \{$/ {
      match($0, /^ */); ind = RLENGTH; skip = 1; next }
    skip == 1 { match($0, /^ */); if (RLENGTH == ind && $0 ~ /^ *\}$/) skip = 0; next }
    { print }'
}
# same_archive A B: the same files (no spill file left), every dump equal.
same_archive() {
  [[ $(cd "$1" && ls -A | sort) == $(cd "$2" && ls -A | sort) ]] ||
    fail "$2 holds other files than $1: $(cd "$2" && ls -A | tr '\n' ' ')"
  local f
  for f in $(cd "$1" && ls -A); do
    cmp -s <(dump "$1/$f") <(dump "$2/$f") || fail "$2/$f differs from $1/$f"
  done
  [[ $(dump "$1/manifest.h5" | wc -l) -gt 50 ]] || fail "h5dump printed too little"
}
roundtrip() {  # roundtrip ARCHIVE INPUT
  rm -rf back && "$BIN" decompress "$1" -o back && diff -r "$2" back >/dev/null ||
    fail "decompress $1 does not restore $2"
}

# The filter keeps what matters: archives of another shard plan differ.
"$BIN" compress "$sample" -o s-free.gtd --shards 3
"$BIN" compress "$sample" -o s-other.gtd --shards 4
(same_archive s-free.gtd s-other.gtd) 2>/dev/null && fail "the comparison sees no difference"

# The sample: 1M spills the tokens of every shard and the dictionary (with a warning).
"$BIN" compress "$sample" -o s-1m.gtd --shards 3 --memory-budget 1M -v 2>log
grep -q "tokens of 0 shards kept in memory, 3 spilled" log || fail "1M did not spill: $(cat log)"
grep -q "warning: --memory-budget 1.0 MiB is below" log || fail "no warning under 1M: $(cat log)"
same_archive s-free.gtd s-1m.gtd
roundtrip s-1m.gtd "$sample"

# Many shards (three copies of the sample, 1 MiB shards) on two threads: all spilled, some
# kept, all kept; and one thread.
mkdir multi
for k in 1 2 3; do cp -r "$sample" "multi/copy$k"; done
"$BIN" compress multi -o m-free.gtd --shard-size 1M --threads 2
for b in 1M 40M 8G; do
  "$BIN" compress multi -o "m-$b.gtd" --shard-size 1M --threads 2 --memory-budget "$b" -v 2>log
  grep -q "spilled to disk" log || fail "no read summary: $(cat log)"
  same_archive m-free.gtd "m-$b.gtd"
  roundtrip "m-$b.gtd" multi
done
grep -q " 0 spilled" log || fail "8G spilled something: $(cat log)"
"$BIN" compress multi -o m-1t.gtd --shard-size 1M --threads 1 --memory-budget 2M 2>/dev/null
same_archive m-free.gtd m-1t.gtd

# Under mpirun: the same archive as one process, with and without a budget.
if command -v mpirun >/dev/null; then
  MPI=(mpirun --oversubscribe -np 3)
  "${MPI[@]}" "$BIN" compress multi -o mpi-1m.gtd --shard-size 1M --threads 1 --memory-budget 1M \
    2>log || fail "mpirun compress --memory-budget 1M failed: $(cat log)"
  [[ $(grep -c "warning: --memory-budget" log) -eq 1 ]] || fail "expected one warning: $(cat log)"
  same_archive m-free.gtd mpi-1m.gtd
  roundtrip mpi-1m.gtd multi
  "${MPI[@]}" "$BIN" compress multi -o mpi-free.gtd --shard-size 1M --threads 1 2>log ||
    fail "mpirun compress failed: $(cat log)"
  same_archive m-free.gtd mpi-free.gtd
else
  echo "mpirun not found: the MPI cases are skipped"
fi

# SIGTERM while a budgeted run is spilling: exit 143, one line, no temporary (spill files
# included) left.
mkdir big
for k in 1 2 3 4 5 6 7 8; do cp -r "$sample" "big/c$k"; done
temps() { find . -maxdepth 1 -name '*.tmp-*' | sort; }
"$BIN" compress big -o t.gtd --threads 1 --memory-budget 1M >out 2>err &
pid=$!
for _ in $(seq 1 1000); do
  compgen -G "t.gtd.tmp-*/.spill-*" >/dev/null && break
  kill -0 "$pid" 2>/dev/null || fail "the budgeted compress ended before any spill file appeared"
  sleep 0.01
done
compgen -G "t.gtd.tmp-*/.spill-*" >/dev/null || fail "no spill file appeared"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[[ $rc -eq 143 ]] || fail "SIGTERM: exit $rc, want 143: $(cat err)"
[[ $(wc -l <err) -eq 1 ]] && grep -q "stopped by signal" err || fail "SIGTERM message: $(cat err)"
[[ -z $(temps) && ! -e t.gtd ]] || fail "SIGTERM left debris: $(temps)"
echo "memory_budget_test: ok"
