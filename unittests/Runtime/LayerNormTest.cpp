//===- LayerNormTest.cpp - Layer norm against an fp64 reference -----------===//

#include "GradCheck.h"

#include <cmath>

using namespace ptrain::testing;

namespace {

constexpr int64_t kRows = 3, kCols = 6;
constexpr double kEps = 1e-5;

Vec layerNormRef(const std::vector<Vec> &v) {
  const Vec &x = v[0], &gamma = v[1], &beta = v[2];
  Vec y(kRows * kCols);
  for (int64_t r = 0; r < kRows; ++r) {
    double mean = 0.0, var = 0.0;
    for (int64_t c = 0; c < kCols; ++c)
      mean += x[r * kCols + c] / kCols;
    for (int64_t c = 0; c < kCols; ++c)
      var += std::pow(x[r * kCols + c] - mean, 2) / kCols;
    for (int64_t c = 0; c < kCols; ++c)
      y[r * kCols + c] =
          (x[r * kCols + c] - mean) / std::sqrt(var + kEps) * gamma[c] +
          beta[c];
  }
  return y;
}

TEST(LayerNorm, ForwardAndBackwardMatchTheReference) {
  auto x = randomFloats(kRows * kCols, 21, -2.0f, 2.0f);
  auto gamma = randomFloats(kCols, 22, 0.5f, 1.5f);
  auto beta = randomFloats(kCols, 23);
  auto dy = randomFloats(kRows * kCols, 24);
  std::vector<float> y(kRows * kCols), mean(kRows), rstd(kRows);
  ASSERT_PTRAIN_OK(ptrain_layer_norm_fwd_f32(x.data(), gamma.data(),
                                             beta.data(), kRows, kCols,
                                             static_cast<float>(kEps), y.data(),
                                             mean.data(), rstd.data()));
  const std::vector<Vec> in = {toDouble(x), toDouble(gamma), toDouble(beta)};
  expectClose(y, layerNormRef(in), 1e-5, 1e-5, "y");

  std::vector<float> dx(kRows * kCols), dgamma(kCols), dbeta(kCols);
  ASSERT_PTRAIN_OK(ptrain_layer_norm_bwd_f32(
      dy.data(), x.data(), gamma.data(), mean.data(), rstd.data(), kRows,
      kCols, dx.data(), dgamma.data(), dbeta.data()));
  const Vec w = toDouble(dy);
  expectClose(dx, numericGrad(layerNormRef, in, 0, w), 1e-4, 1e-3, "dx");
  expectClose(dgamma, numericGrad(layerNormRef, in, 1, w), 1e-4, 1e-3,
              "dgamma");
  expectClose(dbeta, numericGrad(layerNormRef, in, 2, w), 1e-4, 1e-3, "dbeta");
}

TEST(LayerNorm, SavedStatisticsAreMeanAndInverseStd) {
  std::vector<float> x = {1, 2, 3, 4}, gamma(4, 1.0f), beta(4, 0.0f), y(4);
  float mean = 0, rstd = 0;
  ASSERT_PTRAIN_OK(ptrain_layer_norm_fwd_f32(x.data(), gamma.data(),
                                             beta.data(), 1, 4, 0.0f, y.data(),
                                             &mean, &rstd));
  EXPECT_FLOAT_EQ(mean, 2.5f);
  EXPECT_FLOAT_EQ(rstd, static_cast<float>(1.0 / std::sqrt(1.25)));
}

} // namespace
