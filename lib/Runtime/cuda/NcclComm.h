//===- NcclComm.h - The NCCL communicator and its watchdog -------*- C++ -*-===//
//
// ptrain_nccl_comm (cuda/Nccl.cpp) and the helpers that the calls enqueuing
// NCCL operations share: the compressed all-reduce (CompressedAllReduce.cu)
// posts its phases as Nccl.cpp's collectives do, records them for the
// watchdog (ptrain_nccl_wait) and counts the bytes it hands to NCCL in the
// same counters.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CUDA_NCCLCOMM_H
#define PTRAIN_RUNTIME_CUDA_NCCLCOMM_H

#include "cuda/Device.h"

#include <nccl.h>

#include <vector>

struct ptrain_nccl_comm {
  ncclComm_t comm = nullptr;
  int32_t rank = 0, size = 0;
  double timeout = 300.0;
  bool aborted = false;
  char abortReason[1024] = "";
  cudaEvent_t event = nullptr;
  /// What was enqueued since the last wait ("all_reduce(count 4 f32 sum), ...").
  char pending[512] = "";
  int pendingCount = 0;
  /// Bytes and messages enqueued to each peer (sized at the first send), and the bytes of this rank's buffer in
  /// every collective and their number, since creation or the last ptrain_nccl_reset_traffic.
  std::vector<int64_t> sentBytes, sentMessages;
  int64_t collectiveBytes = 0, collectiveOps = 0;
};

namespace ptrain::cuda {

/// INVALID_ARGUMENT for a null communicator, COMM (naming why) for an aborted one.
ptrain_status_t checkUsable(const char *call, ptrain_nccl_comm *c);

/// A synchronous NCCL result: success and ncclInProgress (nonblocking mode) pass, anything else is a COMM error
/// with NCCL's text.
ptrain_status_t checkResult(const char *call, ncclComm_t comm, ncclResult_t r, const char *what);

/// Polls the communicator's state until it leaves ncclInProgress; an error or the deadline aborts it.
ptrain_status_t settle(const char *call, ptrain_nccl_comm *c, const char *what);

/// After an operation was enqueued: records `what` for the watchdog's message and settles it (inside a
/// ptrain_nccl_group_start, registers the communicator instead).
ptrain_status_t enqueued(const char *call, ptrain_nccl_comm *c, const char *what);

/// Polls `event` (recorded after the operations `what` on comm) and NCCL's asynchronous error state until the
/// event completes: an error or the comm's deadline aborts comm and names `what`.
ptrain_status_t pollEvent(const char *call, ptrain_nccl_comm *comm, cudaEvent_t event, const char *what);

} // namespace ptrain::cuda

#endif // PTRAIN_RUNTIME_CUDA_NCCLCOMM_H
