//===- GemmTest.cpp - ptrain_gemm_f32 against a naive fp64 GEMM -----------===//

#include "GradCheck.h"

#include <cstdio>
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

/// A weight gradient's transpose written by its batch sum's GEMM (GemmFusion.h, `writesTransposed`): autodiff's
/// dW^T = sum_b x_b^T dy_b of `x W^T`, one GEMM over the batch-long contraction K = batch x k with both stacks
/// row-major ([K, M] read transposed, [K, N] as is), then transposed, and (accumulated into its gradient state)
/// added to the state. The unfolded reference: ptrain_gemm_f32(1, 0, 1, M, N, K, x, dy) into a buffer, the
/// transposed copy, the fp32 add. ptrain_gemm_transposed_f32, which the CPU emitter calls, must give its bits on
/// every kernel path, beta 0 and 1. The GEMM with its operands swapped, (A^T B)^T = B^T A (kern10's fold), does
/// not on OpenBLAS's Haswell kernels (1,662 to 5,335 elements of 16 K to 65 K differ at the GPT's shapes, kern11;
/// the SkylakeX kernels gave equal bits): the count is recorded (`swapped_differ`), not asserted. On SkylakeX the
/// runtime takes the swapped GEMM where it keeps the bits (beta 0, or K <= 256): this test checks that route there
/// and the scratch route on Haswell (K past 256 with beta 1: the scratch route on both). Shapes: the
/// bundled GPT's linear layers (d = 128: qkv, projection, MLP; K = 4 x 64 = 256), the scale test's (d = 64;
/// K = 4 x 32 = 128), K past OpenBLAS's one-pass 256 (1024, 2048) and an odd one. scripts/test-kernel-paths.sh
/// runs it with OpenBLAS's Haswell (AVX2) and SkylakeX (AVX-512) kernels.
size_t differingBits(const std::vector<float> &a, const std::vector<float> &b); // below

TEST(Gemm, BatchSumWrittenTransposedGivesTheTransposedSumsBits) {
  struct Shape {
    int64_t m, n, k; ///< dW^T is [m, n] = x^T dy: m the layer's input width, n its output width
  };
  size_t swappedDiffer = 0;
  for (const Shape &sh : {Shape{128, 384, 256}, Shape{128, 128, 256}, Shape{128, 512, 256}, Shape{512, 128, 256},
                          Shape{64, 192, 128}, Shape{64, 64, 128}, Shape{64, 256, 128}, Shape{256, 64, 128},
                          Shape{128, 384, 1024}, Shape{512, 128, 2048}, Shape{37, 53, 301}}) {
    auto x = randomFloats(sh.k * sh.m, 31);
    auto dy = randomFloats(sh.k * sh.n, 32);
    auto state = randomFloats(sh.m * sh.n, 33);
    std::vector<float> sum(sh.m * sh.n, NAN), transposed(sh.m * sh.n, NAN), added(state);
    ASSERT_PTRAIN_OK(ptrain_gemm_f32(1, 0, 1, sh.m, sh.n, sh.k, 1.0f, x.data(), 0, dy.data(), 0, 0.0f, sum.data(), 0));
    for (int64_t i = 0; i < sh.m; ++i)
      for (int64_t j = 0; j < sh.n; ++j) {
        transposed[j * sh.m + i] = sum[i * sh.n + j];
        added[j * sh.m + i] = state[j * sh.m + i] + transposed[j * sh.m + i];
      }
    std::vector<float> written(sh.m * sh.n, NAN), accumulated(state), swapped(sh.m * sh.n, NAN);
    ASSERT_PTRAIN_OK(ptrain_gemm_transposed_f32(1, 0, sh.m, sh.n, sh.k, 1.0f, x.data(), dy.data(), 0.0f,
                                                written.data()));
    ASSERT_PTRAIN_OK(ptrain_gemm_transposed_f32(1, 0, sh.m, sh.n, sh.k, 1.0f, x.data(), dy.data(), 1.0f,
                                                accumulated.data()));
    EXPECT_EQ(differingBits(written, transposed), 0u) << sh.m << " x " << sh.n << " x " << sh.k << ", beta 0";
    EXPECT_EQ(differingBits(accumulated, added), 0u) << sh.m << " x " << sh.n << " x " << sh.k << ", beta 1";
    ASSERT_PTRAIN_OK(
        ptrain_gemm_f32(1, 0, 1, sh.n, sh.m, sh.k, 1.0f, dy.data(), 0, x.data(), 0, 0.0f, swapped.data(), 0));
    swappedDiffer += differingBits(swapped, transposed);
  }
  ::testing::Test::RecordProperty("swapped_differ", static_cast<int>(swappedDiffer));
  std::printf("the swapped-operand GEMM differs from the transposed sum in %zu elements on this kernel path\n",
              swappedDiffer);
}

TEST(Gemm, TransposedGemmRejectsBadArguments) {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4}, c[4] = {};
  EXPECT_EQ(ptrain_gemm_transposed_f32(0, 0, -1, 2, 2, 1.0f, a, b, 0.0f, c), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("ptrain_gemm_transposed_f32"), std::string::npos)
      << ptrain_last_error();
  EXPECT_EQ(ptrain_gemm_transposed_f32(0, 0, 2, 2, 2, 1.0f, a, b, 0.0f, nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_gemm_transposed_f32(0, 0, 2, 2, 2, 1.0f, nullptr, b, 0.0f, c), PTRAIN_ERROR_INVALID_ARGUMENT);
}

/// The attention's head split and merge read and written through leading dimensions (ptrain_gemm_strided_f32,
/// GemmFusion.h "head permutes"): every operand either a dense [B, H, rows, cols] stack or a [B, rows, H, cols]
/// tensor read in place as its (0, 2, 1, 3) permute, every transpose pair, C dense or written as the permute of
/// the product; against ptrain_permute_f32 + ptrain_gemm_f32 + ptrain_permute_f32 on dense copies, bit for bit
/// (BLAS packs the operands, so the leading dimension cannot change a sum). The bundled GPT's shapes: B = 4,
/// T = 64, H = 4, D = 32. scripts/test-kernel-paths.sh runs it with OpenBLAS's Haswell and SkylakeX kernels.
struct HeadsOperand {
  std::vector<float> stored; ///< [B, rows, H, cols] when heads, else [B, H, rows, cols]
  std::vector<float> dense;  ///< [B, H, rows, cols]
  int64_t layout[3];
};

HeadsOperand makeOperand(bool heads, int64_t B, int64_t H, int64_t rows, int64_t cols, unsigned seed) {
  HeadsOperand o;
  o.stored = randomFloats(B * H * rows * cols, seed);
  if (!heads) {
    o.dense = o.stored;
    o.layout[0] = cols, o.layout[1] = H * rows * cols, o.layout[2] = rows * cols;
    return o;
  }
  o.dense.assign(o.stored.size(), NAN);
  const int64_t dims[4] = {B, rows, H, cols};
  const int32_t perm[4] = {0, 2, 1, 3};
  EXPECT_EQ(ptrain_permute_f32(o.stored.data(), 4, dims, perm, o.dense.data()), PTRAIN_OK);
  o.layout[0] = H * cols, o.layout[1] = rows * H * cols, o.layout[2] = cols;
  return o;
}

size_t differingBits(const std::vector<float> &a, const std::vector<float> &b) {
  size_t differ = a.size() == b.size() ? 0 : SIZE_MAX;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    differ += bitsOf(a[i]) != bitsOf(b[i]);
  return differ;
}

TEST(GemmStrided, HeadPermutesReadAndWrittenInPlaceGiveThePermutedGemmsBits) {
  const int64_t B = 4, H = 4, T = 64, D = 32;
  struct Shape {
    int64_t m, n, k;
  };
  // The attention's products: scores (T x T x D), context (T x D x T), their gradients (T x D x T, D x T x T).
  for (const Shape &sh : {Shape{T, T, D}, Shape{T, D, T}, Shape{D, T, T}})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int heads = 0; heads < 8; ++heads) {
          const bool ha = heads & 1, hb = heads & 2, hc = heads & 4;
          HeadsOperand a = makeOperand(ha, B, H, ta ? sh.k : sh.m, ta ? sh.m : sh.k, 21);
          HeadsOperand b = makeOperand(hb, B, H, tb ? sh.n : sh.k, tb ? sh.k : sh.n, 22);
          std::vector<float> ref(B * H * sh.m * sh.n, NAN), want(ref.size(), NAN), got(ref.size(), NAN);
          ASSERT_PTRAIN_OK(ptrain_gemm_f32(ta, tb, B * H, sh.m, sh.n, sh.k, 1.0f, a.dense.data(), sh.m * sh.k,
                                           b.dense.data(), sh.k * sh.n, 0.0f, ref.data(), sh.m * sh.n));
          int64_t cLayout[3] = {sh.n, H * sh.m * sh.n, sh.m * sh.n};
          if (hc) { // the product's (0, 2, 1, 3) permute: [B, m, H, n]
            const int64_t dims[4] = {B, H, sh.m, sh.n};
            const int32_t perm[4] = {0, 2, 1, 3};
            ASSERT_PTRAIN_OK(ptrain_permute_f32(ref.data(), 4, dims, perm, want.data()));
            cLayout[0] = H * sh.n, cLayout[1] = sh.m * H * sh.n, cLayout[2] = sh.n;
          } else {
            want = ref;
          }
          ASSERT_PTRAIN_OK(ptrain_gemm_strided_f32(ta, tb, B, H, sh.m, sh.n, sh.k, 1.0f, a.stored.data(), a.layout,
                                                   b.stored.data(), b.layout, 0.0f, got.data(), cLayout));
          EXPECT_EQ(differingBits(got, want), 0u) << "trans " << ta << tb << ", heads a " << ha << " b " << hb
                                                  << " c " << hc << ", " << sh.m << " x " << sh.n << " x " << sh.k;
        }
}

TEST(GemmStrided, BadLayoutsAreRejected) {
  std::vector<float> a(64, 1.0f), b(64, 1.0f), c(64, 0.0f);
  const int64_t dense[3] = {4, 16, 0}, shortRow[3] = {3, 16, 0}, overlap[3] = {4, 8, 0}, negative[3] = {4, -16, 0};
  // 2 x 1 entries of 4 x 4 matrices; C's entries 8 elements apart overlap (each spans 16).
  EXPECT_EQ(ptrain_gemm_strided_f32(0, 0, 2, 1, 4, 4, 4, 1.0f, a.data(), dense, b.data(), dense, 0.0f, c.data(),
                                    overlap),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("overlap"), std::string::npos) << ptrain_last_error();
  EXPECT_EQ(ptrain_gemm_strided_f32(0, 0, 2, 1, 4, 4, 4, 1.0f, a.data(), shortRow, b.data(), dense, 0.0f, c.data(),
                                    dense),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("a_layout's leading dimension"), std::string::npos)
      << ptrain_last_error();
  EXPECT_EQ(ptrain_gemm_strided_f32(0, 0, 2, 1, 4, 4, 4, 1.0f, a.data(), dense, b.data(), negative, 0.0f, c.data(),
                                    dense),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_gemm_strided_f32(0, 0, 2, 1, 4, 4, 4, 1.0f, a.data(), dense, b.data(), dense, 0.0f, c.data(),
                                    nullptr),
            PTRAIN_ERROR_INVALID_ARGUMENT);
}

} // namespace
