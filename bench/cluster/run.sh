#!/usr/bin/env bash
# The emulated two-node cluster (issue 10, bench/README.md "cluster"): two network namespaces node0 and node1
# joined by a veth pair (veth0 10.77.0.1 <-> veth1 10.77.0.2), the link shaped with tc tbf on both ends (the
# driver sets the rate), one MPI rank per namespace pinned to its own core, MPI over TCP on the veth addresses.
# This script checks the machine, creates the namespaces, removes them on exit (also on error or Ctrl-C), and
# runs the driver bench/cluster/cluster.py with its arguments:
#
#   sudo bash bench/cluster/run.sh [--build build] [--out out/bench-cluster] [--model M.onnx --data DIR] [--grid pp2|dp2|tp2]
#                                  [--precision fp32] [--steps 40] [--warmup 5]
#                                  [--policies none,optimus-cc,mcbench,auto] [--rates occ,1gbit,20mbit] [--rounds 3] [--nice N]
#                                  [--ttt-steps N [--ttt-val-every K] [--ttt-val-batches B] [--ttt-max-factor F]]
#   bash bench/cluster/run.sh --help
#
# Refuses (exit 2, nothing created) when not root, when `ip netns`, tc, taskset or mpirun is missing, when the
# machine has fewer than 2 cores, or when a namespace node0/node1 already exists (another run, or a leftover:
# `ip netns del node0; ip netns del node1`). PTRAIN_CLUSTER_IP names the ip tool (default: ip).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PYTHON=${PYTHON:-/usr/bin/python3}  # Debian's: numpy for the CPU probe
IP=${PTRAIN_CLUSTER_IP:-ip}
NS=(node0 node1)
DEV=(veth0 veth1)
ADDR=(10.77.0.1 10.77.0.2)

refuse() {
  echo "bench/cluster/run.sh: error: $*" >&2
  exit 2
}

# Argument errors first (no root needed): the driver parses them and exits.
"$PYTHON" "$HERE/cluster.py" --check-args "$@"
for a in "$@"; do
  if [ "$a" = "-h" ] || [ "$a" = "--help" ]; then
    exit 0
  fi
done

# Who runs it first: a non-root user hears that, whatever tools the machine has (a fresh machine has no iproute2).
[ "$(id -u)" = 0 ] || refuse "must run as root (it creates network namespaces and shapes them with tc); try sudo"
command -v "$IP" > /dev/null 2>&1 || refuse "'$IP' not found (Debian: iproute2)"
"$IP" netns list > /dev/null 2>&1 || refuse "'$IP netns' does not work here (needs iproute2 with netns support)"
for tool in tc taskset mpirun mpicc; do
  command -v "$tool" > /dev/null 2>&1 || refuse "'$tool' not found (Debian: iproute2, util-linux, openmpi-bin, libopenmpi-dev)"
done
[ "$(nproc)" -ge 2 ] || refuse "needs 2 cores (one rank per core), this machine has $(nproc)"
for ns in "${NS[@]}"; do
  if "$IP" netns list | grep -qw "^$ns"; then
    refuse "network namespace '$ns' already exists (another run? else remove it: $IP netns del $ns)"
  fi
done

created=()
cleanup() {
  local rc=$?
  for ns in "${created[@]}"; do
    "$IP" netns del "$ns" 2> /dev/null || echo "bench/cluster/run.sh: warning: could not delete namespace $ns" >&2
  done
  [ ${#created[@]} -eq 0 ] || echo "bench/cluster/run.sh: removed namespaces ${created[*]}" >&2
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for ns in "${NS[@]}"; do
  "$IP" netns add "$ns"
  created+=("$ns")
  "$IP" -n "$ns" link set lo up
done
"$IP" link add "${DEV[0]}" netns "${NS[0]}" type veth peer name "${DEV[1]}" netns "${NS[1]}"
for i in 0 1; do
  "$IP" -n "${NS[$i]}" addr add "${ADDR[$i]}/24" dev "${DEV[$i]}"
  "$IP" -n "${NS[$i]}" link set "${DEV[$i]}" up
done

# The driver's view of the cluster: host address = namespace:core (agent.sh), namespace = veth device (tc).
export PTRAIN_CLUSTER_HOSTS="${ADDR[0]}=${NS[0]}:0 ${ADDR[1]}=${NS[1]}:1"
export PTRAIN_CLUSTER_LINKS="${NS[0]}=${DEV[0]} ${NS[1]}=${DEV[1]}"
export PTRAIN_CLUSTER_SUBNET="10.77.0.0/24"
export PTRAIN_CLUSTER_IP="$IP"
"$PYTHON" "$HERE/cluster.py" "$@"
