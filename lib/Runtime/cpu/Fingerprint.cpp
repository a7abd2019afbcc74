//===- Fingerprint.cpp - The debug mode: operation fingerprints -----------===//
//
// With PTRAIN_COMM_DEBUG=1 in the environment when a communicator is
// created, every operation on it first exchanges a fingerprint (operation,
// sequence number, element or byte count, dtype, reduction or codec, peer,
// tag) over a private duplicate of the communicator, so that ranks that post
// different operations get an error naming both instead of a hang or a
// silently wrong result (DESIGN.md decision 9):
//
//   collectives: an MPI_Iallgather of every rank's fingerprint, polled until
//     the deadline; every rank compares and reports the same mismatch (the
//     lowest rank against the first rank that differs from it);
//   point-to-point: the sender posts its fingerprint to the receiver
//     (completed with the send); the receiver waits for it until the
//     deadline and compares it with its own (pairs must post their
//     operations in the same order on both sides, which generated code does).
//
// It costs one small synchronizing exchange per operation: a debugging aid.
//
//===----------------------------------------------------------------------===//

#include "cpu/Comm.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

using ptrain::runtime::fail;

namespace {
constexpr int kFingerprintTag = 1;

struct Fingerprint {
  char op[24];
  int64_t seq;
  int64_t count;
  int32_t dtype;
  int32_t extra;
  int32_t peer;
  int32_t tag;
  int32_t rank;
  int32_t pad;
};

Fingerprint make(const char *op, int64_t seq, int64_t count, int32_t dtype, int32_t extra, int32_t peer, int32_t tag,
                 int32_t rank) {
  Fingerprint fp;
  std::memset(&fp, 0, sizeof(fp));
  std::snprintf(fp.op, sizeof(fp.op), "%s", op);
  fp.seq = seq;
  fp.count = count;
  fp.dtype = dtype;
  fp.extra = extra;
  fp.peer = peer;
  fp.tag = tag;
  fp.rank = rank;
  return fp;
}

bool sameCollective(const Fingerprint &a, const Fingerprint &b) {
  return std::strcmp(a.op, b.op) == 0 && a.seq == b.seq && a.count == b.count && a.dtype == b.dtype &&
         a.extra == b.extra;
}

/// "all_reduce #3 (count 100, f32, extra 0)"
void show(const Fingerprint &fp, char *buf, size_t size) {
  std::snprintf(buf, size, "%s #%lld (count %lld, %s, %s %d)", fp.op, static_cast<long long>(fp.seq),
                static_cast<long long>(fp.count), ptrain::runtime::dtypeName(fp.dtype),
                std::strstr(fp.op, "compressed") ? "codec" : "reduction", fp.extra);
}

void showP2P(const Fingerprint &fp, char *buf, size_t size) {
  std::snprintf(buf, size, "%s #%lld %s rank %d (tag %d, %lld bytes)", fp.op, static_cast<long long>(fp.seq),
                std::strstr(fp.op, "send") ? "to" : "from", fp.peer, fp.tag, static_cast<long long>(fp.count));
}
} // namespace

namespace ptrain::runtime {

ptrain_status_t initDebug(const char *call, ptrain_comm_t comm) {
  const char *flag = std::getenv("PTRAIN_COMM_DEBUG");
  if (!flag || !*flag || std::strcmp(flag, "0") == 0)
    return PTRAIN_OK;
  if (std::strcmp(flag, "1") != 0)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "PTRAIN_COMM_DEBUG must be 0 or 1, got '%s'", flag);
  comm->sendSeq = new (std::nothrow) int64_t[comm->size]();
  comm->recvSeq = new (std::nothrow) int64_t[comm->size]();
  if (!comm->sendSeq || !comm->recvSeq) {
    freeDebug(comm);
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "debug counters");
  }
  int err = MPI_Comm_dup(comm->mpi, &comm->debugMpi);
  if (err == MPI_SUCCESS)
    err = MPI_Comm_set_errhandler(comm->debugMpi, MPI_ERRORS_RETURN);
  if (err != MPI_SUCCESS) {
    freeDebug(comm);
    return failMpi(call, err, "MPI_Comm_dup of the debug communicator");
  }
  return PTRAIN_OK;
}

void freeDebug(ptrain_comm_t comm) {
  if (comm->debugMpi != MPI_COMM_NULL)
    MPI_Comm_free(&comm->debugMpi);
  delete[] comm->sendSeq;
  delete[] comm->recvSeq;
  comm->sendSeq = comm->recvSeq = nullptr;
}

ptrain_status_t checkCollectiveFingerprint(const char *call, ptrain_comm_t comm, const char *opName, int64_t count,
                                           ptrain_dtype_t dtype, int32_t extra) {
  if (comm->debugMpi == MPI_COMM_NULL)
    return PTRAIN_OK;
  // Every rank's fingerprint, then this rank's own (the send buffer): both
  // on the heap, as a gather that misses its deadline stays posted.
  Fingerprint *all = new (std::nothrow) Fingerprint[comm->size + 1];
  if (!all)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "debug fingerprints");
  Fingerprint &mine = all[comm->size];
  mine = make(opName, comm->collectiveSeq++, count, dtype, extra, -1, 0, comm->rank);
  char me[160];
  show(mine, me, sizeof(me));
  MPI_Request req = MPI_REQUEST_NULL;
  int err =
      MPI_Iallgather(&mine, sizeof(Fingerprint), MPI_BYTE, all, sizeof(Fingerprint), MPI_BYTE, comm->debugMpi, &req);
  if (err != MPI_SUCCESS) {
    delete[] all;
    return failMpi(call, err, "MPI_Iallgather of the debug fingerprints");
  }
  MPI_Status status;
  const int polled = pollUntil(&req, deadlineIn(comm->timeoutS), &status, &err);
  if (polled == 0) {
    // MPI keeps the gather posted: the communicator keeps its buffer until
    // the gather completes; the communicator is broken.
    orphan(comm, req, [](void *owner) { delete[] static_cast<Fingerprint *>(owner); }, all);
    comm->broken = true;
    return fail(PTRAIN_ERROR_DEADLINE_EXCEEDED, call,
                "debug mode: rank %d posted %s over %d ranks, but the "
                "fingerprint exchange did not complete within %g s "
                "(PTRAIN_COMM_TIMEOUT_S): a rank never posted this "
                "operation; the communicator is now broken",
                comm->rank, me, comm->size, comm->timeoutS);
  }
  if (polled < 0) {
    delete[] all;
    return failMpi(call, err, "the debug fingerprint exchange");
  }
  ptrain_status_t result = PTRAIN_OK;
  for (int r = 1; r < comm->size; ++r) {
    if (sameCollective(all[0], all[r]))
      continue;
    char first[160], other[160];
    show(all[0], first, sizeof(first));
    show(all[r], other, sizeof(other));
    char at[40] = "";
    appendStep(at, sizeof(at));
    result = fail(PTRAIN_ERROR_MISMATCH, call,
                  "debug mode: ranks disagree on the next collective of a "
                  "communicator of %d ranks: rank %d posts %s but rank %d "
                  "posts %s (this is rank %d%s)",
                  comm->size, all[0].rank, first, all[r].rank, other, comm->rank, at);
    break;
  }
  delete[] all;
  return result;
}

ptrain_status_t postSendFingerprint(const char *call, ptrain_comm_t comm, const char *opName, int64_t bytes,
                                    int32_t peer, int32_t tag, ptrain_request *req) {
  if (comm->debugMpi == MPI_COMM_NULL)
    return PTRAIN_OK;
  // The fingerprint lives in the request: it must outlive the MPI_Isend.
  static_assert(sizeof(Fingerprint) <= sizeof(req->debugPayload), "the request's fingerprint buffer is too small");
  const Fingerprint fp = make(opName, comm->sendSeq[peer]++, bytes, 0, 0, peer, tag, comm->rank);
  std::memcpy(req->debugPayload, &fp, sizeof(fp));
  int err = MPI_Isend(req->debugPayload, sizeof(Fingerprint), MPI_BYTE, peer, kFingerprintTag, comm->debugMpi,
                      &req->debugMpi);
  if (err != MPI_SUCCESS)
    return failMpi(call, err, "MPI_Isend of the debug fingerprint");
  return PTRAIN_OK;
}

ptrain_status_t checkRecvFingerprint(const char *call, ptrain_comm_t comm, const char *opName, int64_t bytes,
                                     int32_t peer, int32_t tag) {
  if (comm->debugMpi == MPI_COMM_NULL)
    return PTRAIN_OK;
  const Fingerprint mine = make(opName, comm->recvSeq[peer]++, bytes, 0, 0, peer, tag, comm->rank);
  char me[200];
  showP2P(mine, me, sizeof(me));
  appendStep(me, sizeof(me));
  Fingerprint theirs;
  MPI_Request req = MPI_REQUEST_NULL;
  int err = MPI_Irecv(&theirs, sizeof(Fingerprint), MPI_BYTE, peer, kFingerprintTag, comm->debugMpi, &req);
  if (err != MPI_SUCCESS)
    return failMpi(call, err, "MPI_Irecv of the debug fingerprint");
  MPI_Status status;
  const int polled = pollUntil(&req, deadlineIn(comm->timeoutS), &status, &err);
  if (polled == 0) {
    MPI_Cancel(&req);
    MPI_Wait(&req, &status); // a cancelled receive completes at once
    return fail(PTRAIN_ERROR_DEADLINE_EXCEEDED, call,
                "debug mode: rank %d posts %s, but rank %d sent no "
                "fingerprint within %g s (PTRAIN_COMM_TIMEOUT_S): it never "
                "posted the matching send",
                comm->rank, me, peer, comm->timeoutS);
  }
  if (polled < 0)
    return failMpi(call, err, "the debug fingerprint receive");
  // The sender's op is this op with "recv" in place of "send".
  char expected[24];
  std::snprintf(expected, sizeof(expected), "%s", opName);
  if (char *at = std::strstr(expected, "recv"))
    std::memcpy(at, "send", 4);
  if (std::strcmp(theirs.op, expected) == 0 && theirs.seq == mine.seq && theirs.count == bytes && theirs.tag == tag)
    return PTRAIN_OK;
  char other[160];
  showP2P(theirs, other, sizeof(other));
  return fail(PTRAIN_ERROR_MISMATCH, call, "debug mode: rank %d posted %s but rank %d posts %s", peer, other,
              comm->rank, me);
}

} // namespace ptrain::runtime
