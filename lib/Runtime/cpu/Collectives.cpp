//===- Collectives.cpp - All-gather, reduce-scatter, 16-bit sums ----------===//
//
// MPI_Iallgather and MPI_Ireduce_scatter_block behind ptrain requests, and the
// sums of 16-bit floats: OpenMPI 4.1 has no fp16 or bf16 datatype or
// reduction (ENV.md), so buffers travel as MPI_UINT16_T and a user-defined,
// commutative MPI_Op adds each pair in fp32 and rounds the sum once to
// nearest even (DESIGN.md decision 9). Partial sums are 16-bit values, so a
// sum beyond the type's range is inf; the cast codec's compressed all-reduce
// (CompressedCollectives.cpp) keeps fp32 partial sums instead.
//
//===----------------------------------------------------------------------===//

#include "cpu/Comm.h"
#include "cpu/codecs/Cast.h"

#include <climits>

using ptrain::runtime::fail;

namespace {
MPI_Op halfSumOp = MPI_OP_NULL;
MPI_Op bf16SumOp = MPI_OP_NULL;

template <ptrain_dtype_t Dtype> void sum16(void *in, void *inout, int *len, MPI_Datatype *) {
  using H = ptrain::runtime::Half16<Dtype>;
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = H::encode(H::decode(a[i]) + H::decode(b[i]));
}
} // namespace

namespace ptrain::runtime {
ptrain_status_t sumOp(const char *call, ptrain_dtype_t dtype, MPI_Datatype *outType, MPI_Op *outOp) {
  switch (dtype) {
  case PTRAIN_DTYPE_F32:
    *outType = MPI_FLOAT;
    *outOp = MPI_SUM;
    return PTRAIN_OK;
  case PTRAIN_DTYPE_F64:
    *outType = MPI_DOUBLE;
    *outOp = MPI_SUM;
    return PTRAIN_OK;
  case PTRAIN_DTYPE_F16:
  case PTRAIN_DTYPE_BF16: {
    MPI_Op &op = dtype == PTRAIN_DTYPE_F16 ? halfSumOp : bf16SumOp;
    if (op == MPI_OP_NULL) {
      int err = MPI_Op_create(dtype == PTRAIN_DTYPE_F16 ? &sum16<PTRAIN_DTYPE_F16> : &sum16<PTRAIN_DTYPE_BF16>,
                              /*commute=*/1, &op);
      if (err != MPI_SUCCESS)
        return failMpi(call, err, "MPI_Op_create");
    }
    *outType = MPI_UINT16_T;
    *outOp = op;
    return PTRAIN_OK;
  }
  default:
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "unsupported dtype %d for a reduction (f32 = 0, f64 = 1, f16 "
                "= 3, bf16 = 4)",
                dtype);
  }
}

void scaleHalf(ptrain_dtype_t dtype, void *data, int64_t count, float factor) {
  auto *d = static_cast<uint16_t *>(data);
  for (int64_t i = 0; i < count; ++i)
    d[i] =
        dtype == PTRAIN_DTYPE_F16 ? floatToHalf(halfToFloat(d[i]) * factor) : floatToBf16(bf16ToFloat(d[i]) * factor);
}

void freeUserOps() {
  if (halfSumOp != MPI_OP_NULL)
    MPI_Op_free(&halfSumOp);
  if (bf16SumOp != MPI_OP_NULL)
    MPI_Op_free(&bf16SumOp);
}
} // namespace ptrain::runtime

namespace {
/// The checks shared by the two collectives; `perRank` elements per rank.
ptrain_status_t checkCollective(const char *call, ptrain_comm_t comm, const void *sendBuf, void *recvBuf,
                                int64_t perRank, ptrain_request_t *out) {
  if (!out)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'out_request' must not be null");
  *out = nullptr;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkComm(call, comm));
  if (perRank < 0 || perRank > INT_MAX / comm->size)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "count must be in [0, %d] for %d ranks, got %lld",
                INT_MAX / comm->size, comm->size, static_cast<long long>(perRank));
  if (perRank > 0 && (!sendBuf || !recvBuf))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'send_buf' and 'recv_buf' must not be null");
  return PTRAIN_OK;
}
} // namespace

extern "C" ptrain_status_t ptrain_all_gather_start(ptrain_comm_t comm, const void *send_buf, void *recv_buf,
                                                   int64_t count, ptrain_dtype_t dtype, ptrain_request_t *out_request) {
  PTRAIN_RETURN_IF_ERROR(checkCollective(__func__, comm, send_buf, recv_buf, count, out_request));
  const int64_t elem = ptrain::runtime::dtypeBytes(dtype);
  PTRAIN_CHECK_ARG(elem > 0, "unsupported dtype %d", dtype);
  PTRAIN_CHECK_ARG(count * elem <= INT_MAX, "%lld bytes per rank exceed MPI's int count",
                   static_cast<long long>(count * elem));
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkCollectiveFingerprint(__func__, comm, "all_gather", count, dtype, 0));
  ptrain_request *req = ptrain::runtime::newRequest(ptrain_request::Kind::AllGather, comm);
  if (!req)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate a request");
  req->count = count;
  req->dtype = dtype;
  req->bytes = count * elem;
  // Bytes: every dtype gathers as raw bytes.
  const int bytes = static_cast<int>(count * elem);
  int err = MPI_Iallgather(send_buf, bytes, MPI_BYTE, recv_buf, bytes, MPI_BYTE, comm->mpi, &req->mpi);
  if (err != MPI_SUCCESS) {
    ptrain::runtime::deleteRequest(req);
    return ptrain::runtime::failMpi(__func__, err, "MPI_Iallgather");
  }
  ptrain::runtime::countCollective(comm, req->bytes, true);
  *out_request = req;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_reduce_scatter_start(ptrain_comm_t comm, const void *send_buf, void *recv_buf,
                                                       int64_t count, ptrain_dtype_t dtype, ptrain_reduce_op_t op,
                                                       ptrain_request_t *out_request) {
  PTRAIN_RETURN_IF_ERROR(checkCollective(__func__, comm, send_buf, recv_buf, count, out_request));
  PTRAIN_CHECK_ARG(op == PTRAIN_REDUCE_SUM || op == PTRAIN_REDUCE_AVG, "unsupported reduction %d (sum = 0, avg = 1)",
                   op);
  MPI_Datatype type;
  MPI_Op mpiOp;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::sumOp(__func__, dtype, &type, &mpiOp));
  PTRAIN_RETURN_IF_ERROR(
      ptrain::runtime::checkCollectiveFingerprint(__func__, comm, "reduce_scatter", count, dtype, op));
  ptrain_request *req = ptrain::runtime::newRequest(ptrain_request::Kind::ReduceScatter, comm);
  if (!req)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate a request");
  req->count = count;
  req->dtype = dtype;
  req->op = op;
  req->recvBuf = recv_buf;
  req->bytes = count * ptrain::runtime::dtypeBytes(dtype);
  int err = MPI_Ireduce_scatter_block(send_buf, recv_buf, static_cast<int>(count), type, mpiOp, comm->mpi, &req->mpi);
  if (err != MPI_SUCCESS) {
    ptrain::runtime::deleteRequest(req);
    return ptrain::runtime::failMpi(__func__, err, "MPI_Ireduce_scatter_block");
  }
  ptrain::runtime::countCollective(comm, req->bytes * comm->size, true);
  *out_request = req;
  return PTRAIN_OK;
}
