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

TEST(Gelu, WithinFp32RoundingOfTheExactValuesOverTheWholeRange) {
  // The vectorized erfc (cpu/VectorMath.h) against libm's in fp64, on a dense
  // grid of [-14, 14] (both tails, where GELU underflows to -0 on the left)
  // and NaN: y and the derivative within 2^-22 relative (two fp32 rounding
  // steps; the derivative's relative to its two terms), or within the
  // smallest normal fp32 where the values underflow.
  std::vector<float> x;
  for (int i = -140000; i <= 140000; i += 7)
    x.push_back(static_cast<float>(i) * 1e-4f);
  x.push_back(NAN);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> y(n), dx(n), ones(n, 1.0f);
  ASSERT_PTRAIN_OK(ptrain_gelu_fwd_f32(x.data(), n, y.data()));
  ASSERT_PTRAIN_OK(ptrain_gelu_bwd_f32(ones.data(), x.data(), n, dx.data()));
  int bad = 0;
  for (int64_t i = 0; i + 1 < n; ++i) {
    const double v = x[i], cdf = 0.5 * std::erfc(-v / std::sqrt(2.0));
    const double wantY = v * cdf;
    const double slope = v * std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI), wantDx = cdf + slope;
    // The derivative is a sum that cancels near GELU's minimum (x = -0.75): relative to its terms there.
    const double tolY = std::ldexp(std::fabs(wantY), -22) + 1.2e-38;
    const double tolDx = std::ldexp(std::fabs(cdf) + std::fabs(slope), -22) + 1.2e-38;
    if (std::fabs(y[i] - wantY) > tolY || std::fabs(dx[i] - wantDx) > tolDx) {
      if (++bad <= 5)
        ADD_FAILURE() << "x = " << v << ": y " << y[i] << " (want " << wantY << "), dx " << dx[i] << " (want "
                      << wantDx << ")";
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_TRUE(std::isnan(y[n - 1]) && std::isnan(dx[n - 1])) << "NaN in, NaN out";
}

} // namespace
