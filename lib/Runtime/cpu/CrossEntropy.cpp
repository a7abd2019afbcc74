//===- CrossEntropy.cpp - Softmax cross-entropy over the vocabulary -------===//
//
// loss = mean_i (logsumexp(logits_i) - logits_i[t_i]) over rows with t_i >= 0
// (torch.nn.functional.cross_entropy with ignore_index < 0, reduction
// 'mean'); the log-sum-exp is max-subtracted and accumulated in fp64.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"
#include "cpu/VectorMath.h"

#include <cmath>

namespace {
/// Checks every target and counts the rows that take part.
ptrain_status_t countTargets(const char *call, const int32_t *targets, int64_t n, int64_t vocab, int64_t &count) {
  count = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (targets[i] >= vocab)
      return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                   "targets[%lld] = %d is outside the vocabulary [0, %lld)", static_cast<long long>(i),
                                   targets[i], static_cast<long long>(vocab));
    if (targets[i] >= 0)
      ++count;
  }
  return PTRAIN_OK;
}
} // namespace

extern "C" PTRAIN_VECTOR_CLONES ptrain_status_t ptrain_cross_entropy_fwd_f32(const float *logits,
                                                                             const int32_t *targets, int64_t n,
                                                                             int64_t vocab, float *out_loss,
                                                                             float *out_lse) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_ARG(vocab > 0, "vocab must be > 0, got %lld", static_cast<long long>(vocab));
  PTRAIN_CHECK_PTR(logits);
  PTRAIN_CHECK_PTR(targets);
  PTRAIN_CHECK_PTR(out_loss);
  PTRAIN_CHECK_PTR(out_lse);
  int64_t count = 0;
  PTRAIN_RETURN_IF_ERROR(countTargets(__func__, targets, n, vocab, count));
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
      if (targets[i] >= 0)
        total += lse - logits[i * vocab + targets[i]];
    }
  }
  *out_loss = count == 0 ? 0.0f : static_cast<float>(total / count);
  return PTRAIN_OK;
}

extern "C" PTRAIN_VECTOR_CLONES ptrain_status_t ptrain_cross_entropy_bwd_f32(float dloss, const float *logits,
                                                                             const int32_t *targets, const float *lse,
                                                                             int64_t n, int64_t vocab,
                                                                             float *out_dlogits) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_ARG(vocab > 0, "vocab must be > 0, got %lld", static_cast<long long>(vocab));
  PTRAIN_CHECK_PTR(logits);
  PTRAIN_CHECK_PTR(targets);
  PTRAIN_CHECK_PTR(lse);
  PTRAIN_CHECK_PTR(out_dlogits);
  int64_t count = 0;
  PTRAIN_RETURN_IF_ERROR(countTargets(__func__, targets, n, vocab, count));
  const double coef = count == 0 ? 0.0 : static_cast<double>(dloss) / count;
  for (int64_t i = 0; i < n; ++i) {
    const float *row = logits + i * vocab;
    float *drow = out_dlogits + i * vocab;
    if (targets[i] < 0) {
      for (int64_t j = 0; j < vocab; ++j)
        drow[j] = 0.0f;
      continue;
    }
    const double l = lse[i];
    for (int64_t j = 0; j < vocab; ++j)
      drow[j] = static_cast<float>(coef * ptrain::runtime::expNonPositive(row[j] - l)); // l >= max
    drow[targets[i]] -= static_cast<float>(coef);
  }
  return PTRAIN_OK;
}
