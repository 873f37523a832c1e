# Sourced by the end-to-end tests that run every task against the raw-text reference (under
# mpirun, and as ranks that are threads of one process): the test corpus in $WORK/in, the first
# 30 files of the bundled real sample (in name order, when the checkout has it) plus documents
# that stress tokenizing and ordering: empty, one word, CRLF, repeated, a control byte sorting
# before the word it prefixes, one 1024-word line. Needs SRC and WORK.
make_test_corpus() {
  mkdir -p "$WORK/in"
  if [[ -d $SRC/data/sample ]]; then
    (cd "$SRC/data/sample" && find . -type f | LC_ALL=C sort | awk 'NR <= 30' |
       while read -r f; do mkdir -p "$WORK/in/sample/$(dirname "$f")"; cp "$f" "$WORK/in/sample/$f"; done)
  fi
  printf '' > "$WORK/in/empty"
  printf 'one' > "$WORK/in/one"
  printf 'Two words\r\n' > "$WORK/in/two"
  for i in 1 2 3; do printf 'same same text TEXT, same.\n' > "$WORK/in/same$i"; done
  printf 'a\001 b a b a\001 b a b\n' > "$WORK/in/prefix-order"
  local deep=alpha i
  for i in $(seq 10); do deep="$deep $deep"; done
  echo "$deep" > "$WORK/in/deep"
}

# Every task once, with the options that change its records or rows (normalization, --top,
# --min-count, --ids, --per-doc, n): the cases of the tests that run each task over a changed
# path (pieces, streamed CPU batches).
# shellcheck disable=SC2034
EVERY_TASK_CASES=(
  "word-count"
  "word-count --top 7 --lowercase --alnum"
  "sort"
  "inverted-index --ids"
  "term-vector --top 0 --min-count 2"
  "sequence-count --n 2"
  "sequence-count --per-doc --top 3"
  "ranked-inverted-index --n 3"
)
