#!/usr/bin/env bash
# The emulated link's one-way time per message size (bench/README.md "cluster", 2026-12-07): the namespaces and
# veth pair of run.sh, tc tbf at RATE on both ends with each BURST, and pingpong.c (built by run.sh into OUT)
# at the message sizes of the bundled GPT's pp = 2 plans (PowerSGD rank 4 code 6,144 B, 4-bit activation
# 16,896 B, 8-bit activation 33,280 B, fp32 activation / tied gradient 131,072 B, 1 MiB). The timing model
# prices a message at latency + bytes / rate (or, calibrated, from ptrain-calibrate's table of isolated
# messages); this shows where TCP through tbf does not, and (duplex_one_way_s) what a message costs while the
# other direction carries one of the same size, as 1F1B's crossing forward and backward sends do.
#
#   sudo bash bench/cluster/pingpong_sizes.sh [OUT (default out/bench-cluster)] [RATE (default 20000000bit)] [BURSTS (default "32768 4096")]
#
# Refuses like run.sh when not root or when node0/node1 exist; removes what it created on exit.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT=${1:-$HERE/../../out/bench-cluster}
RATE=${2:-20000000bit}
BURSTS=${3:-"32768 4096"}
[ "$(id -u)" = 0 ] || { echo "pingpong_sizes.sh: error: must run as root" >&2; exit 2; }
[ -x "$OUT/pingpong" ] || { echo "pingpong_sizes.sh: error: no $OUT/pingpong (run bench/cluster/run.sh first)" >&2; exit 2; }
for ns in node0 node1; do
  if ip netns list | grep -qw "^$ns"; then
    echo "pingpong_sizes.sh: error: namespace $ns exists (a run.sh in progress?)" >&2
    exit 2
  fi
done
created=()
cleanup() { for ns in "${created[@]}"; do ip netns del "$ns" 2> /dev/null || true; done; }
trap cleanup EXIT
for ns in node0 node1; do ip netns add $ns; created+=($ns); ip -n $ns link set lo up; done
ip link add veth0 netns node0 type veth peer name veth1 netns node1
ip -n node0 addr add 10.77.0.1/24 dev veth0 && ip -n node0 link set veth0 up
ip -n node1 addr add 10.77.0.2/24 dev veth1 && ip -n node1 link set veth1 up
export PTRAIN_CLUSTER_HOSTS="10.77.0.1=node0:0 10.77.0.2=node1:1" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for burst in $BURSTS; do
  for end in node0:veth0 node1:veth1; do
    ip netns exec "${end%%:*}" tc qdisc replace dev "${end#*:}" root tbf rate "$RATE" burst "$burst" latency 50ms
  done
  for size in 6144 16896 33280 131072 1048576; do
    echo -n "rate $RATE burst $burst size $size: "
    ip netns exec node0 taskset -c 0 mpirun -np 2 --host 10.77.0.1:1,10.77.0.2:1 --mca plm_rsh_agent "$HERE/agent.sh" \
      --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 --bind-to none \
      "$OUT/pingpong" "$size" 10 duplex 2>&1 | grep '^{' || echo failed
  done
done
