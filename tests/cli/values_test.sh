#!/usr/bin/env bash
# One policy for values (--help states it): counts are non-negative integers within the range
# their option names; sizes take k/m/g/t in either case with an optional B or iB; an unknown
# command is named; -o '' is an error. Every refusal is one line under 200 characters naming the
# option, exit 2.
# Usage: values_test.sh GTADOC SOURCE_DIR SCRATCH [REFERENCE].
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK/D" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
printf 'alpha beta alpha gamma\n' > D/a.txt
printf 'beta beta delta\n' > D/b.txt
"$BIN" compress D -o a.gtd >/dev/null

# refused NAMED ARGS...: exit 2, one line under 200 characters that contains NAMED.
refused() {
  local named=$1; shift
  local rc=0
  "$BIN" "$@" >out 2>err || rc=$?
  [[ $rc -eq 2 ]] || fail "gtadoc $*: exit $rc, want 2: $(cat err)"
  [[ $(wc -l <err) -eq 1 ]] || fail "gtadoc $*: not one line: $(cat err)"
  [[ $(wc -c <err) -lt 200 ]] || fail "gtadoc $*: message of $(wc -c <err) bytes: $(cat err)"
  grep -qF -- "$named" err || fail "gtadoc $*: message does not name '$named': $(cat err)"
  [[ ! -s out ]] || fail "gtadoc $*: wrote to standard output"
}
#        named             command line
refused --top              run a.gtd word-count --top -1
refused --top              run a.gtd word-count --top 99999999999999999999
refused --top              run a.gtd word-count --top 1e3
refused --min-count        run a.gtd term-vector --min-count -1
refused --threads          run a.gtd word-count --threads 0
refused --threads          run a.gtd word-count --threads 100000
refused --threads          run a.gtd word-count --threads -2
refused --threads          compress D -o t.gtd --threads 0
refused --threads          compress D -o t.gtd --threads 100000
refused --threads          decompress a.gtd -o t --threads 0
refused --shards           compress D -o t.gtd --shards 0
refused --shards           compress D -o t.gtd --shards -3
refused --shard-size       compress D -o t.gtd --shard-size -5
refused --shard-size       compress D -o t.gtd --shard-size 0
refused --shard-size       compress D -o t.gtd --shard-size 12q
refused --shard-size       compress D -o t.gtd --shard-size 99999999999999999999
refused --shard-size       compress D -o t.gtd --shard-size 99999999999T
refused --deflate-level    compress D -o t.gtd --deflate-level 10
refused --n                run a.gtd sequence-count --n 9
refused --n                run a.gtd sequence-count --n -1
refused --cache-bytes      serve a.gtd --cache-bytes 12q
refused --doc-cache-bytes  serve a.gtd --doc-cache-bytes 1x
refused --max-body         serve a.gtd --max-body -1
refused --max-body         serve a.gtd --max-body 0
refused --queue            serve a.gtd --queue 0
refused --max-connections  serve a.gtd --max-connections -1
refused "'frobnicate'"     frobnicate a.gtd
refused "'comress'"        comress D -o t.gtd
refused -o                 compress D -o ''
refused -o                 decompress a.gtd -o ''
refused -o                 run a.gtd word-count -o ''
refused -o                 compress D -o -
# Environment knobs are values too: GTADOC_SHUFFLE is auto, nccl, mpi or host.
GTADOC_SHUFFLE=bogus refused GTADOC_SHUFFLE run a.gtd word-count
for v in mpi host; do
  GTADOC_SHUFFLE=$v "$BIN" run a.gtd word-count >/dev/null || fail "GTADOC_SHUFFLE=$v refused"
done
# GTADOC_SHUFFLE_CMA is 0 or 1 (a typo must not leave the pulls on silently).
GTADOC_SHUFFLE_CMA=off refused GTADOC_SHUFFLE_CMA run a.gtd word-count
GTADOC_LOCAL_RANKS=2 GTADOC_SHUFFLE_CMA=fasle refused GTADOC_SHUFFLE_CMA run a.gtd word-count --engine cpu
for v in 0 1; do
  GTADOC_SHUFFLE_CMA=$v "$BIN" run a.gtd word-count >/dev/null || fail "GTADOC_SHUFFLE_CMA=$v refused"
done
# Every GTADOC_* setting is parsed as strictly (common/settings.h): flags are 0 or 1, counts,
# seconds and sizes lie in their ranges; a value that is set is checked before any work.
GTADOC_TOP_TO_ROOT=yes refused GTADOC_TOP_TO_ROOT run a.gtd word-count
GTADOC_H5_SERIAL_WRITE=2 refused GTADOC_H5_SERIAL_WRITE compress D -o t.gtd
GTADOC_PREFETCH_DEPTH=0 refused GTADOC_PREFETCH_DEPTH run a.gtd word-count
GTADOC_OUTPUT_MAP=yes refused GTADOC_OUTPUT_MAP run a.gtd word-count -o t
GTADOC_OUTPUT_MAP_MIN_BYTES=12q refused GTADOC_OUTPUT_MAP_MIN_BYTES run a.gtd word-count
GTADOC_GPU_MEMORY_LIMIT=lots refused GTADOC_GPU_MEMORY_LIMIT run a.gtd word-count --engine cpu
GTADOC_HEARTBEAT_TIMEOUT=5s refused GTADOC_HEARTBEAT_TIMEOUT info a.gtd
refused --gpu-memory-limit run a.gtd word-count --gpu-memory-limit 0
refused --gpu-memory-limit serve a.gtd --gpu-memory-limit 12q
[[ ! -e t.gtd && ! -e t ]] || fail "a refused command left output"
# --gpu-memory-limit takes a size; the CPU engine ignores it.
"$BIN" run a.gtd word-count --engine cpu --gpu-memory-limit 1GiB >out 2>err ||
  fail "--gpu-memory-limit 1GiB refused: $(cat err)"
grep -q "^alpha	2$" out || fail "--gpu-memory-limit: unexpected output: $(cat out)"
# -v logs each setting that is set; a set GTADOC_* variable gtadoc does not read is warned about
# in one line, with or without -v.
GTADOC_TOP_TO_ROOT=1 GTADOC_FAULT_INJECT=none GTADOC_PREFECH_DEPTH=8 "$BIN" -v run a.gtd \
  word-count >/dev/null 2>err || fail "-v with settings: $(cat err)"
grep -q "info: settings: GTADOC_TOP_TO_ROOT=1 (tuning)$" err ||
  fail "-v: no settings line: $(cat err)"
grep -q "settings: GTADOC_FAULT_INJECT=none (test hook set)$" err ||
  fail "-v: no test hook line: $(cat err)"
GTADOC_PREFECH_DEPTH=8 GTADOC_BINARY=x "$BIN" run a.gtd word-count >/dev/null 2>err
[[ $(wc -l <err) -eq 1 ]] && grep -q "warning: settings: GTADOC_PREFECH_DEPTH set, but" err ||
  fail "a misspelt setting: expected one warning: $(cat err)"

# Sizes: k/m/g/t in either case, optional B or iB (powers of 1024).
for size in 100 100B 64k 64K 64KiB 512m 512M 1MB 1mb 1MiB 1g 1GiB 1GB 2t 2TiB; do
  "$BIN" compress D -o "s-$size.gtd" --shard-size "$size" >/dev/null 2>err ||
    fail "--shard-size $size refused: $(cat err)"
done
# serve's sizes are parsed before the archive is opened: a good size fails later, with exit 1.
for size in 0 1MB 1mib 256M 1GiB; do
  rc=0
  "$BIN" serve missing.gtd --cache-bytes "$size" --doc-cache-bytes "$size" --max-body 64KiB \
    >/dev/null 2>err || rc=$?
  [[ $rc -eq 1 ]] || fail "serve --cache-bytes $size: exit $rc, want 1 (missing archive): $(cat err)"
done
# The bounds themselves are accepted.
"$BIN" run a.gtd word-count --top 0 --threads 1 >/dev/null
"$BIN" run a.gtd word-count --top 1000000000000 --threads 4096 >/dev/null
"$BIN" run a.gtd term-vector --min-count 0 >/dev/null
"$BIN" compress D -o n.gtd --shards 1000000 >/dev/null
# --help states the policy, on the program and on each command.
for cmd in "" compress decompress run serve; do
  "$BIN" $cmd --help | tr '\n' ' ' | grep -q "sizes are digits with an optional k/m/g/t" ||
    fail "gtadoc $cmd --help does not state the value policy"
done
echo "values_test: ok"
