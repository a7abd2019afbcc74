//===- Comm.h - Communicator and request objects over MPI -------*- C++ -*-===//
//
// The definitions behind the opaque ptrain_comm_t and ptrain_request_t of the
// CPU target, shared by Comm.cpp (communicators) and Request.cpp (nonblocking
// operations and the deadline).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_COMM_H
#define PTRAIN_RUNTIME_CPU_COMM_H

#include "common/Dtype.h"
#include "common/Status.h"

#include <chrono>
#include <cstddef>
#include <mpi.h>

struct ptrain_request;

namespace ptrain::runtime {
/// The phases of a multi-step operation (compressed collectives, compressed
/// send/recv) that run after its current MPI request completes. Owned by the
/// request; deleted with it, also when a deadline leaves MPI holding its
/// buffers (then the communicator keeps both until MPI completes, see Orphan).
class Continuation {
public:
  virtual ~Continuation() = default;
  /// Runs the local work after `req.mpi` completed with `status`, then either
  /// posts the next MPI request into `req.mpi` and sets `*more`, or finishes.
  virtual ptrain_status_t step(ptrain_request &req, const MPI_Status &status, bool *more) = 0;
  /// The operation and its current phase, for error messages.
  virtual void describe(char *buf, size_t size) const = 0;
  /// Whether the posted MPI request is a receive (cancellable at a deadline).
  virtual bool isReceive() const { return false; }
};

/// Memory that MPI may still write into after a deadline passed on an operation
/// it could not cancel (an uncancellable phase of a compressed operation, the
/// debug mode's fingerprint gather): the communicator keeps it, linked through
/// `next`, and `release(owner)` frees it once MPI reports `mpi` complete
/// (releaseOrphans, at ptrain_comm_destroy), rather than hand freed memory to
/// MPI or leak it.
struct Orphan {
  MPI_Request mpi = MPI_REQUEST_NULL;
  void (*release)(void *owner) = nullptr;
  void *owner = nullptr;
  Orphan *next = nullptr;
};
} // namespace ptrain::runtime

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
  /// Debug mode (PTRAIN_COMM_DEBUG=1 at creation): a duplicate of `mpi` that
  /// carries the operation fingerprints, the number of collectives started,
  /// and per peer the number of sends and receives started.
  MPI_Comm debugMpi = MPI_COMM_NULL;
  int64_t collectiveSeq = 0;
  int64_t *sendSeq = nullptr;
  int64_t *recvSeq = nullptr;
  /// Traffic counters (Traffic.cpp, ptrain_comm_p2p_traffic): per peer, the bytes and messages this rank sent
  /// (`size` entries each, one allocation: bytes then messages); the payload bytes this rank handed to the
  /// collectives' MPI calls and the number of collective operations it started.
  int64_t *p2pTraffic = nullptr;
  int64_t collectiveBytes = 0;
  int64_t collectiveCalls = 0;
  /// What deadlines left inside MPI (ptrain::runtime::Orphan), freed by ptrain_comm_destroy once MPI reports it
  /// complete.
  ptrain::runtime::Orphan *orphans = nullptr;
};

struct ptrain_request {
  enum class Kind { Send, Recv, AllReduce, Barrier, AllGather, ReduceScatter, Compressed };
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
  /// Compressed operations: what runs when `mpi` completes (owned).
  ptrain::runtime::Continuation *next = nullptr;
  /// Debug mode, sends: the fingerprint sent to the receiver.
  MPI_Request debugMpi = MPI_REQUEST_NULL;
  alignas(8) char debugPayload[64] = {};
};

namespace ptrain::runtime {
/// Returns PTRAIN_ERROR_COMM for a failed MPI call `what`, with MPI's text.
ptrain_status_t failMpi(const char *call, int mpiError, const char *what);

/// INVALID_ARGUMENT for a null comm, COMM for a broken one.
ptrain_status_t checkComm(const char *call, ptrain_comm_t comm);

/// A new request of `kind` on `comm`, or nullptr when out of memory.
ptrain_request *newRequest(ptrain_request::Kind kind, ptrain_comm_t comm);

/// Deletes a request and its continuation.
void deleteRequest(ptrain_request *req);

/// Hands memory that MPI may still write into until `mpi` completes to `comm` (Orphan): `release(owner)` runs once
/// MPI reports `mpi` complete. Out of memory for the record, the memory is leaked (never freed under MPI).
void orphan(ptrain_comm_t comm, MPI_Request mpi, void (*release)(void *owner), void *owner);

/// Releases every orphan of `comm` whose MPI operation has completed (one MPI_Test each); one still pending stays
/// allocated, since MPI may yet write into it. Returns how many remain.
int releaseOrphans(ptrain_comm_t comm);

using Clock = std::chrono::steady_clock;

/// The deadline `seconds` from now.
Clock::time_point deadlineIn(double seconds);

/// Polls `*req` until it completes (1), the deadline passes (0, the request
/// still posted) or MPI fails (-1, *mpiError set). Sleeps between polls once
/// it has spun a little, so oversubscribed ranks do not starve their peers.
int pollUntil(MPI_Request *req, Clock::time_point deadline, MPI_Status *status, int *mpiError);

/// Appends " at step N" to `buf` (of `size` bytes) when the driver set a
/// training step with ptrain_comm_set_step: every message of ptrain_wait and
/// of the debug mode names it.
void appendStep(char *buf, size_t size);

/// The MPI datatype and reduction for summing `dtype` (16-bit floats: a
/// user-defined MPI_Op adding in fp32, see Collectives.cpp).
ptrain_status_t sumOp(const char *call, ptrain_dtype_t dtype, MPI_Datatype *outType, MPI_Op *outOp);

/// data[i] *= factor for 16-bit floats (computed in fp32, rounded to nearest
/// even), the AVG of a 16-bit all-reduce.
void scaleHalf(ptrain_dtype_t dtype, void *data, int64_t count, float factor);

/// Frees the user-defined MPI_Ops (before MPI_Finalize).
void freeUserOps();

/// Debug mode (Fingerprint.cpp). Fingerprints of collectives: every rank of
/// `comm` exchanges (operation, count, dtype, reduction) before the operation
/// and a mismatch is a MISMATCH error naming both ranks' operations. No-ops
/// when debug mode is off.
ptrain_status_t checkCollectiveFingerprint(const char *call, ptrain_comm_t comm, const char *opName, int64_t count,
                                           ptrain_dtype_t dtype, int32_t extra);
/// Point-to-point: the sender posts its fingerprint (kept in req->debugMpi),
/// the receiver waits for it (until the deadline) and compares.
ptrain_status_t postSendFingerprint(const char *call, ptrain_comm_t comm, const char *opName, int64_t bytes,
                                    int32_t peer, int32_t tag, ptrain_request *req);
ptrain_status_t checkRecvFingerprint(const char *call, ptrain_comm_t comm, const char *opName, int64_t bytes,
                                     int32_t peer, int32_t tag);
/// Traffic counters (Traffic.cpp): `bytes` sent to `peer` by one point-to-point message; `bytes` of this
/// rank's buffer in one MPI collective call, `newOperation` for the first call of a ptrain_*_start operation.
void countSend(ptrain_comm_t comm, int peer, int64_t bytes);
void countCollective(ptrain_comm_t comm, int64_t bytes, bool newOperation);

/// Sets up / frees a communicator's debug state (reads PTRAIN_COMM_DEBUG).
ptrain_status_t initDebug(const char *call, ptrain_comm_t comm);
void freeDebug(ptrain_comm_t comm);
} // namespace ptrain::runtime

/// Propagates a failing MPI call as PTRAIN_ERROR_COMM with MPI's error text.
#define PTRAIN_MPI_RETURN_IF_ERROR(expr)                                                                               \
  do {                                                                                                                 \
    int ptrainMpiError_ = (expr);                                                                                      \
    if (ptrainMpiError_ != MPI_SUCCESS)                                                                                \
      return ::ptrain::runtime::failMpi(__func__, ptrainMpiError_, #expr);                                             \
  } while (0)

#endif // PTRAIN_RUNTIME_CPU_COMM_H
