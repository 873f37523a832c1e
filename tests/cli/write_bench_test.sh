#!/usr/bin/env bash
# The write benchmark tool (scripts/bench/write_bench.cpp): every mode fills a file of several
# pieces (the last one short) from several threads and checks it back, piece by piece, on the
# scratch file system and on /dev/shm when it is there; its JSON line names the mode and size.
# Usage: write_bench_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE. Exit 77 when not built.
set -euo pipefail
BIN=$1 WORK=$3
BENCH=$(dirname "$BIN")/scripts/bench/gtadoc_write_bench
if [[ ! -x $BENCH ]]; then echo "SKIP: $BENCH not built (GTADOC_BUILD_BENCH=OFF)"; exit 77; fi
rm -rf "$WORK" && mkdir -p "$WORK"
dirs=("$WORK")
[[ -d /dev/shm && -w /dev/shm ]] && dirs+=(/dev/shm)
for d in "${dirs[@]}"; do
  for mode in pwrite map map-fallocate; do
    [[ $mode == map-fallocate && $(stat -f -c %T "$d") == tmpfs ]] && continue  # slow, not used
    out=$("$BENCH" "$d/gtadoc-write-bench-$$" 9 3 "$mode")
    echo "$out" | grep -q "\"mode\": \"$mode\", \"mib\": 9, \"threads\": 3" ||
      { echo "FAIL: $d $mode: $out"; exit 1; }
    [[ ! -e $d/gtadoc-write-bench-$$ ]] || { echo "FAIL: $d $mode left its file"; exit 1; }
  done
done
# Usage errors: exit 2.
rc=0; "$BENCH" "$WORK/f" 9 3 sideways 2>/dev/null || rc=$?
[[ $rc -eq 2 ]] || { echo "FAIL: a bad mode exited $rc"; exit 1; }
echo "write bench: every mode checked"
