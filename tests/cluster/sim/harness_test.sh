#!/usr/bin/env bash
# The simulated cluster itself (sim.sh): 3 nodes with their own host names, addresses, processes
# and /dev/shm, a shared file system, TCP between them, mpirun across them through the rsh agent
# (ranks grouped by node); and its teardown: after a normal end, a failing command, SIGTERM and
# SIGKILL of the shell that started it (the guard), nothing is left -- no namespace (no process
# of a node), interface, daemon or directory.
# Usage: harness_test.sh SOURCE_DIR SCRATCH. Exit 77 (skipped) when the machine cannot run it.
set -euo pipefail
SRC=$1 WORK=$2
SIM=$SRC/tests/cluster/sim/sim.sh
# shellcheck source=sim.sh
source "$SIM"
if ! why=$(sim_check); then echo "SKIP: $why"; exit 77; fi
fail() { echo "FAIL: $*" >&2; exit 1; }
T0=$SECONDS
note() { echo "[$((SECONDS - T0))s] $*"; }
rm -rf "$WORK" && mkdir -p "$WORK"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# leftovers DIR BRIDGE: what a stopped cluster left behind (empty when nothing).
leftovers() {
  local dir=$1 br=$2
  [[ -e $dir ]] && echo "directory $dir"
  [[ -e $dir.lock ]] && echo "lock $dir.lock"
  ip -o link show 2>/dev/null | grep -E "(${br}|gs${br#gsb}[hn][0-9])" | sed 's/^/interface: /'
  local p
  for p in /proc/[0-9]*; do
    tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -qF -- "$dir" && echo "process ${p#/proc/}: $(tr '\0' ' ' <"$p/cmdline")"
  done
  return 0
}
# wait_clean DIR BRIDGE SECONDS: leftovers gone within SECONDS.
wait_clean() {
  local left=""
  for _ in $(seq $(($3 * 5))); do
    left=$(leftovers "$1" "$2")
    [[ -z $left ]] && return 0
    sleep 0.2
  done
  echo "$left" >&2
  return 1
}

# ---- a cluster of 3 nodes, used from this shell
C=$(mktemp -d /tmp/gtadoc-sim.XXXXXX)
trap sim_stop EXIT
trap 'exit 130' INT TERM
sim_start "$C" 3 || fail "the simulated cluster did not start"
note "3 nodes up"
names=""
for n in "${SIM_NODES[@]}"; do names+="$(sim_exec "$n" hostname) "; done
[[ $names == "sim1 sim2 sim3 " ]] || fail "host names: $names"
[[ $(sim_exec sim2 sh -c 'ip -4 -o addr show eth0' | awk '{print $4}') == "$(sim_addr sim2)/24" ]] ||
  fail "sim2 does not have its address"
# Own processes: a node sees its own (pid 1 is its holder), not this machine's.
[[ $(sim_exec sim1 sh -c 'cat /proc/1/cmdline | tr "\0" " "') == *sim-node* ]] || fail "sim1's pid 1 is not its holder"
! sim_exec sim1 test -e "/proc/$$" || [[ $$ -lt 10 ]] || fail "sim1 sees this shell's process"
# Own /dev/shm, shared file system.
sim_exec sim1 sh -c 'echo x >/dev/shm/gtadoc-sim-probe'
! sim_exec sim2 test -e /dev/shm/gtadoc-sim-probe || fail "/dev/shm is shared between nodes"
[[ ! -e /dev/shm/gtadoc-sim-probe ]] || fail "a node's /dev/shm is this machine's"
sim_exec sim1 sh -c "echo shared >'$WORK/probe'"
[[ $(sim_exec sim3 cat "$WORK/probe") == shared ]] || fail "sim3 does not see sim1's file"
# Names resolve on the nodes; TCP between nodes (a listener on sim3, a client on sim1).
[[ $(sim_exec sim1 getent hosts sim3 | awk '{print $1}') == "$(sim_addr sim3)" ]] || fail "sim3 does not resolve on sim1"
if command -v python3 >/dev/null; then
  sim_spawn sim3 listener python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 7001)); s.listen(1)
c, a = s.accept(); c.sendall(("hello from " + socket.gethostname() + " to " + a[0] + "\n").encode())'
  got=""
  for _ in $(seq 50); do
    got=$(sim_exec sim1 bash -c 'exec 3<>/dev/tcp/sim3/7001 && cat <&3' 2>/dev/null) && break
    sleep 0.1
  done
  [[ $got == "hello from sim3 to $(sim_addr sim1)" ]] || fail "TCP sim1 -> sim3: '$got'"
  ! sim_exec sim2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/7001' 2>/dev/null || fail "sim3's port is open on sim2's loopback"
fi
note "nodes: host names, addresses, processes, /dev/shm, files, TCP"
# mpirun across the nodes: 2 ranks on each, grouped by node, from a fresh environment.
sim_hostfile "$WORK/hosts" 2
sim_mpirun --hostfile "$WORK/hosts" -np 6 sh -c \
  'echo "$OMPI_COMM_WORLD_RANK $(hostname) $OMPI_COMM_WORLD_LOCAL_RANK/$OMPI_COMM_WORLD_LOCAL_SIZE ${GTADOC_SIM_PROBE:-unset}"' \
  >"$WORK/ranks" 2>&1 </dev/null || { cat "$WORK/ranks"; fail "mpirun across 3 nodes"; }
sort -n "$WORK/ranks" >"$WORK/ranks.sorted"
printf '%s\n' "0 sim1 0/2 unset" "1 sim1 1/2 unset" "2 sim2 0/2 unset" "3 sim2 1/2 unset" \
  "4 sim3 0/2 unset" "5 sim3 1/2 unset" | cmp -s - "$WORK/ranks.sorted" ||
  { cat "$WORK/ranks.sorted"; fail "mpirun's ranks are not 2 per node in order"; }
# shellcheck disable=SC2209  # a variable for the function call
GTADOC_SIM_PROBE=set sim_mpirun --hostfile "$WORK/hosts" -np 2 --map-by node -x GTADOC_SIM_PROBE \
  sh -c 'echo "$(hostname) ${GTADOC_SIM_PROBE:-unset}"' </dev/null | sort >"$WORK/x"
printf '%s\n' "sim1 set" "sim2 set" | cmp -s - "$WORK/x" || { cat "$WORK/x"; fail "mpirun -x across nodes"; }
note "mpirun: 6 ranks on 3 nodes, -x"
# A node killed and brought back.
sim_kill_node sim2 || fail "sim2's processes outlived its kill"
! sim_exec sim2 true 2>/dev/null || fail "sim2 still runs commands after its kill"
sim_node_restart sim2 || fail "sim2 did not come back"
[[ $(sim_exec sim2 hostname) == sim2 ]] || fail "sim2 came back without its name"
sim_exec sim1 bash -c "exec 3<>/dev/tcp/$(sim_addr sim2)/9" 2>"$WORK/err" ||
  grep -q "refused" "$WORK/err" || { cat "$WORK/err"; fail "sim2 unreachable after its restart"; }
note "kill and restart of a node"
br=$SIM_BRIDGE
sim_stop
trap - EXIT
wait_clean "$C" "$br" 5 || fail "sim_stop left something behind"
note "stopped: nothing left"

# ---- teardown when the command fails, on SIGTERM and on SIGKILL of the starting shell
C=$(mktemp -u /tmp/gtadoc-sim.XXXXXX)
rc=0
bash "$SIM" run "$C" 2 -- bash -c 'echo "$SIM_DIR" >'"$WORK/dir"'; exit 3' >"$WORK/run.out" 2>&1 || rc=$?
[[ $rc -eq 3 ]] || { cat "$WORK/run.out"; fail "sim.sh run did not return its command's code (rc=$rc)"; }
[[ $(cat "$WORK/dir") == "$C" ]] || fail "the command did not get SIM_DIR"
wait_clean "$C" "gsb-none" 5 || fail "left behind after a failing command"
for sig in TERM KILL; do
  C=$(mktemp -u /tmp/gtadoc-sim.XXXXXX)
  setsid bash "$SIM" run "$C" 2 -- sleep 300 >"$WORK/run-$sig.out" 2>&1 &
  pid=$!
  br=""
  for _ in $(seq 100); do
    [[ -f $C/state ]] && grep -q "^node sim2" "$C/state" && [[ -f $C/run/sim2.holder ]] && break
    sleep 0.1
  done
  br=$(sed -n 's/^bridge //p' "$C/state" 2>/dev/null)
  [[ -n $br ]] || { cat "$WORK/run-$sig.out"; fail "sim.sh run did not start (for SIG$sig)"; }
  sleep 0.5
  kill -"$sig" "$pid"
  wait "$pid" 2>/dev/null || true
  if [[ $sig == KILL ]]; then  # the command itself (here, not on a node) outlives its shell
    for p in $(ps -o pid= -s "$pid" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
  fi
  # SIGTERM: the trap; SIGKILL: the guard (polls every second).
  wait_clean "$C" "$br" 10 || fail "left behind after SIG$sig of the starting shell"
  note "SIG$sig of the starting shell: nothing left"
done
echo "PASS: simulated cluster of 3 nodes (names, addresses, processes, /dev/shm, TCP, mpirun) and its teardown"
