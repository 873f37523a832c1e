# Sourced by the service tests (needs BIN, SRC and WORK set, and a `fail MESSAGE` function): a
# fresh scratch directory, the services a test started (PIDS) killed on exit, starting a service,
# the test archive made of the bundled sample, and percent-encoding a document name for a URL.

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

# listening_port LOG PID NAME: waits up to 60 s for the "listening" line of the service PID
# logging to LOG and prints its port; fails (exit 1, with the log) if PID exits first. Call it
# as PORT=$(listening_port ...) || exit 1: it runs in a subshell there.
listening_port() {
  local log=$1 pid=$2 name=$3 port= i
  for i in $(seq 600); do
    port=$(sed -n 's|^gtadoc serve: listening on http://[^ ]*:\([0-9][0-9]*\)$|\1|p' "$log")
    [[ -n $port ]] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "$name exited before listening"; }
    sleep 0.1
  done
  [[ -n $port ]] || { cat "$log" >&2; fail "$name: no listening line within 60 s"; }
  echo "$port"
}

# start NAME ARGS...: starts `gtadoc serve ARGS` in the background, waits for its one
# "listening" line; sets PID and PORT. Its standard error goes to $WORK/NAME.log.
start() {
  local name=$1
  shift
  : > "$WORK/$name.log"  # before the background job: the wait below reads it at once
  "$BIN" serve "$@" 2> "$WORK/$name.log" &
  PID=$!
  PIDS+=("$PID")
  PORT=$(listening_port "$WORK/$name.log" "$PID" "$name") || exit 1  # it failed the test
  [[ $(grep -c '^gtadoc serve: listening on ' "$WORK/$name.log") -eq 1 ]] || fail "$name: not exactly one listening line"
}

# urlencode TEXT: TEXT as one percent-encoded path segment (every byte but unreserved ones and
# '/' as %XX; '/' as %2F too when a second argument is given).
urlencode() {
  local LC_ALL=C s=$1 out= c i
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    case $c in
      [a-zA-Z0-9._~-]) out+=$c ;;
      /) if [[ $# -gt 1 ]]; then out+=%2F; else out+=/; fi ;;
      *) printf -v c '%%%02X' "'$c"; out+=$c ;;
    esac
  done
  printf '%s' "$out"
}
