//===- GeluTanh.cpp - GELU, tanh approximation ----------------------------===//
//
// Hendrycks, Gimpel 2016, "Gaussian Error Linear Units (GELUs)"
// (arXiv:1606.08415), sec. 2: GELU(x) ~= x/2 (1 + tanh(sqrt(2/pi) (x + c x^3)))
// with c = 0.044715 (torch.nn.GELU(approximate='tanh'), GPT-2's "gelu_new";
// ONNX Gelu approximate="tanh"). With u = sqrt(2/pi) (x + c x^3), t = tanh(u):
// dy/dx = (1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 c x^2).
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <cmath>

namespace {
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kCubic = 0.044715;
} // namespace

extern "C" ptrain_status_t ptrain_gelu_tanh_fwd_f32(const float *x, int64_t n, float *out_y) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out_y);
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x[i];
    const double t = std::tanh(kSqrt2OverPi * (xi + kCubic * xi * xi * xi));
    out_y[i] = static_cast<float>(0.5 * xi * (1.0 + t));
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_gelu_tanh_bwd_f32(const float *dy, const float *x, int64_t n, float *out_dx) {
  PTRAIN_CHECK_SIZE(n);
  PTRAIN_CHECK_PTR(dy);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out_dx);
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x[i];
    const double t = std::tanh(kSqrt2OverPi * (xi + kCubic * xi * xi * xi));
    const double du = kSqrt2OverPi * (1.0 + 3.0 * kCubic * xi * xi);
    out_dx[i] = static_cast<float>(dy[i] * (0.5 * (1.0 + t) + 0.5 * xi * (1.0 - t * t) * du));
  }
  return PTRAIN_OK;
}
