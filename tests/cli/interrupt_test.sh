#!/usr/bin/env bash
# Interruption leaves nothing (docs/REFERENCE.md §9): SIGTERM / SIGINT during compress and
# decompress remove the command's temporaries at once and exit 128+signal with one line on stderr;
# after SIGKILL (which cannot be caught) the next run of the same output removes the dead process's
# temporaries. The same under `mpirun -np 3` (a rank killed, the launcher stopped), when mpirun is
# available. Every command is signalled while its temporary exists, so it is still running.
# Usage: interrupt_test.sh GTADOC SOURCE_DIR SCRATCH [REFERENCE].
set -euo pipefail
BIN=$1 SRC=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# A corpus that takes a few seconds on one thread: the sample, eight times, words shuffled per copy
# so that Sequitur has real work.
mkdir corpus
for k in 1 2 3 4 5 6 7 8; do
  mkdir "corpus/c$k"
  cp -r "$SRC/data/sample/." "corpus/c$k/"
done
small="$SRC/data/sample"
"$BIN" compress corpus -o full.gtd --threads 1 >/dev/null

temps() { find . -maxdepth 1 -name '*.tmp-*' | sort; }

# start_and_wait TARGET COMMAND...: starts COMMAND in the background (pid in $pid) and waits until
# a temporary of TARGET exists (the command is then writing its output).
start_and_wait() {
  local target=$1; shift
  "$@" >out.txt 2>err.txt &
  pid=$!
  for _ in $(seq 1 600); do
    compgen -G "$target.tmp-*" >/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || fail "$*: finished before it could be interrupted"
    sleep 0.02
  done
  fail "$*: no temporary of $target appeared"
}

# interrupted SIGNAL CODE TARGET COMMAND...: the signal removes the temporaries itself.
interrupted() {
  local sig=$1 code=$2 target=$3; shift 3
  start_and_wait "$target" "$@"
  kill -"$sig" "$pid"
  local rc=0
  wait "$pid" || rc=$?
  [[ $rc -eq $code ]] || fail "$* stopped by SIG$sig: exit $rc, want $code: $(cat err.txt)"
  [[ $(wc -l <err.txt) -eq 1 ]] || fail "SIG$sig: not one line on stderr: $(cat err.txt)"
  grep -q "stopped by signal" err.txt || fail "SIG$sig: message: $(cat err.txt)"
  [[ $(wc -c <err.txt) -lt 200 ]] || fail "SIG$sig: message too long: $(cat err.txt)"
  [[ -z $(temps) ]] || fail "SIG$sig left temporaries: $(temps)"
  [[ ! -e $target ]] || fail "SIG$sig: $target exists after an interrupted run"
}

# killed TARGET NEXT_COMMAND COMMAND...: SIGKILL leaves the temporary; the next run removes it.
killed() {
  local target=$1 next=$2; shift 2
  start_and_wait "$target" "$@"
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null || true
  [[ -n $(temps) ]] || fail "SIGKILL: expected a temporary left behind (test setup)"
  eval "$next" >/dev/null 2>&1 || fail "the run after SIGKILL failed: $next"
  [[ -z $(temps) ]] || fail "the next run did not remove the stale temporaries: $(temps)"
}

interrupted TERM 143 c.gtd "$BIN" compress corpus -o c.gtd --threads 1
interrupted INT 130 c.gtd "$BIN" compress corpus -o c.gtd --threads 1
killed c.gtd "'$BIN' compress '$small' -o c.gtd" "$BIN" compress corpus -o c.gtd --threads 1
[[ -f c.gtd/manifest.h5 ]] || fail "the compress after SIGKILL did not write its archive"

interrupted TERM 143 back "$BIN" decompress full.gtd -o back --threads 1
interrupted INT 130 back "$BIN" decompress full.gtd -o back --threads 1
killed back "'$BIN' decompress c.gtd -o back" "$BIN" decompress full.gtd -o back --threads 1
[[ -d back ]] || fail "the decompress after SIGKILL did not write its tree"

# A temporary of a live process is never taken for a stale one.
sleep 30 &
live=$!
host=$(hostname | tr -c 'A-Za-z0-9._\n' '_')
mkdir "d.gtd.tmp-$live-1-$host"
"$BIN" compress "$small" -o d.gtd >/dev/null
[[ -d d.gtd.tmp-$live-1-$host ]] || fail "a live process's temporary was removed"
kill "$live"; wait "$live" 2>/dev/null || true
rm -rf "d.gtd.tmp-$live-1-$host" d.gtd

if ! command -v mpirun >/dev/null; then
  echo "mpirun not found: the MPI cases are skipped"
  exit 0
fi
MPI=(mpirun --oversubscribe -np 3)
# Open MPI's mpirun, stopped by SIGTERM, sends its ranks SIGCONT and only a second later SIGTERM
# (then SIGKILL): a job that ends within that second keeps its output. Four times the corpus
# (several seconds under mpirun) keeps every case below still running when its signal arrives.
mkdir mcorpus
for k in a b c d; do cp -r corpus "mcorpus/$k"; done
# rank_pid RANK: the pid of that rank of the running job (a descendant of $pid).
rank_pid() {
  local p
  for p in $(pgrep -x gtadoc); do
    env=$( { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null) || continue
    grep -qx "OMPI_COMM_WORLD_RANK=$1" <<<"$env" || continue
    grep -qx "GTADOC_INTERRUPT_TEST=$WORK" <<<"$env" || continue
    echo "$p"
    return 0
  done
  return 1
}
export GTADOC_INTERRUPT_TEST=$WORK
for case in "KILL 1" "KILL 0" "TERM 2" "TERM mpirun"; do
  set -- $case
  sig=$1 who=$2
  start_and_wait m.gtd "${MPI[@]}" "$BIN" compress mcorpus -o m.gtd --threads 1 --shards 6
  if [[ $who == mpirun ]]; then
    kill -"$sig" "$pid"
  else
    victim=$(rank_pid "$who") || fail "rank $who of the mpirun job not found"
    kill -"$sig" "$victim"
  fi
  rc=0
  wait "$pid" 2>/dev/null || rc=$?
  [[ $rc -ne 0 ]] || fail "mpirun compress with SIG$sig to $who exited 0"
  [[ ! -e m.gtd ]] || fail "mpirun compress with SIG$sig to $who: output committed, exit $rc"
  # mpirun may return before its ranks are gone; a live rank's temporary is rightly kept, so the
  # next run starts once every rank of this job has exited.
  for _ in $(seq 100); do
    rank_pid 0 >/dev/null || rank_pid 1 >/dev/null || rank_pid 2 >/dev/null || break
    sleep 0.1
  done
  "${MPI[@]}" "$BIN" compress "$small" -o m.gtd >/dev/null 2>&1 || fail "the next mpirun compress failed"
  [[ -z $(temps) ]] || fail "SIG$sig to $who under mpirun: temporaries left after the next run: $(temps)"
  rm -rf m.gtd
done
echo "interrupt_test: ok"
