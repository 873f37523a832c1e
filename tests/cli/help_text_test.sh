#!/usr/bin/env bash
# The help text reads as a user would type it: the usage line names `gtadoc` (not the path it
# was started by), option values have readable names (no CLI11 type names such as TEXT, UINT or
# "INT:INT in [0 - 9]"), every command's help lists its options, and --version names the
# archive format versions.
# Usage: help_text_test.sh GTADOC SOURCE_DIR SCRATCH [REFERENCE].
set -euo pipefail
BIN=$1 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }

check_help() {  # check_help NAME ARGS...: exit 0, output on stdout, readable
  local name=$1; shift
  local rc=0
  "$BIN" "$@" >"$name.out" 2>"$name.err" || rc=$?
  [[ $rc -eq 0 ]] || fail "gtadoc $* exited $rc: $(head -c 300 "$name.err")"
  [[ -s $name.out ]] || fail "gtadoc $* printed nothing on standard output"
  grep -q "^Usage: gtadoc " "$name.out" || fail "gtadoc $*: usage line does not say 'gtadoc': $(head -3 "$name.out")"
  ! grep -q "$BIN" "$name.out" || fail "gtadoc $*: the help names the binary's path"
  # CLI11's own type names and range texts.
  if grep -nE '(^|[ :])(TEXT|UINT|INT|FLOAT)( |:|$)|in \[[0-9]+ - [0-9]+\]' "$name.out"; then
    fail "gtadoc $*: CLI11 type names in the help (above)"
  fi
  return 0
}

check_help top --help
for c in compress decompress info verify run serve; do grep -q "^  $c " top.out || fail "--help does not list $c"; done
check_help compress compress --help
check_help decompress decompress --help
check_help info info --help
check_help verify verify --help
check_help run run --help
check_help serve serve --help

# A few options whose value names matter.
grep -q -- '--deflate-level 0-9' compress.out || fail "compress --help: --deflate-level 0-9 missing"
grep -q -- '--memory-budget BYTES' compress.out || fail "compress --help: --memory-budget BYTES missing"
grep -q -- '--http-threads 1-64' serve.out || fail "serve --help: --http-threads 1-64 missing"
grep -q -- '--listen HOST:PORT' serve.out || fail "serve --help: --listen HOST:PORT missing"
grep -q -- '--engine auto|gpu|cpu' run.out || fail "run --help: --engine auto|gpu|cpu missing"
grep -q -- '--top N' run.out || fail "run --help: --top N missing"
for task in word-count sort inverted-index term-vector sequence-count ranked-inverted-index; do
  grep -q -- "$task" run.out || fail "run --help does not name the task $task"
done

# The ranges still hold (usage errors, exit 2, one line naming the range).
rc=0; "$BIN" compress x -o y.gtd --deflate-level 10 2>err || rc=$?
[[ $rc -eq 2 && $(wc -l <err) -eq 1 ]] || fail "--deflate-level 10: exit $rc: $(cat err)"
grep -q "0 to 9" err || fail "--deflate-level 10: the message does not name the range: $(cat err)"
rc=0; "$BIN" serve x.gtd --http-threads 0 2>err || rc=$?
[[ $rc -eq 2 ]] || fail "--http-threads 0: exit $rc: $(cat err)"
grep -q "1 to 64" err || fail "--http-threads 0: the message does not name the range: $(cat err)"

"$BIN" --version >version.out
grep -qE '^gtadoc [0-9]+\.[0-9]+\.[0-9]+ \(writes archive format [0-9]+, reads [0-9]+ to [0-9]+\)$' version.out ||
  fail "--version: $(cat version.out)"
echo "help_text_test: ok"
