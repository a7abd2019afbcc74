//===- PowerSGD.cu - PowerSGD encode and decode through cuBLAS ------------===//
//
// #ptrain.powersgd on the GPU with the phases and the exact path of
// cpu/codecs/PowerSGD.h: M = g + e; P = M Q0 (cublasSgemmStridedBatched
// over the batch of same-shape matrices); P = orth(P) by modified
// Gram-Schmidt (one thread block per matrix, fp64 sums; a zero column stays
// zero, so an all-zero gradient gives zeros, not NaN); Q = M^T P;
// e = M - P Q^T; warm-start Q = Q. The initial Q (and an all-zero column of
// a warm-start Q) is the CPU's: standard normal by Box-Muller on SplitMix64
// stream b * rank + j of the seed, element i from draws 2i + 1 and 2i + 2
// (the state advances by a constant, so a thread computes its draw directly).
//
// Row-major matrices are column-major transposes for cuBLAS: a row-major
// C = A B is C^T = B^T A^T with the operands swapped. SGEMMs run in the
// default math mode (no TF32), so the result differs from the CPU's only by
// the summation order: the tests state 1e-4 relative.
//
//===----------------------------------------------------------------------===//

#include "cuda/PowerSGD.h"

#include "cuda/Blas.h"

#include <cuda_runtime.h>

#include <climits>

using namespace ptrain::cuda;

namespace {

using Shape = PowerSgdShape;

} // namespace

ptrain_status_t ptrain::cuda::gpuPowersgdCheck(const char *call, const Shape &s) {
  if (s.batch < 1 || s.n < 1 || s.m < 1)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "batch, n and m must be >= 1, got %lld, %lld, %lld",
                static_cast<long long>(s.batch), static_cast<long long>(s.n), static_cast<long long>(s.m));
  if (s.n > INT_MAX || s.m > INT_MAX || s.n > INT64_MAX / s.m / s.batch)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "the %lld x %lld matrix is too large for cuBLAS's int",
                static_cast<long long>(s.n), static_cast<long long>(s.m));
  const int64_t minNM = s.n < s.m ? s.n : s.m;
  if (s.rank < 1 || s.rank > minNM)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "rank %lld must be in [1, min(n, m) = %lld] for the %lld x %lld matrix", static_cast<long long>(s.rank),
                static_cast<long long>(minNM), static_cast<long long>(s.n), static_cast<long long>(s.m));
  return PTRAIN_OK;
}

namespace {

__global__ void __launch_bounds__(kThreads) addInto(const float *__restrict__ g, float *__restrict__ e, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    e[i] = __fadd_rn(e[i], g[i]);
}

__global__ void __launch_bounds__(kThreads) scaleInto(const float *x, int64_t n, float a, float *out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = __fmul_rn(a, x[i]);
}

/// redraw[c] = 0 for every column c = b * rank + j of Q [batch, m, rank]
/// holding a nonzero (redraw starts at 1).
__global__ void __launch_bounds__(kThreads)
    markNonzeroColumns(const float *__restrict__ q, int64_t count, int64_t m, int64_t rank, int *__restrict__ redraw) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += stride)
    if (q[e] != 0.0f)
      redraw[(e / (m * rank)) * rank + e % rank] = 0;
}

__device__ __forceinline__ uint64_t splitMix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// N(0, 1) into every element of a column with redraw[column] != 0 (all
/// columns when redraw is null): SplitMix64 stream b * rank + j of the seed,
/// draw t (1-based) = mix(x0 + t * gamma), Box-Muller in fp64.
__global__ void __launch_bounds__(kThreads) drawColumns(float *__restrict__ q, int64_t count, int64_t m, int64_t rank,
                                                        uint64_t seed, const int *__restrict__ redraw) {
  constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += stride) {
    const int64_t b = e / (m * rank), i = (e / rank) % m, j = e % rank;
    const int64_t column = b * rank + j;
    if (redraw && !redraw[column])
      continue;
    const uint64_t x0 = seed ^ (kGamma * (static_cast<uint64_t>(column) + 1));
    const uint64_t t = 2 * static_cast<uint64_t>(i) + 1;
    const double u1 = (static_cast<double>(splitMix(x0 + t * kGamma) >> 11) + 1.0) * 0x1.0p-53;
    const double u2 = (static_cast<double>(splitMix(x0 + (t + 1) * kGamma) >> 11) + 1.0) * 0x1.0p-53;
    q[e] = static_cast<float>(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
  }
}

__device__ double blockSum(double v, double *shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half >>= 1) {
    if (static_cast<int>(threadIdx.x) < half)
      shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();
  return total;
}

/// Modified Gram-Schmidt on the columns of the row-major n x rank P of
/// matrix blockIdx.x, as the CPU: normalize column j (a zero or non-finite
/// inverse norm zeroes it), then remove it from every later column.
__global__ void __launch_bounds__(kThreads) orthogonalize(float *p, int64_t n, int64_t rank) {
  __shared__ double shared[kThreads];
  float *pb = p + static_cast<int64_t>(blockIdx.x) * n * rank;
  for (int64_t j = 0; j < rank; ++j) {
    double sq = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const double x = pb[i * rank + j];
      sq += x * x;
    }
    const float norm = static_cast<float>(sqrt(blockSum(sq, shared)));
    const float inv = norm > 0.0f ? __fdiv_rn(1.0f, norm) : 0.0f;
    const bool keep = isfinite(inv) && inv > 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      pb[i * rank + j] = keep ? __fmul_rn(pb[i * rank + j], inv) : 0.0f;
    __syncthreads();
    if (!keep)
      continue;
    for (int64_t l = j + 1; l < rank; ++l) {
      double dot = 0.0;
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        dot += static_cast<double>(pb[i * rank + j]) * pb[i * rank + l];
      const float w = static_cast<float>(blockSum(dot, shared));
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        pb[i * rank + l] = __fsub_rn(pb[i * rank + l], __fmul_rn(w, pb[i * rank + j]));
      __syncthreads();
    }
  }
}

/// out (or, with accumulate, out -= ) = P Q^T per batch entry, row-major [n, m].
ptrain_status_t productPQt(const char *call, cublasHandle_t h, const Shape &s, const float *p, const float *q,
                           float alpha, float beta, float *out) {
  const int n = static_cast<int>(s.n), m = static_cast<int>(s.m), r = static_cast<int>(s.rank);
  return checkBlas(call,
                   cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, r, &alpha, q, r, s.m * s.rank, p, r,
                                             s.n * s.rank, &beta, out, m, s.n * s.m, static_cast<int>(s.batch)),
                   "cublasSgemmStridedBatched(P Q^T)");
}

/// The exact path's code: M's values fill P, then Q; the rest is zero.
ptrain_status_t carryExact(const char *call, const Shape &s, const float *mat, float *p, float *q) {
  const cudaStream_t st = currentStream();
  const int64_t numel = s.numel();
  const int64_t inP = numel < s.pCount() ? numel : s.pCount();
  PTRAIN_CUDA_RETURN_IF_ERROR(
      check(call, cudaMemcpyAsync(p, mat, inP * sizeof(float), cudaMemcpyDeviceToDevice, st), "cudaMemcpyAsync(P)"));
  PTRAIN_CUDA_RETURN_IF_ERROR(
      check(call, cudaMemsetAsync(p + inP, 0, (s.pCount() - inP) * sizeof(float), st), "cudaMemsetAsync(P)"));
  PTRAIN_CUDA_RETURN_IF_ERROR(
      check(call, cudaMemcpyAsync(q, mat + inP, (numel - inP) * sizeof(float), cudaMemcpyDeviceToDevice, st),
            "cudaMemcpyAsync(Q)"));
  return check(call, cudaMemsetAsync(q + (numel - inP), 0, (s.qCount() - (numel - inP)) * sizeof(float), st),
               "cudaMemsetAsync(Q)");
}

} // namespace

ptrain_status_t ptrain::cuda::scaleF32(const char *call, const float *x, int64_t n, float a, float *out) {
  if (n <= 0)
    return PTRAIN_OK;
  const cudaStream_t st = currentStream();
  if (a == 1.0f)
    return x == out ? PTRAIN_OK
                    : check(call, cudaMemcpyAsync(out, x, n * sizeof(float), cudaMemcpyDeviceToDevice, st),
                            "cudaMemcpyAsync");
  scaleInto<<<gridFor(n), kThreads, 0, st>>>(x, n, a, out);
  return check(call, cudaGetLastError(), "scaleInto");
}

ptrain_status_t ptrain::cuda::gpuPowersgdPhaseP(const char *call, const Shape &s, const float *g, float *residual,
                                                float *q_state, uint64_t seed, float *out_p, float *out_q,
                                                const float **outM) {
  const cudaStream_t st = currentStream();
  const float *mat = g;
  if (residual) {
    addInto<<<gridFor(s.numel()), kThreads, 0, st>>>(g, residual, s.numel());
    PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaGetLastError(), "addInto"));
    mat = residual;
  }
  *outM = mat;
  if (s.exact())
    return carryExact(call, s, mat, out_p, out_q);
  cublasHandle_t h;
  PTRAIN_CUDA_RETURN_IF_ERROR(blasHandle(call, &h));
  // Q0: the warm start with its zero columns redrawn, or a fresh draw.
  float *q0 = q_state;
  if (q_state) {
    const int64_t columns = s.batch * s.rank;
    auto *redraw = static_cast<int *>(deviceScratch(call, DeviceSlot::Flag, columns * sizeof(int)));
    if (!redraw)
      return PTRAIN_ERROR_DEVICE;
    // 0x01010101 is nonzero: "redraw" until a nonzero element clears it.
    PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaMemsetAsync(redraw, 1, columns * sizeof(int), st), "cudaMemsetAsync"));
    markNonzeroColumns<<<gridFor(s.qCount()), kThreads, 0, st>>>(q_state, s.qCount(), s.m, s.rank, redraw);
    PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaGetLastError(), "markNonzeroColumns"));
    drawColumns<<<gridFor(s.qCount()), kThreads, 0, st>>>(q_state, s.qCount(), s.m, s.rank, seed, redraw);
  } else {
    q0 = static_cast<float *>(deviceScratch(call, DeviceSlot::Temp, s.qCount() * sizeof(float)));
    if (!q0)
      return PTRAIN_ERROR_DEVICE;
    drawColumns<<<gridFor(s.qCount()), kThreads, 0, st>>>(q0, s.qCount(), s.m, s.rank, seed, nullptr);
  }
  PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaGetLastError(), "drawColumns"));
  const int ni = static_cast<int>(s.n), mi = static_cast<int>(s.m), r = static_cast<int>(s.rank);
  const int b = static_cast<int>(s.batch);
  const float one = 1.0f, zero = 0.0f;
  // P^T = Q0^T M^T: column-major r x n = (r x m) (m x n).
  return checkBlas(call,
                   cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, r, ni, mi, &one, q0, r, s.m * s.rank, mat, mi,
                                             s.n * s.m, &zero, out_p, r, s.n * s.rank, b),
                   "cublasSgemmStridedBatched(M Q0)");
}

ptrain_status_t ptrain::cuda::gpuPowersgdPhaseQ(const char *call, const Shape &s, const float *mat, float *out_p,
                                                float *out_q) {
  if (s.exact())
    return PTRAIN_OK;
  cublasHandle_t h;
  PTRAIN_CUDA_RETURN_IF_ERROR(blasHandle(call, &h));
  const int ni = static_cast<int>(s.n), mi = static_cast<int>(s.m), r = static_cast<int>(s.rank);
  const int b = static_cast<int>(s.batch);
  const float one = 1.0f, zero = 0.0f;
  orthogonalize<<<b, kThreads, 0, currentStream()>>>(out_p, s.n, s.rank);
  PTRAIN_CUDA_RETURN_IF_ERROR(check(call, cudaGetLastError(), "orthogonalize"));
  // Q^T = P^T M: column-major r x m = (r x n) (n x m).
  return checkBlas(call,
                   cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, r, mi, ni, &one, out_p, r, s.n * s.rank, mat,
                                             mi, s.n * s.m, &zero, out_q, r, s.m * s.rank, b),
                   "cublasSgemmStridedBatched(M^T P)");
}

ptrain_status_t ptrain::cuda::gpuPowersgdFinish(const char *call, const Shape &s, const float *p, const float *q,
                                                float alpha, float *out, float *residual, float beta, float *q_state) {
  const cudaStream_t st = currentStream();
  if (s.exact()) {
    const int64_t numel = s.numel();
    const int64_t inP = numel < s.pCount() ? numel : s.pCount();
    if (out) {
      PTRAIN_CUDA_RETURN_IF_ERROR(scaleF32(call, p, inP, alpha, out));
      PTRAIN_CUDA_RETURN_IF_ERROR(scaleF32(call, q, numel - inP, alpha, out + inP));
    }
    if (residual)
      return check(call, cudaMemsetAsync(residual, 0, numel * sizeof(float), st), "cudaMemsetAsync(residual)");
    return PTRAIN_OK;
  }
  cublasHandle_t h;
  PTRAIN_CUDA_RETURN_IF_ERROR(blasHandle(call, &h));
  if (out)
    PTRAIN_CUDA_RETURN_IF_ERROR(productPQt(call, h, s, p, q, alpha, 0.0f, out));
  if (residual)
    PTRAIN_CUDA_RETURN_IF_ERROR(productPQt(call, h, s, p, q, -beta, 1.0f, residual));
  if (q_state && (q_state != q || beta != 1.0f))
    return scaleF32(call, q, s.qCount(), beta, q_state);
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_powersgd_encode_f32(const float *g, float *residual, float *q_state,
                                                           int64_t batch, int64_t n, int64_t m, int64_t rank,
                                                           uint64_t seed, float *out_p, float *out_q) {
  const Shape s{batch, n, m, rank};
  PTRAIN_CUDA_RETURN_IF_ERROR(gpuPowersgdCheck(__func__, s));
  PTRAIN_CUDA_CHECK_PTR(g);
  PTRAIN_CUDA_CHECK_PTR(out_p);
  PTRAIN_CUDA_CHECK_PTR(out_q);
  const float *mat = nullptr;
  PTRAIN_CUDA_RETURN_IF_ERROR(gpuPowersgdPhaseP(__func__, s, g, residual, q_state, seed, out_p, out_q, &mat));
  PTRAIN_CUDA_RETURN_IF_ERROR(gpuPowersgdPhaseQ(__func__, s, mat, out_p, out_q));
  return gpuPowersgdFinish(__func__, s, out_p, out_q, 1.0f, nullptr, residual, 1.0f, s.exact() ? nullptr : q_state);
}

extern "C" ptrain_status_t ptrain_cuda_powersgd_decode_f32(const float *p, const float *q, int64_t batch, int64_t n,
                                                           int64_t m, int64_t rank, float *out) {
  const Shape s{batch, n, m, rank};
  PTRAIN_CUDA_RETURN_IF_ERROR(gpuPowersgdCheck(__func__, s));
  PTRAIN_CUDA_CHECK_PTR(p);
  PTRAIN_CUDA_CHECK_PTR(q);
  PTRAIN_CUDA_CHECK_PTR(out);
  return gpuPowersgdFinish(__func__, s, p, q, 1.0f, out, nullptr, 1.0f, nullptr);
}
