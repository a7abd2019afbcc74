//===- ModelTransformer.cu - RMS norm, rotary embedding, dropout on the GPU ===//
//
// The GPU versions of cpu/Transformer.cpp (ptrain_rms_norm_fwd_f32,
// ptrain_rotary_embedding_f32) and cpu/Dropout.cpp (ptrain_dropout_global_f32)
// for steps compiled with --emit-cuda: the LLaMA-style ops (Zhang, Sennrich
// 2019, RMSNorm, eq. 4; Su et al. 2021, RoFormer, eq. 34) and inverted dropout
// (Srivastava et al. 2014). Tensors are device pointers.
//
// - rms_norm: one thread block per row, the sum of squares in fp64 (a tree sum,
//   BlockSum.h; the CPU sums in order, so the rows' rstd can differ in the last
//   fp64 bits), each y = x * rstd * scale in fp64 rounded once.
// - rotary_embedding: one thread per element, fp64 products rounded once: the
//   CPU's arithmetic, bit for bit.
// - dropout: one thread per element drawing common/DropoutMask.h, the CPU
//   kernel's own definition of the counter-based mask: bit for bit. The
//   counter is a DEVICE int64 (the step's state); what the CPU emitter derives
//   from it on the host (the step and the first row of a row-packed counter,
//   lib/Transforms/DropoutRows.cpp) the kernel derives on the device.
//
//===----------------------------------------------------------------------===//

#include "common/DropoutMask.h"
#include "cuda/BlockSum.h"
#include "cuda/Device.h"
#include "cuda/GridStride.h"

#include <cuda_runtime.h>

using namespace ptrain::cuda;

namespace {

constexpr int kRowThreads = 256;

__global__ void __launch_bounds__(kRowThreads)
    rmsNormFwd(const float *x, const float *scale, int64_t cols, double eps, float *y) {
  __shared__ double shared[kRowThreads];
  const float *xr = x + static_cast<int64_t>(blockIdx.x) * cols;
  double sq = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    sq += static_cast<double>(xr[c]) * xr[c];
  const double rstd = 1.0 / sqrt(blockSum(sq, shared) / static_cast<double>(cols) + eps);
  float *yr = y + static_cast<int64_t>(blockIdx.x) * cols;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    yr[c] = static_cast<float>(xr[c] * rstd * scale[c]);
}

/// One thread per element of x ([batch, heads, seq, head_dim]); the tables are [batch, seq, rotary_dim / 2].
__global__ void rotaryKernel(const float *x, const float *cos, const float *sin, int64_t heads, int64_t seq,
                             int64_t headDim, int64_t rotaryDim, int32_t interleaved, int64_t n, float *out) {
  const int64_t half = rotaryDim / 2;
  PTRAIN_GRID_STRIDE(e, n) {
    const int64_t c = e % headDim, base = e - c;
    if (c >= rotaryDim) {
      out[e] = x[e];
      continue;
    }
    const int64_t p = (e / headDim) % seq, b = e / (headDim * seq * heads);
    const int64_t i = interleaved ? c / 2 : (c < half ? c : c - half);
    const bool first = interleaved ? c % 2 == 0 : c < half;
    const int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
    const double x1 = x[base + i1], x2 = x[base + i2];
    const int64_t t = (b * seq + p) * half + i;
    const double co = cos[t], si = sin[t];
    out[e] = static_cast<float>(first ? x1 * co - x2 * si : x2 * co + x1 * si);
  }
}

__global__ void dropoutKernel(const float *x, int64_t n, double ratio, int64_t seed, const int64_t *counter,
                              int64_t mid, int64_t inner, int64_t part, int64_t parts, int64_t rowOffset,
                              int64_t rowElems, float *out) {
  using namespace ptrain::runtime;
  const int64_t count = *counter;
  const int64_t step = rowElems > 0 ? (count & 0xFFFFFFFFLL) : count;
  const int64_t base = rowElems > 0 ? ((count >> 32) + rowOffset) * rowElems : 0;
  const uint64_t key = dropoutKey(seed, step);
  const double scale = 1.0 / (1.0 - ratio);
  PTRAIN_GRID_STRIDE(i, n) {
    const double u = dropoutUniform(key, dropoutGlobalIndex(i, mid, inner, part, parts, base));
    out[i] = u >= ratio ? static_cast<float>(x[i] * scale) : 0.0f;
  }
}

} // namespace

extern "C" ptrain_status_t ptrain_cuda_rms_norm_fwd_f32(const float *x, const float *scale, int64_t rows, int64_t cols,
                                                        double eps, float *out_y) {
  PTRAIN_CUDA_CHECK_ARG(rows >= 0 && rows <= INT32_MAX, "rows must be in [0, 2^31 - 1], got %lld",
                        static_cast<long long>(rows));
  PTRAIN_CUDA_CHECK_ARG(cols > 0, "cols must be > 0, got %lld", static_cast<long long>(cols));
  PTRAIN_CUDA_CHECK_ARG(eps >= 0.0, "eps must be >= 0, got %g", eps);
  if (rows == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(x);
  PTRAIN_CUDA_CHECK_PTR(scale);
  PTRAIN_CUDA_CHECK_PTR(out_y);
  rmsNormFwd<<<static_cast<unsigned>(rows), kRowThreads, 0, currentStream()>>>(x, scale, cols, eps, out_y);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_rotary_embedding_f32(const float *x, const float *cos, const float *sin,
                                                            int64_t batch, int64_t heads, int64_t seq, int64_t head_dim,
                                                            int64_t rotary_dim, int32_t interleaved, float *out) {
  PTRAIN_CUDA_CHECK_SIZE(batch);
  PTRAIN_CUDA_CHECK_SIZE(heads);
  PTRAIN_CUDA_CHECK_SIZE(seq);
  PTRAIN_CUDA_CHECK_SIZE(head_dim);
  PTRAIN_CUDA_CHECK_ARG(rotary_dim > 0 && rotary_dim <= head_dim && rotary_dim % 2 == 0,
                        "rotary_dim must be even and in (0, head_dim = %lld], got %lld",
                        static_cast<long long>(head_dim), static_cast<long long>(rotary_dim));
  PTRAIN_CUDA_CHECK_PTR(x);
  PTRAIN_CUDA_CHECK_PTR(cos);
  PTRAIN_CUDA_CHECK_PTR(sin);
  PTRAIN_CUDA_CHECK_PTR(out);
  PTRAIN_CUDA_CHECK_ARG(out != x, "out must not alias x");
  const int64_t n = batch * heads * seq * head_dim;
  if (n == 0)
    return PTRAIN_OK;
  rotaryKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(x, cos, sin, heads, seq, head_dim, rotary_dim, interleaved,
                                                             n, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_dropout_f32(const float *x, int64_t n, double ratio, int64_t seed,
                                                   const int64_t *counter, int64_t mid, int64_t inner, int64_t part,
                                                   int64_t parts, int64_t row_offset, int64_t row_elems, float *out) {
  PTRAIN_CUDA_CHECK_SIZE(n);
  PTRAIN_CUDA_CHECK_ARG(ratio >= 0.0 && ratio < 1.0, "ratio must be in [0, 1), got %g", ratio);
  PTRAIN_CUDA_CHECK_ARG(
      mid >= 0 && inner >= 1 && parts >= 1 && part >= 0 && part < parts && row_offset >= 0 && row_elems >= 0,
      "bad layout: mid %lld, inner %lld, part %lld of %lld, row offset %lld, row elements %lld",
      static_cast<long long>(mid), static_cast<long long>(inner), static_cast<long long>(part),
      static_cast<long long>(parts), static_cast<long long>(row_offset), static_cast<long long>(row_elems));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_PTR(x);
  PTRAIN_CUDA_CHECK_PTR(counter);
  PTRAIN_CUDA_CHECK_PTR(out);
  dropoutKernel<<<gridFor(n), kThreads, 0, currentStream()>>>(x, n, ratio, seed, counter, mid, inner, part, parts,
                                                              row_offset, row_elems, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}
