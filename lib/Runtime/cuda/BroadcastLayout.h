//===- BroadcastLayout.h - numpy broadcasting for the GPU kernels -*- C++ -*-===//
//
// The shape checks and broadcast strides of cpu/Broadcast.cpp for the CUDA
// model kernels that take host dims arrays (ModelElementwise.cu: binary,
// sum_to, reduce, broadcast_to, permute, slice; ModelMask.cu: compare,
// logical, select): a Layout (dims and an operand's strides over them, 0 on
// broadcast axes) is checked on the host and passed to the kernel by value.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CUDA_BROADCASTLAYOUT_H
#define PTRAIN_RUNTIME_CUDA_BROADCASTLAYOUT_H

#include "cuda/Device.h"

namespace ptrain::cuda {

constexpr int32_t kMaxRank = 8;

/// A shape and the strides of an operand over it, passed by value.
struct Layout {
  int32_t rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

/// Checks a (rank, dims) argument named `what` of `call` and returns its element count in `count`.
inline ptrain_status_t checkDims(const char *call, const char *what, int32_t rank, const int64_t *dims,
                                 int64_t &count) {
  if (rank < 0 || rank > kMaxRank)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s rank must be in [0, %d], got %d", what, kMaxRank, rank);
  if (rank > 0 && !dims)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'%s_dims' must not be null", what);
  count = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s dims[%d] must be >= 0, got %lld", what, i,
                  static_cast<long long>(dims[i]));
    count *= dims[i];
  }
  return PTRAIN_OK;
}

/// The strides of a (rank, dims) operand broadcast to (outRank, outDims): 0 on broadcast axes.
inline ptrain_status_t broadcastLayout(const char *call, const char *what, int32_t rank, const int64_t *dims,
                                       int32_t outRank, const int64_t *outDims, Layout &out) {
  if (rank > outRank)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s rank %d exceeds the result rank %d", what, rank, outRank);
  out.rank = outRank;
  int64_t stride = 1;
  for (int32_t o = outRank - 1; o >= 0; --o) {
    out.dims[o] = outDims[o];
    const int32_t d = o - (outRank - rank);
    if (d < 0) {
      out.strides[o] = 0;
      continue;
    }
    if (dims[d] == outDims[o])
      out.strides[o] = dims[d] == 1 ? 0 : stride;
    else if (dims[d] == 1)
      out.strides[o] = 0;
    else
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                  "%s dim %d of size %lld does not broadcast to result dim %d of size %lld", what, d,
                  static_cast<long long>(dims[d]), o, static_cast<long long>(outDims[o]));
    stride *= dims[d];
  }
  return PTRAIN_OK;
}

#ifdef __CUDACC__
/// The offset of row-major element `i` of `l.dims` in an operand with `l.strides`.
__device__ __forceinline__ int64_t offsetOf(const Layout &l, int64_t i) {
  int64_t off = 0;
  for (int32_t d = l.rank - 1; d >= 0; --d) {
    const int64_t q = l.dims[d] ? i / l.dims[d] : 0;
    off += (i - q * l.dims[d]) * l.strides[d];
    i = q;
  }
  return off;
}
#endif // __CUDACC__

} // namespace ptrain::cuda

#endif // PTRAIN_RUNTIME_CUDA_BROADCASTLAYOUT_H
