//===- ElementwiseTest.cpp - Fill, add, scale, bias add, permute ----------===//

#include "GradCheck.h"

#include <string>

using namespace ptrain::testing;

namespace {

TEST(Elementwise, FillAddScaleInPlace) {
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30}, out(3);
  ASSERT_PTRAIN_OK(ptrain_add_f32(a.data(), b.data(), 3, a.data()));
  expectClose(a, Vec{11, 22, 33}, 0, 0, "a + b");
  ASSERT_PTRAIN_OK(ptrain_scale_f32(a.data(), 3, -0.5f, a.data()));
  expectClose(a, Vec{-5.5, -11, -16.5}, 0, 0, "scaled");
  ASSERT_PTRAIN_OK(ptrain_fill_f32(out.data(), 3, 7.0f));
  expectClose(out, Vec{7, 7, 7}, 0, 0, "filled");
}

TEST(Elementwise, SumSquaresAccumulatesInDouble) {
  // 4096^2 = 2^24, after which an fp32 accumulator cannot add 1.
  std::vector<float> x = {4096.0f, 1.0f, -1.0f};
  double sum = 0.0;
  ASSERT_PTRAIN_OK(ptrain_sum_squares_f32(x.data(), 3, &sum));
  EXPECT_EQ(sum, 16777216.0 + 2.0);
}

TEST(Elementwise, BiasAddBackwardMatchesFiniteDifferences) {
  const int64_t rows = 3, cols = 4;
  auto x = randomFloats(rows * cols, 11);
  auto bias = randomFloats(cols, 12);
  auto dy = randomFloats(rows * cols, 13);
  RefFn ref = [&](const std::vector<Vec> &v) {
    Vec y(rows * cols);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        y[r * cols + c] = v[0][r * cols + c] + v[1][c];
    return y;
  };
  std::vector<float> y(rows * cols), dbias(cols);
  ASSERT_PTRAIN_OK(
      ptrain_bias_add_f32(x.data(), bias.data(), rows, cols, y.data()));
  expectClose(y, ref({toDouble(x), toDouble(bias)}), 1e-6, 1e-6, "y");
  ASSERT_PTRAIN_OK(ptrain_bias_add_bwd_f32(dy.data(), rows, cols, dbias.data()));
  expectClose(dbias,
              numericGrad(ref, {toDouble(x), toDouble(bias)}, 1, toDouble(dy)),
              1e-5, 1e-5, "dbias");
}

TEST(Permute, SplitHeadsAndBack) {
  // [B=2, S=3, H=2, D=4] -> [B, H, S, D] and back through the inverse.
  const int64_t dims[4] = {2, 3, 2, 4};
  const int32_t perm[4] = {0, 2, 1, 3};
  std::vector<float> x(2 * 3 * 2 * 4), y(x.size()), back(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i);
  ASSERT_PTRAIN_OK(ptrain_permute_f32(x.data(), 4, dims, perm, y.data()));
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 2; ++h)
      for (int s = 0; s < 3; ++s)
        for (int d = 0; d < 4; ++d)
          ASSERT_EQ(y[((b * 2 + h) * 3 + s) * 4 + d],
                    x[((b * 3 + s) * 2 + h) * 4 + d]);
  const int64_t permutedDims[4] = {2, 2, 3, 4};
  ASSERT_PTRAIN_OK(
      ptrain_permute_f32(y.data(), 4, permutedDims, perm, back.data()));
  EXPECT_EQ(back, x);
}

TEST(Permute, FullReversalOfThreeDims) {
  const int64_t dims[3] = {2, 3, 4};
  const int32_t perm[3] = {2, 1, 0};
  std::vector<float> x(24), y(24);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i);
  ASSERT_PTRAIN_OK(ptrain_permute_f32(x.data(), 3, dims, perm, y.data()));
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c)
        ASSERT_EQ(y[(a * 3 + b) * 2 + c], x[(c * 3 + b) * 4 + a]);
}

TEST(Permute, RejectsANonPermutation) {
  const int64_t dims[2] = {2, 2};
  const int32_t perm[2] = {1, 1};
  float x[4] = {}, y[4];
  EXPECT_EQ(ptrain_permute_f32(x, 2, dims, perm, y),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("not a permutation"),
            std::string::npos);
}

} // namespace
