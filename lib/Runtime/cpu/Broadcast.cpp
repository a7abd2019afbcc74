//===- Broadcast.cpp - Elementwise binary ops and their adjoint -----------===//
//
// numpy broadcasting (trailing dimensions aligned; each pair equal or one of
// them 1), the semantics of ptrain.binary and ptrain.sum_to
// (PTrainModelOps.td, PTrainGradientOps.td). Values are combined in fp64 and
// rounded once, as the reference interpreter does (docs/Interpreter.md).
//
//===----------------------------------------------------------------------===//

#include "common/CompareValues.h"
#include "common/Status.h"
#include "cpu/StridedWalk.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace {
constexpr int32_t kMaxRank = 8;

/// Checks a shape argument and returns its element count in `count`.
ptrain_status_t checkShape(const char *call, const char *what, int32_t rank, const int64_t *dims, int64_t &count) {
  if (rank < 0 || rank > kMaxRank)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s rank must be in [0, %d], got %d", what,
                                 kMaxRank, rank);
  if (rank > 0 && dims == nullptr)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'%s_dims' must not be null", what);
  count = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0)
      return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s dims[%d] must be >= 0, got %lld", what, i,
                                   static_cast<long long>(dims[i]));
    count *= dims[i];
  }
  return PTRAIN_OK;
}

/// The strides (in elements) with which an operand of shape `dims[rank]` is
/// read when broadcast to `outDims[outRank]`: 0 on broadcast dimensions.
/// Fails when the shapes do not broadcast.
ptrain_status_t broadcastStrides(const char *call, const char *what, int32_t rank, const int64_t *dims, int32_t outRank,
                                 const int64_t *outDims, int64_t *strides) {
  if (rank > outRank)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s rank %d exceeds the result rank %d", what,
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
      return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                   "%s dim %d of size %lld does not broadcast to result dim %d of size "
                                   "%lld",
                                   what, d, static_cast<long long>(dims[d]), o, static_cast<long long>(outDims[o]));
    }
    stride *= dims[d];
  }
  return PTRAIN_OK;
}

/// One row of a binary op: out[i] = op(a[i * sa], b[i * sb]) with the
/// strides 0 or 1, as four loops the compiler vectorizes. out may equal a or
/// b (each element is read before it is written).
template <typename Op>
void binaryRow(const float *a, int64_t sa, const float *b, int64_t sb, float *out, int64_t len, Op op) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < len; ++i)
      out[i] = op(a[i], b[i]);
  } else if (sa == 1) {
    const float bv = b[0];
    for (int64_t i = 0; i < len; ++i)
      out[i] = op(a[i], bv);
  } else if (sb == 1) {
    const float av = a[0];
    for (int64_t i = 0; i < len; ++i)
      out[i] = op(av, b[i]);
  } else {
    const float v = op(a[0], b[0]);
    for (int64_t i = 0; i < len; ++i)
      out[i] = v;
  }
}

/// The binary ops on floats. Add, sub, mul and div round the exact result
/// once, as the fp64 computation rounded to fp32 does (53 >= 2 * 24 + 2 bits:
/// the double rounding is innocuous), so they are computed in fp32; pow in
/// fp64.
template <typename F> void withBinaryOp(int32_t kind, F f) {
  switch (kind) {
  case PTRAIN_BINARY_ADD:
    return f([](float a, float b) { return a + b; });
  case PTRAIN_BINARY_SUB:
    return f([](float a, float b) { return a - b; });
  case PTRAIN_BINARY_MUL:
    return f([](float a, float b) { return a * b; });
  case PTRAIN_BINARY_DIV:
    return f([](float a, float b) { return a / b; });
  case PTRAIN_BINARY_POW:
    return f(
        [](float a, float b) { return static_cast<float>(std::pow(static_cast<double>(a), static_cast<double>(b))); });
  case PTRAIN_BINARY_MAX:
    return f([](float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b); });
  default: // PTRAIN_BINARY_MIN, checked by the caller.
    return f([](float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b); });
  }
}
} // namespace

extern "C" ptrain_status_t ptrain_binary_f32(int32_t kind, const float *a, int32_t a_rank, const int64_t *a_dims,
                                             const float *b, int32_t b_rank, const int64_t *b_dims, int32_t out_rank,
                                             const int64_t *out_dims, float *out) {
  PTRAIN_CHECK_ARG(kind >= PTRAIN_BINARY_ADD && kind <= PTRAIN_BINARY_MIN, "unknown binary kind %d", kind);
  int64_t aCount, bCount, n;
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "a", a_rank, a_dims, aCount));
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "b", b_rank, b_dims, bCount));
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "out", out_rank, out_dims, n));
  PTRAIN_CHECK_PTR(a);
  PTRAIN_CHECK_PTR(b);
  PTRAIN_CHECK_PTR(out);
  int64_t aStride[kMaxRank] = {}, bStride[kMaxRank] = {};
  PTRAIN_RETURN_IF_ERROR(broadcastStrides(__func__, "a", a_rank, a_dims, out_rank, out_dims, aStride));
  PTRAIN_RETURN_IF_ERROR(broadcastStrides(__func__, "b", b_rank, b_dims, out_rank, out_dims, bStride));
  if (n == 0)
    return PTRAIN_OK;
  // Walk the result row by row; out may not alias a or b unless it has the
  // same shape (the read precedes the write).
  int64_t strides[2][kMaxRank] = {};
  for (int32_t d = 0; d < out_rank; ++d) {
    strides[0][d] = aStride[d];
    strides[1][d] = bStride[d];
  }
  const auto walk = ptrain::runtime::collapseDims<2>(out_rank, out_dims, strides);
  const int64_t len = walk.rowLength(), sa = walk.rowStride(0), sb = walk.rowStride(1);
  withBinaryOp(kind, [&](auto op) {
    ptrain::runtime::forEachRow(
        walk, [&](int64_t o, const int64_t *at) { binaryRow(a + at[0], sa, b + at[1], sb, out + o, len, op); });
  });
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_sum_to_f32(const float *x, int32_t rank, const int64_t *dims, int32_t out_rank,
                                             const int64_t *out_dims, float *out) {
  int64_t n, outCount;
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "x", rank, dims, n));
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "out", out_rank, out_dims, outCount));
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out);
  // The result is read from x's index space like a broadcast operand.
  int64_t outStride[kMaxRank] = {};
  PTRAIN_RETURN_IF_ERROR(broadcastStrides(__func__, "out", out_rank, out_dims, rank, dims, outStride));
  double *acc = ptrain::runtime::allocArray<double>(outCount);
  if (acc == nullptr)
    return ptrain::runtime::fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate %lld accumulators",
                                 static_cast<long long>(outCount));
  for (int64_t i = 0; i < outCount; ++i)
    acc[i] = 0.0;
  // Row by row over x; each accumulator still adds its elements in x's order.
  if (n > 0) {
    int64_t strides[1][kMaxRank] = {};
    for (int32_t d = 0; d < rank; ++d)
      strides[0][d] = outStride[d];
    const auto walk = ptrain::runtime::collapseDims<1>(rank, dims, strides);
    const int64_t len = walk.rowLength(), so = walk.rowStride(0);
    ptrain::runtime::forEachRow(walk, [&](int64_t i, const int64_t *at) {
      const float *xr = x + i;
      double *accr = acc + at[0];
      if (so == 1) {
        for (int64_t c = 0; c < len; ++c)
          accr[c] += xr[c];
      } else {
        double sum = accr[0];
        for (int64_t c = 0; c < len; ++c)
          sum += xr[c];
        accr[0] = sum;
      }
    });
  }
  for (int64_t i = 0; i < outCount; ++i)
    out[i] = static_cast<float>(acc[i]);
  std::free(acc);
  return PTRAIN_OK;
}

//===----------------------------------------------------------------------===//
// Masks, selection, broadcast copies and reductions (ptrain.compare,
// ptrain.select, ptrain.broadcast_to, ptrain.reduce). Masks are i1 tensors
// stored one byte per element (0 or 1).
//===----------------------------------------------------------------------===//

namespace {

/// Walks the result of shape outDims[outRank] in row-major order and calls
/// f(o, i[0], ..., i[N-1]) with the element offsets of the N operands read
/// with strides[k] (broadcastStrides).
template <int N, typename F>
void walkBroadcast(int32_t outRank, const int64_t *outDims, int64_t n, const int64_t (&strides)[N][kMaxRank], F f) {
  int64_t index[kMaxRank] = {};
  int64_t at[N] = {};
  for (int64_t o = 0; o < n; ++o) {
    if constexpr (N == 1)
      f(o, at[0]);
    else if constexpr (N == 2)
      f(o, at[0], at[1]);
    else
      f(o, at[0], at[1], at[2]);
    for (int32_t d = outRank - 1; d >= 0; --d) {
      if (++index[d] < outDims[d]) {
        for (int k = 0; k < N; ++k)
          at[k] += strides[k][d];
        break;
      }
      for (int k = 0; k < N; ++k)
        at[k] -= strides[k][d] * (outDims[d] - 1);
      index[d] = 0;
    }
  }
}

/// The shapes and strides of a two-operand broadcast into out; n = |out|.
ptrain_status_t twoOperands(const char *call, int32_t a_rank, const int64_t *a_dims, int32_t b_rank,
                            const int64_t *b_dims, int32_t out_rank, const int64_t *out_dims,
                            int64_t (&strides)[2][kMaxRank], int64_t &n) {
  int64_t aCount, bCount;
  PTRAIN_RETURN_IF_ERROR(checkShape(call, "a", a_rank, a_dims, aCount));
  PTRAIN_RETURN_IF_ERROR(checkShape(call, "b", b_rank, b_dims, bCount));
  PTRAIN_RETURN_IF_ERROR(checkShape(call, "out", out_rank, out_dims, n));
  PTRAIN_RETURN_IF_ERROR(broadcastStrides(call, "a", a_rank, a_dims, out_rank, out_dims, strides[0]));
  return broadcastStrides(call, "b", b_rank, b_dims, out_rank, out_dims, strides[1]);
}

/// twoOperands, then the pointers, which must not be null unless the result is empty (n = 0: nothing to do).
ptrain_status_t twoOperandsWithData(const char *call, const void *a, int32_t a_rank, const int64_t *a_dims,
                                    const void *b, int32_t b_rank, const int64_t *b_dims, int32_t out_rank,
                                    const int64_t *out_dims, const void *out, int64_t (&strides)[2][kMaxRank],
                                    int64_t &n) {
  PTRAIN_RETURN_IF_ERROR(twoOperands(call, a_rank, a_dims, b_rank, b_dims, out_rank, out_dims, strides, n));
  if (n > 0 && (a == nullptr || b == nullptr || out == nullptr))
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "a, b and out must not be null");
  return PTRAIN_OK;
}

template <typename T>
ptrain_status_t compareTensors(const char *call, int32_t kind, const T *a, int32_t a_rank, const int64_t *a_dims,
                               const T *b, int32_t b_rank, const int64_t *b_dims, int32_t out_rank,
                               const int64_t *out_dims, uint8_t *out) {
  if (kind < PTRAIN_COMPARE_EQ || kind > PTRAIN_COMPARE_GE)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                 "unknown comparison kind %d (eq, lt, le, gt, "
                                 "ge are 0..4)",
                                 kind);
  int64_t strides[2][kMaxRank] = {}, n;
  PTRAIN_RETURN_IF_ERROR(
      twoOperandsWithData(call, a, a_rank, a_dims, b, b_rank, b_dims, out_rank, out_dims, out, strides, n));
  walkBroadcast<2>(out_rank, out_dims, n, strides, [&](int64_t o, int64_t i, int64_t j) {
    out[o] = ptrain::runtime::compareValues(kind, a[i], b[j]) ? 1 : 0;
  });
  return PTRAIN_OK;
}

} // namespace

extern "C" ptrain_status_t ptrain_compare_f32(int32_t kind, const float *a, int32_t a_rank, const int64_t *a_dims,
                                              const float *b, int32_t b_rank, const int64_t *b_dims, int32_t out_rank,
                                              const int64_t *out_dims, uint8_t *out) {
  return compareTensors(__func__, kind, a, a_rank, a_dims, b, b_rank, b_dims, out_rank, out_dims, out);
}

extern "C" ptrain_status_t ptrain_compare_i64(int32_t kind, const int64_t *a, int32_t a_rank, const int64_t *a_dims,
                                              const int64_t *b, int32_t b_rank, const int64_t *b_dims, int32_t out_rank,
                                              const int64_t *out_dims, uint8_t *out) {
  return compareTensors(__func__, kind, a, a_rank, a_dims, b, b_rank, b_dims, out_rank, out_dims, out);
}

extern "C" ptrain_status_t ptrain_binary_i64(int32_t kind, const int64_t *a, int32_t a_rank, const int64_t *a_dims,
                                             const int64_t *b, int32_t b_rank, const int64_t *b_dims, int32_t out_rank,
                                             const int64_t *out_dims, int64_t *out) {
  PTRAIN_CHECK_ARG(kind == PTRAIN_BINARY_ADD || kind == PTRAIN_BINARY_SUB || kind == PTRAIN_BINARY_MUL ||
                       kind == PTRAIN_BINARY_MAX || kind == PTRAIN_BINARY_MIN,
                   "binary kind %d is not one of add, sub, mul, max, min (0, 1, 2, 5, 6)", kind);
  int64_t strides[2][kMaxRank] = {}, n;
  PTRAIN_RETURN_IF_ERROR(
      twoOperandsWithData(__func__, a, a_rank, a_dims, b, b_rank, b_dims, out_rank, out_dims, out, strides, n));
  // Each element is read before it is written, so out may alias an operand of its shape.
  int64_t bad = -1, badA = 0, badB = 0;
  walkBroadcast<2>(out_rank, out_dims, n, strides, [&](int64_t o, int64_t i, int64_t j) {
    const int64_t x = a[i], y = b[j];
    int64_t r = 0;
    bool overflow = false;
    switch (kind) {
    case PTRAIN_BINARY_ADD:
      overflow = __builtin_add_overflow(x, y, &r);
      break;
    case PTRAIN_BINARY_SUB:
      overflow = __builtin_sub_overflow(x, y, &r);
      break;
    case PTRAIN_BINARY_MUL:
      overflow = __builtin_mul_overflow(x, y, &r);
      break;
    case PTRAIN_BINARY_MAX:
      r = x > y ? x : y;
      break;
    default: // PTRAIN_BINARY_MIN
      r = x < y ? x : y;
      break;
    }
    if (overflow && bad < 0) {
      bad = o;
      badA = x;
      badB = y;
    }
    out[o] = r;
  });
  if (bad >= 0)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                                 "out[%lld] of %lld and %lld (binary kind %d) overflows int64",
                                 static_cast<long long>(bad), static_cast<long long>(badA),
                                 static_cast<long long>(badB), kind);
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_logical_u8(int32_t kind, const uint8_t *a, int32_t a_rank, const int64_t *a_dims,
                                             const uint8_t *b, int32_t b_rank, const int64_t *b_dims, int32_t out_rank,
                                             const int64_t *out_dims, uint8_t *out) {
  if (kind >= PTRAIN_COMPARE_EQ && kind <= PTRAIN_COMPARE_GE)
    return compareTensors(__func__, kind, a, a_rank, a_dims, b, b_rank, b_dims, out_rank, out_dims, out);
  PTRAIN_CHECK_ARG(kind >= PTRAIN_COMPARE_AND && kind <= PTRAIN_COMPARE_XOR,
                   "unknown logical kind %d (and, or, xor are 5..7)", kind);
  int64_t strides[2][kMaxRank] = {}, n;
  PTRAIN_RETURN_IF_ERROR(
      twoOperandsWithData(__func__, a, a_rank, a_dims, b, b_rank, b_dims, out_rank, out_dims, out, strides, n));
  walkBroadcast<2>(out_rank, out_dims, n, strides, [&](int64_t o, int64_t i, int64_t j) {
    const bool x = a[i] != 0, y = b[j] != 0;
    out[o] = kind == PTRAIN_COMPARE_AND ? (x && y) : kind == PTRAIN_COMPARE_OR ? (x || y) : (x != y);
  });
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_select(const uint8_t *cond, int32_t c_rank, const int64_t *c_dims, const void *a,
                                         int32_t a_rank, const int64_t *a_dims, const void *b, int32_t b_rank,
                                         const int64_t *b_dims, int64_t elem_bytes, int32_t out_rank,
                                         const int64_t *out_dims, void *out) {
  PTRAIN_CHECK_ARG(elem_bytes == 1 || elem_bytes == 2 || elem_bytes == 4 || elem_bytes == 8,
                   "elem_bytes must be 1, 2, 4 or 8, got %lld", static_cast<long long>(elem_bytes));
  int64_t count, n;
  int64_t strides[3][kMaxRank] = {};
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "cond", c_rank, c_dims, count));
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "a", a_rank, a_dims, count));
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "b", b_rank, b_dims, count));
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "out", out_rank, out_dims, n));
  PTRAIN_RETURN_IF_ERROR(broadcastStrides(__func__, "cond", c_rank, c_dims, out_rank, out_dims, strides[0]));
  PTRAIN_RETURN_IF_ERROR(broadcastStrides(__func__, "a", a_rank, a_dims, out_rank, out_dims, strides[1]));
  PTRAIN_RETURN_IF_ERROR(broadcastStrides(__func__, "b", b_rank, b_dims, out_rank, out_dims, strides[2]));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CHECK_PTR(cond);
  PTRAIN_CHECK_PTR(a);
  PTRAIN_CHECK_PTR(b);
  PTRAIN_CHECK_PTR(out);
  const auto *pa = static_cast<const unsigned char *>(a);
  const auto *pb = static_cast<const unsigned char *>(b);
  auto *po = static_cast<unsigned char *>(out);
  walkBroadcast<3>(out_rank, out_dims, n, strides, [&](int64_t o, int64_t c, int64_t i, int64_t j) {
    const unsigned char *src = cond[c] ? pa + i * elem_bytes : pb + j * elem_bytes;
    for (int64_t k = 0; k < elem_bytes; ++k)
      po[o * elem_bytes + k] = src[k];
  });
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_broadcast_to(const void *x, int64_t elem_bytes, int32_t rank, const int64_t *dims,
                                               int32_t out_rank, const int64_t *out_dims, void *out) {
  PTRAIN_CHECK_ARG(elem_bytes >= 1 && elem_bytes <= 8, "elem_bytes must be in [1, 8], got %lld",
                   static_cast<long long>(elem_bytes));
  int64_t count, n;
  int64_t strides[1][kMaxRank] = {};
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "x", rank, dims, count));
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "out", out_rank, out_dims, n));
  PTRAIN_RETURN_IF_ERROR(broadcastStrides(__func__, "x", rank, dims, out_rank, out_dims, strides[0]));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out);
  const auto *px = static_cast<const unsigned char *>(x);
  auto *po = static_cast<unsigned char *>(out);
  // x repeated over leading dims only (a bias broadcast over rows: x's dims, after its leading 1s, are out's
  // trailing dims): one block copy per repetition.
  int32_t lead = 0;
  while (lead < rank && dims[lead] == 1)
    ++lead;
  bool trailing = rank - lead <= out_rank && count > 0;
  for (int32_t d = lead; trailing && d < rank; ++d)
    trailing = dims[d] == out_dims[out_rank - rank + d];
  if (trailing) {
    const int64_t block = count * elem_bytes;
    for (int64_t o = 0; o < n; o += count)
      std::memcpy(po + o * elem_bytes, px, static_cast<size_t>(block));
    return PTRAIN_OK;
  }
  walkBroadcast<1>(out_rank, out_dims, n, strides, [&](int64_t o, int64_t i) {
    for (int64_t k = 0; k < elem_bytes; ++k)
      po[o * elem_bytes + k] = px[i * elem_bytes + k];
  });
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_reduce_f32(int32_t kind, const float *x, int32_t rank, const int64_t *dims,
                                             int32_t out_rank, const int64_t *out_dims, float *out) {
  PTRAIN_CHECK_ARG(kind >= PTRAIN_REDUCE_KIND_SUM && kind <= PTRAIN_REDUCE_KIND_MAX,
                   "unknown reduction kind %d (sum, mean, max are 0..2)", kind);
  int64_t n, outCount;
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "x", rank, dims, n));
  PTRAIN_RETURN_IF_ERROR(checkShape(__func__, "out", out_rank, out_dims, outCount));
  PTRAIN_CHECK_ARG(kind != PTRAIN_REDUCE_KIND_MAX || outCount == 0 || n > 0,
                   "max of an empty reduction has no identity");
  if (kind == PTRAIN_REDUCE_KIND_SUM)
    return ptrain_sum_to_f32(x, rank, dims, out_rank, out_dims, out);
  // Mean: the fp64 sum divided once and rounded, as the reference
  // interpreter does.
  if (outCount == 0)
    return PTRAIN_OK;
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out);
  int64_t strides[1][kMaxRank] = {};
  PTRAIN_RETURN_IF_ERROR(broadcastStrides(__func__, "out", out_rank, out_dims, rank, dims, strides[0]));
  double *acc = ptrain::runtime::allocArray<double>(outCount);
  if (acc == nullptr)
    return ptrain::runtime::fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate %lld accumulators",
                                 static_cast<long long>(outCount));
  const bool max = kind == PTRAIN_REDUCE_KIND_MAX;
  for (int64_t i = 0; i < outCount; ++i)
    acc[i] = max ? -INFINITY : 0.0;
  walkBroadcast<1>(rank, dims, n, strides, [&](int64_t i, int64_t o) {
    if (!max)
      acc[o] += x[i];
    else if (std::isnan(x[i]) || x[i] > acc[o])
      acc[o] = std::isnan(acc[o]) ? acc[o] : x[i];
  });
  const double per = outCount == 0 ? 1.0 : static_cast<double>(n / outCount);
  for (int64_t i = 0; i < outCount; ++i)
    out[i] = static_cast<float>(max ? acc[i] : acc[i] / per);
  std::free(acc);
  return PTRAIN_OK;
}
