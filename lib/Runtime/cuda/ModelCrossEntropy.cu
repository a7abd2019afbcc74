//===- ModelCrossEntropy.cu - Softmax cross-entropy on the GPU -----------===//
//
// The GPU versions of cpu/CrossEntropy.cpp for steps compiled with
// --emit-cuda: per row i, nll_i = logsumexp(logits_i) - logits_i[t_i],
// weighted by w_i = weights[t_i] (1 without weights) and 0 for an ignored
// row; loss = sum(w nll) / sum(w) (mean) or sum(w nll) (sum), as
// torch.nn.functional.cross_entropy(weight, ignore_index, reduction).
// ptrain_cuda_cross_entropy_fwd/bwd_f32 ignore every negative target and use
// no weights (a mean over no row is 0); the _weighted_ entries take the
// weights (or null), an exact ignore_index (or none: every target counts) and
// the reduction of `ptrain.cross_entropy` (a mean over no weight is NaN).
//
// One thread block per row: the max, then the sum of exponentials in double,
// lse rounded once; each row's weighted nll and weight in double, summed by
// one block (the CPU sums in row order: the results agree within float
// rounding). The backward's coefficient dloss / sum(w) is computed once by one
// block in double; then one thread per logit: c = coef w[t] and
// dlogits = float(c exp(logit - lse)), minus float(c) at the target, the CPU's
// two roundings. `dloss` is a DEVICE pointer (the CPU call takes the float).
//
// A target outside [0, vocab) that is not ignored cannot stop a kernel: the
// row is skipped (loss 0, gradient 0) and the first one recorded
// (IndexCheck.h); ptrain_cuda_check_indices reports it by call and position.
//
//===----------------------------------------------------------------------===//

#include "cuda/BlockSum.h"
#include "cuda/Device.h"
#include "cuda/GridStride.h"
#include "cuda/IndexCheck.h"

#include <cuda_runtime.h>

using namespace ptrain::cuda;

namespace {

constexpr int kRowThreads = 256;

/// Which targets do not count: every negative one (the unweighted entries), exactly `ignoreIndex`, or none.
enum class Ignore : int32_t { Negative, Index, None };

/// The options of one call, passed by value to the kernels.
struct Options {
  const float *weights = nullptr; ///< [vocab] on the device, or null (all 1)
  Ignore ignore = Ignore::Negative;
  int64_t ignoreIndex = 0;
  bool sum = false;   ///< reduction sum instead of mean
  bool legacy = true; ///< the unweighted entries: a mean over no row is 0 (the weighted ones: NaN)
  IndexCall forwardCall = kCrossEntropy, backwardCall = kCrossEntropyBwd;

  __device__ bool ignored(int32_t t) const {
    return ignore == Ignore::Negative ? t < 0 : ignore == Ignore::Index && t == ignoreIndex;
  }
  /// The row's weight (0 when ignored or out of range); records an out-of-range target as `call`.
  __device__ double weightOf(int32_t t, int64_t row, int64_t vocab, IndexCall call) const {
    if (ignored(t))
      return 0.0;
    if (t < 0 || t >= vocab) {
      recordIndexError(call, row, t, 0, vocab, ignore == Ignore::Index ? 1.0 : 0.0);
      return 0.0;
    }
    return weights ? static_cast<double>(weights[t]) : 1.0;
  }
  __device__ bool counts(int32_t t, int64_t vocab) const { return !ignored(t) && t >= 0 && t < vocab; }
};

/// Per row: lse[i]; rowLoss[i] = w_i nll_i and rowWeight[i] = w_i (both 0 for an ignored or bad row).
__global__ void __launch_bounds__(kRowThreads)
    crossEntropyRows(const float *logits, const int32_t *targets, int64_t vocab, Options o, float *lse, double *rowLoss,
                     double *rowWeight) {
  __shared__ double shared[kRowThreads];
  __shared__ float sharedMax[kRowThreads];
  const int64_t i = blockIdx.x;
  const float *row = logits + i * vocab;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
    m = fmaxf(m, row[j]);
  m = blockMax(m, sharedMax);
  double sum = 0.0;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
    sum += exp(static_cast<double>(row[j]) - m);
  sum = blockSum(sum, shared);
  if (threadIdx.x == 0) {
    const double l = m + log(sum);
    lse[i] = static_cast<float>(l);
    const int32_t t = targets[i];
    const double w = o.weightOf(t, i, vocab, o.forwardCall);
    rowWeight[i] = w;
    rowLoss[i] = o.counts(t, vocab) ? w * (l - row[t]) : 0.0;
  }
}

/// loss = sum(rowLoss) / sum(rowWeight), or sum(rowLoss) (one block).
__global__ void __launch_bounds__(kRowThreads)
    crossEntropyReduce(const double *rowLoss, const double *rowWeight, int64_t n, Options o, float *loss) {
  __shared__ double shared[kRowThreads];
  double total = 0.0, weight = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    total += rowLoss[i];
    weight += rowWeight[i];
  }
  total = blockSum(total, shared);
  weight = blockSum(weight, shared);
  if (threadIdx.x == 0)
    *loss = o.sum           ? static_cast<float>(total)
            : weight == 0.0 ? (o.legacy ? 0.0f : __int_as_float(0x7fc00000))
                            : static_cast<float>(total / weight);
}

/// *coef = dloss / sum(w) (dloss itself for the sum; 0 without any weight), in double (one block).
__global__ void __launch_bounds__(kRowThreads)
    crossEntropyCoefficient(const float *dloss, const int32_t *targets, int64_t n, int64_t vocab, Options o,
                            double *coef) {
  __shared__ double shared[kRowThreads];
  double weight = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    weight += o.weightOf(targets[i], i, vocab, o.backwardCall);
  weight = blockSum(weight, shared);
  if (threadIdx.x == 0) {
    const double divisor = o.sum ? 1.0 : weight;
    *coef = divisor == 0.0 ? 0.0 : static_cast<double>(*dloss) / divisor;
  }
}

__global__ void crossEntropyBwd(const double *coef, const float *logits, const int32_t *targets, const float *lse,
                                int64_t n, int64_t vocab, Options o, float *dlogits) {
  PTRAIN_GRID_STRIDE(e, n * vocab) {
    const int64_t i = e / vocab, j = e - i * vocab;
    const int32_t t = targets[i];
    if (!o.counts(t, vocab)) {
      dlogits[e] = 0.0f;
      continue;
    }
    const double c = o.weights ? *coef * static_cast<double>(o.weights[t]) : *coef;
    const float p = static_cast<float>(c * exp(logits[e] - static_cast<double>(lse[i])));
    dlogits[e] = j == t ? __fsub_rn(p, static_cast<float>(c)) : p;
  }
}

ptrain_status_t checkSizes(const char *call, int64_t n, int64_t vocab) {
  if (n < 0 || vocab < 1 || n > INT32_MAX)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "need 0 <= n <= 2^31 - 1 and vocab >= 1, got %lld and %lld",
                static_cast<long long>(n), static_cast<long long>(vocab));
  return PTRAIN_OK;
}

ptrain_status_t forward(const char *call, const float *logits, const int32_t *targets, int64_t n, int64_t vocab,
                        const Options &o, float *out_loss, float *out_lse) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkSizes(call, n, vocab));
  if (!logits || !targets || !out_loss || !out_lse)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "a tensor pointer is null");
  if (n == 0) {
    // A sum over no row is 0; a mean is 0 (unweighted) or NaN (weighted), as on the CPU.
    const float value = o.sum || o.legacy ? 0.0f : __builtin_nanf("");
    return ptrain_cuda_copy_to_device(&value, sizeof(float), out_loss);
  }
  auto *rows = static_cast<double *>(deviceScratch(call, DeviceSlot::Temp, 2 * sizeof(double) * n));
  if (!rows)
    return PTRAIN_ERROR_DEVICE;
  crossEntropyRows<<<static_cast<unsigned>(n), kRowThreads, 0, currentStream()>>>(logits, targets, vocab, o, out_lse,
                                                                                  rows, rows + n);
  crossEntropyReduce<<<1, kRowThreads, 0, currentStream()>>>(rows, rows + n, n, o, out_loss);
  return check(call, cudaGetLastError(), "cudaGetLastError");
}

ptrain_status_t backward(const char *call, const float *dloss, const float *logits, const int32_t *targets,
                         const float *lse, int64_t n, int64_t vocab, const Options &o, float *out_dlogits) {
  PTRAIN_CUDA_RETURN_IF_ERROR(checkSizes(call, n, vocab));
  if (n == 0)
    return PTRAIN_OK;
  if (!dloss || !logits || !targets || !lse || !out_dlogits)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "a tensor pointer is null");
  auto *coef = static_cast<double *>(deviceScratch(call, DeviceSlot::Temp, sizeof(double)));
  if (!coef)
    return PTRAIN_ERROR_DEVICE;
  crossEntropyCoefficient<<<1, kRowThreads, 0, currentStream()>>>(dloss, targets, n, vocab, o, coef);
  crossEntropyBwd<<<gridFor(n * vocab), kThreads, 0, currentStream()>>>(coef, logits, targets, lse, n, vocab, o,
                                                                        out_dlogits);
  return check(call, cudaGetLastError(), "cudaGetLastError");
}

/// The options of the _weighted_ entries (checked on the host: the flags are 0 or 1, the index an int32).
ptrain_status_t weightedOptions(const char *call, const float *weights, int32_t has_ignore_index, int64_t ignore_index,
                                int32_t reduction_sum, Options &o) {
  if ((has_ignore_index != 0 && has_ignore_index != 1) || (reduction_sum != 0 && reduction_sum != 1))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "has_ignore_index and reduction_sum must be 0 or 1, got %d and %d",
                has_ignore_index, reduction_sum);
  if (has_ignore_index && (ignore_index < INT32_MIN || ignore_index > INT32_MAX))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "ignore_index %lld does not fit the int32 targets",
                static_cast<long long>(ignore_index));
  o.weights = weights;
  o.ignore = has_ignore_index ? Ignore::Index : Ignore::None;
  o.ignoreIndex = ignore_index;
  o.sum = reduction_sum != 0;
  o.legacy = false;
  o.forwardCall = kCrossEntropyWeightedFwd;
  o.backwardCall = kCrossEntropyWeightedBwd;
  return PTRAIN_OK;
}

} // namespace

ptrain_status_t ptrain::cuda::takeCrossEntropyIndexError(IndexError &out) { return takeUnitIndexError(__func__, out); }

extern "C" ptrain_status_t ptrain_cuda_cross_entropy_fwd_f32(const float *logits, const int32_t *targets, int64_t n,
                                                             int64_t vocab, float *out_loss, float *out_lse) {
  return forward(__func__, logits, targets, n, vocab, Options(), out_loss, out_lse);
}

extern "C" ptrain_status_t ptrain_cuda_cross_entropy_bwd_f32(const float *dloss, const float *logits,
                                                             const int32_t *targets, const float *lse, int64_t n,
                                                             int64_t vocab, float *out_dlogits) {
  return backward(__func__, dloss, logits, targets, lse, n, vocab, Options(), out_dlogits);
}

extern "C" ptrain_status_t ptrain_cuda_cross_entropy_weighted_fwd_f32(const float *logits, const int32_t *targets,
                                                                      const float *weights, int64_t n, int64_t vocab,
                                                                      int32_t has_ignore_index, int64_t ignore_index,
                                                                      int32_t reduction_sum, float *out_loss,
                                                                      float *out_lse) {
  Options o;
  PTRAIN_CUDA_RETURN_IF_ERROR(weightedOptions(__func__, weights, has_ignore_index, ignore_index, reduction_sum, o));
  return forward(__func__, logits, targets, n, vocab, o, out_loss, out_lse);
}

extern "C" ptrain_status_t ptrain_cuda_cross_entropy_weighted_bwd_f32(const float *dloss, const float *logits,
                                                                      const int32_t *targets, const float *weights,
                                                                      const float *lse, int64_t n, int64_t vocab,
                                                                      int32_t has_ignore_index, int64_t ignore_index,
                                                                      int32_t reduction_sum, float *out_dlogits) {
  Options o;
  PTRAIN_CUDA_RETURN_IF_ERROR(weightedOptions(__func__, weights, has_ignore_index, ignore_index, reduction_sum, o));
  return backward(__func__, dloss, logits, targets, lse, n, vocab, o, out_dlogits);
}
