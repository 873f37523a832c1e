#!/usr/bin/env bash
# `gtadoc grep` against the raw-text reference (gtadoc_grep_reference), byte for byte: phrases
# present, absent, repeated and overlapping ("alpha alpha" in a line of 1024 alphas, 64-word
# phrases), at document starts and ends and across lines, several phrases with --all and --any,
# --count and --lines, every normalization, --ids, TSV and JSON, on archives of one shard and of
# many; then the usage errors (exit 2, nothing written) and -o / --force.
# Usage: grep_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 REF=$4
GREF=$(dirname "$REF")/gtadoc_grep_reference
[[ -x $GREF ]] || { echo "no $GREF"; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }

# shellcheck source=tests/lib/corpus.sh
source "$SRC/tests/lib/corpus.sh"
make_test_corpus
printf 'end of\nthe line\n\n\nof the end' > "$WORK/in/lines"
printf 'The Cat,  the cat; THE CAT\t(the) cat\n' > "$WORK/in/cats"
printf 'x\\tab\tname\n' > "$WORK/in/tab	name"

timeout 120 "$BIN" compress in -o one.gtd --shards 1 --threads 2 2>/dev/null
timeout 120 "$BIN" compress in -o many.gtd --shard-size 4k --threads 2 2>/dev/null
shards=$("$BIN" info many.gtd --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["shards"])')
[[ $shards -ge 8 ]] || fail "want many shards, got $shards"

sixty_four=$(printf 'alpha %.0s' $(seq 64))
cases=(
  "of the"
  "the"
  "alpha alpha"
  "alpha alpha alpha"
  "$sixty_four"
  "same same"
  "same text"
  "text TEXT, same."
  "Two words"
  "a$(printf '\001') b a"
  "end of the"
  "of the end"
  "no-such-word anywhere"
  "the cat"
)
opts=("" "--lowercase" "--alnum" "--lowercase --alnum" "--ids" "--count" "--lines" "--lines --lowercase --alnum")
k=0
for archive in one.gtd many.gtd; do
  for phrase in "${cases[@]}"; do
    o=${opts[$((k % ${#opts[@]}))]}; k=$((k + 1))
    for fmt in tsv json; do
      # shellcheck disable=SC2086
      "$GREF" in "$phrase" $o --format "$fmt" > want
      # shellcheck disable=SC2086
      "$BIN" grep "$archive" "$phrase" $o --format "$fmt" --threads 2 > got ||
        fail "$archive '$phrase' $o $fmt: exit $?"
      cmp -s want got || { diff want got | head -10; fail "$archive '$phrase' $o --format $fmt"; }
    done
  done
  # Several phrases: one count column each; every line of each match.
  for o in "" "--any" "--all --count" "--any --count" "--any --lines" "--any --lowercase --alnum --ids"; do
    for fmt in tsv json; do
      # shellcheck disable=SC2086
      "$GREF" in "of the" "the cat" "same" "no-such-word" $o --format "$fmt" > want
      # shellcheck disable=SC2086
      "$BIN" grep "$archive" "of the" "the cat" "same" "no-such-word" $o --format "$fmt" > got
      cmp -s want got || { diff want got | head -10; fail "$archive several phrases $o --format $fmt"; }
      # shellcheck disable=SC2086
      "$GREF" in "of the" "the" "alpha" $o --format "$fmt" > want
      # shellcheck disable=SC2086
      "$BIN" grep "$archive" "of the" "the" "alpha" $o --format "$fmt" > got
      cmp -s want got || { diff want got | head -10; fail "$archive three phrases $o --format $fmt"; }
    done
  done
done
# Known answers, independent of both implementations.
[[ $("$BIN" grep one.gtd "alpha alpha" --count) == "alpha alpha	1023" ]] || fail "alpha alpha count"
[[ $("$BIN" grep one.gtd "$sixty_four" --count) == "$(printf '%s\t961' "${sixty_four% }")" ]] ||
  fail "64-word phrase count"
[[ $("$BIN" grep one.gtd "end of the" --lines | grep '^lines:') == "$(printf 'lines:1:end of\nlines:2:the line')" ]] ||
  fail "a match across two lines prints both"

# Usage errors: exit 2, one line, nothing written.
expect_usage() {
  set +e
  "$BIN" grep "$@" > out 2> err
  local code=$?
  set -e
  [[ $code -eq 2 ]] || fail "grep $*: exit $code, want 2 ($(cat err))"
  [[ ! -s out ]] || fail "grep $*: wrote output"
  [[ $(wc -l < err) -eq 1 ]] || fail "grep $*: want one line, got $(cat err)"
}
expect_usage one.gtd
expect_usage one.gtd "   "
expect_usage one.gtd ".. ,,," --alnum
expect_usage one.gtd "$sixty_four alpha"
expect_usage one.gtd the --all --any
expect_usage one.gtd the --count --lines
expect_usage one.gtd the --format xml
expect_usage one.gtd the -o ''
set +e
"$BIN" grep no-such.gtd the > out 2> err; code=$?
set -e
[[ $code -eq 1 ]] && grep -q "not a gtadoc archive" err || fail "missing archive: exit $code $(cat err)"

# -o writes the file atomically; an existing one needs --force, which never replaces the archive.
"$BIN" grep one.gtd "of the" -o result.tsv
"$GREF" in "of the" > want
cmp -s want result.tsv || fail "-o result differs"
set +e
"$BIN" grep one.gtd "the" -o result.tsv 2> err; code=$?
set -e
[[ $code -ne 0 ]] && grep -q "exists" err || fail "existing output replaced without --force"
cmp -s want result.tsv || fail "a refused run changed the existing output"
"$BIN" grep one.gtd "the" -o result.tsv --force
"$GREF" in "the" > want
cmp -s want result.tsv || fail "--force result differs"
set +e
"$BIN" grep one.gtd "the" -o one.gtd --force 2> err; code=$?
set -e
[[ $code -ne 0 && -f one.gtd/manifest.h5 ]] || fail "--force replaced the archive"
ls -a | grep -q 'tmp-' && fail "a temporary was left behind: $(ls -a)"
echo "grep_test: OK ($shards shards, ${#cases[@]} phrases)"
