#!/usr/bin/env bash
# --force replaces only a previous output of the same kind (docs/REFERENCE.md §2): never an input,
# the archive being read or anything inside it, a non-regular file, or a directory that is not a
# previous output (an archive or a partitioned result holding anything gtadoc did not write
# included). Each refusal is a one-line error with exit 2, and the input is intact afterwards.
# Usage: force_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE.
set -euo pipefail
BIN=$1 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK/D" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
printf 'alpha beta alpha\n' > D/a.txt
"$BIN" compress D -o a.gtd >/dev/null
sum() { find "$1" -type f -exec md5sum {} + | sort; }
before_d=$(sum D) before_a=$(sum a.gtd)
refused() {  # refused WHAT COMMAND...: exit 2 and one line on stderr
  local rc=0
  "$@" >/dev/null 2>err || rc=$?
  [[ $rc -eq 2 ]] || fail "$1 ... exited $rc, want 2: $(cat err)"
  [[ $(wc -l < err) -eq 1 ]] || fail "$*: not one line: $(cat err)"
}
refused "$BIN" compress D -o D --force
refused "$BIN" compress D/a.txt -o D/a.txt --force
refused "$BIN" compress D -o . --force
refused "$BIN" run a.gtd word-count -o a.gtd/manifest.h5 --force
refused "$BIN" run a.gtd word-count -o a.gtd --force
refused "$BIN" run a.gtd sort --partitioned -o a.gtd --force
refused "$BIN" decompress a.gtd -o a.gtd --force
refused "$BIN" run a.gtd word-count -o /dev/null --force
mkdir keep && echo mine > keep/file
refused "$BIN" compress D -o keep --force
refused "$BIN" run a.gtd sort --partitioned -o keep --force
refused "$BIN" decompress a.gtd -o keep --force
# Directories that merely hold a file named like an output's marker are not previous outputs:
# an archive is recognized by its whole structure (a gtadoc manifest and only shard files of its
# archive id), a partitioned result by gtadoc's signed _SUCCESS and exactly the part files it
# names (docs/REFERENCE.md §7).
mkdir fake-archive && echo mine > fake-archive/manifest.h5 && echo mine > fake-archive/file
refused "$BIN" compress D -o fake-archive --force
mkdir mixed-archive && cp a.gtd/* mixed-archive/ && echo mine > mixed-archive/file
refused "$BIN" compress D -o mixed-archive --force
mkdir fake-parts && : > fake-parts/_SUCCESS && echo mine > fake-parts/file
refused "$BIN" run a.gtd sort --partitioned -o fake-parts --force
"$BIN" run a.gtd sort --partitioned -o mixed-parts && echo mine > mixed-parts/file
refused "$BIN" run a.gtd sort --partitioned -o mixed-parts --force
# Only part files beside a _SUCCESS that is empty, foreign, or gtadoc's naming other parts.
for d in empty foreign other-count; do
  "$BIN" run a.gtd sort --partitioned -o $d-success && echo mine > $d-success/part-00000.tsv
done
: > empty-success/_SUCCESS
printf 'done\nparts 1\ntask sort\nformat tsv\n' > foreign-success/_SUCCESS
sed -i 's/^parts 1$/parts 2/' other-count-success/_SUCCESS
refused "$BIN" run a.gtd sort --partitioned -o empty-success --force
grep -q "_SUCCESS is not gtadoc's: it is empty" err || fail "empty _SUCCESS: $(cat err)"
refused "$BIN" run a.gtd sort --partitioned -o foreign-success --force
grep -q "_SUCCESS is not gtadoc's: its first line" err || fail "foreign _SUCCESS: $(cat err)"
refused "$BIN" run a.gtd sort --partitioned -o other-count-success --force
grep -q "part-00001.tsv is missing" err || fail "_SUCCESS naming 2 parts: $(cat err)"
for d in fake-archive mixed-archive fake-parts mixed-parts; do
  [[ $(cat $d/file) == mine ]] || fail "$d/ was touched"
done
for d in empty foreign other-count; do
  [[ $(cat $d-success/part-00000.tsv) == mine && -f $d-success/_SUCCESS ]] || fail "$d-success/ was touched"
done
[[ $(cat fake-archive/manifest.h5) == mine && -f fake-parts/_SUCCESS ]] || fail "a marker was removed"
[[ $(cat keep/file) == mine ]] || fail "keep/ was touched"
[[ $(sum D) == "$before_d" ]] || fail "the input corpus changed"
[[ $(sum a.gtd) == "$before_a" ]] || fail "the archive changed"
[[ -c /dev/null ]] || fail "/dev/null is no longer a device"
# What --force may replace: previous outputs of the same kind.
"$BIN" compress D -o b.gtd >/dev/null && "$BIN" compress D -o b.gtd --force >/dev/null
"$BIN" run a.gtd word-count -o out.tsv && "$BIN" run a.gtd word-count -o out.tsv --force
"$BIN" run a.gtd sort --partitioned -o parts && "$BIN" run a.gtd sort --partitioned -o parts --force
[[ $(head -n 1 parts/_SUCCESS) == "gtadoc partitioned output v1" ]] || fail "_SUCCESS has no signature"
printf 'gtadoc partitioned output v1\nparts 1\ntask word-count\nformat tsv\n' |
  cmp -s - <("$BIN" run a.gtd word-count --partitioned -o wc-parts && cat wc-parts/_SUCCESS) ||
  fail "_SUCCESS of word-count is not as documented: $(cat wc-parts/_SUCCESS)"
"$BIN" run a.gtd word-count --partitioned --format json -o wc-parts --force
[[ -f wc-parts/part-00000.json && $(tail -n 1 wc-parts/_SUCCESS) == "format json" ]] ||
  fail "a gtadoc result of another task and format was not replaced"
"$BIN" decompress a.gtd -o back && "$BIN" decompress a.gtd -o back --force
cmp -s back/a.txt D/a.txt || fail "decompress --force did not restore the document"
echo "PASS: --force refuses to destroy inputs, archives, devices and foreign directories"
