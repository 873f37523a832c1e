#!/usr/bin/env bash
# A simulated cluster on one machine, for tests: N "nodes" (2-4), each a set of Linux namespaces
# of its own -- network (one veth on a private bridge, its own address), UTS (its own host name),
# PID (its processes end with it) and mount (its own /proc, a private /dev/shm, an /etc/hosts
# naming every node, and DIR/local: the node's own directory, DIR/nodes/NAME seen from outside)
# -- sharing this machine's file system otherwise, as nodes share a cluster file system.
# Open MPI reaches the nodes through its rsh agent (rsh-agent.sh, which enters a node's
# namespaces where ssh would log in), so ranks on different nodes talk over TCP. Optionally a
# Slurm cluster on top: munged and slurmctld on this machine (the "login node", the bridge's
# address), one slurmd per node. Needs root, iproute2 and util-linux (unshare, nsenter); the
# Slurm part needs the packages tests/slurm/cluster.sh needs.
#
# As a library (bash; source it, then):
#   sim_check                       0 when the machine can run it, else prints why
#   sim_start DIR N                 start N nodes (names sim1..simN); state and logs under DIR
#                                   (a short path: sockets live there). Sets SIM_DIR, SIM_NODES
#                                   (names), SIM_ADDRS (addresses), SIM_SUBNET, SIM_GATEWAY.
#   trap sim_stop EXIT              ALWAYS. stop ends every job, daemon and node, deletes the
#                                   bridge and removes DIR (KEEP=1 keeps DIR). A guard process
#                                   does the same if the shell that started the cluster dies
#                                   without it (SIGKILL, a CTest timeout).
#   sim_exec NODE CMD...            run CMD on NODE (its namespaces; this environment, this
#                                   working directory); returns CMD's exit status
#   sim_spawn NODE NAME CMD...      start CMD on NODE in the background (output: DIR/log/NAME.out)
#   sim_addr NODE                   the node's address
#   sim_hostfile FILE PER_NODE [NODE...]   an Open MPI hostfile: PER_NODE slots on each node
#   sim_mpirun MPIRUN_ARGS...       mpirun from this machine across the nodes of the hostfile
#                                   given in the arguments (--hostfile F), through rsh-agent.sh
#   sim_kill_node NODE [SIGNAL]     every process of NODE (SIGKILL: its namespaces go too)
#   sim_slurm_start [CPUS]          munged + slurmctld here, slurmd on every node (CPUS each,
#                                   default 4); exports SLURM_CONF. Then tests/slurm/cluster.sh's
#                                   slurm_submit, slurm_wait, slurm_wait_output work.
# As a command (see README.md):
#   sim.sh run DIR N [--slurm] -- COMMAND...   start, run COMMAND here (SIM_* exported), stop
#   sim.sh start DIR N [--slurm]               start and leave it running (by hand)
#   sim.sh exec DIR NODE CMD...                run CMD on a node of a running cluster
#   sim.sh stop DIR                            stop a cluster started with `start`

SIM_HOME=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SIM_DIR="" SIM_NODES=() SIM_ADDRS=() SIM_SUBNET="" SIM_GATEWAY="" SIM_BRIDGE=""
# shellcheck source=../../slurm/cluster.sh
source "$SIM_HOME/../../slurm/cluster.sh"

_sim_log() { printf 'sim-cluster: %s\n' "$*" >&2; }

sim_check() {
  if [[ $(id -u) -ne 0 ]]; then echo "the simulated cluster needs root (namespaces, a bridge)"; return 1; fi
  local c
  for c in ip unshare nsenter mount flock setsid; do
    command -v "$c" >/dev/null || { echo "$c not found (packages iproute2, util-linux)"; return 1; }
  done
  if ! unshare --net --uts --pid --mount --fork --mount-proc true 2>/dev/null; then
    echo "unshare --net --uts --pid --mount fails here (no namespaces)"; return 1
  fi
  local br=gsc$$
  br=${br:0:15}
  if ! ip link add "$br" type bridge 2>/dev/null; then echo "cannot create a bridge (ip link add type bridge)"; return 1; fi
  ip link del "$br" 2>/dev/null
  return 0
}

# Reads DIR/state (written by sim_start) into the SIM_* variables.
_sim_load() {
  local dir=$1 key value
  [[ -f $dir/state ]] || return 1
  SIM_DIR=$dir SIM_NODES=() SIM_ADDRS=()
  while read -r key value; do
    case $key in
      bridge) SIM_BRIDGE=$value ;;
      subnet) SIM_SUBNET=$value ;;
      gateway) SIM_GATEWAY=$value ;;
      node) SIM_NODES+=("${value%% *}"); SIM_ADDRS+=("${value##* }") ;;
    esac
  done <"$dir/state"
}

_sim_index() {  # index of NODE (name or address) in SIM_NODES
  local i
  for i in "${!SIM_NODES[@]}"; do
    [[ ${SIM_NODES[i]} == "$1" || ${SIM_ADDRS[i]} == "$1" ]] && { echo "$i"; return 0; }
  done
  _sim_log "no node '$1' (nodes: ${SIM_NODES[*]})"
  return 1
}

sim_addr() { local i; i=$(_sim_index "$1") || return 1; echo "${SIM_ADDRS[i]}"; }

# The node's namespace holder (pid 1 of its PID namespace, as seen from here).
_sim_holder() {
  local i pid
  i=$(_sim_index "$1") || return 1
  pid=$(cat "$SIM_DIR/run/${SIM_NODES[i]}.holder" 2>/dev/null) || return 1
  [[ -n $pid && -e /proc/$pid ]] || { _sim_log "node ${SIM_NODES[i]} is down"; return 1; }
  echo "$pid"
}

sim_exec() {
  local node=$1 h
  shift
  h=$(_sim_holder "$node") || return 1
  nsenter -t "$h" -n -u -m -p --wd="$PWD" -- "$@"
}

sim_spawn() {
  local node=$1 name=$2 h
  shift 2
  h=$(_sim_holder "$node") || return 1
  nsenter -t "$h" -n -u -m -p --wd="$PWD" -- "$@" </dev/null >>"$SIM_DIR/log/$name.out" 2>&1 &
}

# A /24 of 10.0.0.0/8 that no route of this machine touches.
_sim_pick_subnet() {
  local a b
  for _ in $(seq 50); do
    a=$((100 + RANDOM % 150)) b=$((RANDOM % 250))
    if [[ -z $(ip -4 route show to match "10.$a.$b.1" 2>/dev/null | grep -v '^default') &&
      -z $(ip -4 addr show to "10.$a.$b.0/24" 2>/dev/null) ]]; then
      echo "10.$a.$b"
      return 0
    fi
  done
  return 1
}

# Starts node NAME with address ADDR: namespaces, host name, veth on the bridge.
_sim_node_up() {
  local name=$1 addr=$2 k=$3 id=$4 upid holder vh vn
  rm -f "$SIM_DIR/run/$name.ready"
  # pid 1 of the node: host name, private /dev/shm, /etc/hosts, no IPv6 (only the test's
  # addresses), then it waits (and reaps orphans) until it is killed.
  setsid unshare --net --uts --pid --mount --fork --mount-proc --propagation private \
    bash -c 'hostname "$1" && mount -t tmpfs -o mode=1777,size=2g tmpfs /dev/shm &&
             mount --bind "$2/etc/hosts" /etc/hosts && mkdir -p "$2/nodes/$1/spool" &&
             mount --bind "$2/nodes/$1" "$2/local" &&
             { echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6; } 2>/dev/null
             : >"$2/run/$1.ready" || exit 1
             trap "exit 0" TERM
             while :; do sleep 3600 & wait $!; done' sim-node "$name" "$SIM_DIR" \
    </dev/null >>"$SIM_DIR/log/$name-init.out" 2>&1 &
  upid=$!
  echo "$upid" >"$SIM_DIR/run/$name.unshare"
  holder=""
  for _ in $(seq 100); do
    [[ -f $SIM_DIR/run/$name.ready ]] && holder=$(cat "/proc/$upid/task/$upid/children" 2>/dev/null) &&
      holder=${holder%% *} && [[ -n $holder ]] && break
    kill -0 "$upid" 2>/dev/null || break
    sleep 0.05
  done
  [[ -n $holder ]] || { _sim_log "node $name did not start ($(cat "$SIM_DIR/log/$name-init.out"))"; return 1; }
  echo "$holder" >"$SIM_DIR/run/$name.holder"
  readlink "/proc/$holder/ns/net" >"$SIM_DIR/run/$name.netns"
  vh=gs${id}h$k vn=gs${id}n$k
  # A node killed a moment ago: the kernel may not have removed its veth pair yet.
  ip link del "$vh" 2>/dev/null || true
  ip link add "$vh" type veth peer name "$vn" &&
    ip link set "$vn" netns "$holder" &&
    ip link set "$vh" master "$SIM_BRIDGE" &&
    ip link set "$vh" up &&
    nsenter -t "$holder" -n sh -c "ip link set lo up && ip link set '$vn' name eth0 &&
      ip addr add '$addr/24' dev eth0 && ip link set eth0 up" ||
    { _sim_log "node $name: network set-up failed"; return 1; }
}

sim_start() {
  local dir=$1 n=$2 why i id net
  why=$(sim_check) || { _sim_log "$why"; return 1; }
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 9)) || { _sim_log "N must be 1..9"; return 1; }
  [[ $dir == /* ]] || dir=$PWD/$dir
  rm -rf "$dir"
  mkdir -p "$dir"/{etc,run,log,tmp,local,nodes}
  SIM_DIR=$dir
  id=$(printf '%04x' $((RANDOM % 65536)))
  SIM_BRIDGE=gsb$id
  # State first: whatever happens next, sim_stop (or the guard) finds what to remove.
  echo "bridge $SIM_BRIDGE" >"$dir/state"
  _sim_guard
  net=$(_sim_pick_subnet) || { _sim_log "no free 10.x.y.0/24"; return 1; }
  SIM_SUBNET=$net.0/24 SIM_GATEWAY=$net.1
  printf 'subnet %s\ngateway %s\n' "$SIM_SUBNET" "$SIM_GATEWAY" >>"$dir/state"
  # A fixed MAC address of its own: a bridge otherwise takes its ports' lowest, which changes
  # when a node's veth goes (a killed node), and the other nodes' ARP entries for this machine
  # would point nowhere for half a minute.
  ip link add "$SIM_BRIDGE" type bridge &&
    ip link set "$SIM_BRIDGE" address "02:67:73:${id:0:2}:${id:2:2}:01" &&
    ip addr add "$SIM_GATEWAY/24" dev "$SIM_BRIDGE" &&
    ip link set "$SIM_BRIDGE" up || { _sim_log "bridge set-up failed"; return 1; }
  SIM_NODES=() SIM_ADDRS=()
  {
    printf '127.0.0.1 localhost\n%s %s login\n' "$SIM_GATEWAY" "$(hostname -s)"
    for ((i = 1; i <= n; i++)); do printf '%s.%d sim%d\n' "$net" $((10 + i)) "$i"; done
  } >"$dir/etc/hosts"
  for ((i = 1; i <= n; i++)); do
    SIM_NODES+=("sim$i") SIM_ADDRS+=("$net.$((10 + i))")
    echo "node sim$i $net.$((10 + i))" >>"$dir/state"
    _sim_node_up "sim$i" "$net.$((10 + i))" "$i" "$id" || return 1
  done
  export SIM_DIR SIM_SUBNET SIM_GATEWAY
  _sim_log "up in $dir: ${SIM_NODES[*]} on $SIM_SUBNET (bridge $SIM_BRIDGE)"
}

# Brings node NAME back after sim_kill_node (same name, address and host name; its daemons are
# the caller's business, except slurmd, which comes back when the cluster runs Slurm).
sim_node_restart() {
  local i id
  i=$(_sim_index "$1") || return 1
  id=${SIM_BRIDGE#gsb}
  _sim_node_up "${SIM_NODES[i]}" "${SIM_ADDRS[i]}" $((i + 1)) "$id" || return 1
  if [[ -f $SIM_DIR/etc/slurm.conf ]]; then
    _sim_slurmd "${SIM_NODES[i]}"
  fi
}

# Every process whose network namespace is NODE's (the holder's PID namespace holds them all,
# but an nsenter parent, here, sits in the network namespace only).
_sim_node_procs() {
  local inode=${1//[^0-9]/}  # net:[INODE]
  [[ -n $inode ]] || return 0
  find /proc -mindepth 3 -maxdepth 3 -path '/proc/[0-9]*/ns/net' -lname "net:?$inode?" 2>/dev/null |
    cut -d/ -f3
  return 0
}

sim_kill_node() {
  local node=$1 sig=${2:-KILL} i name h ns left
  i=$(_sim_index "$node") || return 1
  name=${SIM_NODES[i]}
  ns=$(cat "$SIM_DIR/run/$name.netns" 2>/dev/null)
  h=$(cat "$SIM_DIR/run/$name.holder" 2>/dev/null)
  if [[ $sig != KILL ]]; then  # every process but the holder
    left=$(_sim_node_procs "$ns" | grep -vx "$h")
    # shellcheck disable=SC2086
    if [[ -n $left ]]; then kill -"$sig" $left 2>/dev/null || true; fi
    return 0
  fi
  if [[ -n $h ]]; then kill -KILL "$h" 2>/dev/null || true; fi
  for _ in $(seq 50); do
    [[ -n $ns ]] && left=$(_sim_node_procs "$ns") || left=""
    [[ -z $left ]] && break
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null || true
    sleep 0.1
  done
  local u
  u=$(cat "$SIM_DIR/run/$name.unshare" 2>/dev/null)
  if [[ -n $u ]]; then kill -KILL "$u" 2>/dev/null || true; wait "$u" 2>/dev/null || true; fi
  rm -f "$SIM_DIR/run/$name.holder" "$SIM_DIR/run/$name.ready"
  [[ -z $left ]]
}

# ---- the guard: tears the cluster down when the shell that started it is gone
_sim_guard() {
  local me=$BASHPID start
  start=$(awk '{print $22}' "/proc/$me/stat" 2>/dev/null)
  # Detached (setsid, its own session, its parent gone): a CTest timeout kills the test's process
  # tree, not the guard.
  (setsid bash "$SIM_HOME/sim.sh" _guard "$SIM_DIR" "$me" "$start" </dev/null >/dev/null 2>&1 &)
}

_sim_guard_loop() {
  local dir=$1 owner=$2 start=$3
  while [[ -f $dir/state ]]; do
    if [[ $(awk '{print $22}' "/proc/$owner/stat" 2>/dev/null) != "$start" ]]; then
      _sim_load "$dir" && { echo "guard: owner $owner gone, tearing down"; sim_stop; } >>"$dir.guard.log" 2>&1
      rm -f "$dir.guard.log"
      return
    fi
    sleep 1
  done
}

# ---- Slurm on top
_sim_slurmd() {
  local name=$1
  sim_spawn "$name" "slurmd-$name" slurmd -D -N "$name" -f "$SLURM_CONF"
}

# shellcheck disable=SC2120  # CPUS is optional
sim_slurm_start() {
  local cpus=${1:-4} why ctld_port slurmd_port i nodes
  why=$(slurm_cluster_check) || { _sim_log "$why"; return 1; }
  local dir=$SIM_DIR
  mkdir -p "$dir"/{munge,slurm-state}
  chmod 700 "$dir/munge"
  export SLURM_CONF=$dir/etc/slurm.conf
  (umask 077 && head -c 1024 /dev/urandom >"$dir/munge/munge.key")
  chmod 400 "$dir/munge/munge.key"
  munged --foreground --force --key-file="$dir/munge/munge.key" \
    --socket="$dir/munge/munge.socket" --pid-file="$dir/run/munged.pid" \
    --seed-file="$dir/munge/munged.seed" --log-file="$dir/log/munged.log" </dev/null \
    >>"$dir/log/munged.out" 2>&1 &
  echo "munged $!" >>"$dir/run/pids"
  for _ in $(seq 100); do [[ -S $dir/munge/munge.socket ]] && break; sleep 0.1; done
  if ! munge -n -S "$dir/munge/munge.socket" | unmunge -S "$dir/munge/munge.socket" >/dev/null; then
    _sim_log "munged did not start (log: $dir/log/munged.log)"
    return 1
  fi
  if ! ctld_port=$(_slurm_free_port) || ! slurmd_port=$(_slurm_free_port "$ctld_port"); then
    _sim_log "no free TCP port"
    return 1
  fi
  nodes=$(IFS=,; echo "${SIM_NODES[*]}")
  {
    sed -e "s|@CTLD@|$(hostname -s)|g" -e "s|@GATEWAY@|$SIM_GATEWAY|g" -e "s|@DIR@|$dir|g" \
      -e "s|@CTLD_PORT@|$ctld_port|g" -e "s|@SLURMD_PORT@|$slurmd_port|g" \
      -e "s|@NODES@|$nodes|g" \
      -e "s|@FIRST_JOB_ID@|$((1000 + (RANDOM * 32768 + RANDOM) % 60000000))|" \
      "$SIM_HOME/slurm.conf.in"
    for i in "${!SIM_NODES[@]}"; do
      echo "NodeName=${SIM_NODES[i]} NodeAddr=${SIM_ADDRS[i]} CPUs=$cpus State=UNKNOWN"
    done
  } >"$SLURM_CONF"
  slurmctld -D -i -f "$SLURM_CONF" </dev/null >>"$dir/log/slurmctld.out" 2>&1 &
  echo "slurmctld $!" >>"$dir/run/pids"
  for i in "${SIM_NODES[@]}"; do _sim_slurmd "$i"; done
  sim_slurm_wait_idle 30 || return 1
  _sim_log "Slurm up: slurmctld on $SIM_GATEWAY:$ctld_port, slurmd on ${SIM_NODES[*]} ($cpus CPUs each)"
}

# Waits until every node is idle (SECONDS, default 30).
sim_slurm_wait_idle() {
  local limit=${1:-30} start=$SECONDS states
  while ((SECONDS - start < limit)); do
    states=$(sinfo -h -N -o %t 2>/dev/null | sort -u | tr '\n' ' ')
    [[ $states == "idle " ]] && return 0
    sleep 0.2
  done
  _sim_log "nodes not idle after ${limit}s (states: $states); logs in $SIM_DIR/log"
  return 1
}

sim_hostfile() {
  local file=$1 per=$2 i
  shift 2
  local nodes=("$@")
  ((${#nodes[@]})) || nodes=("${SIM_NODES[@]}")
  : >"$file"
  for i in "${nodes[@]}"; do echo "$(sim_addr "$i") slots=$per" >>"$file"; done
}

# mpirun on this machine (outside the nodes, like a login node) launching on the nodes of the
# hostfile: orted through rsh-agent.sh, no tree spawn (the agent runs here), and Open MPI's
# out-of-band channel on the simulated network. Ranks choose their transport themselves.
# sim_mpirun_argv sets SIM_MPIRUN, the same command as an array (for `"${SIM_MPIRUN[@]}" ... &`,
# whose $! is then mpirun itself).
sim_mpirun_argv() {
  SIM_MPIRUN=(env SIM_DIR="$SIM_DIR" mpirun --mca plm_rsh_agent "$SIM_HOME/rsh-agent.sh"
    --mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include "$SIM_SUBNET")
}
sim_mpirun() {
  sim_mpirun_argv
  "${SIM_MPIRUN[@]}" "$@"
}

sim_stop() {
  local rc=$?
  set +e
  local dir=$SIM_DIR
  [[ -n $dir && -f $dir/state ]] || return "$rc"
  exec 9>>"$dir.lock"
  flock 9
  [[ -f $dir/state ]] || { exec 9>&-; return "$rc"; }
  _sim_load "$dir"
  local name pid jobs i
  # Slurm jobs first, while slurmctld can still end them.
  if [[ -f $dir/etc/slurm.conf ]]; then
    export SLURM_CONF=$dir/etc/slurm.conf
    if scontrol ping >/dev/null 2>&1; then
      jobs=$(squeue -h -o %i 2>/dev/null)
      # shellcheck disable=SC2086
      [[ -n $jobs ]] && scancel --quiet $jobs 2>/dev/null
      for _ in $(seq 50); do [[ -z $(squeue -h 2>/dev/null) ]] && break; sleep 0.1; done
    fi
  fi
  # mpirun and its agents on this machine (they would wait for orteds that are gone).
  local left
  left=$(procs_with_env "SIM_DIR=$dir")  # mpirun of sim_mpirun, sbatch/srun clients
  # shellcheck disable=SC2086
  [[ -n $left ]] && kill -KILL $left 2>/dev/null
  # The nodes: everything in them dies with their holder.
  for name in "${SIM_NODES[@]}"; do sim_kill_node "$name" >/dev/null 2>&1; done
  # Daemons of this machine, in the reverse order of their start.
  if [[ -f $dir/run/pids ]]; then
    local -a pids=()
    while read -r name pid; do pids=("$pid" "${pids[@]}"); done <"$dir/run/pids"
    for pid in "${pids[@]}"; do
      kill -TERM "$pid" 2>/dev/null || continue
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
    done
  fi
  # Processes of this machine started for the cluster's jobs (sbatch/srun clients, mpirun).
  if [[ -f $dir/etc/slurm.conf ]]; then
    left=$(_slurm_cluster_procs)
    # shellcheck disable=SC2086
    [[ -n $left ]] && kill -KILL $left 2>/dev/null
  fi
  [[ -n $SIM_BRIDGE ]] && ip link del "$SIM_BRIDGE" 2>/dev/null
  # veths whose node side went with the node are gone; a half-made one is removed here.
  local l
  for l in $(ip -o link show 2>/dev/null | sed -n "s/^[0-9]*: \(gs${SIM_BRIDGE#gsb}[hn][0-9]*\)[@:].*/\1/p"); do
    ip link del "$l" 2>/dev/null
  done
  if [[ $rc -ne 0 ]]; then
    local f
    for f in "$dir"/log/*; do
      [[ -s $f ]] || continue
      echo "--- last lines of $f" >&2
      tail -n 15 "$f" >&2
    done
  fi
  rm -f "$dir/munge/munge.key" "$dir/munge/munged.seed" "$dir/state"
  if [[ ${KEEP:-0} == 1 ]]; then _sim_log "stopped; kept $dir"; else rm -rf "$dir"; fi
  rm -f "$dir.lock"
  exec 9>&-
  SIM_DIR=""
  return "$rc"
}

# sim_leftovers: what a stopped cluster would have left (for tests): prints one line per thing.
sim_leftovers() {
  local id=$1  # the bridge's suffix (4 hex digits)
  ip -o link show 2>/dev/null | grep -E "gs(b|[0-9a-f]{4}[hn])" | grep -F "$id" | sed 's/^/link: /'
  local p
  for p in /proc/[0-9]*; do
    tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q -- "sim-node sim[0-9]" && echo "process: ${p#/proc/}"
  done
  return 0
}

# ------------------------------------------------------------------ command line
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -uo pipefail
  usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2; exit 2; }
  [[ $# -ge 2 ]] || usage
  cmd=$1 dir=$2
  [[ $dir == /* ]] || dir=$PWD/$dir
  shift 2
  case $cmd in
    _guard) _sim_guard_loop "$dir" "$@" ;;
    run | start)
      n=${1:-}; shift || true
      slurm=0
      while [[ $# -gt 0 && $1 != -- ]]; do
        [[ $1 == --slurm ]] && slurm=1
        shift
      done
      [[ ${1:-} == -- ]] && shift
      if [[ $cmd == run ]]; then
        [[ $# -gt 0 ]] || usage
        cmd_pid=""
        trap sim_stop EXIT
        # The command runs in the background so that a signal is handled at once (bash runs a
        # trap only after its foreground command ends); it gets the signal too.
        trap '[[ -n $cmd_pid ]] && kill -TERM "$cmd_pid" 2>/dev/null; exit 130' INT TERM
        sim_start "$dir" "$n" || exit 1
        ((slurm)) && { sim_slurm_start || exit 1; }
        export SIM_NODES_LIST="${SIM_NODES[*]}" SIM_ADDRS_LIST="${SIM_ADDRS[*]}"
        "$@" &
        cmd_pid=$!
        wait "$cmd_pid"
      else
        # By hand: no guard (the cluster outlives this command); `stop` removes it.
        _sim_guard() { :; }
        sim_start "$dir" "$n" || { sim_stop; exit 1; }
        ((slurm)) && { sim_slurm_start || { sim_stop; exit 1; }; }
        echo "nodes: ${SIM_NODES[*]} (${SIM_ADDRS[*]}), subnet $SIM_SUBNET, login address $SIM_GATEWAY"
        ((slurm)) && echo "export SLURM_CONF=$SLURM_CONF"
      fi
      ;;
    exec)
      _sim_load "$dir" || { echo "no cluster in $dir" >&2; exit 1; }
      sim_exec "$@"
      ;;
    stop)
      _sim_load "$dir" || { echo "no cluster in $dir" >&2; exit 1; }
      sim_stop
      ;;
    *) usage ;;
  esac
fi
