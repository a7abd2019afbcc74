//===- HalfAllReduce.cpp - 16-bit all-reduce with an fp32 sum --------------===//
//
// ptrain_all_reduce_half_start: the all-reduce of `ptrain.tp_all_reduce
// {accumulate = f32}` on bf16 or f16 values (docs/MixedPrecision.md, "16-bit
// TP collectives"; Micikevicius et al., "Mixed Precision Training", ICLR 2018,
// sec. 3.3: 16-bit values, fp32 sums). OpenMPI 4.1 has no 16-bit float type
// or reduction (ENV.md), and a user-defined MPI_Op that rounds each pair
// (ptrain_all_reduce_start's 16-bit sums, Collectives.cpp) gives results that
// depend on MPI's reduction order beyond two ranks. Here the sum is defined
// once, and every rank and the multi-rank executor compute it bit for bit:
//
//   out[i] = round16(((fp32(x_0[i]) + fp32(x_1[i])) + ...) + fp32(x_{n-1}[i]))
//
// (fp32 adds in rank order, one rounding to nearest even). Two phases, as the
// reduce-scatter + all-gather of a ring all-reduce:
//   1. all-to-all of 16-bit chunks (chunk = ceil(count / n) elements): rank j
//      receives every rank's chunk j and sums it as above;
//   2. all-gather of the rounded 16-bit chunks.
// Each rank sends and receives 2 (n - 1) / n of the buffer (plus the padding
// of the last chunk), in 2 bytes an element: half the bytes of an fp32 ring
// all-reduce. The traffic counter adds count x 2 (the buffer, as it adds
// count x 4 for an fp32 all-reduce, Traffic.cpp).
//
//===----------------------------------------------------------------------===//

#include "cpu/Comm.h"
#include "cpu/codecs/Cast.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

using ptrain::runtime::fail;

namespace {

/// The second phase and the copy-out of one 16-bit all-reduce.
class HalfAllReduce final : public ptrain::runtime::Continuation {
public:
  ptrain_comm *comm = nullptr;
  ptrain_dtype_t dtype = PTRAIN_DTYPE_BF16;
  int64_t count = 0;
  int64_t chunk = 0;         // elements per rank's chunk
  uint16_t *out = nullptr;   // recv_buf[count]
  uint16_t *padded = nullptr; // [size][chunk]: this rank's send buffer, padded
  uint16_t *gathered = nullptr; // [size][chunk]: phase 1's chunks j of every rank, then phase 2's result
  uint16_t *reduced = nullptr;  // [chunk]: this rank's rounded sum
  int phase = 1;

  ~HalfAllReduce() override {
    std::free(padded);
    std::free(gathered);
    std::free(reduced);
  }

  void describe(char *buf, size_t size) const override {
    std::snprintf(buf, size, "all_reduce_half (%s values, fp32 sum, %lld elements) over %d ranks as rank %d, %s",
                  dtype == PTRAIN_DTYPE_F16 ? "f16" : "bf16", static_cast<long long>(count), comm->size, comm->rank,
                  phase == 1 ? "all-to-all of the 16-bit chunks" : "all-gather of the summed chunks");
  }

  template <ptrain_dtype_t Dtype> void sumChunk() {
    using H = ptrain::runtime::Half16<Dtype>;
    for (int64_t j = 0; j < chunk; ++j) {
      float sum = H::decode(gathered[j]);
      for (int r = 1; r < comm->size; ++r)
        sum += H::decode(gathered[r * chunk + j]);
      reduced[j] = H::encode(sum);
    }
  }

  ptrain_status_t step(ptrain_request &req, const MPI_Status &, bool *more) override {
    *more = false;
    if (phase == 1) {
      if (dtype == PTRAIN_DTYPE_F16)
        sumChunk<PTRAIN_DTYPE_F16>();
      else
        sumChunk<PTRAIN_DTYPE_BF16>();
      phase = 2;
      int err = MPI_Iallgather(reduced, static_cast<int>(chunk), MPI_UINT16_T, gathered, static_cast<int>(chunk),
                               MPI_UINT16_T, comm->mpi, &req.mpi);
      if (err != MPI_SUCCESS)
        return ptrain::runtime::failMpi("ptrain_wait", err, "MPI_Iallgather of the summed 16-bit chunks");
      *more = true;
      return PTRAIN_OK;
    }
    std::memcpy(out, gathered, static_cast<size_t>(count) * 2);
    return PTRAIN_OK;
  }
};

} // namespace

extern "C" ptrain_status_t ptrain_all_reduce_half_start(ptrain_comm_t comm, const void *send_buf, void *recv_buf,
                                                        int64_t count, ptrain_dtype_t dtype,
                                                        ptrain_request_t *out_request) {
  PTRAIN_CHECK_PTR(out_request);
  *out_request = nullptr;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkComm(__func__, comm));
  PTRAIN_CHECK_ARG(dtype == PTRAIN_DTYPE_BF16 || dtype == PTRAIN_DTYPE_F16,
                   "dtype must be bf16 (4) or f16 (3): the 16-bit values summed in fp32, got %d", dtype);
  const int size = comm->size;
  PTRAIN_CHECK_ARG(count >= 0 && count <= INT_MAX - size, "count must be in [0, %d], got %lld", INT_MAX - size,
                   static_cast<long long>(count));
  PTRAIN_CHECK_ARG(count == 0 || (send_buf && recv_buf), "'send_buf' and 'recv_buf' must not be null");
  PTRAIN_RETURN_IF_ERROR(
      ptrain::runtime::checkCollectiveFingerprint(__func__, comm, "all_reduce_half", count, dtype, PTRAIN_REDUCE_SUM));
  auto *cont = new (std::nothrow) HalfAllReduce();
  ptrain_request *req = cont ? ptrain::runtime::newRequest(ptrain_request::Kind::Compressed, comm) : nullptr;
  if (!req) {
    delete cont;
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate a request");
  }
  req->next = cont;
  req->count = count;
  req->dtype = dtype;
  req->bytes = count * 2;
  req->recvBuf = recv_buf;
  cont->comm = comm;
  cont->dtype = dtype;
  cont->count = count;
  cont->out = static_cast<uint16_t *>(recv_buf);
  cont->chunk = (count + size - 1) / size;
  const int64_t total = cont->chunk * size;
  // Zeroed padding: a +0 adds nothing to the sums of the real elements, and the padded ones are not copied out.
  cont->padded = static_cast<uint16_t *>(std::calloc(static_cast<size_t>(total > 0 ? total : 1), 2));
  cont->gathered = static_cast<uint16_t *>(std::calloc(static_cast<size_t>(total > 0 ? total : 1), 2));
  cont->reduced = static_cast<uint16_t *>(std::calloc(static_cast<size_t>(cont->chunk > 0 ? cont->chunk : 1), 2));
  if (!cont->padded || !cont->gathered || !cont->reduced) {
    ptrain::runtime::deleteRequest(req);
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate %lld bytes of 16-bit chunks",
                static_cast<long long>(total * 4 + cont->chunk * 2));
  }
  if (count > 0)
    std::memcpy(cont->padded, send_buf, static_cast<size_t>(count) * 2);
  int err = MPI_Ialltoall(cont->padded, static_cast<int>(cont->chunk), MPI_UINT16_T, cont->gathered,
                          static_cast<int>(cont->chunk), MPI_UINT16_T, comm->mpi, &req->mpi);
  if (err != MPI_SUCCESS) {
    ptrain::runtime::deleteRequest(req);
    return ptrain::runtime::failMpi(__func__, err, "MPI_Ialltoall of the 16-bit chunks");
  }
  ptrain::runtime::countCollective(comm, count * 2, true);
  *out_request = req;
  return PTRAIN_OK;
}
