#!/usr/bin/env bash
# gtadoc_gen, the synthetic scale corpus generator (scripts/datasets/gen): trained on data/sample,
#  - ~20 MB generated twice with one seed and different thread counts (and batch sizes) are
#    byte-identical, and a 5 MB corpus of the same seed is the first documents of the 20 MB one;
#  - `stats`: the Zipf exponent is within 0.15 of the training corpus's, distinct words grow from
#    5 MB to 20 MB and exceed the training vocabulary (Heaps' law past the training size);
#  - gtadoc compresses the generated corpus, word-count --top 20 equals the raw-text reference
#    and the compression ratio is within a factor 2 of the sample's;
#  - bad inputs (non-empty OUTDIR, bad size, missing or corrupt model, missing corpus, a model
#    path holding something else) exit non-zero with one line and leave nothing behind.
# Usage: gen_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE. Exit 77 when gtadoc_gen was not built.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3 REF=$4
GEN=$(dirname "$BIN")/scripts/datasets/gtadoc_gen
if [[ ! -x $GEN ]]; then echo "SKIP: $GEN not built (GTADOC_BUILD_BENCH=OFF)"; exit 77; fi
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"

# jnum KEY FILE: a number from a flat JSON object.
jnum() { sed -n "s/^ *\"$1\": *\([-0-9.eE+]*\).*/\1/p" "$2" | head -1; }
# fcheck EXPR: an awk condition on numbers, e.g. "1.03 - 1.01 <= 0.15".
fcheck() { awk "BEGIN { exit !($1) }"; }
# digest DIR: one line per file, "sha256  relative path", in byte order.
digest() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs sha256sum); }

# ---- train
"$GEN" train "$SRC/data/sample" -o sample.model >train.out || fail "train: $(cat train.out)"
[[ -s sample.model ]] || fail "train wrote no model"
grep -q "^training corpus  *187 documents" train.out || fail "train summary: $(cat train.out)"

# ---- generate: deterministic for a seed, independent of threads and batch size
"$GEN" generate sample.model -o g20a --bytes 20m --seed 11 --threads 1 >gen1.out
"$GEN" generate sample.model -o g20b --bytes 20m --seed 11 --threads 3 --batch 5 >gen2.out
digest g20a >a.sha
digest g20b >b.sha
cmp -s a.sha b.sha || fail "same seed, different --threads: outputs differ"
files=$(wc -l <a.sha)
[[ $files -gt 100 ]] || fail "only $files documents in 20 MB"
bytes=$(find g20a -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
[[ $bytes -ge $((20 << 20)) && $bytes -lt $((22 << 20)) ]] || fail "20m corpus has $bytes bytes"
grep -q "^wrote $files documents" gen1.out || fail "generate summary: $(cat gen1.out)"
ls -d g20a/d0000 >/dev/null && [[ -f g20a/d0000/f000000.txt ]] || fail "layout: $(ls g20a | head -3)"
"$GEN" generate sample.model -o g5 --bytes 5m --seed 11 --threads 2 --files-per-dir 1000 >/dev/null
digest g5 >c.sha
[[ $(wc -l <c.sha) -lt $files ]] || fail "5m corpus has as many documents as the 20m one"
# The 5 MB corpus is the first documents of the 20 MB one (document k depends on (seed, k) only).
join -1 2 -2 2 <(sort -k2 c.sha) <(sort -k2 a.sha) | awk '$2 != $3 { bad = 1 } END { exit bad }' ||
  fail "5m corpus is not a prefix of the 20m corpus of the same seed"
[[ $(join -1 2 -2 2 <(sort -k2 c.sha) <(sort -k2 a.sha) | wc -l) -eq $(wc -l <c.sha) ]] ||
  fail "5m corpus has documents the 20m one has not"
"$GEN" generate sample.model -o other --bytes 1m --seed 12 >/dev/null
cmp -s other/d0000/f000000.txt g20a/d0000/f000000.txt && fail "seeds 11 and 12 give the same text"

# ---- stats: Zipf exponent and distinct words against the training corpus
"$GEN" stats "$SRC/data/sample" --json >s.json
"$GEN" stats g5 --json >g5.json
"$GEN" stats g20a --json >g20.json
"$GEN" stats g20a >g20.txt  # the text form too
grep -q "^zipf exponent" g20.txt || fail "stats text: $(cat g20.txt)"
zs=$(jnum zipf_exponent s.json) zg=$(jnum zipf_exponent g20.json)
[[ -n $zs && -n $zg ]] || fail "no zipf_exponent: $(cat g20.json)"
fcheck "($zg - $zs) <= 0.15 && ($zs - $zg) <= 0.15" ||
  fail "Zipf exponent $zg of the generated corpus is not within 0.15 of the sample's $zs"
d_train=$(jnum distinct_words s.json) d5=$(jnum distinct_words g5.json) d20=$(jnum distinct_words g20.json)
[[ $d20 -gt $d5 ]] || fail "distinct words do not grow: $d5 (5 MB) -> $d20 (20 MB)"
[[ $d20 -gt $d_train ]] || fail "20 MB has $d20 distinct words, the 5 MB training corpus $d_train"
[[ $(jnum words g20.json) -gt 0 && $(jnum documents g20.json) -eq $files ]] || fail "stats counts"

# ---- gtadoc on the generated corpus: word-count equals the reference, ratio like the sample's
"$BIN" compress g20a -o g.gtd >/dev/null
"$BIN" compress "$SRC/data/sample" -o s.gtd >/dev/null
"$BIN" run g.gtd word-count --top 20 -o wc.tsv
"$REF" g20a word-count --top 20 >want.tsv
[[ $(wc -l <want.tsv) -ge 20 ]] || fail "reference word-count: $(head -3 want.tsv)"
cmp -s want.tsv wc.tsv || fail "gtadoc word-count --top 20 on the generated corpus differs from the reference"
"$BIN" info g.gtd --json >g-info.json
"$BIN" info s.gtd --json >s-info.json
rg=$(jnum compression_ratio g-info.json) rs=$(jnum compression_ratio s-info.json)
fcheck "$rg >= $rs / 2 && $rg <= $rs * 2" ||
  fail "compression ratio $rg of the generated corpus is not within a factor 2 of the sample's $rs"

# ---- bad inputs: non-zero exit, one line on stderr, nothing written
# bad WANT_RC ARGS...: exit WANT_RC (or any non-zero for "nz"), one line, no standard output.
bad() {
  local want=$1; shift
  local rc=0
  "$GEN" "$@" >out 2>err || rc=$?
  if [[ $want == nz ]]; then
    [[ $rc -ne 0 ]] || fail "gtadoc_gen $*: exit 0"
  else
    [[ $rc -eq $want ]] || fail "gtadoc_gen $*: exit $rc, want $want: $(cat err)"
  fi
  [[ $(wc -l <err) -eq 1 ]] || fail "gtadoc_gen $*: not one line: $(cat err)"
  [[ ! -s out ]] || fail "gtadoc_gen $*: wrote to standard output: $(cat out)"
}
bad 2 generate sample.model -o g20a --bytes 1m
grep -q "not empty" err || fail "non-empty OUTDIR message: $(cat err)"
digest g20a | cmp -s a.sha - || fail "a refused generate changed the existing OUTDIR"
echo x >afile
bad 2 generate sample.model -o afile --bytes 1m
bad 2 generate sample.model -o n1 --bytes 12q
grep -q -- "--bytes" err || fail "bad size message does not name --bytes: $(cat err)"
bad 2 generate sample.model -o n1 --bytes 0
bad 2 generate sample.model -o n1 --bytes -5
bad 2 generate sample.model -o n1
bad 2 generate sample.model -o n1 --bytes 1m --threads 0
bad 1 generate missing.model -o n1 --bytes 1m
head -c 1000 sample.model >cut.model
bad 1 generate cut.model -o n1 --bytes 1m
echo "not a model" >junk.model
bad 1 generate junk.model -o n1 --bytes 1m
bad nz train "$WORK/no-such-dir" -o n.model
bad 2 train "$SRC/data/sample"
# The model is renamed into place: only a previous model is replaced, never another file, a
# directory or a special file.
bad 2 train "$SRC/data/sample" -o afile
[[ $(cat afile) == x ]] || fail "train replaced a file that is not a model"
mkdir -p adir && mkfifo afifo
bad 2 train "$SRC/data/sample" -o adir
bad 2 train "$SRC/data/sample" -o afifo
[[ -p afifo && -d adir ]] || fail "train replaced a directory or a fifo"
bad nz stats "$WORK/no-such-dir"
bad 2 frobnicate
[[ ! -e n1 && ! -e n.model ]] || fail "a refused command left output"
if compgen -G '.*gen-tmp*' >/dev/null || compgen -G '*.tmp-*' >/dev/null; then
  fail "temporaries left behind: $(ls -a)"
fi
# Sizes take k/m/g/t in either case with an optional B or iB.
for size in 4096 64k 64K 64KiB 1kB; do
  rm -rf s
  "$GEN" generate sample.model -o s --bytes "$size" >/dev/null 2>err || fail "--bytes $size: $(cat err)"
done
# An existing empty OUTDIR is fine.
rm -rf e && mkdir e
"$GEN" generate sample.model -o e --bytes 100k >/dev/null
[[ -f e/d0000/f000000.txt ]] || fail "generate into an empty OUTDIR"
echo "PASS: gtadoc_gen is deterministic across threads, matches the sample's Zipf exponent" \
  "($zg vs $zs) and compression ratio ($rg vs $rs), distinct words grow ($d_train -> $d5 -> $d20)"
