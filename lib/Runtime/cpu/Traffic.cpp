//===- Traffic.cpp - Bytes sent per peer and per collective --------------===//
//
// The runtime counts what it hands to MPI where it hands it over: every
// MPI_Isend of ptrain_send_start and ptrain_compressed_send_start (bytes and
// messages per destination rank), and every collective MPI call of
// ptrain_all_reduce_start, ptrain_all_gather_start,
// ptrain_reduce_scatter_start and each phase of
// ptrain_compressed_all_reduce_start (this rank's buffer: count x element
// size; the bytes a ring algorithm moves are 2 (N - 1) / N of an
// all-reduce's and (N - 1) / N of an all-gather's). Debug-mode fingerprints
// travel on a private duplicate and are not counted. A generated step reads
// the counters of its communicators per link (docs/CodegenCpu.md, "Traffic").
//
//===----------------------------------------------------------------------===//

#include "cpu/Comm.h"

using ptrain::runtime::fail;

namespace ptrain::runtime {
void countSend(ptrain_comm_t comm, int peer, int64_t bytes) {
  if (!comm->p2pTraffic || peer < 0 || peer >= comm->size)
    return;
  comm->p2pTraffic[peer] += bytes;
  comm->p2pTraffic[comm->size + peer] += 1;
}

void countCollective(ptrain_comm_t comm, int64_t bytes, bool newOperation) {
  comm->collectiveBytes += bytes;
  comm->collectiveCalls += newOperation ? 1 : 0;
}
} // namespace ptrain::runtime

extern "C" ptrain_status_t ptrain_comm_p2p_traffic(ptrain_comm_t comm, int32_t peer, int64_t *out_bytes,
                                                   int64_t *out_messages) {
  PTRAIN_CHECK_PTR(comm);
  PTRAIN_CHECK_PTR(out_bytes);
  PTRAIN_CHECK_PTR(out_messages);
  PTRAIN_CHECK_ARG(peer >= 0 && peer < comm->size, "peer %d is not a rank of this communicator of %d ranks", peer,
                   comm->size);
  *out_bytes = comm->p2pTraffic[peer];
  *out_messages = comm->p2pTraffic[comm->size + peer];
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_comm_collective_traffic(ptrain_comm_t comm, int64_t *out_bytes,
                                                          int64_t *out_operations) {
  PTRAIN_CHECK_PTR(comm);
  PTRAIN_CHECK_PTR(out_bytes);
  PTRAIN_CHECK_PTR(out_operations);
  *out_bytes = comm->collectiveBytes;
  *out_operations = comm->collectiveCalls;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_comm_reset_traffic(ptrain_comm_t comm) {
  PTRAIN_CHECK_PTR(comm);
  for (int i = 0; i < 2 * comm->size; ++i)
    comm->p2pTraffic[i] = 0;
  comm->collectiveBytes = 0;
  comm->collectiveCalls = 0;
  return PTRAIN_OK;
}
