//===- GeluTest.cpp - GELU (erf form) against an fp64 reference -----------===//

#include "GradCheck.h"

#include <cmath>

using namespace ptrain::testing;

namespace {

Vec geluRef(const std::vector<Vec> &v) {
  Vec y(v[0].size());
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = 0.5 * v[0][i] * (1.0 + std::erf(v[0][i] / std::sqrt(2.0)));
  return y;
}

TEST(Gelu, ForwardAndBackwardMatchTheReference) {
  auto x = randomFloats(64, 31, -4.0f, 4.0f);
  auto dy = randomFloats(64, 32);
  std::vector<float> y(64), dx(64);
  ASSERT_PTRAIN_OK(ptrain_gelu_fwd_f32(x.data(), 64, y.data()));
  expectClose(y, geluRef({toDouble(x)}), 1e-6, 1e-6, "y");
  ASSERT_PTRAIN_OK(ptrain_gelu_bwd_f32(dy.data(), x.data(), 64, dx.data()));
  expectClose(dx, numericGrad(geluRef, {toDouble(x)}, 0, toDouble(dy)), 1e-5,
              1e-4, "dx");
}

TEST(Gelu, KnownValues) {
  // GELU(1) = Phi(1) = 0.8413447460685429; GELU(-1) = -(1 - Phi(1)).
  std::vector<float> x = {0.0f, 1.0f, -1.0f}, y(3);
  ASSERT_PTRAIN_OK(ptrain_gelu_fwd_f32(x.data(), 3, y.data()));
  expectClose(y, Vec{0.0, 0.8413447460685429, -0.15865525393145707}, 1e-7,
              1e-6, "y");
}

} // namespace
