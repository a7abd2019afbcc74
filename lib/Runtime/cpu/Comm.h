//===- Comm.h - Communicator and request objects over MPI -------*- C++ -*-===//
//
// The definitions behind the opaque ptrain_comm_t and ptrain_request_t of the
// CPU target, shared by Comm.cpp (communicators) and Request.cpp (nonblocking
// operations and the deadline).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_COMM_H
#define PTRAIN_RUNTIME_CPU_COMM_H

#include "common/Status.h"

#include <mpi.h>

struct ptrain_comm {
  MPI_Comm mpi = MPI_COMM_NULL;
  int rank = -1;
  int size = 0;
  /// The deadline of every wait on this communicator, in seconds.
  double timeoutS = 300.0;
  /// Set when a deadline passed on an operation MPI could not cancel: the
  /// communicator may still deliver into a caller's buffer, so every later
  /// operation on it fails until it is aborted or destroyed.
  bool broken = false;
};

struct ptrain_request {
  enum class Kind { Send, Recv, AllReduce, Barrier };
  MPI_Request mpi = MPI_REQUEST_NULL;
  Kind kind = Kind::Send;
  ptrain_comm *comm = nullptr;
  int peer = -1;
  int tag = 0;
  int64_t bytes = 0;
  // All-reduce only: where the result lands and how to finish AVG.
  void *recvBuf = nullptr;
  int64_t count = 0;
  ptrain_dtype_t dtype = PTRAIN_DTYPE_F32;
  ptrain_reduce_op_t op = PTRAIN_REDUCE_SUM;
};

namespace ptrain::runtime {
/// Returns PTRAIN_ERROR_COMM for a failed MPI call `what`, with MPI's text.
ptrain_status_t failMpi(const char *call, int mpiError, const char *what);
} // namespace ptrain::runtime

/// Propagates a failing MPI call as PTRAIN_ERROR_COMM with MPI's error text.
#define PTRAIN_MPI_RETURN_IF_ERROR(expr)                                       \
  do {                                                                         \
    int ptrainMpiError_ = (expr);                                              \
    if (ptrainMpiError_ != MPI_SUCCESS)                                        \
      return ::ptrain::runtime::failMpi(__func__, ptrainMpiError_, #expr);     \
  } while (0)

#endif // PTRAIN_RUNTIME_CPU_COMM_H
