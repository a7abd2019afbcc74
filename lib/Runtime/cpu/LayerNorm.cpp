//===- LayerNorm.cpp - Layer normalization forward and backward -----------===//
//
// Ba, Kiros, Hinton 2016, "Layer Normalization" (arXiv:1607.06450), eq. 4,
// over the last dim with the biased variance (as torch.nn.LayerNorm). Row
// statistics are accumulated in fp64, four interleaved partial sums per row.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <cmath>

namespace {
/// sum_c f(c) over [0, cols) in fp64 with four interleaved accumulators: four
/// independent add chains instead of one (the row sums were latency-bound),
/// added pairwise at the end.
template <typename F> double rowSum(int64_t cols, F f) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  int64_t c = 0;
  for (; c + 4 <= cols; c += 4) {
    s0 += f(c);
    s1 += f(c + 1);
    s2 += f(c + 2);
    s3 += f(c + 3);
  }
  for (; c < cols; ++c)
    s0 += f(c);
  return (s0 + s1) + (s2 + s3);
}
} // namespace

extern "C" ptrain_status_t ptrain_layer_norm_fwd_f32(const float *x, const float *gamma, const float *beta,
                                                     int64_t rows, int64_t cols, float eps, float *out_y,
                                                     float *out_mean, float *out_rstd) {
  PTRAIN_CHECK_SIZE(rows);
  PTRAIN_CHECK_ARG(cols > 0, "cols must be > 0, got %lld", static_cast<long long>(cols));
  PTRAIN_CHECK_ARG(eps >= 0.0f, "eps must be >= 0, got %g", static_cast<double>(eps));
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(gamma);
  PTRAIN_CHECK_PTR(beta);
  PTRAIN_CHECK_PTR(out_y);
  PTRAIN_CHECK_PTR(out_mean);
  PTRAIN_CHECK_PTR(out_rstd);
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    const double sum = rowSum(cols, [&](int64_t c) { return static_cast<double>(xr[c]); });
    const double mean = sum / static_cast<double>(cols);
    const double sq = rowSum(cols, [&](int64_t c) {
      const double d = xr[c] - mean;
      return d * d;
    });
    const double var = sq / static_cast<double>(cols);
    const double rstd = 1.0 / std::sqrt(var + static_cast<double>(eps));
    float *yr = out_y + r * cols;
    for (int64_t c = 0; c < cols; ++c)
      yr[c] = static_cast<float>((xr[c] - mean) * rstd) * gamma[c] + beta[c];
    out_mean[r] = static_cast<float>(mean);
    out_rstd[r] = static_cast<float>(rstd);
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_layer_norm_bwd_f32(const float *dy, const float *x, const float *gamma,
                                                     const float *mean, const float *rstd, int64_t rows, int64_t cols,
                                                     float *out_dx, float *out_dgamma, float *out_dbeta) {
  PTRAIN_CHECK_SIZE(rows);
  PTRAIN_CHECK_ARG(cols > 0, "cols must be > 0, got %lld", static_cast<long long>(cols));
  PTRAIN_CHECK_PTR(dy);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(gamma);
  PTRAIN_CHECK_PTR(mean);
  PTRAIN_CHECK_PTR(rstd);
  PTRAIN_CHECK_PTR(out_dx);
  PTRAIN_CHECK_PTR(out_dgamma);
  PTRAIN_CHECK_PTR(out_dbeta);
  for (int64_t c = 0; c < cols; ++c) {
    out_dgamma[c] = 0.0f;
    out_dbeta[c] = 0.0f;
  }
  const double invCols = 1.0 / static_cast<double>(cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    const float *dyr = dy + r * cols;
    const double mu = mean[r], rs = rstd[r];
    // mean_j(g) and mean_j(g * xhat) with g = dy * gamma; the parameter
    // gradients accumulate over rows in order (a loop of its own, vectorized).
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = (xr[c] - mu) * rs;
      out_dgamma[c] += static_cast<float>(dyr[c] * xhat);
      out_dbeta[c] += dyr[c];
    }
    const double sumG = rowSum(cols, [&](int64_t c) { return static_cast<double>(dyr[c]) * gamma[c]; });
    const double sumGX =
        rowSum(cols, [&](int64_t c) { return static_cast<double>(dyr[c]) * gamma[c] * ((xr[c] - mu) * rs); });
    const double meanG = sumG * invCols, meanGX = sumGX * invCols;
    float *dxr = out_dx + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = (xr[c] - mu) * rs;
      const double g = static_cast<double>(dyr[c]) * gamma[c];
      dxr[c] = static_cast<float>(rs * (g - meanG - xhat * meanGX));
    }
  }
  return PTRAIN_OK;
}
