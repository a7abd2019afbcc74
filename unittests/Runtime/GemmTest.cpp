//===- GemmTest.cpp - ptrain_gemm_f32 against a naive fp64 GEMM -----------===//

#include "GradCheck.h"

#include <string>

using namespace ptrain::testing;

namespace {

/// C_p = alpha op(A_p) op(B_p) + beta C_p, element by element in fp64.
Vec naiveGemm(bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k,
              double alpha, const Vec &a, int64_t sa, const Vec &b, int64_t sb,
              double beta, Vec c, int64_t sc) {
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (int64_t l = 0; l < k; ++l) {
          const double av = ta ? a[p * sa + l * m + i] : a[p * sa + i * k + l];
          const double bv = tb ? b[p * sb + j * k + l] : b[p * sb + l * n + j];
          acc += av * bv;
        }
        double &cv = c[p * sc + i * n + j];
        cv = alpha * acc + beta * cv;
      }
  return c;
}

struct GemmCase {
  int ta, tb;
};

class GemmTransposes : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmTransposes, BatchedMatchesNaive) {
  const GemmCase tc = GetParam();
  const int64_t batch = 3, m = 5, n = 7, k = 4;
  auto a = randomFloats(batch * m * k, 1);
  auto b = randomFloats(batch * k * n, 2);
  auto c = randomFloats(batch * m * n, 3);
  const Vec want = naiveGemm(tc.ta, tc.tb, batch, m, n, k, 0.5, toDouble(a),
                             m * k, toDouble(b), k * n, 2.0, toDouble(c), m * n);
  ASSERT_PTRAIN_OK(ptrain_gemm_f32(tc.ta, tc.tb, batch, m, n, k, 0.5f,
                                   a.data(), m * k, b.data(), k * n, 2.0f,
                                   c.data(), m * n));
  expectClose(c, want, 1e-5, 1e-5, "C");
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, GemmTransposes,
                         ::testing::Values(GemmCase{0, 0}, GemmCase{0, 1},
                                           GemmCase{1, 0}, GemmCase{1, 1}),
                         [](const ::testing::TestParamInfo<GemmCase> &info) {
                           return std::string(info.param.ta ? "T" : "N") +
                                  (info.param.tb ? "T" : "N");
                         });

TEST(Gemm, StrideZeroBroadcastsOneWeightOverTheBatch) {
  const int64_t batch = 4, m = 3, n = 2, k = 5;
  auto a = randomFloats(batch * m * k, 4);
  auto w = randomFloats(n * k, 5); // One [n, k] weight, used transposed.
  std::vector<float> c(batch * m * n, NAN); // beta = 0 must ignore NaNs.
  const Vec want = naiveGemm(false, true, batch, m, n, k, 1.0, toDouble(a),
                             m * k, toDouble(w), 0, 0.0,
                             Vec(batch * m * n, 0.0), m * n);
  ASSERT_PTRAIN_OK(ptrain_gemm_f32(0, 1, batch, m, n, k, 1.0f, a.data(), m * k,
                                   w.data(), 0, 0.0f, c.data(), m * n));
  expectClose(c, want, 1e-5, 1e-5, "C");
}

TEST(Gemm, EmptyInnerDimensionScalesC) {
  std::vector<float> c = {1.0f, 2.0f, NAN, 4.0f};
  ASSERT_PTRAIN_OK(ptrain_gemm_f32(0, 0, 1, 2, 2, 0, 1.0f, nullptr, 0, nullptr,
                                   0, 0.0f, c.data(), 0));
  expectClose(c, Vec{0, 0, 0, 0}, 0, 0, "C");
}

TEST(Gemm, OverlappingBatchOutputsAreRejected) {
  std::vector<float> a(4), b(4), c(8);
  EXPECT_EQ(ptrain_gemm_f32(0, 0, 2, 2, 2, 1, 1.0f, a.data(), 2, b.data(), 2,
                            0.0f, c.data(), 3),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("stride_c"),
            std::string::npos);
}

/// The linear layer the lowering composes from GEMM (header comment):
/// y = x W^T; dx = dy W; dW = dy^T x, checked against finite differences.
TEST(Gemm, LinearLayerBackwardMatchesFiniteDifferences) {
  const int64_t rows = 4, in = 5, out = 3;
  auto x = randomFloats(rows * in, 6);
  auto w = randomFloats(out * in, 7);
  auto dy = randomFloats(rows * out, 8);
  RefFn linear = [&](const std::vector<Vec> &v) {
    return naiveGemm(false, true, 1, rows, out, in, 1.0, v[0], 0, v[1], 0, 0.0,
                     Vec(rows * out, 0.0), 0);
  };
  std::vector<float> dx(rows * in), dw(out * in);
  ASSERT_PTRAIN_OK(ptrain_gemm_f32(0, 0, 1, rows, in, out, 1.0f, dy.data(), 0,
                                   w.data(), 0, 0.0f, dx.data(), 0));
  ASSERT_PTRAIN_OK(ptrain_gemm_f32(1, 0, 1, out, in, rows, 1.0f, dy.data(), 0,
                                   x.data(), 0, 0.0f, dw.data(), 0));
  const std::vector<Vec> inputs = {toDouble(x), toDouble(w)};
  expectClose(dx, numericGrad(linear, inputs, 0, toDouble(dy)), 1e-5, 1e-4,
              "dx");
  expectClose(dw, numericGrad(linear, inputs, 1, toDouble(dy)), 1e-5, 1e-4,
              "dW");
}

/// A weight gradient accumulated into its state (GemmFusion.h, "accumulated into its state"): the GEMM with C =
/// the accumulator and beta = 1 gives the bits of the GEMM into a buffer (beta = 0) followed by the fp32 add
/// acc + dW, when BLAS sums K in one pass: the bundled GPT's weight gradients, dW written transposed as the
/// emitter calls it (trans_a = 1, K = batch * seq = 256), shapes of its qkv, attention projection and MLP
/// layers. scripts/test-kernel-paths.sh runs it with OpenBLAS's Haswell (AVX2) and SkylakeX (AVX-512) kernels.
TEST(Gemm, AccumulatingIntoCEqualsASeparateAddOverTheBundledGptsWeightGradients) {
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape &sh : {Shape{384, 128, 256}, Shape{128, 128, 256}, Shape{512, 128, 256}, Shape{128, 512, 256}}) {
    auto dy = randomFloats(sh.k * sh.m, 11);
    auto x = randomFloats(sh.k * sh.n, 12);
    auto acc = randomFloats(sh.m * sh.n, 13);
    std::vector<float> dw(sh.m * sh.n, NAN), separate(acc), fused(acc);
    ASSERT_PTRAIN_OK(ptrain_gemm_f32(1, 0, 1, sh.m, sh.n, sh.k, 1.0f, dy.data(), 0, x.data(), 0, 0.0f, dw.data(), 0));
    for (size_t i = 0; i < separate.size(); ++i)
      separate[i] += dw[i];
    ASSERT_PTRAIN_OK(
        ptrain_gemm_f32(1, 0, 1, sh.m, sh.n, sh.k, 1.0f, dy.data(), 0, x.data(), 0, 1.0f, fused.data(), 0));
    size_t differ = 0;
    for (size_t i = 0; i < fused.size(); ++i)
      differ += bitsOf(fused[i]) != bitsOf(separate[i]);
    EXPECT_EQ(differ, 0u) << sh.m << " x " << sh.n << " x " << sh.k << ": elements whose bits differ";
  }
}

} // namespace
