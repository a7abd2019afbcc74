//===- Broadcast.cpp - Elementwise binary ops and their adjoint -----------===//
//
// numpy broadcasting (trailing dimensions aligned; each pair equal or one of
// them 1), the semantics of ptrain.binary and ptrain.sum_to
// (PTrainModelOps.td, PTrainGradientOps.td). Values are combined in fp64 and
// rounded once, as the reference interpreter does (docs/Interpreter.md).
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <cmath>
#include <cstdlib>

namespace {
constexpr int32_t kMaxRank = 8;

/// Checks a shape argument and returns its element count in `count`.
ptrain_status_t checkShape(const char *call, const char *what, int32_t rank,
                           const int64_t *dims, int64_t &count) {
  if (rank < 0 || rank > kMaxRank)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                 "%s rank must be in [0, %d], got %d", what,
                                 kMaxRank, rank);
  if (rank > 0 && dims == nullptr)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                 "'%s_dims' must not be null", what);
  count = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0)
      return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                   "%s dims[%d] must be >= 0, got %lld", what,
                                   i, static_cast<long long>(dims[i]));
    count *= dims[i];
  }
  return PTRAIN_OK;
}

/// The strides (in elements) with which an operand of shape `dims[rank]` is
/// read when broadcast to `outDims[outRank]`: 0 on broadcast dimensions.
/// Fails when the shapes do not broadcast.
ptrain_status_t broadcastStrides(const char *call, const char *what,
                                 int32_t rank, const int64_t *dims,
                                 int32_t outRank, const int64_t *outDims,
                                 int64_t *strides) {
  if (rank > outRank)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                 "%s rank %d exceeds the result rank %d", what,
                                 rank, outRank);
  int64_t stride = 1;
  for (int32_t o = outRank - 1; o >= 0; --o) {
    const int32_t d = o - (outRank - rank);
    if (d < 0) {
      strides[o] = 0;
      continue;
    }
    if (dims[d] == outDims[o]) {
      strides[o] = dims[d] == 1 ? 0 : stride;
    } else if (dims[d] == 1) {
      strides[o] = 0;
    } else {
      return ptrain::runtime::fail(
          PTRAIN_ERROR_INVALID_ARGUMENT, call,
          "%s dim %d of size %lld does not broadcast to result dim %d of size "
          "%lld",
          what, d, static_cast<long long>(dims[d]), o,
          static_cast<long long>(outDims[o]));
    }
    stride *= dims[d];
  }
  return PTRAIN_OK;
}

double apply(int32_t kind, double a, double b) {
  switch (kind) {
  case PTRAIN_BINARY_ADD:
    return a + b;
  case PTRAIN_BINARY_SUB:
    return a - b;
  case PTRAIN_BINARY_MUL:
    return a * b;
  case PTRAIN_BINARY_DIV:
    return a / b;
  case PTRAIN_BINARY_POW:
    return std::pow(a, b);
  case PTRAIN_BINARY_MAX:
    return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
  default: // PTRAIN_BINARY_MIN, checked by the caller.
    return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
  }
}
} // namespace

extern "C" ptrain_status_t
ptrain_binary_f32(int32_t kind, const float *a, int32_t a_rank,
                  const int64_t *a_dims, const float *b, int32_t b_rank,
                  const int64_t *b_dims, int32_t out_rank,
                  const int64_t *out_dims, float *out) {
  PTRAIN_CHECK_ARG(kind >= PTRAIN_BINARY_ADD && kind <= PTRAIN_BINARY_MIN,
                   "unknown binary kind %d", kind);
  int64_t aCount, bCount, n;
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "a", a_rank, a_dims, aCount));
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "b", b_rank, b_dims, bCount));
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "out", out_rank, out_dims, n));
  PTRAIN_CHECK_PTR(a);
  PTRAIN_CHECK_PTR(b);
  PTRAIN_CHECK_PTR(out);
  int64_t aStride[kMaxRank] = {}, bStride[kMaxRank] = {};
  PTRAIN_RETURN_IF_ERROR(broadcastStrides(__func__, "a", a_rank, a_dims,
                                          out_rank, out_dims, aStride));
  PTRAIN_RETURN_IF_ERROR(broadcastStrides(__func__, "b", b_rank, b_dims,
                                          out_rank, out_dims, bStride));
  if (n == 0)
    return PTRAIN_OK;
  // Walk the result in order with an odometer; out may not alias a or b
  // unless it has the same shape (the read precedes the write).
  int64_t index[kMaxRank] = {};
  int64_t ai = 0, bi = 0;
  for (int64_t o = 0; o < n; ++o) {
    out[o] = static_cast<float>(apply(kind, a[ai], b[bi]));
    for (int32_t d = out_rank - 1; d >= 0; --d) {
      if (++index[d] < out_dims[d]) {
        ai += aStride[d];
        bi += bStride[d];
        break;
      }
      ai -= aStride[d] * (out_dims[d] - 1);
      bi -= bStride[d] * (out_dims[d] - 1);
      index[d] = 0;
    }
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_sum_to_f32(const float *x, int32_t rank,
                                             const int64_t *dims,
                                             int32_t out_rank,
                                             const int64_t *out_dims,
                                             float *out) {
  int64_t n, outCount;
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "x", rank, dims, n));
  PTRAIN_RETURN_IF_ERROR(
      checkShape(__func__, "out", out_rank, out_dims, outCount));
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out);
  // The result is read from x's index space like a broadcast operand.
  int64_t outStride[kMaxRank] = {};
  PTRAIN_RETURN_IF_ERROR(broadcastStrides(__func__, "out", out_rank, out_dims,
                                          rank, dims, outStride));
  double *acc = ptrain::runtime::allocArray<double>(outCount);
  if (acc == nullptr)
    return ptrain::runtime::fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__,
                                 "cannot allocate %lld accumulators",
                                 static_cast<long long>(outCount));
  for (int64_t i = 0; i < outCount; ++i)
    acc[i] = 0.0;
  int64_t index[kMaxRank] = {};
  int64_t oi = 0;
  for (int64_t i = 0; i < n; ++i) {
    acc[oi] += x[i];
    for (int32_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < dims[d]) {
        oi += outStride[d];
        break;
      }
      oi -= outStride[d] * (dims[d] - 1);
      index[d] = 0;
    }
  }
  for (int64_t i = 0; i < outCount; ++i)
    out[i] = static_cast<float>(acc[i]);
  std::free(acc);
  return PTRAIN_OK;
}
