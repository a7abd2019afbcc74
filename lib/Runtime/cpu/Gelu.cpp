//===- Gelu.cpp - GELU, exact erf form ------------------------------------===//
//
// Hendrycks, Gimpel 2016, "Gaussian Error Linear Units (GELUs)"
// (arXiv:1606.08415), sec. 2: GELU(x) = x Phi(x) with the standard normal CDF
// Phi(x) = (1 + erf(x / sqrt 2)) / 2 (torch.nn.GELU(approximate='none')),
// computed in fp64 with the vectorizable erfc of cpu/VectorMath.h (error
// below 1e-8 relative before the rounding to fp32).
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"
#include "cpu/CpuIsa.h"
#include "cpu/VectorMath.h"

namespace {
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

/// Phi(x) = erfc(-x / sqrt 2) / 2, from erfc of |x| / sqrt 2 (accurate in
/// relative terms on the negative side, where 1 + erf(x / sqrt 2) cancels),
/// and exp(-x^2 / 2) in `gauss`. Inlined: the loops vectorize.
PTRAIN_KERNEL_BODY double cdf(double x, double &gauss) {
  const double z = (x < 0.0 ? -x : x) * kInvSqrt2;
  const double half = 0.5 * ptrain::runtime::erfcNonNegative(z, gauss);
  return x < 0.0 ? half : 1.0 - half;
}
PTRAIN_KERNEL_BODY double cdf(double x) {
  double gauss;
  return cdf(x, gauss);
}

/// The forward and backward loops, compiled once per ISA path (cpu/CpuIsa.h).
PTRAIN_KERNEL_BODY ptrain_status_t geluForward(const float *x, int64_t n, float *out_y) {
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x[i];
    out_y[i] = static_cast<float>(xi * cdf(xi));
  }
  return PTRAIN_OK;
}

PTRAIN_KERNEL_BODY ptrain_status_t geluBackward(const float *dy, const float *x, int64_t n, float *out_dx) {
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x[i];
    double gauss;
    const double phi = cdf(xi, gauss);
    out_dx[i] = static_cast<float>(dy[i] * (phi + xi * kInvSqrt2Pi * gauss));
  }
  return PTRAIN_OK;
}
} // namespace

extern "C" ptrain_status_t ptrain_gelu_fwd_f32(const float *x, int64_t n, float *out_y) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out_y);
  return ptrain::runtime::IsaClones<geluForward>::call(__func__, x, n, out_y);
}

extern "C" ptrain_status_t ptrain_gelu_bwd_f32(const float *dy, const float *x, int64_t n, float *out_dx) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(dy);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out_dx);
  return ptrain::runtime::IsaClones<geluBackward>::call(__func__, dy, x, n, out_dx);
}
