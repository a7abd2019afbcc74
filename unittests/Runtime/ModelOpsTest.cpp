//===- ModelOpsTest.cpp - Masks, select, reduce, rms_norm, rotary, dropout ----===//
//
// Argument checks and small known answers of the kernels behind ptrain.compare/select/broadcast_to/reduce,
// rms_norm, rotary_embedding and dropout. Bit-equality with the reference interpreter is checked end to end by
// CTest codegen-cpu-model-ops.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace ptrain::testing;

namespace {

TEST(ModelOps, CompareAndLogicalBroadcast) {
  const float a[] = {1, 2, 3, 4, 5, 6};
  const float b[] = {2, 5, 3};
  const int64_t ad[] = {2, 3}, bd[] = {3};
  uint8_t lt[6], ge[6], both[6];
  ASSERT_PTRAIN_OK(ptrain_compare_f32(PTRAIN_COMPARE_LT, a, 2, ad, b, 1, bd, 2, ad, lt));
  ASSERT_PTRAIN_OK(ptrain_compare_f32(PTRAIN_COMPARE_GE, a, 2, ad, b, 1, bd, 2, ad, ge));
  const uint8_t wantLt[] = {1, 1, 0, 0, 0, 0};
  EXPECT_EQ(std::memcmp(lt, wantLt, 6), 0);
  ASSERT_PTRAIN_OK(ptrain_logical_u8(PTRAIN_COMPARE_XOR, lt, 2, ad, ge, 2, ad, 2, ad, both));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(both[i], 1) << "lt xor ge is true everywhere, element " << i;
  EXPECT_EQ(ptrain_compare_f32(PTRAIN_COMPARE_AND, a, 2, ad, b, 1, bd, 2, ad, lt), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "unknown comparison kind 5"), nullptr) << ptrain_last_error();
}

TEST(ModelOps, SelectAndBroadcastToCopyBits) {
  const uint8_t cond[] = {1, 0};
  const int64_t a[] = {7, 8, 9, 10}, b = -1;
  const int64_t cd[] = {2}, ad[] = {2, 2};
  int64_t out[4];
  ASSERT_PTRAIN_OK(ptrain_select(cond, 1, cd, a, 2, ad, &b, 0, nullptr, 8, 2, ad, out));
  const int64_t want[] = {7, -1, 9, -1};
  EXPECT_EQ(std::memcmp(out, want, sizeof(out)), 0);
  EXPECT_EQ(ptrain_select(cond, 1, cd, a, 2, ad, &b, 0, nullptr, 3, 2, ad, out), PTRAIN_ERROR_INVALID_ARGUMENT);
  const int64_t wide[] = {3, 2};
  EXPECT_EQ(ptrain_broadcast_to(a, 8, 2, ad, 2, wide, out), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "does not broadcast"), nullptr) << ptrain_last_error();
}

TEST(ModelOps, BroadcastToRepeatsRowsAndWalksOtherShapes) {
  // Leading dims only (a bias over [2, 3] rows, with and without a leading 1): block copies; a middle
  // broadcast ([2, 1, 2] to [2, 3, 2]) walks the elements. Both copy the bits.
  const float bias[] = {1.5f, -0.0f};
  const int64_t bd[] = {2}, bd1[] = {1, 1, 2}, rows[] = {2, 3, 2};
  float out[12], out1[12];
  ASSERT_PTRAIN_OK(ptrain_broadcast_to(bias, 4, 1, bd, 3, rows, out));
  ASSERT_PTRAIN_OK(ptrain_broadcast_to(bias, 4, 3, bd1, 3, rows, out1));
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(std::memcmp(&out[i], &bias[i % 2], 4), 0) << "element " << i;
    EXPECT_EQ(std::memcmp(&out1[i], &bias[i % 2], 4), 0) << "element " << i;
  }
  const float x[] = {1, 2, 3, 4};
  const int64_t xd[] = {2, 1, 2};
  float mid[12];
  ASSERT_PTRAIN_OK(ptrain_broadcast_to(x, 4, 3, xd, 3, rows, mid));
  const float want[] = {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4};
  EXPECT_EQ(std::memcmp(mid, want, sizeof(mid)), 0);
}

TEST(ModelOps, ReduceSumMeanMax) {
  const float x[] = {1, -2, 3, 4, NAN, 6};
  const int64_t d[] = {2, 3}, rows[] = {2, 1}, cols[] = {1, 3};
  float out[3];
  ASSERT_PTRAIN_OK(ptrain_reduce_f32(PTRAIN_REDUCE_KIND_MEAN, x, 2, d, 2, rows, out));
  EXPECT_FLOAT_EQ(out[0], 2.0f / 3.0f);
  EXPECT_TRUE(std::isnan(out[1]));
  ASSERT_PTRAIN_OK(ptrain_reduce_f32(PTRAIN_REDUCE_KIND_MAX, x, 2, d, 2, cols, out));
  EXPECT_EQ(out[0], 4.0f);
  EXPECT_TRUE(std::isnan(out[1])) << "max propagates NaN";
  EXPECT_EQ(out[2], 6.0f);
  const int64_t empty[] = {2, 0}, one[] = {2, 1};
  EXPECT_EQ(ptrain_reduce_f32(PTRAIN_REDUCE_KIND_MAX, x, 2, empty, 2, one, out), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_reduce_f32(7, x, 2, d, 2, rows, out), PTRAIN_ERROR_INVALID_ARGUMENT);
}

TEST(ModelOps, RmsNormAndRotary) {
  const float x[] = {3, 4}, scale[] = {1, 2};
  float y[2];
  ASSERT_PTRAIN_OK(ptrain_rms_norm_fwd_f32(x, scale, 1, 2, 0.0, y));
  // rms = sqrt((9 + 16) / 2)
  EXPECT_FLOAT_EQ(y[0], static_cast<float>(3 / std::sqrt(12.5)));
  EXPECT_FLOAT_EQ(y[1], static_cast<float>(8 / std::sqrt(12.5)));
  EXPECT_EQ(ptrain_rms_norm_fwd_f32(x, scale, 1, 2, -1.0, y), PTRAIN_ERROR_INVALID_ARGUMENT);
  // One head, one position, 4 channels, 2 rotated: (x0, x1) by 90 degrees, interleaved.
  const float q[] = {1, 2, 5, 6}, c[] = {0}, s[] = {1};
  float r[4];
  ASSERT_PTRAIN_OK(ptrain_rotary_embedding_f32(q, c, s, 1, 1, 1, 4, 2, 1, r));
  EXPECT_EQ(r[0], -2.0f);
  EXPECT_EQ(r[1], 1.0f);
  EXPECT_EQ(r[2], 5.0f);
  EXPECT_EQ(r[3], 6.0f);
  EXPECT_EQ(ptrain_rotary_embedding_f32(q, c, s, 1, 1, 1, 4, 3, 1, r), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "rotary_dim must be even"), nullptr) << ptrain_last_error();
  EXPECT_EQ(ptrain_rotary_embedding_f32(q, c, s, 1, 1, 1, 4, 2, 1, const_cast<float *>(q)),
            PTRAIN_ERROR_INVALID_ARGUMENT);
}

TEST(ModelOps, DropoutMaskIsAPureFunctionOfSeedCounterIndex) {
  std::vector<float> x(4096, 1.0f), a(4096), b(4096), c(4096);
  ASSERT_PTRAIN_OK(ptrain_dropout_f32(x.data(), 4096, 0.25, 11, 5, a.data()));
  ASSERT_PTRAIN_OK(ptrain_dropout_f32(x.data(), 4096, 0.25, 11, 5, b.data()));
  ASSERT_PTRAIN_OK(ptrain_dropout_f32(x.data(), 4096, 0.25, 11, 6, c.data()));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  int kept = 0;
  for (float v : a) {
    EXPECT_TRUE(v == 0.0f || v == static_cast<float>(1.0 / 0.75));
    kept += v != 0.0f;
  }
  EXPECT_NEAR(kept / 4096.0, 0.75, 0.03);
  ASSERT_PTRAIN_OK(ptrain_dropout_f32(x.data(), 4096, 0.0, 11, 5, a.data()));
  EXPECT_EQ(a, x) << "ratio 0 is the identity";
  EXPECT_EQ(ptrain_dropout_f32(x.data(), 4096, 1.0, 11, 5, a.data()), PTRAIN_ERROR_INVALID_ARGUMENT);
}

// ptrain_dropout_global_f32 (the ptrain.dropout_layout of PTrainModelOps.td): part p of 2 of dimension 1 of a
// [2, 2, 5] block at global row 4 draws the elements ((4 + r) 4 + 2 p + j) 5 + k of the plain [6, 4, 5] mask.
TEST(ModelOps, GlobalDropoutDrawsThePlainMaskOnItsGlobalElements) {
  std::vector<float> whole(120, 1.0f), plain(120), x(20, 1.0f), part(20);
  ASSERT_PTRAIN_OK(ptrain_dropout_f32(whole.data(), 120, 0.5, 3, 9, plain.data()));
  for (int64_t p = 0; p < 2; ++p) {
    ASSERT_PTRAIN_OK(ptrain_dropout_global_f32(x.data(), 20, 0.5, 3, 9, /*mid=*/2, /*inner=*/5, p, /*parts=*/2,
                                               /*base=*/4 * 20, part.data()));
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t k = 0; k < 5; ++k)
          ASSERT_EQ(part[(r * 2 + j) * 5 + k], plain[((4 + r) * 4 + 2 * p + j) * 5 + k]) << p << r << j << k;
  }
  // Without a sharded dimension (mid 0): rows 2 and 3 of the plain [6, 20] mask.
  ASSERT_PTRAIN_OK(ptrain_dropout_global_f32(x.data(), 20, 0.5, 3, 9, 0, 1, 0, 1, 40, part.data()));
  EXPECT_TRUE(std::equal(part.begin(), part.end(), plain.begin() + 40));
  EXPECT_EQ(ptrain_dropout_global_f32(x.data(), 20, 0.5, 3, 9, 2, 5, 2, 2, 0, part.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "part 2 of 2"), nullptr) << ptrain_last_error();
}

} // namespace
