//===- Gelu.cpp - GELU, exact erf form ------------------------------------===//
//
// Hendrycks, Gimpel 2016, "Gaussian Error Linear Units (GELUs)"
// (arXiv:1606.08415), sec. 2: GELU(x) = x Phi(x) with the standard normal CDF
// Phi(x) = (1 + erf(x / sqrt 2)) / 2 (torch.nn.GELU(approximate='none')).
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <cmath>

namespace {
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
} // namespace

extern "C" ptrain_status_t ptrain_gelu_fwd_f32(const float *x, int64_t n,
                                               float *out_y) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out_y);
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x[i];
    out_y[i] = static_cast<float>(0.5 * xi * (1.0 + std::erf(xi * kInvSqrt2)));
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_gelu_bwd_f32(const float *dy, const float *x,
                                               int64_t n, float *out_dx) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(dy);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out_dx);
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x[i];
    const double cdf = 0.5 * (1.0 + std::erf(xi * kInvSqrt2));
    const double pdf = kInvSqrt2Pi * std::exp(-0.5 * xi * xi);
    out_dx[i] = static_cast<float>(dy[i] * (cdf + xi * pdf));
  }
  return PTRAIN_OK;
}
