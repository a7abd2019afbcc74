//===- CrossEntropy.cpp - Softmax cross-entropy over the vocabulary -------===//
//
// Per row i, nll_i = logsumexp(logits_i) - logits_i[t_i], weighted by w_i = weights[t_i] (1 without weights)
// and 0 for an ignored row; loss = sum(w nll) / sum(w) (mean) or sum(w nll) (sum): torch.nn.functional.
// cross_entropy(weight, ignore_index, reduction). ptrain_cross_entropy_fwd/bwd_f32 ignore every negative
// target (padding, ignore_index < 0) and use no weights; the _weighted_ entries take the weights, an exact
// ignore_index and the reduction of `ptrain.cross_entropy`. The log-sum-exp is max-subtracted and
// accumulated in fp64.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"
#include "cpu/CpuIsa.h"
#include "cpu/VectorMath.h"

#include <cmath>
#include <initializer_list>

namespace {
/// Which targets are not counted: every negative one (the unweighted entries), exactly `ignore_index`, or none.
enum class Ignore { Negative, Index, None };

struct Options {
  const float *weights = nullptr; ///< [vocab] or null (all 1)
  Ignore ignore = Ignore::Negative;
  int64_t ignoreIndex = 0;
  bool sum = false;   ///< reduction sum instead of mean
  bool legacy = true; ///< the unweighted entries: a mean over no row is 0 (the weighted ones: NaN, as torch)
  bool ignored(int32_t t) const {
    return ignore == Ignore::Negative ? t < 0 : ignore == Ignore::Index && t == ignoreIndex;
  }
};

/// Checks the sizes and that the logits, targets and outputs (in that order, `pointers`) are not null; the
/// messages name the entry point `call`.
ptrain_status_t checkArguments(const char *call, int64_t n, int64_t vocab,
                               std::initializer_list<const void *> pointers) {
  if (n < 0)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "'n' must be >= 0, got %lld",
                                 static_cast<long long>(n));
  if (vocab <= 0)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "vocab must be > 0, got %lld",
                                 static_cast<long long>(vocab));
  int index = 0;
  for (const void *p : pointers) {
    if (!p)
      return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "pointer argument #%d (%s) must not be null",
                                   index,
                                   index == 0   ? "logits"
                                   : index == 1 ? "targets"
                                                : "an output or lse");
    ++index;
  }
  return PTRAIN_OK;
}

/// Checks every target and sums the weights of the rows that take part (the divisor of the mean).
ptrain_status_t checkTargets(const char *call, const int32_t *targets, int64_t n, int64_t vocab, const Options &o,
                             double &weightSum) {
  weightSum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    if (o.ignored(targets[i]))
      continue;
    if (targets[i] < 0 || targets[i] >= vocab)
      return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                   "targets[%lld] = %d is outside the vocabulary [0, %lld)%s",
                                   static_cast<long long>(i), targets[i], static_cast<long long>(vocab),
                                   o.ignore == Ignore::Index ? " and is not ignore_index" : "");
    weightSum += o.weights ? static_cast<double>(o.weights[targets[i]]) : 1.0;
  }
  return PTRAIN_OK;
}

/// The forward on checked arguments (weightSum: checkTargets'), compiled once per ISA path (cpu/CpuIsa.h).
PTRAIN_KERNEL_BODY ptrain_status_t crossEntropyForwardBody(const float *logits, const int32_t *targets, int64_t n,
                                                           int64_t vocab, const Options &o, double weightSum,
                                                           float *out_loss, float *out_lse) {
  // Each row's sum of exponentials is one fp64 chain in vocabulary order (the results' bits); four rows at a
  // time run four independent chains, which hides the add latency that bounded the one-row loop. The
  // exponentials are computed a chunk at a time (a vectorized loop, cpu/VectorMath.h).
  constexpr int64_t kRows = 4, kChunk = 64;
  double total = 0.0;
  for (int64_t i0 = 0; i0 < n; i0 += kRows) {
    const int64_t rowsHere = n - i0 < kRows ? n - i0 : kRows;
    float maxVal[kRows] = {0.0f, 0.0f, 0.0f, 0.0f};
    double sum[kRows] = {0.0, 0.0, 0.0, 0.0};
    for (int64_t r = 0; r < rowsHere; ++r) {
      const float *row = logits + (i0 + r) * vocab;
      float m = row[0];
      for (int64_t j = 1; j < vocab; ++j)
        m = row[j] > m ? row[j] : m;
      maxVal[r] = m;
    }
    for (int64_t j0 = 0; j0 < vocab; j0 += kChunk) {
      const int64_t len = vocab - j0 < kChunk ? vocab - j0 : kChunk;
      double e[kRows][kChunk];
      for (int64_t r = 0; r < rowsHere; ++r) {
        const float *row = logits + (i0 + r) * vocab + j0;
        for (int64_t j = 0; j < len; ++j)
          e[r][j] = ptrain::runtime::expNonPositive(static_cast<double>(row[j]) - maxVal[r]);
      }
      if (rowsHere == kRows) {
        for (int64_t j = 0; j < len; ++j) {
          sum[0] += e[0][j];
          sum[1] += e[1][j];
          sum[2] += e[2][j];
          sum[3] += e[3][j];
        }
      } else {
        for (int64_t r = 0; r < rowsHere; ++r)
          for (int64_t j = 0; j < len; ++j)
            sum[r] += e[r][j];
      }
    }
    for (int64_t r = 0; r < rowsHere; ++r) {
      const int64_t i = i0 + r;
      const double lse = maxVal[r] + std::log(sum[r]);
      out_lse[i] = static_cast<float>(lse);
      if (o.ignored(targets[i]))
        continue;
      const double nll = lse - logits[i * vocab + targets[i]];
      total += o.weights ? static_cast<double>(o.weights[targets[i]]) * nll : nll;
    }
  }
  if (o.sum)
    *out_loss = static_cast<float>(total);
  else if (weightSum == 0.0)
    *out_loss = o.legacy ? 0.0f : std::nanf("");
  else
    *out_loss = static_cast<float>(total / weightSum);
  return PTRAIN_OK;
}

ptrain_status_t crossEntropyForward(const char *call, const float *logits, const int32_t *targets, int64_t n,
                                    int64_t vocab, const Options &o, float *out_loss, float *out_lse) {
  PTRAIN_RETURN_IF_ERROR(checkArguments(call, n, vocab, {logits, targets, out_loss, out_lse}));
  double weightSum = 0.0;
  PTRAIN_RETURN_IF_ERROR(checkTargets(call, targets, n, vocab, o, weightSum));
  return ptrain::runtime::IsaClones<crossEntropyForwardBody>::call(call, logits, targets, n, vocab, o, weightSum,
                                                                   out_loss, out_lse);
}

/// The backward on checked arguments, compiled once per ISA path (cpu/CpuIsa.h).
PTRAIN_KERNEL_BODY ptrain_status_t crossEntropyBackwardBody(float dloss, const float *logits, const int32_t *targets,
                                                            const float *lse, int64_t n, int64_t vocab,
                                                            const Options &o, double weightSum, float *out_dlogits) {
  const double divisor = o.sum ? 1.0 : weightSum;
  const double coef = divisor == 0.0 ? 0.0 : static_cast<double>(dloss) / divisor;
  for (int64_t i = 0; i < n; ++i) {
    const float *row = logits + i * vocab;
    float *drow = out_dlogits + i * vocab;
    if (o.ignored(targets[i])) {
      for (int64_t j = 0; j < vocab; ++j)
        drow[j] = 0.0f;
      continue;
    }
    const double c = o.weights ? coef * static_cast<double>(o.weights[targets[i]]) : coef;
    const double l = lse[i];
    for (int64_t j = 0; j < vocab; ++j)
      drow[j] = static_cast<float>(c * ptrain::runtime::expNonPositive(row[j] - l)); // l >= max
    drow[targets[i]] -= static_cast<float>(c);
  }
  return PTRAIN_OK;
}

ptrain_status_t crossEntropyBackward(const char *call, float dloss, const float *logits, const int32_t *targets,
                                     const float *lse, int64_t n, int64_t vocab, const Options &o,
                                     float *out_dlogits) {
  PTRAIN_RETURN_IF_ERROR(checkArguments(call, n, vocab, {logits, targets, lse, out_dlogits}));
  double weightSum = 0.0;
  PTRAIN_RETURN_IF_ERROR(checkTargets(call, targets, n, vocab, o, weightSum));
  return ptrain::runtime::IsaClones<crossEntropyBackwardBody>::call(call, dloss, logits, targets, lse, n, vocab, o,
                                                                    weightSum, out_dlogits);
}

Options weightedOptions(const float *weights, int32_t has_ignore_index, int64_t ignore_index, int32_t reduction_sum) {
  Options o;
  o.weights = weights;
  o.ignore = has_ignore_index ? Ignore::Index : Ignore::None;
  o.ignoreIndex = ignore_index;
  o.sum = reduction_sum != 0;
  o.legacy = false;
  return o;
}
} // namespace

extern "C" ptrain_status_t ptrain_cross_entropy_fwd_f32(const float *logits, const int32_t *targets, int64_t n,
                                                        int64_t vocab, float *out_loss, float *out_lse) {
  return crossEntropyForward(__func__, logits, targets, n, vocab, Options(), out_loss, out_lse);
}

extern "C" ptrain_status_t ptrain_cross_entropy_bwd_f32(float dloss, const float *logits, const int32_t *targets,
                                                        const float *lse, int64_t n, int64_t vocab,
                                                        float *out_dlogits) {
  return crossEntropyBackward(__func__, dloss, logits, targets, lse, n, vocab, Options(), out_dlogits);
}

extern "C" ptrain_status_t ptrain_cross_entropy_weighted_fwd_f32(const float *logits, const int32_t *targets,
                                                                 const float *weights, int64_t n, int64_t vocab,
                                                                 int32_t has_ignore_index, int64_t ignore_index,
                                                                 int32_t reduction_sum, float *out_loss,
                                                                 float *out_lse) {
  return crossEntropyForward(__func__, logits, targets, n, vocab,
                             weightedOptions(weights, has_ignore_index, ignore_index, reduction_sum), out_loss,
                             out_lse);
}

extern "C" ptrain_status_t ptrain_cross_entropy_weighted_bwd_f32(float dloss, const float *logits,
                                                                 const int32_t *targets, const float *weights,
                                                                 const float *lse, int64_t n, int64_t vocab,
                                                                 int32_t has_ignore_index, int64_t ignore_index,
                                                                 int32_t reduction_sum, float *out_dlogits) {
  return crossEntropyBackward(__func__, dloss, logits, targets, lse, n, vocab,
                              weightedOptions(weights, has_ignore_index, ignore_index, reduction_sum), out_dlogits);
}
