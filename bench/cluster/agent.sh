#!/bin/sh
# OpenMPI's rsh agent for the emulated cluster (bench/cluster/run.sh): mpirun, inside namespace node0, starts
# the daemon of "host" 10.77.0.2 with `agent.sh 10.77.0.2 <command...>` as it would with ssh; this runs the
# command in namespace node1, pinned to core 1 (its rank inherits the affinity).
# The map host -> namespace:core comes from PTRAIN_CLUSTER_HOSTS ("10.77.0.1=node0:0 10.77.0.2=node1:1").
host=$1
shift
for entry in $PTRAIN_CLUSTER_HOSTS; do
  if [ "${entry%%=*}" = "$host" ]; then
    target=${entry#*=}
    exec ip netns exec "${target%%:*}" taskset -c "${target#*:}" /bin/sh -c "$*"
  fi
done
echo "agent.sh: host '$host' is not in PTRAIN_CLUSTER_HOSTS ('$PTRAIN_CLUSTER_HOSTS')" >&2
exit 1
