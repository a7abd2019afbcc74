//===- Request.cpp - Nonblocking p2p, all-reduce and the deadline ---------===//
//
// Every operation starts nonblocking (MPI_Isend, MPI_Irecv, MPI_Iallreduce,
// MPI_Ibarrier, and the collectives of Collectives.cpp) and completes in
// ptrain_wait, which polls MPI_Test until the communicator's deadline and then
// returns PTRAIN_ERROR_DEADLINE_EXCEEDED with the operation, the peer and the
// byte count instead of hanging (DESIGN.md decision 9: the watchdog; the CPU
// counterpart of ncclCommGetAsyncError). Multi-phase operations (compressed
// collectives) carry a Continuation that posts their next phase; each phase
// gets the full deadline.
//
//===----------------------------------------------------------------------===//

#include "cpu/Comm.h"

#include <climits>
#include <cstdio>
#include <new>
#include <thread>

using ptrain::runtime::Clock;
using ptrain::runtime::fail;

namespace {
/// Polls before the waiter starts sleeping between tests, and the sleep: a
/// spinning rank steals the core of the peer it waits for when ranks
/// outnumber cores (ENV.md, "Many MPI ranks on 2 cores").
constexpr int kSpinPolls = 64;
constexpr std::chrono::microseconds kPollSleep{50};
/// How long a cancelled receive may take to report its cancellation.
constexpr std::chrono::seconds kCancelGrace{1};

const char *reduceName(ptrain_reduce_op_t op) { return op == PTRAIN_REDUCE_AVG ? "avg" : "sum"; }

/// "recv from peer 1 of comm size 2 (tag 7, 64 bytes)" and the like.
void describe(const ptrain_request &req, char *buf, size_t size) {
  using Kind = ptrain_request::Kind;
  using ptrain::runtime::dtypeName;
  const long long bytes = static_cast<long long>(req.bytes);
  const long long count = static_cast<long long>(req.count);
  switch (req.kind) {
  case Kind::Send:
  case Kind::Recv:
    std::snprintf(buf, size, "%s peer %d of comm size %d (tag %d, %lld bytes)",
                  req.kind == Kind::Send ? "send to" : "recv from", req.peer, req.comm->size, req.tag, bytes);
    return;
  case Kind::AllReduce:
    std::snprintf(buf, size,
                  "all_reduce (%s, %s, %lld elements, %lld bytes) over %d "
                  "ranks as rank %d",
                  reduceName(req.op), dtypeName(req.dtype), count, bytes, req.comm->size, req.comm->rank);
    return;
  case Kind::AllGather:
    std::snprintf(buf, size,
                  "all_gather (%s, %lld elements per rank, %lld bytes) over "
                  "%d ranks as rank %d",
                  dtypeName(req.dtype), count, bytes, req.comm->size, req.comm->rank);
    return;
  case Kind::ReduceScatter:
    std::snprintf(buf, size,
                  "reduce_scatter (%s, %s, %lld elements per rank, %lld "
                  "bytes) over %d ranks as rank %d",
                  reduceName(req.op), dtypeName(req.dtype), count, bytes, req.comm->size, req.comm->rank);
    return;
  case Kind::Barrier:
    std::snprintf(buf, size, "barrier over %d ranks as rank %d", req.comm->size, req.comm->rank);
    return;
  case Kind::Compressed:
    req.next->describe(buf, size);
    return;
  }
}

/// An Orphan's release of a request (and its continuation).
void releaseRequest(void *owner) { ptrain::runtime::deleteRequest(static_cast<ptrain_request *>(owner)); }

/// describe() and, when the driver set one, " at step N".
void describeAtStep(const ptrain_request &req, char *buf, size_t size) {
  describe(req, buf, size);
  ptrain::runtime::appendStep(buf, size);
}

ptrain_status_t checkP2P(const char *call, ptrain_comm_t comm, const void *buf, int64_t numBytes, int32_t peer,
                         int32_t tag, ptrain_request_t *out) {
  if (!out)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'out_request' must not be null");
  *out = nullptr;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkComm(call, comm));
  if (numBytes < 0 || numBytes > INT_MAX)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "num_bytes must be in [0, %d], got %lld", INT_MAX,
                static_cast<long long>(numBytes));
  if (!buf && numBytes > 0)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'buf' must not be null");
  if (peer < 0 || peer >= comm->size)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "peer %d is not a rank of the communicator (size %d)", peer,
                comm->size);
  if (tag < 0)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "tag must be >= 0, got %d", tag);
  return PTRAIN_OK;
}

/// Divides an AVG all-reduce result by the communicator size.
void finishAllReduce(const ptrain_request &req) {
  if (req.op != PTRAIN_REDUCE_AVG)
    return;
  if (req.dtype == PTRAIN_DTYPE_F64) {
    auto *data = static_cast<double *>(req.recvBuf);
    const double inv = 1.0 / req.comm->size;
    for (int64_t i = 0; i < req.count; ++i)
      data[i] *= inv;
  } else if (req.dtype == PTRAIN_DTYPE_F32) {
    auto *data = static_cast<float *>(req.recvBuf);
    const float inv = 1.0f / static_cast<float>(req.comm->size);
    for (int64_t i = 0; i < req.count; ++i)
      data[i] *= inv;
  } else {
    ptrain::runtime::scaleHalf(req.dtype, req.recvBuf, req.count, 1.0f / static_cast<float>(req.comm->size));
  }
}
} // namespace

namespace ptrain::runtime {
ptrain_status_t checkComm(const char *call, ptrain_comm_t comm) {
  if (!comm)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'comm' must not be null");
  if (comm->broken)
    return fail(PTRAIN_ERROR_COMM, call,
                "the communicator is broken by an earlier deadline error; "
                "abort or destroy it");
  return PTRAIN_OK;
}

ptrain_request *newRequest(ptrain_request::Kind kind, ptrain_comm_t comm) {
  auto *req = new (std::nothrow) ptrain_request();
  if (req) {
    req->kind = kind;
    req->comm = comm;
  }
  return req;
}

void deleteRequest(ptrain_request *req) {
  if (req->debugMpi != MPI_REQUEST_NULL)
    MPI_Request_free(&req->debugMpi);
  delete req->next;
  delete req;
}

void orphan(ptrain_comm_t comm, MPI_Request mpi, void (*release)(void *owner), void *owner) {
  auto *record = new (std::nothrow) Orphan();
  if (!record)
    return;
  record->mpi = mpi;
  record->release = release;
  record->owner = owner;
  record->next = comm->orphans;
  comm->orphans = record;
}

int releaseOrphans(ptrain_comm_t comm) {
  int remaining = 0;
  Orphan **link = &comm->orphans;
  while (Orphan *record = *link) {
    int done = 0;
    MPI_Status status;
    // An error also completes (and frees) the MPI request.
    if (record->mpi == MPI_REQUEST_NULL || MPI_Test(&record->mpi, &done, &status) != MPI_SUCCESS || done) {
      *link = record->next;
      record->release(record->owner);
      delete record;
    } else {
      link = &record->next;
      ++remaining;
    }
  }
  return remaining;
}

Clock::time_point deadlineIn(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int pollUntil(MPI_Request *req, Clock::time_point deadline, MPI_Status *status, int *mpiError) {
  for (int poll = 0;; ++poll) {
    int done = 0;
    int err = MPI_Test(req, &done, status);
    if (err != MPI_SUCCESS) {
      *mpiError = err;
      return -1;
    }
    if (done)
      return 1;
    if (Clock::now() >= deadline)
      return 0;
    if (poll >= kSpinPolls)
      std::this_thread::sleep_for(kPollSleep);
  }
}

} // namespace ptrain::runtime

namespace {
/// Starts a point-to-point transfer of `num_bytes` with `peer`: the checks and request bookkeeping shared by
/// send and receive; `post` is MPI_Isend or MPI_Irecv (named `mpiName` in errors).
template <typename PostFn>
ptrain_status_t startP2P(const char *call, ptrain_request::Kind kind, ptrain_comm_t comm, const void *buf,
                         int64_t num_bytes, int32_t peer, int32_t tag, ptrain_request_t *out_request,
                         const char *mpiName, PostFn post) {
  PTRAIN_RETURN_IF_ERROR(checkP2P(call, comm, buf, num_bytes, peer, tag, out_request));
  ptrain_request *req = ptrain::runtime::newRequest(kind, comm);
  if (!req)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "cannot allocate a request");
  req->peer = peer;
  req->tag = tag;
  req->bytes = num_bytes;
  const bool send = kind == ptrain_request::Kind::Send;
  ptrain_status_t st = send ? ptrain::runtime::postSendFingerprint(call, comm, "send", num_bytes, peer, tag, req)
                            : ptrain::runtime::checkRecvFingerprint(call, comm, "recv", num_bytes, peer, tag);
  if (st != PTRAIN_OK) {
    ptrain::runtime::deleteRequest(req);
    return st;
  }
  int err = post(&req->mpi);
  if (err != MPI_SUCCESS) {
    ptrain::runtime::deleteRequest(req);
    return ptrain::runtime::failMpi(call, err, mpiName);
  }
  if (send)
    ptrain::runtime::countSend(comm, peer, num_bytes);
  *out_request = req;
  return PTRAIN_OK;
}
} // namespace

extern "C" ptrain_status_t ptrain_send_start(ptrain_comm_t comm, const void *buf, int64_t num_bytes, int32_t peer,
                                             int32_t tag, ptrain_request_t *out_request) {
  return startP2P(
      __func__, ptrain_request::Kind::Send, comm, buf, num_bytes, peer, tag, out_request, "MPI_Isend",
      [&](MPI_Request *r) { return MPI_Isend(buf, static_cast<int>(num_bytes), MPI_BYTE, peer, tag, comm->mpi, r); });
}

extern "C" ptrain_status_t ptrain_recv_start(ptrain_comm_t comm, void *buf, int64_t num_bytes, int32_t peer,
                                             int32_t tag, ptrain_request_t *out_request) {
  return startP2P(
      __func__, ptrain_request::Kind::Recv, comm, buf, num_bytes, peer, tag, out_request, "MPI_Irecv",
      [&](MPI_Request *r) { return MPI_Irecv(buf, static_cast<int>(num_bytes), MPI_BYTE, peer, tag, comm->mpi, r); });
}

extern "C" ptrain_status_t ptrain_all_reduce_start(ptrain_comm_t comm, const void *send_buf, void *recv_buf,
                                                   int64_t count, ptrain_dtype_t dtype, ptrain_reduce_op_t op,
                                                   ptrain_request_t *out_request) {
  PTRAIN_CHECK_PTR(out_request);
  *out_request = nullptr;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkComm(__func__, comm));
  PTRAIN_CHECK_ARG(count >= 0 && count <= INT_MAX, "count must be in [0, %d], got %lld", INT_MAX,
                   static_cast<long long>(count));
  PTRAIN_CHECK_ARG(op == PTRAIN_REDUCE_SUM || op == PTRAIN_REDUCE_AVG, "unsupported reduction %d (sum = 0, avg = 1)",
                   op);
  PTRAIN_CHECK_ARG(count == 0 || (send_buf && recv_buf), "'send_buf' and 'recv_buf' must not be null");
  MPI_Datatype type;
  MPI_Op mpiOp;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::sumOp(__func__, dtype, &type, &mpiOp));
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkCollectiveFingerprint(__func__, comm, "all_reduce", count, dtype, op));
  ptrain_request *req = ptrain::runtime::newRequest(ptrain_request::Kind::AllReduce, comm);
  if (!req)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate a request");
  req->bytes = count * ptrain::runtime::dtypeBytes(dtype);
  req->recvBuf = recv_buf;
  req->count = count;
  req->dtype = dtype;
  req->op = op;
  const void *sendArg = send_buf == recv_buf ? MPI_IN_PLACE : send_buf;
  int err = MPI_Iallreduce(sendArg, recv_buf, static_cast<int>(count), type, mpiOp, comm->mpi, &req->mpi);
  if (err != MPI_SUCCESS) {
    ptrain::runtime::deleteRequest(req);
    return ptrain::runtime::failMpi(__func__, err, "MPI_Iallreduce");
  }
  ptrain::runtime::countCollective(comm, req->bytes, true);
  *out_request = req;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_barrier_start(ptrain_comm_t comm, ptrain_request_t *out_request) {
  PTRAIN_CHECK_PTR(out_request);
  *out_request = nullptr;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkComm(__func__, comm));
  PTRAIN_RETURN_IF_ERROR(
      ptrain::runtime::checkCollectiveFingerprint(__func__, comm, "barrier", 0, PTRAIN_DTYPE_F32, 0));
  ptrain_request *req = ptrain::runtime::newRequest(ptrain_request::Kind::Barrier, comm);
  if (!req)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate a request");
  int err = MPI_Ibarrier(comm->mpi, &req->mpi);
  if (err != MPI_SUCCESS) {
    ptrain::runtime::deleteRequest(req);
    return ptrain::runtime::failMpi(__func__, err, "MPI_Ibarrier");
  }
  *out_request = req;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_wait(ptrain_request_t request) {
  PTRAIN_CHECK_PTR(request);
  ptrain_request &req = *request;
  // The operation's description is formatted only when a message needs it
  // (a wait that succeeds pays nothing for it), always before the request is
  // freed, and for a multi-phase operation names the phase that failed.
  char what[512];
  auto describeNow = [&]() -> const char * {
    describeAtStep(req, what, sizeof(what));
    return what;
  };
  auto deadline = ptrain::runtime::deadlineIn(req.comm->timeoutS);
  for (;;) {
    MPI_Status status;
    int mpiError = MPI_SUCCESS;
    const int polled = ptrain::runtime::pollUntil(&req.mpi, deadline, &status, &mpiError);
    if (polled < 0) {
      // MPI completed (and freed) the request with an error.
      ptrain_status_t result = ptrain::runtime::failMpi(__func__, mpiError, describeNow());
      ptrain::runtime::deleteRequest(request);
      return result;
    }
    if (polled == 0)
      break;
    ptrain_status_t result = PTRAIN_OK;
    if (req.kind == ptrain_request::Kind::Recv) {
      int received = 0;
      MPI_Get_count(&status, MPI_BYTE, &received);
      if (received != req.bytes)
        result = fail(PTRAIN_ERROR_MISMATCH, __func__,
                      "%s: received %d bytes, expected %lld; the peer sent "
                      "a message of another size",
                      describeNow(), received, static_cast<long long>(req.bytes));
    } else if (req.kind == ptrain_request::Kind::AllReduce || req.kind == ptrain_request::Kind::ReduceScatter) {
      finishAllReduce(req);
    } else if (req.next) {
      bool more = false;
      result = req.next->step(req, status, &more);
      if (result == PTRAIN_OK && more) {
        // The next phase is posted: it gets the full deadline.
        deadline = ptrain::runtime::deadlineIn(req.comm->timeoutS);
        continue;
      }
    }
    // Debug mode: the fingerprint of a send completes with the send.
    if (result == PTRAIN_OK && req.debugMpi != MPI_REQUEST_NULL) {
      int polledFp = ptrain::runtime::pollUntil(&req.debugMpi, deadline, &status, &mpiError);
      if (polledFp == 0) {
        req.comm->broken = true;
        result = fail(PTRAIN_ERROR_DEADLINE_EXCEEDED, __func__,
                      "%s: its debug fingerprint was not received within %g "
                      "s (PTRAIN_COMM_TIMEOUT_S); the communicator is now "
                      "broken",
                      describeNow(), req.comm->timeoutS);
        // The fingerprint send stays posted inside MPI and reads the
        // request's payload: the communicator keeps the request until it
        // completes.
        const MPI_Request fingerprint = req.debugMpi;
        req.debugMpi = MPI_REQUEST_NULL;
        ptrain::runtime::orphan(req.comm, fingerprint, releaseRequest, request);
        return result;
      } else if (polledFp < 0) {
        req.debugMpi = MPI_REQUEST_NULL;
        result = ptrain::runtime::failMpi(__func__, mpiError, describeNow());
      }
    }
    ptrain::runtime::deleteRequest(request);
    return result;
  }

  // Past the deadline. A receive can be cancelled, and then the caller's
  // buffer is free again; anything else stays posted inside MPI, so the
  // communicator is marked broken (only abort or destroy remain).
  describeNow();
  bool released = false;
  const bool receive = req.kind == ptrain_request::Kind::Recv || (req.next && req.next->isReceive());
  if (receive && MPI_Cancel(&req.mpi) == MPI_SUCCESS) {
    const auto graceEnd = Clock::now() + kCancelGrace;
    while (Clock::now() < graceEnd) {
      int done = 0;
      MPI_Status status;
      if (MPI_Test(&req.mpi, &done, &status) != MPI_SUCCESS)
        break;
      if (done) {
        // Either cancelled, or matched at the last moment; both release the
        // buffer, and the caller gets the deadline error either way.
        released = true;
        break;
      }
      std::this_thread::sleep_for(kPollSleep);
    }
  }
  if (!released)
    req.comm->broken = true;
  const double timeoutS = req.comm->timeoutS;
  if (released || !req.next) {
    ptrain::runtime::deleteRequest(request);
  } else {
    // MPI may still write into the continuation's buffers: the communicator
    // keeps them (and the request) until MPI has completed the operation,
    // rather than hand freed memory to MPI; ptrain_comm_destroy frees them.
    req.debugMpi = MPI_REQUEST_NULL;
    ptrain::runtime::orphan(req.comm, req.mpi, releaseRequest, request);
  }
  return fail(PTRAIN_ERROR_DEADLINE_EXCEEDED, __func__,
              "%s did not complete within %g s (PTRAIN_COMM_TIMEOUT_S): the "
              "peer(s) never posted the matching operation or are stuck%s",
              what, timeoutS, released ? "" : "; the communicator is now broken");
}
