# Sourced by the service tests (needs BIN, SRC and WORK set): a fresh scratch directory, the
# services a test started (PIDS) killed on exit, and the test archive made of the bundled sample.

# serve_setup: empty $WORK (with $WORK/in), byte-order collation, the kill-on-exit trap.
serve_setup() {
  rm -rf "$WORK" && mkdir -p "$WORK/in"
  export LC_ALL=C
  PIDS=()
  trap serve_cleanup EXIT
}
serve_cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}

# sample_archive N: the first N files of data/sample (in name order) copied to $WORK/in and
# compressed into 3 shards at $WORK/a.gtd; sets A.
sample_archive() {
  (cd "$SRC/data/sample" && find . -type f | sort | awk -v n="$1" 'NR <= n' |
     while read -r f; do mkdir -p "$WORK/in/$(dirname "$f")"; cp "$f" "$WORK/in/$f"; done)
  "$BIN" compress "$WORK/in" -o "$WORK/a.gtd" --shards 3 2>/dev/null
  A=$WORK/a.gtd
}
