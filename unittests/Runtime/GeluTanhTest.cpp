//===- GeluTanhTest.cpp - GELU (tanh form) against an fp64 reference ------===//

#include "GradCheck.h"

#include <cmath>

using namespace ptrain::testing;

namespace {

Vec geluTanhRef(const std::vector<Vec> &v) {
  Vec y(v[0].size());
  const double k = std::sqrt(2.0 / M_PI);
  for (size_t i = 0; i < y.size(); ++i) {
    const double x = v[0][i];
    y[i] = 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
  }
  return y;
}

TEST(GeluTanh, ForwardAndBackwardMatchTheReference) {
  auto x = randomFloats(64, 33, -4.0f, 4.0f);
  auto dy = randomFloats(64, 34);
  std::vector<float> y(64), dx(64);
  ASSERT_PTRAIN_OK(ptrain_gelu_tanh_fwd_f32(x.data(), 64, y.data()));
  expectClose(y, geluTanhRef({toDouble(x)}), 1e-6, 1e-6, "y");
  ASSERT_PTRAIN_OK(ptrain_gelu_tanh_bwd_f32(dy.data(), x.data(), 64, dx.data()));
  expectClose(dx, numericGrad(geluTanhRef, {toDouble(x)}, 0, toDouble(dy)), 1e-5, 1e-4, "dx");
}

TEST(GeluTanh, KnownValuesDifferFromTheErfForm) {
  // tanh form at 1: 0.5 (1 + tanh(sqrt(2/pi) 1.044715)) = 0.8411919906082768,
  // erf form 0.8413447460685429: the two kernels are not interchangeable.
  std::vector<float> x = {0.0f, 1.0f, -1.0f}, y(3), e(3);
  ASSERT_PTRAIN_OK(ptrain_gelu_tanh_fwd_f32(x.data(), 3, y.data()));
  expectClose(y, Vec{0.0, 0.8411919906082768, -0.15880800939172324}, 1e-7, 1e-6, "y");
  ASSERT_PTRAIN_OK(ptrain_gelu_fwd_f32(x.data(), 3, e.data()));
  EXPECT_GT(std::abs(e[1] - y[1]), 1e-4f);
}

} // namespace
