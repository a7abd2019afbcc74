//===- Nccl.cpp - NCCL communicators with a deadline watchdog -------------===//
//
// ptrain_nccl_comm_t: an NCCL communicator created in nonblocking mode
// (ncclConfig_t.blocking = 0), so that no NCCL call can block the host: every
// call that returns ncclInProgress is polled with ncclCommGetAsyncError until
// it settles or the communicator's deadline passes. ptrain_nccl_wait is the
// watchdog of the operations enqueued since the last wait: it records an
// event on the current stream and polls cudaEventQuery and
// ncclCommGetAsyncError; an asynchronous error or the deadline aborts the
// communicator (ncclCommAbort, which also stops kernels spinning on a peer
// that never posts) and returns a status naming the pending operations. The
// polling runs in the waiting thread (as the CPU's ptrain_wait), so there is
// no background thread to coordinate with. ptrain_nccl_wait_event is the same
// watchdog over one operation: the event its caller recorded after it (the
// pipeline's sends and receives, each on a communication stream of its own).
//
// The unique id is bootstrapped through the MPI communicator of the CPU
// runtime with its public API (an all-gather of rank 0's id).
//
// Traffic counters (ptrain_nccl_p2p_traffic, _collective_traffic, as the
// MPI communicators' ptrain_comm_*_traffic): every send and collective is
// counted when it is enqueued, in bytes of this rank's buffer.
//
//===----------------------------------------------------------------------===//

#include "common/Dtype.h"
#include "cuda/NcclComm.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

using namespace ptrain::cuda;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// The NCCL type of a dtype; `reduction` admits only the floating types.
ptrain_status_t ncclType(const char *call, ptrain_dtype_t dtype, bool reduction, ncclDataType_t *out) {
  switch (dtype) {
  case PTRAIN_DTYPE_F32:
    *out = ncclFloat32;
    return PTRAIN_OK;
  case PTRAIN_DTYPE_F64:
    *out = ncclFloat64;
    return PTRAIN_OK;
  case PTRAIN_DTYPE_F16:
    *out = ncclFloat16;
    return PTRAIN_OK;
  case PTRAIN_DTYPE_BF16:
    *out = ncclBfloat16;
    return PTRAIN_OK;
  case PTRAIN_DTYPE_I64:
    if (!reduction) {
      *out = ncclInt64;
      return PTRAIN_OK;
    }
    break;
  }
  return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "dtype %d is not supported here (%s)", dtype,
              reduction ? "sums take f32 (0), f64 (1), f16 (3), bf16 (4)" : "use f32, f64, i64, f16 or bf16");
}

ptrain_status_t ncclOp(const char *call, ptrain_reduce_op_t op, ncclRedOp_t *out) {
  if (op == PTRAIN_REDUCE_SUM || op == PTRAIN_REDUCE_AVG) {
    *out = op == PTRAIN_REDUCE_SUM ? ncclSum : ncclAvg;
    return PTRAIN_OK;
  }
  return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "unknown reduction %d (sum = 0, avg = 1)", op);
}

/// Aborts the communicator and remembers why (every later call reports it).
void abortComm(ptrain_nccl_comm *c, const char *reason) {
  if (c->aborted)
    return;
  ncclCommAbort(c->comm);
  c->comm = nullptr;
  c->aborted = true;
  std::snprintf(c->abortReason, sizeof(c->abortReason), "%s", reason);
}

} // namespace

namespace ptrain::cuda {

ptrain_status_t checkUsable(const char *call, ptrain_nccl_comm *c) {
  if (!c)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'comm' must not be null");
  if (c->aborted)
    return fail(PTRAIN_ERROR_COMM, call, "the communicator was aborted after: %s", c->abortReason);
  return PTRAIN_OK;
}

/// A synchronous NCCL result: success and ncclInProgress (nonblocking mode)
/// pass, anything else is a COMM error with NCCL's text.
ptrain_status_t checkResult(const char *call, ncclComm_t comm, ncclResult_t r, const char *what) {
  if (r == ncclSuccess || r == ncclInProgress)
    return PTRAIN_OK;
  return fail(PTRAIN_ERROR_COMM, call, "%s: %s (%s)", what, ncclGetErrorString(r),
              comm ? ncclGetLastError(comm) : ncclGetLastError(nullptr));
}

/// Polls the communicator's state until it leaves ncclInProgress; an error
/// or the deadline aborts it.
ptrain_status_t settle(const char *call, ptrain_nccl_comm *c, const char *what) {
  const Clock::time_point start = Clock::now();
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(c->comm, &state);
    if (r != ncclSuccess)
      state = r;
    if (state == ncclSuccess)
      return PTRAIN_OK;
    if (state != ncclInProgress) {
      char reason[512];
      std::snprintf(reason, sizeof(reason), "%s failed: %s (%s)", what, ncclGetErrorString(state),
                    ncclGetLastError(c->comm));
      abortComm(c, reason);
      return fail(PTRAIN_ERROR_COMM, call, "%s; the communicator was aborted (ncclCommAbort)", reason);
    }
    if (secondsSince(start) > c->timeout) {
      char reason[512];
      std::snprintf(reason, sizeof(reason), "%s did not settle within the %g s deadline (rank %d of %d)", what,
                    c->timeout, c->rank, c->size);
      abortComm(c, reason);
      return fail(PTRAIN_ERROR_DEADLINE_EXCEEDED, call, "%s; the communicator was aborted (ncclCommAbort)", reason);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

} // namespace ptrain::cuda

namespace {

/// Communicators used inside this thread's ncclGroupStart/End: settled at the end.
constexpr int kMaxGroupComms = 64;
thread_local int groupDepth = 0;
thread_local ptrain_nccl_comm *groupComms[kMaxGroupComms];
thread_local int groupCount = 0;

} // namespace

namespace ptrain::cuda {

/// After an operation was enqueued: records it for the watchdog's message and
/// settles it (or, inside a group, registers the communicator).
ptrain_status_t enqueued(const char *call, ptrain_nccl_comm *c, const char *what) {
  const size_t used = std::strlen(c->pending);
  if (used + 4 < sizeof(c->pending))
    std::snprintf(c->pending + used, sizeof(c->pending) - used, "%s%s", used ? ", " : "", what);
  ++c->pendingCount;
  if (groupDepth > 0) {
    for (int i = 0; i < groupCount; ++i)
      if (groupComms[i] == c)
        return PTRAIN_OK;
    if (groupCount == kMaxGroupComms)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "more than %d communicators in one group", kMaxGroupComms);
    groupComms[groupCount++] = c;
    return PTRAIN_OK;
  }
  return settle(call, c, what);
}

} // namespace ptrain::cuda

namespace {

/// The device of this process: LOCAL_RANK (torchrun) or
/// OMPI_COMM_WORLD_LOCAL_RANK (mpirun) modulo the device count, else the
/// bootstrap rank modulo it.
ptrain_status_t selectDevice(const char *call, int32_t rank, int *out) {
  int count = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  if (count < 1)
    return fail(PTRAIN_ERROR_DEVICE, call, "no CUDA device");
  long local = rank;
  for (const char *var : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    if (const char *value = std::getenv(var)) {
      char *end = nullptr;
      const long parsed = std::strtol(value, &end, 10);
      if (end == value || *end != '\0' || parsed < 0)
        return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s='%s' is not a non-negative integer", var, value);
      local = parsed;
      break;
    }
  }
  *out = static_cast<int>(local % count);
  return check(call, cudaSetDevice(*out), "cudaSetDevice");
}

ptrain_nccl_comm *newComm(const char *call) {
  auto *c = new (std::nothrow) ptrain_nccl_comm();
  if (!c)
    fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "cannot allocate a communicator");
  return c;
}

ptrain_status_t finishComm(const char *call, ptrain_nccl_comm *c, ptrain_nccl_comm_t *out) {
  PTRAIN_CUDA_RETURN_IF_ERROR(settle(call, c, "communicator creation"));
  int rank = 0, size = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(checkResult(call, c->comm, ncclCommUserRank(c->comm, &rank), "ncclCommUserRank"));
  PTRAIN_CUDA_RETURN_IF_ERROR(checkResult(call, c->comm, ncclCommCount(c->comm, &size), "ncclCommCount"));
  c->rank = rank;
  c->size = size;
  PTRAIN_CUDA_RETURN_IF_ERROR(
      check(call, cudaEventCreateWithFlags(&c->event, cudaEventDisableTiming), "cudaEventCreateWithFlags"));
  *out = c;
  return PTRAIN_OK;
}

} // namespace

namespace {
constexpr int kIdWords = 1 + (sizeof(ncclUniqueId) + 7) / 8;

/// The NCCL world of `size` ranks: this process's device, rank 0's unique id handed to every rank by
/// `exchange(record)` (which must leave rank 0's record on every rank; rank 0 takes part even without an id, so
/// the others learn of its failure instead of waiting for their deadline), then ncclCommInitRankConfig.
template <typename Exchange>
ptrain_status_t initWorld(const char *call, int32_t rank, int32_t size, double timeout, Exchange exchange,
                          ptrain_nccl_comm_t *out_comm) {
  int device = 0;
  const ptrain_status_t deviceStatus = selectDevice(call, rank, &device);
  int64_t record[kIdWords] = {};
  if (rank == 0 && deviceStatus == PTRAIN_OK) {
    ncclUniqueId id;
    const ncclResult_t r = ncclGetUniqueId(&id);
    if (r == ncclSuccess) {
      record[0] = 1;
      std::memcpy(&record[1], &id, sizeof(id));
    } else {
      checkResult(call, nullptr, r, "ncclGetUniqueId");
    }
  }
  char firstError[1024];
  std::snprintf(firstError, sizeof(firstError), "%s", ptrain_last_error());
  ptrain_status_t st = exchange(record);
  if (st != PTRAIN_OK)
    return st;
  if (deviceStatus != PTRAIN_OK) // the exchange succeeded: the message is still selectDevice's
    return deviceStatus;
  if (record[0] != 1)
    return fail(PTRAIN_ERROR_COMM, call, "rank 0 could not create an NCCL unique id%s%s",
                rank == 0 ? ": " : " (see rank 0's error)", rank == 0 ? firstError : "");
  ncclUniqueId id;
  std::memcpy(&id, &record[1], sizeof(id));
  ptrain_nccl_comm *c = newComm(call);
  if (!c)
    return PTRAIN_ERROR_OUT_OF_MEMORY;
  c->timeout = timeout;
  c->rank = rank;
  c->size = size;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  st = checkResult(call, nullptr, ncclCommInitRankConfig(&c->comm, size, id, rank, &config), "ncclCommInitRankConfig");
  if (st == PTRAIN_OK)
    st = finishComm(call, c, out_comm);
  if (st != PTRAIN_OK) {
    if (c->comm && !c->aborted)
      ncclCommAbort(c->comm);
    delete c;
  }
  return st;
}
} // namespace

extern "C" ptrain_status_t ptrain_nccl_comm_init(ptrain_comm_t bootstrap, ptrain_nccl_comm_t *out_comm) {
  PTRAIN_CUDA_CHECK_PTR(bootstrap);
  PTRAIN_CUDA_CHECK_PTR(out_comm);
  *out_comm = nullptr;
  int32_t rank = 0, size = 0;
  double timeout = 0.0;
  PTRAIN_CUDA_RETURN_IF_ERROR(ptrain_comm_rank(bootstrap, &rank));
  PTRAIN_CUDA_RETURN_IF_ERROR(ptrain_comm_size(bootstrap, &size));
  PTRAIN_CUDA_RETURN_IF_ERROR(ptrain_comm_timeout(bootstrap, &timeout));
  // An all-gather of every rank's record through MPI; rank 0's is the id.
  auto exchange = [&](int64_t *record) -> ptrain_status_t {
    int64_t *all = static_cast<int64_t *>(std::calloc(static_cast<size_t>(size) * kIdWords, sizeof(int64_t)));
    if (!all)
      return fail(PTRAIN_ERROR_OUT_OF_MEMORY, "ptrain_nccl_comm_init", "cannot allocate the id exchange");
    ptrain_request_t req = nullptr;
    ptrain_status_t st = ptrain_all_gather_start(bootstrap, record, all, kIdWords, PTRAIN_DTYPE_I64, &req);
    if (st == PTRAIN_OK)
      st = ptrain_wait(req);
    std::memcpy(record, all, sizeof(int64_t) * kIdWords);
    std::free(all);
    return st;
  };
  return initWorld(__func__, rank, size, timeout, exchange, out_comm);
}

extern "C" ptrain_status_t ptrain_nccl_comm_init_rendezvous(ptrain_rendezvous_t rendezvous,
                                                            ptrain_nccl_comm_t *out_comm) {
  PTRAIN_CUDA_CHECK_PTR(rendezvous);
  PTRAIN_CUDA_CHECK_PTR(out_comm);
  *out_comm = nullptr;
  int32_t rank = 0, size = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(ptrain_rendezvous_rank(rendezvous, &rank, &size));
  double timeout = 300.0;
  if (const char *value = std::getenv("PTRAIN_COMM_TIMEOUT_S")) {
    char *end = nullptr;
    timeout = std::strtod(value, &end);
    if (end == value || *end != '\0' || !(timeout > 0.0))
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "PTRAIN_COMM_TIMEOUT_S='%s' is not a number of seconds > 0",
                  value);
  }
  // Rank 0's record broadcast over the rendezvous' TCP connections.
  auto exchange = [&](int64_t *record) {
    return ptrain_rendezvous_broadcast(rendezvous, record, sizeof(int64_t) * kIdWords, 0);
  };
  return initWorld(__func__, rank, size, timeout, exchange, out_comm);
}

extern "C" ptrain_status_t ptrain_nccl_comm_split(ptrain_nccl_comm_t parent, int32_t color, int32_t key,
                                                  ptrain_nccl_comm_t *out_comm) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkUsable(__func__, parent));
  PTRAIN_CUDA_CHECK_PTR(out_comm);
  PTRAIN_CUDA_CHECK_ARG(color >= 0 || color == NCCL_SPLIT_NOCOLOR, "color must be >= 0 or -1 (none), got %d", color);
  *out_comm = nullptr;
  ptrain_nccl_comm *c = newComm(__func__);
  if (!c)
    return PTRAIN_ERROR_OUT_OF_MEMORY;
  c->timeout = parent->timeout;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ptrain_status_t st =
      checkResult(__func__, parent->comm, ncclCommSplit(parent->comm, color, key, &c->comm, &config), "ncclCommSplit");
  if (st == PTRAIN_OK)
    st = settle(__func__, parent, "ncclCommSplit");
  if (st == PTRAIN_OK && c->comm)
    st = finishComm(__func__, c, out_comm);
  if (st != PTRAIN_OK || !c->comm) {
    if (st != PTRAIN_OK && c->comm && !c->aborted)
      ncclCommAbort(c->comm);
    delete c;
  }
  return st;
}

extern "C" ptrain_status_t ptrain_nccl_comm_destroy(ptrain_nccl_comm_t comm) {
  if (!comm)
    return PTRAIN_OK;
  ptrain_status_t st = PTRAIN_OK;
  if (!comm->aborted) {
    st = checkResult(__func__, comm->comm, ncclCommFinalize(comm->comm), "ncclCommFinalize");
    if (st == PTRAIN_OK)
      st = settle(__func__, comm, "ncclCommFinalize");
    if (!comm->aborted)
      ncclCommDestroy(comm->comm);
  }
  if (comm->event)
    cudaEventDestroy(comm->event);
  delete comm;
  return st;
}

extern "C" ptrain_status_t ptrain_nccl_comm_rank(ptrain_nccl_comm_t comm, int32_t *out_rank) {
  PTRAIN_CUDA_CHECK_PTR(comm);
  PTRAIN_CUDA_CHECK_PTR(out_rank);
  *out_rank = comm->rank;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_nccl_comm_size(ptrain_nccl_comm_t comm, int32_t *out_size) {
  PTRAIN_CUDA_CHECK_PTR(comm);
  PTRAIN_CUDA_CHECK_PTR(out_size);
  *out_size = comm->size;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_nccl_p2p_traffic(ptrain_nccl_comm_t comm, int32_t peer, int64_t *out_bytes,
                                                   int64_t *out_messages) {
  PTRAIN_CUDA_CHECK_PTR(comm);
  PTRAIN_CUDA_CHECK_PTR(out_bytes);
  PTRAIN_CUDA_CHECK_PTR(out_messages);
  PTRAIN_CUDA_CHECK_ARG(peer >= 0 && peer < comm->size, "peer %d is outside [0, %d)", peer, comm->size);
  const bool any = comm->sentBytes.size() == static_cast<size_t>(comm->size);
  *out_bytes = any ? comm->sentBytes[peer] : 0;
  *out_messages = any ? comm->sentMessages[peer] : 0;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_nccl_collective_traffic(ptrain_nccl_comm_t comm, int64_t *out_bytes,
                                                          int64_t *out_operations) {
  PTRAIN_CUDA_CHECK_PTR(comm);
  PTRAIN_CUDA_CHECK_PTR(out_bytes);
  PTRAIN_CUDA_CHECK_PTR(out_operations);
  *out_bytes = comm->collectiveBytes;
  *out_operations = comm->collectiveOps;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_nccl_reset_traffic(ptrain_nccl_comm_t comm) {
  PTRAIN_CUDA_CHECK_PTR(comm);
  comm->sentBytes.assign(comm->sentBytes.size(), 0);
  comm->sentMessages.assign(comm->sentMessages.size(), 0);
  comm->collectiveBytes = comm->collectiveOps = 0;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_nccl_comm_set_timeout(ptrain_nccl_comm_t comm, double seconds) {
  PTRAIN_CUDA_CHECK_PTR(comm);
  PTRAIN_CUDA_CHECK_ARG(seconds > 0.0, "the deadline must be > 0 s, got %g", seconds);
  comm->timeout = seconds;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_nccl_group_start(void) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkResult(__func__, nullptr, ncclGroupStart(), "ncclGroupStart"));
  if (groupDepth++ == 0)
    groupCount = 0;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_nccl_group_end(void) {
  PTRAIN_CUDA_CHECK_ARG(groupDepth > 0, "no group is open (ptrain_nccl_group_start)");
  const ncclResult_t r = ncclGroupEnd();
  if (--groupDepth > 0)
    return checkResult(__func__, nullptr, r, "ncclGroupEnd");
  ptrain_status_t st = PTRAIN_OK;
  if (r != ncclSuccess && r != ncclInProgress)
    st = fail(PTRAIN_ERROR_COMM, __func__, "ncclGroupEnd: %s (%s)", ncclGetErrorString(r), ncclGetLastError(nullptr));
  // Settle every communicator of the group, even after a failure, so none is
  // left in progress.
  for (int i = 0; i < groupCount; ++i) {
    ptrain_nccl_comm *c = groupComms[i];
    if (c->aborted)
      continue;
    const ptrain_status_t cs = st == PTRAIN_OK ? settle(__func__, c, c->pending) : PTRAIN_OK;
    if (st == PTRAIN_OK)
      st = cs;
  }
  groupCount = 0;
  return st;
}

extern "C" ptrain_status_t ptrain_nccl_send(ptrain_nccl_comm_t comm, const void *buf, int64_t num_bytes, int32_t peer) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkUsable(__func__, comm));
  PTRAIN_CUDA_CHECK_SIZE(num_bytes);
  PTRAIN_CUDA_CHECK_ARG(num_bytes == 0 || buf, "'buf' must not be null");
  PTRAIN_CUDA_CHECK_ARG(peer >= 0 && peer < comm->size, "peer %d is outside [0, %d)", peer, comm->size);
  PTRAIN_CUDA_RETURN_IF_ERROR(checkResult(
      __func__, comm->comm, ncclSend(buf, static_cast<size_t>(num_bytes), ncclUint8, peer, comm->comm, currentStream()),
      "ncclSend"));
  if (comm->sentBytes.size() != static_cast<size_t>(comm->size)) {
    comm->sentBytes.assign(comm->size, 0);
    comm->sentMessages.assign(comm->size, 0);
  }
  comm->sentBytes[peer] += num_bytes;
  ++comm->sentMessages[peer];
  char what[96];
  std::snprintf(what, sizeof(what), "send(%lld bytes to %d)", static_cast<long long>(num_bytes), peer);
  return enqueued(__func__, comm, what);
}

extern "C" ptrain_status_t ptrain_nccl_recv(ptrain_nccl_comm_t comm, void *buf, int64_t num_bytes, int32_t peer) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkUsable(__func__, comm));
  PTRAIN_CUDA_CHECK_SIZE(num_bytes);
  PTRAIN_CUDA_CHECK_ARG(num_bytes == 0 || buf, "'buf' must not be null");
  PTRAIN_CUDA_CHECK_ARG(peer >= 0 && peer < comm->size, "peer %d is outside [0, %d)", peer, comm->size);
  PTRAIN_CUDA_RETURN_IF_ERROR(checkResult(
      __func__, comm->comm, ncclRecv(buf, static_cast<size_t>(num_bytes), ncclUint8, peer, comm->comm, currentStream()),
      "ncclRecv"));
  char what[96];
  std::snprintf(what, sizeof(what), "recv(%lld bytes from %d)", static_cast<long long>(num_bytes), peer);
  return enqueued(__func__, comm, what);
}

namespace {
/// The checks, the NCCL call (`post(type, red)`) and the watchdog record shared
/// by the collectives; `reduction` admits only floating types and needs `op`.
template <typename Post>
ptrain_status_t collective(const char *call, ptrain_nccl_comm *comm, const void *send_buf, void *recv_buf,
                           int64_t count, ptrain_dtype_t dtype, bool reduction, ptrain_reduce_op_t op, const char *name,
                           Post post) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkUsable(call, comm));
  if (count < 0)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'count' must be >= 0, got %lld", static_cast<long long>(count));
  if (count > 0 && (!send_buf || !recv_buf))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'send_buf' and 'recv_buf' must not be null");
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t red = ncclSum;
  PTRAIN_CUDA_RETURN_IF_ERROR(ncclType(call, dtype, reduction, &type));
  if (reduction)
    PTRAIN_CUDA_RETURN_IF_ERROR(ncclOp(call, op, &red));
  PTRAIN_CUDA_RETURN_IF_ERROR(checkResult(call, comm->comm, post(type, red), name));
  comm->collectiveBytes += count * ptrain::runtime::dtypeBytes(dtype);
  ++comm->collectiveOps;
  char what[96];
  std::snprintf(what, sizeof(what), "%s(count %lld %s%s)", name, static_cast<long long>(count),
                ptrain::runtime::dtypeName(dtype),
                !reduction                ? ""
                : op == PTRAIN_REDUCE_SUM ? " sum"
                                          : " avg");
  return enqueued(call, comm, what);
}
} // namespace

extern "C" ptrain_status_t ptrain_nccl_all_reduce(ptrain_nccl_comm_t comm, const void *send_buf, void *recv_buf,
                                                  int64_t count, ptrain_dtype_t dtype, ptrain_reduce_op_t op) {
  return collective(__func__, comm, send_buf, recv_buf, count, dtype, true, op, "all_reduce",
                    [&](ncclDataType_t type, ncclRedOp_t red) {
                      return ncclAllReduce(send_buf, recv_buf, static_cast<size_t>(count), type, red, comm->comm,
                                           currentStream());
                    });
}

extern "C" ptrain_status_t ptrain_nccl_all_gather(ptrain_nccl_comm_t comm, const void *send_buf, void *recv_buf,
                                                  int64_t count, ptrain_dtype_t dtype) {
  return collective(__func__, comm, send_buf, recv_buf, count, dtype, false, PTRAIN_REDUCE_SUM, "all_gather",
                    [&](ncclDataType_t type, ncclRedOp_t) {
                      return ncclAllGather(send_buf, recv_buf, static_cast<size_t>(count), type, comm->comm,
                                           currentStream());
                    });
}

extern "C" ptrain_status_t ptrain_nccl_reduce_scatter(ptrain_nccl_comm_t comm, const void *send_buf, void *recv_buf,
                                                      int64_t count, ptrain_dtype_t dtype, ptrain_reduce_op_t op) {
  return collective(__func__, comm, send_buf, recv_buf, count, dtype, true, op, "reduce_scatter",
                    [&](ncclDataType_t type, ncclRedOp_t red) {
                      return ncclReduceScatter(send_buf, recv_buf, static_cast<size_t>(count), type, red, comm->comm,
                                               currentStream());
                    });
}

namespace ptrain::cuda {
/// Polls `event` (recorded after the operations `what` on comm) and NCCL's asynchronous error state until the
/// event completes: an error or the comm's deadline aborts comm and names `what`.
ptrain_status_t pollEvent(const char *call, ptrain_nccl_comm *comm, cudaEvent_t event, const char *what) {
  const Clock::time_point start = Clock::now();
  for (;;) {
    const cudaError_t q = cudaEventQuery(event);
    if (q == cudaSuccess)
      return PTRAIN_OK;
    if (q != cudaErrorNotReady)
      return check(call, q, "cudaEventQuery");
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(comm->comm, &state);
    if (r != ncclSuccess)
      state = r;
    if (state != ncclSuccess && state != ncclInProgress) {
      char reason[768];
      std::snprintf(reason, sizeof(reason), "asynchronous NCCL error in %s: %s (%s)", what, ncclGetErrorString(state),
                    ncclGetLastError(comm->comm));
      abortComm(comm, reason);
      return fail(PTRAIN_ERROR_COMM, call, "%s; the communicator was aborted (ncclCommAbort)", reason);
    }
    if (secondsSince(start) > comm->timeout) {
      char reason[768];
      std::snprintf(reason, sizeof(reason), "%s did not complete within the %g s deadline (rank %d of %d)", what,
                    comm->timeout, comm->rank, comm->size);
      abortComm(comm, reason);
      return fail(PTRAIN_ERROR_DEADLINE_EXCEEDED, call, "%s; the communicator was aborted (ncclCommAbort)", reason);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}
} // namespace ptrain::cuda

extern "C" ptrain_status_t ptrain_nccl_wait(ptrain_nccl_comm_t comm) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkUsable(__func__, comm));
  if (comm->pendingCount == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_TRY(cudaEventRecord(comm->event, currentStream()));
  const ptrain_status_t st = pollEvent(__func__, comm, comm->event, comm->pending);
  comm->pending[0] = '\0';
  comm->pendingCount = 0;
  return st;
}

extern "C" ptrain_status_t ptrain_nccl_wait_event(ptrain_nccl_comm_t comm, void *event, const char *what) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkUsable(__func__, comm));
  PTRAIN_CUDA_CHECK_PTR(event);
  const ptrain_status_t st =
      pollEvent(__func__, comm, static_cast<cudaEvent_t>(event), what && *what ? what : comm->pending);
  // One operation of comm is done (the caller waits for each once); the list restarts when none is left.
  if (st == PTRAIN_OK && comm->pendingCount > 0 && --comm->pendingCount == 0)
    comm->pending[0] = '\0';
  return st;
}
