#!/usr/bin/env bash
# Commands given something that is not an archive say so: a plain file, a directory without
# manifest.h5 and a missing path each get one line "PATH: not a gtadoc archive (...)", exit 1,
# for info, verify, decompress, run and serve; and `run -v` reports it before logging anything
# about the engine (an `--engine auto` estimate for an archive that does not exist).
# Usage: non_archive_test.sh GTADOC SOURCE_DIR SCRATCH [REFERENCE].
set -euo pipefail
BIN=$1 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }

printf 'just some text\n' > plain.txt
mkdir empty-dir
printf 'a document\n' > empty-dir/doc.txt

refused() {  # refused PATH WHY ARGS...: exit 1, one line, names PATH and "not a gtadoc archive"
  local path=$1 why=$2; shift 2
  local rc=0
  "$BIN" "$@" >out 2>err </dev/null || rc=$?
  [[ $rc -eq 1 ]] || fail "gtadoc $* exited $rc (expected 1): $(head -c 300 err)"
  [[ $(wc -l <err) -eq 1 ]] || fail "gtadoc $*: not one line: $(cat err)"
  grep -qF "gtadoc: error: $path: not a gtadoc archive ($why" err ||
    fail "gtadoc $*: unexpected message: $(cat err)"
  ! grep -q "manifest.h5: cannot open" err || fail "gtadoc $*: HDF5's message leaked: $(cat err)"
  [[ ! -s out ]] || fail "gtadoc $* wrote to standard output: $(head -c 200 out)"
}

for case in "plain.txt|an archive is a directory" "empty-dir|a directory without manifest.h5" \
            "missing.gtd|no such file or directory"; do
  path=${case%%|*} why=${case#*|}
  refused "$path" "$why" info "$path"
  refused "$path" "$why" info "$path" --json
  refused "$path" "$why" verify "$path"
  refused "$path" "$why" decompress "$path" -o restored
  refused "$path" "$why" run "$path" word-count
  refused "$path" "$why" run "$path" word-count -v
  refused "$path" "$why" run "$path" sequence-count --engine auto -v --stats stats.json
  refused "$path" "$why" serve "$path" --listen 127.0.0.1:0
  [[ ! -e restored && ! -e stats.json ]] || fail "an output was left behind for $path"
done

# A usage error is still reported as one (exit 2) before the archive is looked at.
rc=0; "$BIN" run missing.gtd word-count --n 3 2>err || rc=$?
[[ $rc -eq 2 ]] || fail "run missing.gtd word-count --n 3: exit $rc (expected 2): $(cat err)"

# A real archive still works, and -v names the engine once.
"$BIN" compress empty-dir -o real.gtd >/dev/null 2>&1
"$BIN" info real.gtd >/dev/null
"$BIN" run real.gtd word-count -v >counts.tsv 2>log
grep -q "^a	1$" counts.tsv || fail "word-count of the real archive: $(cat counts.tsv)"
[[ $(grep -c -- "--engine auto" log) -eq 1 ]] || fail "-v should log the engine choice once: $(cat log)"
! grep -q " 1 shards\| 1 ranks\| 1 documents" log || fail "-v log says '1 shards' or the like: $(cat log)"
echo "non_archive_test: ok"
