#!/usr/bin/env bash
# A full filesystem (docs/REFERENCE.md §9): compress (also spilling tokens), decompress, run -o and
# --stats onto a full tmpfs each fail with a one-line message and a non-zero exit and leave nothing
# there; a --stats path that cannot be written fails before the run commits its result; info, verify
# and run onto /dev/full fail instead of exiting 0. Needs root (mount); skipped with a message
# otherwise.
# Usage: full_disk_test.sh GTADOC SOURCE_DIR SCRATCH REFERENCE.
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3
FULL=$WORK/full
cleanup() {
  mountpoint -q "$FULL" 2>/dev/null && umount "$FULL" || true
  mountpoint -q "$WORK/ext4" 2>/dev/null && umount "$WORK/ext4" || true
}
cleanup
rm -rf "$WORK" && mkdir -p "$FULL" && cd "$WORK"
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! mount -t tmpfs -o size=512k tmpfs "$FULL" 2>/dev/null; then
  echo "cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN): skipped"
  exit 77
fi
"$BIN" compress "$SRC/data/sample" -o s.gtd --shards 2 >/dev/null

failed_cleanly() {  # failed_cleanly WANT_TEXT COMMAND...: non-zero exit, one line naming WANT_TEXT
  local want=$1 rc=0
  shift
  "$@" >out 2>err || rc=$?
  [[ $rc -ne 0 ]] || fail "$* exited 0"
  [[ $(wc -l <err) -eq 1 ]] || fail "$*: not one line on stderr: $(cat err)"
  grep -q -- "$want" err || fail "$*: message lacks '$want': $(cat err)"
  # The reason, not HDF5's internals of the failed write (times, buffers, offsets).
  ! grep -q -e "errno =" -e "buf = " err || fail "$*: HDF5 internals in the message: $(cat err)"
  local len
  len=$(sed -e "s|$WORK/||g" err | wc -c)
  [[ $len -le 200 ]] || fail "$*: message of $len characters (without the scratch path)"
}
fill() {  # leaves the tmpfs (almost) without free space
  rm -f "$FULL"/fill
  dd if=/dev/zero of="$FULL"/fill bs=4k 2>/dev/null || true
}
only_fill() {
  local left
  left=$(ls -A "$FULL" | grep -v '^fill$' || true)
  [[ -z $left ]] || fail "left on the full filesystem: $left"
}

# An archive does not fit (the sample needs ~1.5 MB): nothing remains.
failed_cleanly "No space left" "$BIN" compress "$SRC/data/sample" -o "$FULL/a.gtd"
only_fill
# Tokens spilled to disk (a budget far below the sample's tokens spills every shard's, into the
# archive's temporary directory) onto the full filesystem: the spill write fails cleanly.
failed_cleanly "No space left" "$BIN" compress "$SRC/data/sample" -o "$FULL/b.gtd" --shards 3 \
  --memory-budget 2M
grep -q "spill" err || fail "the spill did not hit the full disk: $(cat err)"
only_fill
failed_cleanly "No space left" "$BIN" decompress s.gtd -o "$FULL/back"
only_fill
fill
failed_cleanly "No space left" "$BIN" run s.gtd sort -o "$FULL/sort.tsv"
only_fill
failed_cleanly "No space left" "$BIN" run s.gtd sort --partitioned -o "$FULL/parts"
only_fill
# The same, with results rendered into mappings of the output (forced, whatever the threads;
# tmpfs has no room to map, so the write falls back and fails cleanly rather than as a SIGBUS).
failed_cleanly "No space left" env GTADOC_OUTPUT_MAP=all GTADOC_OUTPUT_MAP_MIN_BYTES=0 "$BIN" run \
  s.gtd sort -o "$FULL/sort.tsv"
only_fill
failed_cleanly "No space left" env GTADOC_OUTPUT_MAP=all GTADOC_OUTPUT_MAP_MIN_BYTES=0 "$BIN" run \
  s.gtd sort --partitioned -o "$FULL/parts"
only_fill
# A full disk file system (ext4 on a loop device, where one can be made), mapped on request
# (GTADOC_OUTPUT_MAP=all): the range's blocks are reserved first, so the failure is a clean one.
EXT=$WORK/ext4
if command -v mkfs.ext4 >/dev/null && truncate -s 8M "$WORK/ext4.img" &&
  mkfs.ext4 -q -F "$WORK/ext4.img" 2>/dev/null && mkdir -p "$EXT" &&
  mount -o loop "$WORK/ext4.img" "$EXT" 2>/dev/null; then
  dd if=/dev/zero of="$EXT/fill" bs=4k 2>/dev/null || true
  rc=0; GTADOC_OUTPUT_MAP=all GTADOC_OUTPUT_MAP_MIN_BYTES=0 "$BIN" run s.gtd sort -o "$EXT/sort.tsv" \
    >out 2>err || rc=$?
  left=$(ls -A "$EXT" | grep -v -e '^fill$' -e '^lost+found$' || true)
  umount "$EXT"
  [[ $rc -ne 0 && $(wc -l <err) -eq 1 ]] && grep -q "No space left" err ||
    fail "mapped output onto a full ext4: exit $rc, $(cat err)"
  [[ -z $left ]] || fail "left on the full ext4: $left"
else
  echo "no loop-mounted ext4 here: the mapped write onto a full disk is not checked"
fi

# --stats onto the full filesystem: the result (elsewhere) is complete, the exit says the stats
# failed, and no stats file or temporary remains.
failed_cleanly "--stats" "$BIN" run s.gtd word-count -o wc.tsv --stats "$FULL/s.json"
only_fill
"$BIN" run s.gtd word-count -o wc-ref.tsv
cmp -s wc.tsv wc-ref.tsv || fail "the result beside a failed --stats is not complete"
# --stats to a path that cannot be written fails before anything is committed.
failed_cleanly "does not exist" "$BIN" run s.gtd word-count -o wc2.tsv --stats "$WORK/no/dir/s.json"
[[ ! -e wc2.tsv ]] || fail "a bad --stats path still committed the result"
failed_cleanly "--stats" "$BIN" run s.gtd word-count -o wc3.tsv --stats "$WORK"
[[ ! -e wc3.tsv ]] || fail "--stats naming a directory still committed the result"
# --stats may name a terminal-like file (written in place).
"$BIN" run s.gtd word-count --top 3 -o wc4.tsv --stats /dev/stderr 2>stats.err
grep -q '"total_s"' stats.err || fail "--stats /dev/stderr wrote nothing"

# Standard output that cannot be written.
if [[ -e /dev/full ]]; then
  rc=0; "$BIN" info s.gtd --json >/dev/full 2>err || rc=$?
  [[ $rc -ne 0 && $(wc -l <err) -eq 1 ]] && grep -q "standard output" err || fail "info --json >/dev/full: exit $rc, $(cat err)"
  rc=0; "$BIN" info s.gtd >/dev/full 2>err || rc=$?; [[ $rc -ne 0 ]] || fail "info >/dev/full exited 0"
  rc=0; "$BIN" verify s.gtd >/dev/full 2>err || rc=$?; [[ $rc -ne 0 ]] || fail "verify >/dev/full exited 0"
  rc=0; "$BIN" run s.gtd sort >/dev/full 2>err || rc=$?; [[ $rc -ne 0 ]] || fail "run >/dev/full exited 0"
  rc=0; "$BIN" run s.gtd sort -o - >/dev/full 2>err || rc=$?; [[ $rc -ne 0 ]] || fail "run -o - >/dev/full exited 0"
fi
echo "full-disk paths: all clean"
