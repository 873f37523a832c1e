#!/usr/bin/env bash
# A throw-away single-node Slurm cluster for tests: munged, slurmctld and slurmd from Debian 12's
# packages (scripts/install-deps.sh), started as root in the foreground, with free ports, and
# everything they write (munge key and socket, slurm.conf, state, spool, logs) under one
# directory. /etc is not touched: clients find the cluster through SLURM_CONF. Several clusters
# can run on one machine at once.
#
# As a library (bash; source it, then):
#   slurm_cluster_check                 0 when root and the packages are there, else says why
#   slurm_cluster_start DIR [CPUS [GPUS]]  start and wait for the node; exports SLURM_CONF.
#                                       CPUS defaults to the machine's (at least 4); GPUS > 0
#                                       declares that many GPUs without devices (allocations
#                                       and SLURM_GPUS_* only: layouts can be tested on CPUs)
#   trap slurm_cluster_stop EXIT        ALWAYS: stop cancels the jobs, stops the daemons, ends
#                                       any process left from the cluster's jobs and removes
#                                       DIR (with KEEP=1 it keeps DIR, but not the munge key)
#   slurm_submit SBATCH_ARGS...         sbatch; prints the job id
#   slurm_wait JOB [SECONDS]            wait for the job to end (default 120 s, then cancel it);
#                                       returns its exit code, sets SLURM_JOB_STATE
#   slurm_wait_output FILE PATTERN JOB [SECONDS]
#                                       wait for a line matching PATTERN (grep -E) in FILE,
#                                       failing early when JOB ends first; prints the line
# As a command:
#   tests/slurm/cluster.sh run DIR [CPUS [GPUS]] -- COMMAND...  start, run COMMAND, stop
#   tests/slurm/cluster.sh start DIR [CPUS [GPUS]]   start and leave it running (for a look
#   tests/slurm/cluster.sh stop DIR                  by hand: export SLURM_CONF=DIR/etc/slurm.conf)

SLURM_CLUSTER_TEMPLATE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/slurm.conf.in
SLURM_CLUSTER_DIR=""

_slurm_log() { printf 'slurm-cluster: %s\n' "$*" >&2; }

slurm_cluster_check() {
  if [[ $(id -u) -ne 0 ]]; then echo "the test Slurm cluster runs its daemons as root"; return 1; fi
  local c
  for c in munged munge unmunge slurmctld slurmd sbatch srun squeue scontrol scancel sinfo; do
    command -v "$c" >/dev/null || { echo "$c not found (scripts/install-deps.sh installs it)"; return 1; }
  done
}

# A TCP port nothing on this machine uses (in any state), outside the ephemeral range.
_slurm_free_port() {
  local avoid=" $* " port hex used f
  for _ in $(seq 100); do
    port=$((20000 + RANDOM % 12000))
    [[ $avoid == *" $port "* ]] && continue
    printf -v hex ':%04X ' "$port"
    used=0
    for f in /proc/net/tcp /proc/net/tcp6; do
      [[ -r $f ]] && grep -q "^ *[0-9]*: [0-9A-F]*$hex" "$f" && used=1
    done
    ((used)) || { echo "$port"; return 0; }
  done
  return 1
}

# Starts NAME (a daemon in the foreground) in the background and records its pid.
_slurm_spawn() {
  local name=$1; shift
  "$@" </dev/null >>"$SLURM_CLUSTER_DIR/log/$name.out" 2>&1 &
  echo "$name $!" >>"$SLURM_CLUSTER_DIR/run/pids"
}

slurm_cluster_start() {
  local dir=$1 cpus=${2:-} gpus=${3:-0}
  local why
  why=$(slurm_cluster_check) || { _slurm_log "$why"; return 1; }
  [[ $dir == /* ]] || dir=$PWD/$dir
  [[ -z $cpus ]] && cpus=$(nproc)
  ((cpus < 4)) && cpus=4
  rm -rf "$dir"
  mkdir -p "$dir"/{etc,munge,state,spool,log,run,tmp}
  chmod 700 "$dir/munge"
  SLURM_CLUSTER_DIR=$dir
  export SLURM_CONF=$dir/etc/slurm.conf

  # munge: a private key and socket, so no system munged (or its key) is involved.
  (umask 077 && head -c 1024 /dev/urandom >"$dir/munge/munge.key")
  chmod 400 "$dir/munge/munge.key"
  _slurm_spawn munged munged --foreground --force --key-file="$dir/munge/munge.key" \
    --socket="$dir/munge/munge.socket" --pid-file="$dir/run/munged.pid" \
    --seed-file="$dir/munge/munged.seed" --log-file="$dir/log/munged.log"

  for _ in $(seq 100); do [[ -S $dir/munge/munge.socket ]] && break; sleep 0.1; done
  if ! munge -n -S "$dir/munge/munge.socket" | unmunge -S "$dir/munge/munge.socket" >/dev/null; then
    _slurm_log "munged did not start (log: $dir/log/munged.log)"
    return 1
  fi

  local node ctld_port slurmd_port gres="" i
  ((gpus > 0)) && gres="Gres=gpu:$gpus"
  node=$(hostname -s)
  if ! ctld_port=$(_slurm_free_port) || ! slurmd_port=$(_slurm_free_port "$ctld_port"); then
    _slurm_log "no free TCP port"
    return 1
  fi
  sed -e "s|@NODE@|$node|g" -e "s|@DIR@|$dir|g" -e "s|@CPUS@|$cpus|g" \
      -e "s|@CTLD_PORT@|$ctld_port|g" -e "s|@SLURMD_PORT@|$slurmd_port|g" \
      -e "s|@GRES@|$gres|" -e "s|@FIRST_JOB_ID@|$((1000 + (RANDOM * 32768 + RANDOM) % 60000000))|" \
      "$SLURM_CLUSTER_TEMPLATE" >"$SLURM_CONF"
  if ((gpus > 0)); then
    # Slurm drops GPUs without device files; empty files stand in for /dev/nvidiaN (slurmd
    # logs that they are no devices, and carries on).
    mkdir -p "$dir/dev"
    for ((i = 0; i < gpus; i++)); do : >"$dir/dev/gpu$i"; done
    echo "NodeName=$node Name=gpu File=$dir/dev/gpu[0-$((gpus - 1))]" >"$dir/etc/gres.conf"
  fi

  _slurm_spawn slurmctld slurmctld -D -i -f "$SLURM_CONF"
  _slurm_spawn slurmd slurmd -D -N "$node" -f "$SLURM_CONF"
  local state=""
  for _ in $(seq 300); do
    state=$(sinfo -h -n "$node" -o %t 2>/dev/null) || state=""
    [[ $state == idle ]] && break
    [[ $state == inval* || $state == drain* ]] && break
    sleep 0.1
  done
  if [[ $state != idle ]]; then
    _slurm_log "node $node never became idle (state '$state'); logs in $dir/log"
    return 1
  fi
  _slurm_log "up in $dir: node $node, $cpus CPUs, $gpus GPUs, ports $ctld_port/$slurmd_port"
}

# Processes of this machine whose environment holds the entry MARK ("NAME=VALUE"): not this
# shell and not its ancestors. Used by tests/cluster/sim/sim.sh too.
procs_with_env() {
  local mark=$1 keep=" $$ " pid=$BASHPID ppid line e p
  while [[ $pid -gt 1 ]]; do
    keep+="$pid "
    ppid=0
    while read -r line; do [[ $line == PPid:* ]] && ppid=${line//[!0-9]/}; done \
      2>/dev/null <"/proc/$pid/status"
    pid=$ppid
  done
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [[ $keep == *" $p "* ]] && continue
    while IFS= read -r -d '' e; do
      if [[ $e == "$mark" ]]; then echo "$p"; break; fi
    done 2>/dev/null <"/proc/$p/environ"
  done
}

# Processes whose environment names this cluster's slurm.conf: slurmstepd and job tasks
# (they inherit SLURM_CONF from slurmd or from the submitting shell).
_slurm_cluster_procs() {
  procs_with_env "SLURM_CONF=$SLURM_CONF"
}

slurm_cluster_stop() {
  local rc=$?
  set +e
  local dir=$SLURM_CLUSTER_DIR
  [[ -n $dir && -f $dir/run/pids ]] || return "$rc"
  export SLURM_CONF=$dir/etc/slurm.conf
  local name pid jobs
  # Jobs first, while slurmctld can still end them properly.
  if scontrol ping >/dev/null 2>&1; then
    jobs=$(squeue -h -o %i 2>/dev/null)
    # shellcheck disable=SC2086
    [[ -n $jobs ]] && scancel --quiet $jobs 2>/dev/null
    for _ in $(seq 100); do [[ -z $(squeue -h 2>/dev/null) ]] && break; sleep 0.1; done
  fi
  # Daemons, in the reverse order of their start.
  local -a pids=()
  while read -r name pid; do pids=("$pid" "${pids[@]}"); done <"$dir/run/pids"
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  # Whatever a job left behind (a stepd or task that outlived its daemon).
  local left
  left=$(_slurm_cluster_procs)
  if [[ -n $left ]]; then
    _slurm_log "ending leftover processes: ${left//$'\n'/ }"
    # shellcheck disable=SC2086
    kill -TERM $left 2>/dev/null
    sleep 1
    left=$(_slurm_cluster_procs)
    # shellcheck disable=SC2086
    [[ -n $left ]] && kill -KILL $left 2>/dev/null
  fi
  if [[ $rc -ne 0 ]]; then
    local f
    for f in "$dir"/log/*.log; do
      [[ -s $f ]] || continue
      echo "--- last lines of $f" >&2
      tail -n 15 "$f" >&2
    done
  fi
  rm -f "$dir/munge/munge.key" "$dir/munge/munged.seed"
  rm -f "$dir/run/pids"
  if [[ ${KEEP:-0} == 1 ]]; then _slurm_log "stopped; kept $dir"; else rm -rf "$dir"; fi
  SLURM_CLUSTER_DIR=""
  return "$rc"
}

slurm_submit() {
  local out
  out=$(sbatch --parsable "$@") || return 1
  echo "${out%%;*}"
}

# A job's field from scontrol (JobState, ExitCode, ...).
_slurm_job_field() {
  local f
  for f in $(scontrol -o show job "$1" 2>/dev/null); do
    [[ $f == "$2="* ]] && { echo "${f#*=}"; return 0; }
  done
  return 1
}

SLURM_JOB_STATE=""  # the state slurm_wait saw last (COMPLETED, FAILED, CANCELLED, TIMEOUT...)
slurm_wait() {
  local job=$1 limit=${2:-120} state code start=$SECONDS
  while :; do
    state=$(_slurm_job_field "$job" JobState) || state=UNKNOWN
    case $state in
      PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED | UNKNOWN | REQUEUED | RESIZING) ;;
      *) break ;;
    esac
    if ((SECONDS - start >= limit)); then
      _slurm_log "job $job still $state after ${limit}s: cancelling it"
      scancel "$job" 2>/dev/null
      SLURM_JOB_STATE=TIMEOUT
      return 124
    fi
    sleep 0.2
  done
  # shellcheck disable=SC2034  # read by the caller
  SLURM_JOB_STATE=$state
  code=$(_slurm_job_field "$job" ExitCode) || code=1:0
  if [[ ${code#*:} != 0 ]]; then return $((128 + ${code#*:})); fi
  return "${code%%:*}"
}

slurm_wait_output() {
  local file=$1 pattern=$2 job=$3 limit=${4:-60} start=$SECONDS state
  while ((SECONDS - start < limit)); do
    if [[ -f $file ]] && grep -m1 -E -- "$pattern" "$file"; then return 0; fi
    state=$(_slurm_job_field "$job" JobState) || state=UNKNOWN
    case $state in
      PENDING | RUNNING | CONFIGURING | UNKNOWN) ;;
      *) [[ -f $file ]] && grep -m1 -E -- "$pattern" "$file" && return 0
         _slurm_log "job $job ended ($state) before '$pattern' appeared in $file"; return 1 ;;
    esac
    sleep 0.2
  done
  _slurm_log "no '$pattern' in $file after ${limit}s"
  return 1
}

# Stops the `gtadoc serve` job JOB (output file OUT, generated token file TOKEN) with SIGTERM:
# it must end COMPLETED with exit code 0 within 60 s and remove the token file. Else prints why
# (and the job's output) and returns 1.
slurm_stop_serve() {
  local job=$1 out=$2 token=$3 rc=0
  scancel --signal=TERM "$job"
  slurm_wait "$job" 60 || rc=$?
  if [[ $rc -ne 0 || $SLURM_JOB_STATE != COMPLETED ]]; then
    cat "$out" >&2
    _slurm_log "serve after SIGTERM: $SLURM_JOB_STATE, exit code $rc"
    return 1
  fi
  [[ ! -e $token ]] || { _slurm_log "the generated token file outlived the job"; return 1; }
}

# ------------------------------------------------------------------ command line
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -uo pipefail
  usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2; }
  [[ $# -ge 2 ]] || usage
  cmd=$1 SLURM_CLUSTER_DIR=$2
  [[ $SLURM_CLUSTER_DIR == /* ]] || SLURM_CLUSTER_DIR=$PWD/$SLURM_CLUSTER_DIR
  shift 2
  case $cmd in
    run)
      sizes=()
      while [[ $# -gt 0 && $1 != -- ]]; do sizes+=("$1"); shift; done
      [[ ${1:-} == -- ]] && shift
      [[ $# -gt 0 ]] || usage
      trap slurm_cluster_stop EXIT
      trap 'exit 130' INT TERM
      slurm_cluster_start "$SLURM_CLUSTER_DIR" "${sizes[@]}" || exit 1
      "$@"
      ;;
    start)
      slurm_cluster_start "$SLURM_CLUSTER_DIR" "$@" || { slurm_cluster_stop; exit 1; }
      echo "export SLURM_CONF=$SLURM_CONF"
      ;;
    stop)
      [[ -f $SLURM_CLUSTER_DIR/run/pids ]] || { echo "no cluster in $SLURM_CLUSTER_DIR" >&2; exit 1; }
      slurm_cluster_stop
      ;;
    *) usage ;;
  esac
fi
