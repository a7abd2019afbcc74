//===- ModelElementwise.cu - Elementwise and layout kernels of the model --===//
//
// The GPU versions of cpu/Broadcast.cpp (binary with numpy broadcasting and
// sum_to, its adjoint), cpu/Unary.cpp, cpu/Integer.cpp, cpu/Gelu.cpp,
// cpu/GeluTanh.cpp, cpu/Permute.cpp and cpu/Slice.cpp, for steps compiled
// with --emit-cuda. Same parameter lists as the CPU calls; tensors are device
// pointers, the dims / offsets / perm arrays are HOST arrays (the generated
// code's static constants), copied into the kernel's parameters. Values are
// computed in double like the CPU's, then rounded to float once; sum_to and
// reduce (sum, mean, max: cpu/Broadcast.cpp's ptrain_reduce_f32) accumulate
// each output in double (one thread per output element); broadcast_to is a
// gather with stride 0 on the broadcast axes, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "cuda/BroadcastLayout.h"
#include "cuda/Device.h"
#include "cuda/GridStride.h"

#include <cuda_runtime.h>

#include <cmath>

using namespace ptrain::cuda;

namespace {

__global__ void binaryKernel(int32_t kind, const float *a, Layout la, const float *b, Layout lb, int64_t n,
                             float *out) {
  PTRAIN_GRID_STRIDE(i, n) {
    const double x = a[offsetOf(la, i)], y = b[offsetOf(lb, i)];
    double r;
    switch (kind) {
    case PTRAIN_BINARY_ADD:
      r = x + y;
      break;
    case PTRAIN_BINARY_SUB:
      r = x - y;
      break;
    case PTRAIN_BINARY_MUL:
      r = x * y;
      break;
    case PTRAIN_BINARY_DIV:
      r = x / y;
      break;
    case PTRAIN_BINARY_POW:
      r = pow(x, y);
      break;
    case PTRAIN_BINARY_MAX:
      r = isnan(x) || isnan(y) ? NAN : (x > y ? x : y);
      break;
    default:
      r = isnan(x) || isnan(y) ? NAN : (x < y ? x : y);
      break;
    }
    out[i] = static_cast<float>(r);
  }
}

/// out[o] = the sum (PTRAIN_REDUCE_KIND_SUM), mean or max of x over the elements that broadcast from o: one
/// thread per output element, which walks the reduced axes (`red`: their dims and x's strides) from o's first
/// element (`keep`: o's x offset). Max propagates NaN; the mean is the fp64 sum divided once.
__global__ void reduceKernel(int32_t kind, const float *x, Layout keep, Layout red, int64_t outCount, int64_t perOut,
                             float *out) {
  PTRAIN_GRID_STRIDE(o, outCount) {
    const int64_t base = offsetOf(keep, o);
    const bool max = kind == PTRAIN_REDUCE_KIND_MAX;
    double acc = max ? -INFINITY : 0.0;
    for (int64_t r = 0; r < perOut; ++r) {
      const double v = x[base + offsetOf(red, r)];
      if (!max)
        acc += v;
      else if (isnan(v) || v > acc)
        acc = isnan(acc) ? acc : v;
    }
    out[o] = static_cast<float>(kind == PTRAIN_REDUCE_KIND_MEAN ? acc / static_cast<double>(perOut) : acc);
  }
}

__global__ void unaryKernel(int32_t kind, const float *x, int64_t n, float *out) {
  PTRAIN_GRID_STRIDE(i, n) {
    const double v = x[i];
    double r;
    switch (kind) {
    case PTRAIN_UNARY_NEG:
      r = -v;
      break;
    case PTRAIN_UNARY_EXP:
      r = exp(v);
      break;
    case PTRAIN_UNARY_LOG:
      r = log(v);
      break;
    case PTRAIN_UNARY_SQRT:
      r = sqrt(v);
      break;
    case PTRAIN_UNARY_RSQRT:
      r = 1.0 / sqrt(v);
      break;
    case PTRAIN_UNARY_RECIPROCAL:
      r = 1.0 / v;
      break;
    case PTRAIN_UNARY_ERF:
      r = erf(v);
      break;
    case PTRAIN_UNARY_TANH:
      r = tanh(v);
      break;
    default:
      r = v > 0.0 ? v : (isnan(v) ? v : 0.0);
      break;
    }
    out[i] = static_cast<float>(r);
  }
}

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kCubic = 0.044715;

/// GELU and its gradient, erf form (tanh = false) or the tanh approximation; dy == nullptr: forward.
__global__ void geluKernel(bool tanhForm, const float *dy, const float *x, int64_t n, float *out) {
  PTRAIN_GRID_STRIDE(i, n) {
    const double xi = x[i];
    double r;
    if (!tanhForm) {
      const double cdf = 0.5 * (1.0 + erf(xi * kInvSqrt2));
      r = dy ? dy[i] * (cdf + xi * kInvSqrt2Pi * exp(-0.5 * xi * xi)) : xi * cdf;
    } else {
      const double t = tanh(kSqrt2OverPi * (xi + kCubic * xi * xi * xi));
      const double du = kSqrt2OverPi * (1.0 + 3.0 * kCubic * xi * xi);
      r = dy ? dy[i] * (0.5 * (1.0 + t) + 0.5 * xi * (1.0 - t * t) * du) : 0.5 * xi * (1.0 + t);
    }
    out[i] = static_cast<float>(r);
  }
}

__global__ void addI64Kernel(const int64_t *a, const int64_t *b, int64_t n, int64_t *out) {
  PTRAIN_GRID_STRIDE(i, n) { out[i] = a[i] + b[i]; }
}

__global__ void castI64I32Kernel(const int64_t *x, int64_t n, int32_t *out) {
  PTRAIN_GRID_STRIDE(i, n) { out[i] = static_cast<int32_t>(x[i]); }
}

/// out[i] = x[offsetOf(src, i)] for every row-major index i of src.dims (permute and slice), or, with
/// scatter, out[offsetOf(src, i)] = x[i] (insert_slice). Elements of T (the element size in bytes).
template <typename T>
__global__ void gatherKernel(const T *x, Layout src, int64_t srcBase, int64_t n, bool scatter, T *out) {
  PTRAIN_GRID_STRIDE(i, n) {
    const int64_t off = srcBase + offsetOf(src, i);
    if (scatter)
      out[off] = x[i];
    else
      out[i] = x[off];
  }
}

ptrain_status_t launchGather(const char *call, const void *x, int64_t elemBytes, const Layout &l, int64_t base,
                             int64_t n, bool scatter, void *out) {
  if (n == 0)
    return PTRAIN_OK;
  const unsigned g = gridFor(n);
  cudaStream_t s = currentStream();
  switch (elemBytes) {
  case 1:
    gatherKernel<<<g, kThreads, 0, s>>>(static_cast<const uint8_t *>(x), l, base, n, scatter,
                                        static_cast<uint8_t *>(out));
    break;
  case 2:
    gatherKernel<<<g, kThreads, 0, s>>>(static_cast<const uint16_t *>(x), l, base, n, scatter,
                                        static_cast<uint16_t *>(out));
    break;
  case 4:
    gatherKernel<<<g, kThreads, 0, s>>>(static_cast<const uint32_t *>(x), l, base, n, scatter,
                                        static_cast<uint32_t *>(out));
    break;
  case 8:
    gatherKernel<<<g, kThreads, 0, s>>>(static_cast<const uint64_t *>(x), l, base, n, scatter,
                                        static_cast<uint64_t *>(out));
    break;
  default:
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "elem_bytes must be 1, 2, 4 or 8, got %lld",
                static_cast<long long>(elemBytes));
  }
  return check(call, cudaGetLastError(), "kernel launch");
}

/// Row-major strides of dims.
void rowMajor(int32_t rank, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    strides[d] = s;
    s *= dims[d];
  }
}

/// The layout of a slice of `dims` at `offsets` with `sliceDims` (its base offset in `base`); checks bounds.
ptrain_status_t sliceLayout(const char *call, int32_t rank, const int64_t *dims, const int64_t *offsets,
                            const int64_t *sliceDims, Layout &l, int64_t &base, int64_t &count) {
  int64_t full = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(call, "full", rank, dims, full));
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(call, "slice", rank, sliceDims, count));
  if (rank > 0 && !offsets)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'offsets' must not be null");
  int64_t strides[kMaxRank];
  rowMajor(rank, dims, strides);
  l.rank = rank;
  base = 0;
  for (int32_t d = 0; d < rank; ++d) {
    if (offsets[d] < 0 || offsets[d] + sliceDims[d] > dims[d])
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "axis %d: offset %lld + size %lld exceeds the dimension %lld", d,
                  static_cast<long long>(offsets[d]), static_cast<long long>(sliceDims[d]),
                  static_cast<long long>(dims[d]));
    l.dims[d] = sliceDims[d];
    l.strides[d] = strides[d];
    base += offsets[d] * strides[d];
  }
  return PTRAIN_OK;
}

} // namespace

extern "C" ptrain_status_t ptrain_cuda_binary_f32(int32_t kind, const float *a, int32_t a_rank, const int64_t *a_dims,
                                                  const float *b, int32_t b_rank, const int64_t *b_dims,
                                                  int32_t out_rank, const int64_t *out_dims, float *out) {
  PTRAIN_CUDA_CHECK_ARG(kind >= PTRAIN_BINARY_ADD && kind <= PTRAIN_BINARY_MIN, "unknown binary kind %d", kind);
  int64_t na = 0, nb = 0, n = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(__func__, "a", a_rank, a_dims, na));
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(__func__, "b", b_rank, b_dims, nb));
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(__func__, "out", out_rank, out_dims, n));
  Layout la, lb;
  PTRAIN_CUDA_RETURN_IF_ERROR(broadcastLayout(__func__, "a", a_rank, a_dims, out_rank, out_dims, la));
  PTRAIN_CUDA_RETURN_IF_ERROR(broadcastLayout(__func__, "b", b_rank, b_dims, out_rank, out_dims, lb));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(a);
  PTRAIN_CUDA_CHECK_PTR(b);
  PTRAIN_CUDA_CHECK_PTR(out);
  binaryKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(kind, a, la, b, lb, n, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

namespace {
/// sum_to and reduce: out's shape broadcasts to x's (the keepdims shape).
ptrain_status_t reduceTo(const char *call, int32_t kind, const float *x, int32_t rank, const int64_t *dims,
                         int32_t out_rank, const int64_t *out_dims, float *out) {
  int64_t n = 0, outCount = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(call, "x", rank, dims, n));
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(call, "out", out_rank, out_dims, outCount));
  Layout outOverX; // out's strides over x's dims: 0 on the reduced axes
  PTRAIN_CUDA_RETURN_IF_ERROR(broadcastLayout(call, "out", out_rank, out_dims, rank, dims, outOverX));
  if (kind == PTRAIN_REDUCE_KIND_MAX && outCount > 0 && n == 0)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "max of an empty reduction has no identity");
  if (outCount == 0)
    return PTRAIN_OK;
  if (!x || !out)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "x and out must not be null");
  // Kept axes (outOverX stride != 0 or dims 1 that are not reduced) index the output; the reduced axes
  // (stride 0 with dims > 1) are walked by each thread.
  int64_t xStrides[kMaxRank];
  rowMajor(rank, dims, xStrides);
  Layout keep, red;
  int64_t perOut = 1;
  for (int32_t d = 0; d < rank; ++d) {
    const bool reduced = outOverX.strides[d] == 0 && dims[d] > 1;
    Layout &l = reduced ? red : keep;
    l.dims[l.rank] = dims[d];
    l.strides[l.rank] = xStrides[d];
    ++l.rank;
    if (reduced)
      perOut *= dims[d];
  }
  if (n == 0)
    return ptrain_cuda_zero_bytes(out, outCount * static_cast<int64_t>(sizeof(float)));
  reduceKernel<<<gridFor(outCount), kThreads, 0, currentStream()>>>(kind, x, keep, red, outCount, perOut, out);
  return check(call, cudaGetLastError(), "kernel launch");
}
} // namespace

extern "C" ptrain_status_t ptrain_cuda_sum_to_f32(const float *x, int32_t rank, const int64_t *dims, int32_t out_rank,
                                                  const int64_t *out_dims, float *out) {
  return reduceTo(__func__, PTRAIN_REDUCE_KIND_SUM, x, rank, dims, out_rank, out_dims, out);
}

extern "C" ptrain_status_t ptrain_cuda_reduce_f32(int32_t kind, const float *x, int32_t rank, const int64_t *dims,
                                                  int32_t out_rank, const int64_t *out_dims, float *out) {
  PTRAIN_CUDA_CHECK_ARG(kind >= PTRAIN_REDUCE_KIND_SUM && kind <= PTRAIN_REDUCE_KIND_MAX,
                        "unknown reduction kind %d (sum, mean, max are 0..2)", kind);
  return reduceTo(__func__, kind, x, rank, dims, out_rank, out_dims, out);
}

extern "C" ptrain_status_t ptrain_cuda_broadcast_to(const void *x, int64_t elem_bytes, int32_t rank,
                                                    const int64_t *dims, int32_t out_rank, const int64_t *out_dims,
                                                    void *out) {
  int64_t nx = 0, n = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(__func__, "x", rank, dims, nx));
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(__func__, "out", out_rank, out_dims, n));
  Layout l; // x's strides over out's dims: 0 on the broadcast axes
  PTRAIN_CUDA_RETURN_IF_ERROR(broadcastLayout(__func__, "x", rank, dims, out_rank, out_dims, l));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(x);
  PTRAIN_CUDA_CHECK_PTR(out);
  return launchGather(__func__, x, elem_bytes, l, 0, n, false, out);
}

extern "C" ptrain_status_t ptrain_cuda_unary_f32(int32_t kind, const float *x, int64_t n, float *out) {
  PTRAIN_CUDA_CHECK_ARG(kind >= PTRAIN_UNARY_NEG && kind <= PTRAIN_UNARY_RELU, "unknown unary kind %d", kind);
  PTRAIN_CUDA_CHECK_SIZE(n);
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(x);
  PTRAIN_CUDA_CHECK_PTR(out);
  unaryKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(kind, x, n, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

namespace {
ptrain_status_t gelu(const char *call, bool tanhForm, const float *dy, const float *x, int64_t n, float *out) {
  if (n < 0)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'n' must be >= 0, got %lld", static_cast<long long>(n));
  if (n == 0)
    return PTRAIN_OK;
  if (!x || !out)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "x and out must not be null");
  geluKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(tanhForm, dy, x, n, out);
  return check(call, cudaGetLastError(), "kernel launch");
}
} // namespace

extern "C" ptrain_status_t ptrain_cuda_gelu_fwd_f32(const float *x, int64_t n, float *out_y) {
  return gelu(__func__, false, nullptr, x, n, out_y);
}
extern "C" ptrain_status_t ptrain_cuda_gelu_bwd_f32(const float *dy, const float *x, int64_t n, float *out_dx) {
  PTRAIN_CUDA_CHECK_ARG(n == 0 || dy, "'dy' must not be null");
  return gelu(__func__, false, dy, x, n, out_dx);
}
extern "C" ptrain_status_t ptrain_cuda_gelu_tanh_fwd_f32(const float *x, int64_t n, float *out_y) {
  return gelu(__func__, true, nullptr, x, n, out_y);
}
extern "C" ptrain_status_t ptrain_cuda_gelu_tanh_bwd_f32(const float *dy, const float *x, int64_t n, float *out_dx) {
  PTRAIN_CUDA_CHECK_ARG(n == 0 || dy, "'dy' must not be null");
  return gelu(__func__, true, dy, x, n, out_dx);
}

extern "C" ptrain_status_t ptrain_cuda_add_i64(const int64_t *a, const int64_t *b, int64_t n, int64_t *out) {
  PTRAIN_CUDA_CHECK_SIZE(n);
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(a);
  PTRAIN_CUDA_CHECK_PTR(b);
  PTRAIN_CUDA_CHECK_PTR(out);
  addI64Kernel<<<gridFor(n), kThreads, 0, currentStream()>>>(a, b, n, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_cast_i64_i32(const int64_t *x, int64_t n, int32_t *out) {
  PTRAIN_CUDA_CHECK_SIZE(n);
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(x);
  PTRAIN_CUDA_CHECK_PTR(out);
  castI64I32Kernel<<<gridFor(n), kThreads, 0, currentStream()>>>(x, n, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_permute_f32(const float *x, int32_t rank, const int64_t *dims,
                                                   const int32_t *perm, float *out) {
  int64_t n = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(checkDims(__func__, "x", rank, dims, n));
  PTRAIN_CUDA_CHECK_ARG(rank == 0 || perm, "'perm' must not be null");
  int64_t strides[kMaxRank];
  rowMajor(rank, dims, strides);
  // out dim d is x dim perm[d]: out element i reads x at sum_d index_d * strides[perm[d]].
  Layout l;
  l.rank = rank;
  bool seen[kMaxRank] = {};
  for (int32_t d = 0; d < rank; ++d) {
    PTRAIN_CUDA_CHECK_ARG(perm[d] >= 0 && perm[d] < rank && !seen[perm[d]], "perm is not a permutation of [0, %d)",
                          rank);
    seen[perm[d]] = true;
    l.dims[d] = dims[perm[d]];
    l.strides[d] = strides[perm[d]];
  }
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(x);
  PTRAIN_CUDA_CHECK_PTR(out);
  return launchGather(__func__, x, sizeof(float), l, 0, n, false, out);
}

extern "C" ptrain_status_t ptrain_cuda_slice(const void *x, int64_t elem_bytes, int32_t rank, const int64_t *dims,
                                             const int64_t *offsets, const int64_t *out_dims, void *out) {
  Layout l;
  int64_t base = 0, n = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(sliceLayout(__func__, rank, dims, offsets, out_dims, l, base, n));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(x);
  PTRAIN_CUDA_CHECK_PTR(out);
  return launchGather(__func__, x, elem_bytes, l, base, n, false, out);
}

extern "C" ptrain_status_t ptrain_cuda_insert_slice(const void *x, int64_t elem_bytes, int32_t rank,
                                                    const int64_t *x_dims, const int64_t *offsets,
                                                    const int64_t *out_dims, void *out) {
  Layout l;
  int64_t base = 0, n = 0;
  PTRAIN_CUDA_RETURN_IF_ERROR(sliceLayout(__func__, rank, out_dims, offsets, x_dims, l, base, n));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(x);
  PTRAIN_CUDA_CHECK_PTR(out);
  return launchGather(__func__, x, elem_bytes, l, base, n, true, out);
}
