//===- ModelVocabParallel.cu - Vocabulary-parallel kernels on the GPU -----===//
//
// The GPU versions of cpu/VocabParallel.cpp's rank-local kernels (Megatron-LM's
// vocabulary-parallel embedding and cross-entropy, PTrainVocabParallelOps.td)
// for steps compiled with --emit-cuda. Rank `part` of `parts` holds rows
// [part rows, (part + 1) rows) of the padded vocabulary; the all-reduces and
// all-gathers between the parts are the step's NCCL calls. Ids and labels are
// int32 on the device (ptrain_cuda_cast_i64_i32, as for the embedding).
// Sums and exponentials in fp64, rounded once: the forward sum of exponentials
// per row is one thread block; the backward is one thread per logit. The
// embedding backward overwrites out_dtable (zeroed, then atomicAdd: the CPU
// sums in fp64, so the two agree within float rounding).
//
// An id outside the padded vocabulary or a label outside [0, vocab) cannot
// stop a kernel: it is skipped, the first one recorded (IndexCheck.h) and
// reported by ptrain_cuda_check_indices.
//
//===----------------------------------------------------------------------===//

#include "cuda/GridStride.h"
#include "cuda/BlockSum.h"
#include "cuda/Device.h"
#include "cuda/IndexCheck.h"

#include <cuda_runtime.h>

using namespace ptrain::cuda;

namespace {

constexpr int kRowThreads = 256;

__global__ void embeddingFwd(const float *table, const int32_t *ids, int64_t n, int64_t rows, int64_t dim, int64_t part,
                             int64_t parts, float *y) {
  const int64_t first = part * rows;
  PTRAIN_GRID_STRIDE(e, n * dim) {
    const int64_t i = e / dim, d = e - i * dim;
    const int64_t id = ids[i];
    if (id < 0 || id >= rows * parts) {
      if (d == 0)
        recordIndexError(kVocabEmbeddingFwd, i, id, 0, rows * parts);
      y[e] = 0.0f;
      continue;
    }
    y[e] = id >= first && id < first + rows ? table[(id - first) * dim + d] : 0.0f;
  }
}

__global__ void embeddingBwd(const float *dy, const int32_t *ids, int64_t n, int64_t rows, int64_t dim, int64_t part,
                             int64_t parts, float *dtable) {
  const int64_t first = part * rows;
  PTRAIN_GRID_STRIDE(e, n * dim) {
    const int64_t i = e / dim, d = e - i * dim;
    const int64_t id = ids[i];
    if (id < 0 || id >= rows * parts) {
      if (d == 0)
        recordIndexError(kVocabEmbeddingBwd, i, id, 0, rows * parts);
      continue;
    }
    if (id >= first && id < first + rows) // else the row is another rank's
      atomicAdd(dtable + (id - first) * dim + d, dy[e]);
  }
}

/// One block per row: the sum of exp(logit - max) over the rank's real columns, and the target's shifted logit.
__global__ void __launch_bounds__(kRowThreads)
    cePartsFwd(const float *logits, const int32_t *labels, const float *max, int64_t cols, int64_t vocab, int64_t part,
               float *sumExp, float *target) {
  __shared__ double shared[kRowThreads];
  const int64_t i = blockIdx.x, first = part * cols;
  const int64_t valid = vocab - first < 0 ? 0 : (vocab - first > cols ? cols : vocab - first);
  const float *row = logits + i * cols;
  const double m = max[i];
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < valid; c += blockDim.x)
    s += exp(static_cast<double>(row[c]) - m);
  s = blockSum(s, shared);
  if (threadIdx.x == 0) {
    sumExp[i] = static_cast<float>(s);
    const int64_t label = labels[i];
    if (label < 0 || label >= vocab)
      recordIndexError(kVocabCePartsFwd, i, label, 0, vocab);
    target[i] = label >= first && label < first + cols && label < vocab
                    ? static_cast<float>(static_cast<double>(row[label - first]) - m)
                    : 0.0f;
  }
}

__global__ void cePartsBwd(const float *dSumExp, const float *dTarget, const float *logits, const int32_t *labels,
                           const float *max, int64_t n, int64_t cols, int64_t vocab, int64_t part, float *dlogits) {
  const int64_t first = part * cols;
  const int64_t valid = vocab - first < 0 ? 0 : (vocab - first > cols ? cols : vocab - first);
  PTRAIN_GRID_STRIDE(e, n * cols) {
    const int64_t i = e / cols, c = e - i * cols;
    const int64_t label = labels[i];
    if (label < 0 || label >= vocab) {
      if (c == 0)
        recordIndexError(kVocabCePartsBwd, i, label, 0, vocab);
      dlogits[e] = 0.0f;
      continue;
    }
    double v = c < valid ? static_cast<double>(dSumExp[i]) * exp(static_cast<double>(logits[e]) - max[i]) : 0.0;
    if (label - first == c)
      v += dTarget[i];
    dlogits[e] = static_cast<float>(v);
  }
}

/// The arguments every kernel shares.
ptrain_status_t checkPart(const char *call, int64_t n, int64_t rows, int64_t dim, int64_t part, int64_t parts) {
  if (n < 0 || rows < 1 || dim < 1)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "need n >= 0, rows >= 1 and cols >= 1, got %lld, %lld and %lld",
                static_cast<long long>(n), static_cast<long long>(rows), static_cast<long long>(dim));
  if (parts < 1 || part < 0 || part >= parts)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "part %lld of %lld is not a rank of the axis",
                static_cast<long long>(part), static_cast<long long>(parts));
  return PTRAIN_OK;
}

ptrain_status_t checkVocab(const char *call, int64_t n, int64_t cols, int64_t vocab, int64_t part, int64_t parts) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkPart(call, n, cols, 1, part, parts));
  if (n > INT32_MAX || vocab < 1 || vocab > cols * parts)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "need n <= 2^31 - 1 and vocab in [1, %lld], got %lld and %lld",
                static_cast<long long>(cols * parts), static_cast<long long>(n), static_cast<long long>(vocab));
  return PTRAIN_OK;
}

} // namespace

ptrain_status_t ptrain::cuda::takeVocabParallelIndexError(IndexError &out) { return takeUnitIndexError(__func__, out); }

extern "C" ptrain_status_t ptrain_cuda_vocab_parallel_embedding_fwd_f32(const float *table, const int32_t *ids,
                                                                        int64_t n, int64_t rows, int64_t dim,
                                                                        int64_t part, int64_t parts, float *out_y) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkPart(__func__, n, rows, dim, part, parts));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_ARG(table && ids && out_y, "table, ids and out_y must not be null");
  embeddingFwd<<<gridFor(n * dim), kThreads, 0, currentStream()>>>(table, ids, n, rows, dim, part, parts, out_y);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_vocab_parallel_embedding_bwd_f32(const float *dy, const int32_t *ids, int64_t n,
                                                                        int64_t rows, int64_t dim, int64_t part,
                                                                        int64_t parts, float *out_dtable) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkPart(__func__, n, rows, dim, part, parts));
  PTRAIN_CUDA_CHECK_ARG(out_dtable && (n == 0 || (dy && ids)), "dy, ids and out_dtable must not be null");
  PTRAIN_CUDA_TRY(cudaMemsetAsync(out_dtable, 0, sizeof(float) * rows * dim, currentStream()));
  if (n == 0)
    return PTRAIN_OK;
  embeddingBwd<<<gridFor(n * dim), kThreads, 0, currentStream()>>>(dy, ids, n, rows, dim, part, parts, out_dtable);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_vocab_parallel_ce_parts_fwd_f32(const float *logits, const int32_t *labels,
                                                                       const float *max, int64_t n, int64_t cols,
                                                                       int64_t vocab, int64_t part, int64_t parts,
                                                                       float *out_sum_exp, float *out_target) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkVocab(__func__, n, cols, vocab, part, parts));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_ARG(logits && labels && max && out_sum_exp && out_target, "a tensor pointer is null");
  cePartsFwd<<<static_cast<unsigned>(n), kRowThreads, 0, currentStream()>>>(logits, labels, max, cols, vocab, part,
                                                                            out_sum_exp, out_target);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_vocab_parallel_ce_parts_bwd_f32(const float *d_sum_exp, const float *d_target,
                                                                       const float *logits, const int32_t *labels,
                                                                       const float *max, int64_t n, int64_t cols,
                                                                       int64_t vocab, int64_t part, int64_t parts,
                                                                       float *out_dlogits) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkVocab(__func__, n, cols, vocab, part, parts));
  if (n == 0)
    return PTRAIN_OK;
  PTRAIN_CUDA_CHECK_ARG(d_sum_exp && d_target && logits && labels && max && out_dlogits, "a tensor pointer is null");
  cePartsBwd<<<gridFor(n * cols), kThreads, 0, currentStream()>>>(d_sum_exp, d_target, logits, labels, max, n, cols,
                                                                  vocab, part, out_dlogits);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}
