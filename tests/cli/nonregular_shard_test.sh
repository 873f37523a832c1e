#!/usr/bin/env bash
# A shard file that is not a regular file (a FIFO, a symlink to /dev/zero) is a failure line of
# `gtadoc verify`, which never blocks opening it nor reads it without end; `run` and
# `decompress` refuse it too. Each command must end (exit 1, one line on stderr) well within the
# generous `timeout` bound.
# Usage: nonregular_shard_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$BIN" compress "$SRC/data/sample" -o s.gtd --shards 3 >/dev/null
expect_exit1() {  # expect_exit1 NEEDLE COMMAND...: exit 1 within the bound, one line naming NEEDLE
  local needle=$1 rc=0
  shift
  timeout 60 "$@" >out 2>err || rc=$?
  [[ $rc -eq 1 ]] || fail "$* exited $rc, want 1: $(cat err)"
  [[ $(wc -l < err) -eq 1 ]] || fail "$*: not one line: $(cat err)"
  grep -qF "$needle" err || fail "$*: no '$needle' in: $(cat err)"
}
for kind in fifo zero; do
  rm -rf "$kind.gtd" && cp -r s.gtd "$kind.gtd" && rm "$kind.gtd/shard-00001.h5"
  if [[ $kind == fifo ]]; then
    mkfifo "$kind.gtd/shard-00001.h5"
  else
    ln -s /dev/zero "$kind.gtd/shard-00001.h5"
  fi
  expect_exit1 "shard-00001.h5: cannot open: not a regular file" "$BIN" verify "$kind.gtd"
  grep -q '^FAIL  shard 1 .*not a regular file' out || fail "verify $kind: no failure line: $(cat out)"
  grep -q '^ok    shard 2 ' out || fail "verify $kind: shard 2 not checked: $(cat out)"
  expect_exit1 "not a regular file" "$BIN" run "$kind.gtd" word-count --top 3
  expect_exit1 "not a regular file" "$BIN" decompress "$kind.gtd" -o "$kind-out"
  [[ ! -e "$kind-out" ]] || fail "decompress $kind left output behind"
done
echo "PASS: verify, run and decompress refuse non-regular shard files without blocking"
