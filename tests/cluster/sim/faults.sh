#!/usr/bin/env bash
# Faults on a node of the simulated cluster (sim.sh), for the failure tests. Source it after
# sim.sh, with BIN set to the gtadoc binary. Times are seconds with a decimal point.
#   now                       the time now
#   since T                   seconds since T (one decimal)
#   at_most A B               true when A <= B
#   node_gtadoc [NODE...]     pids of gtadoc processes on the nodes (default: every node)
#   fault KIND NODE           kill: every process of NODE (SIGKILL to its holder); link: its eth0
#                             down, processes alive; stop: SIGSTOP to its gtadoc processes
#   recover KIND NODE         the node back: restarted (kill), eth0 up (link); nothing for stop
#                             (the stopped rank ended with its job)
#   wait_gone PIDS SECONDS    true once none of PIDS runs, false after SECONDS

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
at_most() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

node_gtadoc() {
  local nodes=("$@") n ns p
  ((${#nodes[@]})) || nodes=("${SIM_NODES[@]}")
  for n in "${nodes[@]}"; do
    ns=$(cat "$SIM_DIR/run/$n.netns" 2>/dev/null) || continue
    for p in $(_sim_node_procs "$ns"); do
      [[ $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) == "$BIN "* ]] && echo "$p"
    done
  done
  return 0
}

fault() {
  local kind=$1 node=$2 pids
  case $kind in
    kill) sim_kill_node "$node" >/dev/null 2>&1 ;;
    link) sim_exec "$node" ip link set eth0 down ;;
    stop)
      pids=$(node_gtadoc "$node")
      [[ -n $pids ]] || { echo "fault stop: no gtadoc process on $node" >&2; return 1; }
      # shellcheck disable=SC2086
      kill -STOP $pids
      ;;
    *) echo "fault: unknown kind $kind" >&2; return 1 ;;
  esac
}

recover() {
  local kind=$1 node=$2
  case $kind in
    kill) sim_node_restart "$node" ;;
    link) sim_exec "$node" ip link set eth0 up ;;
  esac
}

wait_gone() {
  local pids=$1 limit=$2 start p left
  start=$(now)
  while :; do
    left=""
    for p in $pids; do  # a zombie has ended too
      [[ $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) =~ ^[^Z]$ ]] && left+=" $p"
    done
    [[ -z $left ]] && return 0
    at_most "$(since "$start")" "$limit" || return 1
    sleep 0.1
  done
}
