#!/usr/bin/env bash
# Open MPI's rsh agent for the simulated cluster (sim.sh): `rsh-agent.sh [-options] HOST COMMAND...`
# runs COMMAND on HOST (a node's name or address) as ssh would: in the node's namespaces, through
# a shell, with a fresh login environment (PATH, HOME, the root permission of Open MPI) instead of
# the caller's -- what reaches the ranks is what mpirun forwards. Needs SIM_DIR (the cluster's
# directory; sim_mpirun sets it).
set -uo pipefail
while [[ $# -gt 0 && $1 == -* ]]; do shift; done  # ssh-style options: none apply
[[ $# -ge 2 ]] || { echo "usage: rsh-agent.sh HOST COMMAND..." >&2; exit 255; }
host=$1
shift
[[ -n ${SIM_DIR:-} && -f $SIM_DIR/state ]] || { echo "rsh-agent.sh: SIM_DIR names no running cluster" >&2; exit 255; }
name=""
while read -r key n a; do
  [[ $key == node && ($n == "$host" || $a == "$host") ]] && name=$n
done <"$SIM_DIR/state"
[[ -n $name ]] || { echo "rsh-agent.sh: no node $host in $SIM_DIR" >&2; exit 255; }
holder=$(cat "$SIM_DIR/run/$name.holder" 2>/dev/null)
# A node that is down answers like an unreachable host.
[[ -n $holder && -e /proc/$holder ]] || { echo "rsh-agent.sh: $host: node is down" >&2; exit 255; }
exec nsenter -t "$holder" -n -u -m -p --wd=/ -- env -i PATH="$PATH" HOME="${HOME:-/root}" \
  LANG=C.UTF-8 USER="$(id -un)" SHELL=/bin/sh OMPI_ALLOW_RUN_AS_ROOT=1 \
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 /bin/sh -c "$*"
