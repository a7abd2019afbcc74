//===- SoftmaxTest.cpp - Softmax (optionally causal) vs fp64 reference ----===//

#include "GradCheck.h"

#include <cmath>

using namespace ptrain::testing;

namespace {

/// Softmax over rows of `cols`; with `causal`, row r keeps keys <= r mod cols.
Vec softmaxRef(const Vec &x, int64_t rows, int64_t cols, bool causal) {
  Vec y(rows * cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t valid = causal ? r % cols + 1 : cols;
    double mx = -INFINITY, sum = 0.0;
    for (int64_t c = 0; c < valid; ++c)
      mx = std::fmax(mx, x[r * cols + c]);
    for (int64_t c = 0; c < valid; ++c)
      sum += std::exp(x[r * cols + c] - mx);
    for (int64_t c = 0; c < valid; ++c)
      y[r * cols + c] = std::exp(x[r * cols + c] - mx) / sum;
  }
  return y;
}

class SoftmaxMask : public ::testing::TestWithParam<bool> {};

TEST_P(SoftmaxMask, ForwardAndBackwardMatchTheReference) {
  const bool causal = GetParam();
  const int64_t rows = 8, cols = 4; // Two [4, 4] score matrices.
  auto x = randomFloats(rows * cols, 41, -3.0f, 3.0f);
  auto dy = randomFloats(rows * cols, 42);
  RefFn ref = [&](const std::vector<Vec> &v) { return softmaxRef(v[0], rows, cols, causal); };
  std::vector<float> y(rows * cols), dx(rows * cols);
  ASSERT_PTRAIN_OK(ptrain_softmax_fwd_f32(x.data(), rows, cols, causal, y.data()));
  expectClose(y, ref({toDouble(x)}), 1e-6, 1e-5, "y");
  ASSERT_PTRAIN_OK(ptrain_softmax_bwd_f32(dy.data(), y.data(), rows, cols, dx.data()));
  expectClose(dx, numericGrad(ref, {toDouble(x)}, 0, toDouble(dy)), 1e-5, 1e-4, "dx");
  if (causal) { // Row 5 is query 1 of the second matrix: keys 2, 3 masked.
    EXPECT_EQ(y[5 * cols + 2] + y[5 * cols + 3], 0.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(CausalAndFull, SoftmaxMask, ::testing::Values(false, true));

TEST(Softmax, LargeLogitsDoNotOverflow) {
  std::vector<float> x = {1000.0f, 1000.0f}, y(2);
  ASSERT_PTRAIN_OK(ptrain_softmax_fwd_f32(x.data(), 1, 2, 0, y.data()));
  expectClose(y, Vec{0.5, 0.5}, 0, 0, "y");
}

TEST(Softmax, FullyMaskedRowsAreZeroNotNaN) {
  // An attention row the mask hides entirely (every score -inf, the ONNX Attention-23 boolean mask's select)
  // gives 0 as in onnxruntime and the ONNX reference, in the four-row groups (rows 0-3) and alone (row 5), and
  // its gradient is 0; the other rows are untouched softmaxes.
  const float inf = INFINITY;
  constexpr int64_t kRows = 6, kCols = 3;
  std::vector<float> x = {-inf, -inf, -inf, 1, 2, 3, 0, -inf, 0, -inf, -inf, -inf, 5, 5, -inf, -inf, -inf, -inf};
  std::vector<float> y(kRows * kCols), dx(kRows * kCols), dy(kRows * kCols, 1.5f);
  ASSERT_PTRAIN_OK(ptrain_softmax_fwd_f32(x.data(), kRows, kCols, 0, y.data()));
  for (int64_t r : {0, 3, 5})
    for (int64_t c = 0; c < kCols; ++c)
      EXPECT_EQ(y[r * kCols + c], 0.0f) << "row " << r << " col " << c;
  expectClose(std::vector<float>(y.begin() + 6, y.begin() + 9), Vec{0.5, 0.0, 0.5}, 0, 1e-7, "row 2");
  dy[1] = -2.0f;
  ASSERT_PTRAIN_OK(ptrain_softmax_bwd_f32(dy.data(), y.data(), kRows, kCols, dx.data()));
  for (int64_t i = 0; i < kRows * kCols; ++i)
    EXPECT_FALSE(std::isnan(dx[i])) << i;
  for (int64_t r : {0, 3, 5})
    for (int64_t c = 0; c < kCols; ++c)
      EXPECT_EQ(dx[r * kCols + c], 0.0f) << "row " << r << " col " << c;
  // A causal [2, 2] pair whose first query's only key is -inf.
  std::vector<float> cx = {-inf, 7, 1, 1}, cy(4);
  ASSERT_PTRAIN_OK(ptrain_softmax_fwd_f32(cx.data(), 2, 2, 1, cy.data()));
  expectClose(cy, Vec{0.0, 0.0, 0.5, 0.5}, 0, 0, "causal");
}

TEST(Softmax, RowGroupsGiveEachRowsBitsAlone) {
  // The kernels sum four rows at a time (four fp64 chains, each in column order): every row of a 7-row call
  // (one group and three single rows), in place as the attention kernel calls them, has the bits of a
  // one-row call.
  constexpr int64_t kRows = 7, kCols = 67;
  auto x = randomFloats(kRows * kCols, 91, -6.0f, 6.0f);
  auto dy = randomFloats(kRows * kCols, 92);
  std::vector<float> y = x, dx = dy, oneY(kCols), oneDx(kCols);
  ASSERT_PTRAIN_OK(ptrain_softmax_fwd_f32(y.data(), kRows, kCols, 0, y.data()));
  ASSERT_PTRAIN_OK(ptrain_softmax_bwd_f32(dx.data(), y.data(), kRows, kCols, dx.data()));
  for (int64_t r = 0; r < kRows; ++r) {
    ASSERT_PTRAIN_OK(ptrain_softmax_fwd_f32(x.data() + r * kCols, 1, kCols, 0, oneY.data()));
    ASSERT_PTRAIN_OK(ptrain_softmax_bwd_f32(dy.data() + r * kCols, oneY.data(), 1, kCols, oneDx.data()));
    for (int64_t c = 0; c < kCols; ++c) {
      ASSERT_EQ(y[r * kCols + c], oneY[c]) << "y row " << r << " col " << c;
      ASSERT_EQ(dx[r * kCols + c], oneDx[c]) << "dx row " << r << " col " << c;
    }
  }
}

TEST(Softmax, CausalNeedsSquareTrailingDims) {
  std::vector<float> x(6), y(6);
  EXPECT_EQ(ptrain_softmax_fwd_f32(x.data(), 3, 2, 1, y.data()), PTRAIN_ERROR_INVALID_ARGUMENT);
}

} // namespace
