//===- Comm.cpp - Communicators over MPI ----------------------------------===//
//
// ptrain_comm_t on the CPU target: a duplicate of MPI_COMM_WORLD, or a group
// of a parent's ranks (MPI_Comm_create_group), always with MPI_ERRORS_RETURN so
// that MPI failures come back as statuses with their text instead of aborting.
// Calls are made from one thread (MPI_THREAD_FUNNELED).
//
//===----------------------------------------------------------------------===//

#include "cpu/Comm.h"

#include "common/Env.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>

using ptrain::runtime::fail;

namespace {
/// Communicators alive; MPI is finalized when it drops to zero, if
/// ptrain_comm_init initialized it.
int liveComms = 0;
bool initializedMpi = false;
/// The tag of MPI_Comm_create_group; calls by overlapping groups must be made
/// in the same order by every member (documented in the header).
constexpr int kCreateGroupTag = 0x7074;
constexpr double kDefaultTimeoutS = 300.0;
/// The driver's training step (ptrain_comm_set_step), for error messages.
int64_t trainingStep = -1;

/// Fills rank and size, sets MPI_ERRORS_RETURN; frees `mpi` on failure.
ptrain_status_t finishComm(const char *call, MPI_Comm mpi, double timeoutS, ptrain_comm_t *out) {
  auto *comm = new (std::nothrow) ptrain_comm();
  if (!comm) {
    MPI_Comm_free(&mpi);
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "cannot allocate a comm");
  }
  comm->mpi = mpi;
  comm->timeoutS = timeoutS;
  int err = MPI_Comm_set_errhandler(mpi, MPI_ERRORS_RETURN);
  if (err == MPI_SUCCESS)
    err = MPI_Comm_rank(mpi, &comm->rank);
  if (err == MPI_SUCCESS)
    err = MPI_Comm_size(mpi, &comm->size);
  if (err != MPI_SUCCESS) {
    MPI_Comm_free(&comm->mpi);
    delete comm;
    return ptrain::runtime::failMpi(call, err, "setting up the communicator");
  }
  comm->p2pTraffic = new (std::nothrow) int64_t[2 * static_cast<size_t>(comm->size)]();
  if (!comm->p2pTraffic) {
    MPI_Comm_free(&comm->mpi);
    delete comm;
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "cannot allocate the traffic counters");
  }
  ptrain_status_t debug = ptrain::runtime::initDebug(call, comm);
  if (debug != PTRAIN_OK) {
    delete[] comm->p2pTraffic;
    MPI_Comm_free(&comm->mpi);
    delete comm;
    return debug;
  }
  ++liveComms;
  *out = comm;
  return PTRAIN_OK;
}
} // namespace

namespace ptrain::runtime {
void appendStep(char *buf, size_t size) {
  if (trainingStep < 0)
    return;
  const size_t used = std::strlen(buf);
  if (used + 1 < size)
    std::snprintf(buf + used, size - used, " at step %lld", static_cast<long long>(trainingStep));
}

ptrain_status_t failMpi(const char *call, int mpiError, const char *what) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int length = 0;
  if (MPI_Error_string(mpiError, text, &length) != MPI_SUCCESS)
    text[0] = '\0';
  return fail(PTRAIN_ERROR_COMM, call, "%s failed with MPI error %d: %s", what, mpiError, text);
}
} // namespace ptrain::runtime

extern "C" ptrain_status_t ptrain_comm_init(ptrain_comm_t *out_comm) {
  PTRAIN_CHECK_PTR(out_comm);
  *out_comm = nullptr;
  double timeoutS = 0.0;
  PTRAIN_RETURN_IF_ERROR(
      ptrain::runtime::readEnvSeconds(__func__, "PTRAIN_COMM_TIMEOUT_S", kDefaultTimeoutS, timeoutS));
  int initialized = 0, finalized = 0;
  PTRAIN_MPI_RETURN_IF_ERROR(MPI_Initialized(&initialized));
  PTRAIN_MPI_RETURN_IF_ERROR(MPI_Finalized(&finalized));
  if (finalized)
    return fail(PTRAIN_ERROR_COMM, __func__, "MPI is already finalized; it cannot be initialized again");
  if (!initialized) {
    int provided = 0;
    PTRAIN_MPI_RETURN_IF_ERROR(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
    initializedMpi = true;
  }
  PTRAIN_MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_Comm dup = MPI_COMM_NULL;
  PTRAIN_MPI_RETURN_IF_ERROR(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  return finishComm(__func__, dup, timeoutS, out_comm);
}

extern "C" ptrain_status_t ptrain_comm_create_group(ptrain_comm_t parent, const int32_t *ranks, int32_t num_ranks,
                                                    ptrain_comm_t *out_comm) {
  PTRAIN_CHECK_PTR(parent);
  PTRAIN_CHECK_PTR(ranks);
  PTRAIN_CHECK_PTR(out_comm);
  *out_comm = nullptr;
  PTRAIN_CHECK_ARG(num_ranks > 0 && num_ranks <= parent->size, "num_ranks must be in [1, %d], got %d", parent->size,
                   num_ranks);
  bool member = false;
  for (int32_t i = 0; i < num_ranks; ++i) {
    PTRAIN_CHECK_ARG(ranks[i] >= 0 && ranks[i] < parent->size, "ranks[%d] = %d is not a rank of the parent (size %d)",
                     i, ranks[i], parent->size);
    for (int32_t j = 0; j < i; ++j)
      PTRAIN_CHECK_ARG(ranks[j] != ranks[i], "rank %d is listed twice (at %d and %d)", ranks[i], j, i);
    member |= ranks[i] == parent->rank;
  }
  PTRAIN_CHECK_ARG(member,
                   "the calling rank %d is not in the list: only members call "
                   "ptrain_comm_create_group",
                   parent->rank);
  PTRAIN_CHECK_ARG(!parent->broken, "the parent communicator is broken by an earlier deadline "
                                    "error");
  MPI_Group parentGroup = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  PTRAIN_MPI_RETURN_IF_ERROR(MPI_Comm_group(parent->mpi, &parentGroup));
  int err = MPI_Group_incl(parentGroup, num_ranks, ranks, &group);
  MPI_Comm mpi = MPI_COMM_NULL;
  if (err == MPI_SUCCESS)
    err = MPI_Comm_create_group(parent->mpi, group, kCreateGroupTag, &mpi);
  if (group != MPI_GROUP_NULL)
    MPI_Group_free(&group);
  MPI_Group_free(&parentGroup);
  if (err != MPI_SUCCESS)
    return ptrain::runtime::failMpi(__func__, err, "MPI_Comm_create_group");
  return finishComm(__func__, mpi, parent->timeoutS, out_comm);
}

extern "C" ptrain_status_t ptrain_comm_destroy(ptrain_comm_t comm) {
  PTRAIN_CHECK_PTR(comm);
  // A deadline's orphaned operations that MPI has since completed (ptrain_wait); any still pending stay
  // allocated, since MPI may yet write into them.
  ptrain::runtime::releaseOrphans(comm);
  ptrain::runtime::freeDebug(comm);
  int err = MPI_Comm_free(&comm->mpi);
  delete[] comm->p2pTraffic;
  delete comm;
  --liveComms;
  if (err != MPI_SUCCESS)
    return ptrain::runtime::failMpi(__func__, err, "MPI_Comm_free");
  if (liveComms == 0 && initializedMpi) {
    initializedMpi = false;
    ptrain::runtime::freeUserOps();
    PTRAIN_MPI_RETURN_IF_ERROR(MPI_Finalize());
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_comm_rank(ptrain_comm_t comm, int32_t *out_rank) {
  PTRAIN_CHECK_PTR(comm);
  PTRAIN_CHECK_PTR(out_rank);
  *out_rank = comm->rank;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_comm_size(ptrain_comm_t comm, int32_t *out_size) {
  PTRAIN_CHECK_PTR(comm);
  PTRAIN_CHECK_PTR(out_size);
  *out_size = comm->size;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_comm_timeout(ptrain_comm_t comm, double *out_seconds) {
  PTRAIN_CHECK_PTR(comm);
  PTRAIN_CHECK_PTR(out_seconds);
  *out_seconds = comm->timeoutS;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_comm_set_timeout(ptrain_comm_t comm, double seconds) {
  PTRAIN_CHECK_PTR(comm);
  PTRAIN_CHECK_ARG(std::isfinite(seconds) && seconds > 0.0, "the deadline must be a positive number of seconds, got %g",
                   seconds);
  comm->timeoutS = seconds;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_comm_abort(ptrain_comm_t comm, int32_t error_code) {
  PTRAIN_CHECK_PTR(comm);
  // MPI_Abort does not return when it succeeds.
  PTRAIN_MPI_RETURN_IF_ERROR(MPI_Abort(comm->mpi, error_code));
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_comm_set_step(int64_t step) {
  PTRAIN_CHECK_ARG(step >= -1, "step must be >= 0, or -1 for none; got %lld", static_cast<long long>(step));
  trainingStep = step;
  return PTRAIN_OK;
}
