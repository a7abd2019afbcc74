//===- ModelRows.cu - Row-wise kernels of the model: norms, softmax -------===//
//
// The GPU versions of cpu/LayerNorm.cpp, cpu/Softmax.cpp and cpu/Embedding.cpp
// (the cross-entropy is ModelCrossEntropy.cu) for steps compiled with
// --emit-cuda: one thread block per row, row statistics (mean, variance,
// softmax sums, the softmax-backward dot product) summed in double as on the CPU, then rounded
// once. Column reductions (layer norm's dgamma / dbeta) use one thread per
// column over the rows, in double. Embedding backward is a scatter-add with
// atomicAdd (accumulates, like the CPU's; the order of the float additions
// differs).
//
// Data-dependent errors (an id outside the vocabulary) cannot stop
// a kernel: the kernel skips the element and records the first bad one in a
// device flag (IndexCheck.h); ptrain_cuda_check_indices() (the compiled step
// calls it once at the end of each entry point) synchronizes, reports the
// first of every unit's flags by name and index, and clears them.
//
//===----------------------------------------------------------------------===//

#include "cuda/BlockSum.h"
#include "cuda/Device.h"
#include "cuda/IndexCheck.h"

#include <cuda_runtime.h>

using namespace ptrain::cuda;

namespace {

constexpr int kRowThreads = 256;

__global__ void __launch_bounds__(kRowThreads)
    layerNormFwd(const float *x, const float *gamma, const float *beta, int64_t cols, float eps, float *y,
                 float *outMean, float *outRstd) {
  __shared__ double shared[kRowThreads];
  const float *xr = x + blockIdx.x * cols;
  double sum = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    sum += xr[c];
  const double mean = blockSum(sum, shared) / static_cast<double>(cols);
  double sq = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const double d = xr[c] - mean;
    sq += d * d;
  }
  const double var = blockSum(sq, shared) / static_cast<double>(cols);
  const double rstd = 1.0 / sqrt(var + static_cast<double>(eps));
  float *yr = y + blockIdx.x * cols;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    yr[c] = __fadd_rn(__fmul_rn(static_cast<float>((xr[c] - mean) * rstd), gamma[c]), beta[c]);
  if (threadIdx.x == 0) {
    outMean[blockIdx.x] = static_cast<float>(mean);
    outRstd[blockIdx.x] = static_cast<float>(rstd);
  }
}

__global__ void __launch_bounds__(kRowThreads)
    layerNormBwdRows(const float *dy, const float *x, const float *gamma, const float *mean, const float *rstd,
                     int64_t cols, float *dx) {
  __shared__ double shared[kRowThreads];
  const int64_t r = blockIdx.x;
  const float *xr = x + r * cols, *dyr = dy + r * cols;
  const double mu = mean[r], rs = rstd[r];
  double sumG = 0.0, sumGX = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const double xhat = (xr[c] - mu) * rs;
    const double g = static_cast<double>(dyr[c]) * gamma[c];
    sumG += g;
    sumGX += g * xhat;
  }
  const double meanG = blockSum(sumG, shared) / static_cast<double>(cols);
  const double meanGX = blockSum(sumGX, shared) / static_cast<double>(cols);
  float *dxr = dx + r * cols;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const double xhat = (xr[c] - mu) * rs;
    const double g = static_cast<double>(dyr[c]) * gamma[c];
    dxr[c] = static_cast<float>(rs * (g - meanG - xhat * meanGX));
  }
}

__global__ void layerNormBwdCols(const float *dy, const float *x, const float *mean, const float *rstd, int64_t rows,
                                 int64_t cols, float *dgamma, float *dbeta) {
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double dg = 0.0, db = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      const double d = dy[r * cols + c];
      dg += d * ((x[r * cols + c] - static_cast<double>(mean[r])) * static_cast<double>(rstd[r]));
      db += d;
    }
    dgamma[c] = static_cast<float>(dg);
    dbeta[c] = static_cast<float>(db);
  }
}

__global__ void __launch_bounds__(kRowThreads) softmaxFwd(const float *x, int64_t cols, int32_t causal, float *y) {
  __shared__ double shared[kRowThreads];
  __shared__ float sharedMax[kRowThreads];
  const int64_t r = blockIdx.x;
  const float *xr = x + r * cols;
  float *yr = y + r * cols;
  const int64_t valid = causal ? (r % cols) + 1 : cols;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < valid; c += blockDim.x)
    m = fmaxf(m, xr[c]);
  m = blockMax(m, sharedMax);
  // A fully masked row (every value -inf) gives zeros, as on the CPU (cpu/Softmax.cpp), not -inf - -inf = NaN.
  const bool masked = m == -INFINITY;
  double sum = 0.0;
  for (int64_t c = threadIdx.x; c < valid; c += blockDim.x) {
    const float e = masked ? 0.0f : expf(__fsub_rn(xr[c], m));
    yr[c] = e;
    sum += e;
  }
  const double total = blockSum(sum, shared);
  const float inv = total > 0.0 ? static_cast<float>(1.0 / total) : 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    yr[c] = c < valid ? __fmul_rn(yr[c], inv) : 0.0f;
}

__global__ void __launch_bounds__(kRowThreads) softmaxBwd(const float *dy, const float *y, int64_t cols, float *dx) {
  __shared__ double shared[kRowThreads];
  const int64_t r = blockIdx.x;
  const float *dyr = dy + r * cols, *yr = y + r * cols;
  double dot = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    dot += static_cast<double>(dyr[c]) * yr[c];
  dot = blockSum(dot, shared);
  float *dxr = dx + r * cols;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    dxr[c] = static_cast<float>(yr[c] * (dyr[c] - dot));
}

__global__ void embeddingFwd(const float *table, const int32_t *ids, int64_t n, int64_t vocab, int64_t dim, float *y) {
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n * dim;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / dim, d = e - i * dim;
    const int32_t id = ids[i];
    if (id < 0 || id >= vocab) {
      if (d == 0)
        recordIndexError(kEmbeddingFwd, i, id, 0, vocab);
      y[e] = 0.0f;
      continue;
    }
    y[e] = table[static_cast<int64_t>(id) * dim + d];
  }
}

__global__ void embeddingBwd(const float *dy, const int32_t *ids, int64_t n, int64_t vocab, int64_t dim,
                             float *dtable) {
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n * dim;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / dim, d = e - i * dim;
    const int32_t id = ids[i];
    if (id < 0 || id >= vocab) {
      if (d == 0)
        recordIndexError(kEmbeddingBwd, i, id, 0, vocab);
      continue;
    }
    atomicAdd(dtable + static_cast<int64_t>(id) * dim + d, dy[e]);
  }
}

ptrain_status_t checkRows(const char *call, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 1 || rows > INT32_MAX)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "need 0 <= rows <= 2^31 - 1 and cols >= 1, got %lld and %lld",
                static_cast<long long>(rows), static_cast<long long>(cols));
  return PTRAIN_OK;
}

} // namespace

extern "C" ptrain_status_t ptrain_cuda_layer_norm_fwd_f32(const float *x, const float *gamma, const float *beta,
                                                          int64_t rows, int64_t cols, float eps, float *out_y,
                                                          float *out_mean, float *out_rstd) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkRows(__func__, rows, cols));
  PTRAIN_CUDA_CHECK_ARG(eps >= 0.0f, "eps must be >= 0, got %g", static_cast<double>(eps));
  if (rows == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_ARG(x && gamma && beta && out_y && out_mean && out_rstd, "a tensor pointer is null");
  layerNormFwd<<<static_cast<unsigned>(rows), kRowThreads, 0, currentStream()>>>(x, gamma, beta, cols, eps, out_y,
                                                                                 out_mean, out_rstd);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_layer_norm_bwd_f32(const float *dy, const float *x, const float *gamma,
                                                          const float *mean, const float *rstd, int64_t rows,
                                                          int64_t cols, float *out_dx, float *out_dgamma,
                                                          float *out_dbeta) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkRows(__func__, rows, cols));
  PTRAIN_CUDA_CHECK_ARG(dy && x && gamma && mean && rstd && out_dx && out_dgamma && out_dbeta,
                        "a tensor pointer is null");
  if (rows > 0)
    layerNormBwdRows<<<static_cast<unsigned>(rows), kRowThreads, 0, currentStream()>>>(dy, x, gamma, mean, rstd, cols,
                                                                                       out_dx);
  layerNormBwdCols<<<gridFor(cols), kThreads, 0, currentStream()>>>(dy, x, mean, rstd, rows, cols, out_dgamma,
                                                                    out_dbeta);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_softmax_fwd_f32(const float *x, int64_t rows, int64_t cols, int32_t causal,
                                                       float *out_y) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkRows(__func__, rows, cols));
  PTRAIN_CUDA_CHECK_ARG(!causal || rows % cols == 0,
                        "causal softmax needs x of shape [..., S, S]: rows (%lld) must be a multiple of cols (%lld)",
                        static_cast<long long>(rows), static_cast<long long>(cols));
  if (rows == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_ARG(x && out_y, "x and out_y must not be null");
  softmaxFwd<<<static_cast<unsigned>(rows), kRowThreads, 0, currentStream()>>>(x, cols, causal, out_y);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_softmax_bwd_f32(const float *dy, const float *y, int64_t rows, int64_t cols,
                                                       float *out_dx) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkRows(__func__, rows, cols));
  if (rows == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_ARG(dy && y && out_dx, "dy, y and out_dx must not be null");
  softmaxBwd<<<static_cast<unsigned>(rows), kRowThreads, 0, currentStream()>>>(dy, y, cols, out_dx);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_embedding_fwd_f32(const float *table, const int32_t *ids, int64_t n,
                                                         int64_t vocab, int64_t dim, float *out_y) {
  PTRAIN_CUDA_CHECK_ARG(n >= 0 && vocab >= 1 && dim >= 1, "need n >= 0, vocab >= 1, dim >= 1");
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_ARG(table && ids && out_y, "table, ids and out_y must not be null");
  embeddingFwd<<<gridFor(n * dim), kThreads, 0, currentStream()>>>(table, ids, n, vocab, dim, out_y);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_embedding_bwd_f32(const float *dy, const int32_t *ids, int64_t n, int64_t vocab,
                                                         int64_t dim, float *out_dtable) {
  PTRAIN_CUDA_CHECK_ARG(n >= 0 && vocab >= 1 && dim >= 1, "need n >= 0, vocab >= 1, dim >= 1");
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_ARG(dy && ids && out_dtable, "dy, ids and out_dtable must not be null");
  embeddingBwd<<<gridFor(n * dim), kThreads, 0, currentStream()>>>(dy, ids, n, vocab, dim, out_dtable);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

ptrain_status_t ptrain::cuda::takeRowsIndexError(IndexError &out) { return takeUnitIndexError(__func__, out); }

extern "C" ptrain_status_t ptrain_cuda_check_indices(void) {
  PTRAIN_CUDA_TRY(cudaStreamSynchronize(currentStream()));
  // Every unit's flag is taken (and cleared); the first one set is reported.
  IndexError errors[4] = {};
  PTRAIN_CUDA_RETURN_IF_ERROR(takeRowsIndexError(errors[0]));
  PTRAIN_CUDA_RETURN_IF_ERROR(takeSelectionIndexError(errors[1]));
  PTRAIN_CUDA_RETURN_IF_ERROR(takeVocabParallelIndexError(errors[2]));
  PTRAIN_CUDA_RETURN_IF_ERROR(takeCrossEntropyIndexError(errors[3]));
  for (const IndexError &e : errors) {
    const auto pos = static_cast<long long>(e.position), value = static_cast<long long>(e.value),
               low = static_cast<long long>(e.low), bound = static_cast<long long>(e.bound);
    switch (e.call) {
    case kNoIndexError:
      continue;
    case kEmbeddingFwd:
    case kEmbeddingBwd:
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT,
                  e.call == kEmbeddingFwd ? "ptrain_cuda_embedding_fwd_f32" : "ptrain_cuda_embedding_bwd_f32",
                  "ids[%lld] = %lld is outside the vocabulary [0, %lld)", pos, value, bound);
    case kCrossEntropy:
    case kCrossEntropyBwd:
    case kCrossEntropyWeightedFwd:
    case kCrossEntropyWeightedBwd:
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT,
                  e.call == kCrossEntropy              ? "ptrain_cuda_cross_entropy_fwd_f32"
                  : e.call == kCrossEntropyBwd         ? "ptrain_cuda_cross_entropy_bwd_f32"
                  : e.call == kCrossEntropyWeightedFwd ? "ptrain_cuda_cross_entropy_weighted_fwd_f32"
                                                       : "ptrain_cuda_cross_entropy_weighted_bwd_f32",
                  "targets[%lld] = %lld is outside the vocabulary [0, %lld)%s", pos, value, bound,
                  e.real != 0.0 ? " and is not ignore_index" : "");
    case kCastElements:
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, "ptrain_cuda_cast_elements", "x[%lld] = %g does not fit in int64", pos,
                  e.real);
    case kGatherAxis:
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, "ptrain_cuda_gather_axis",
                  "indices[%lld] = %lld is out of range [%lld, %lld)", pos, value, low, bound);
    case kVocabEmbeddingFwd:
    case kVocabEmbeddingBwd:
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT,
                  e.call == kVocabEmbeddingFwd ? "ptrain_cuda_vocab_parallel_embedding_fwd_f32"
                                               : "ptrain_cuda_vocab_parallel_embedding_bwd_f32",
                  "ids[%lld] = %lld is outside the vocabulary [0, %lld)", pos, value, bound);
    default:
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT,
                  e.call == kVocabCePartsFwd ? "ptrain_cuda_vocab_parallel_ce_parts_fwd_f32"
                                             : "ptrain_cuda_vocab_parallel_ce_parts_bwd_f32",
                  "labels[%lld] = %lld is outside the vocabulary [0, %lld)", pos, value, bound);
    }
  }
  return PTRAIN_OK;
}
