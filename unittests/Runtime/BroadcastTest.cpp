//===- BroadcastTest.cpp - Broadcasting binary ops, sum_to, unary, i64 ----===//

#include "GradCheck.h"

#include <cmath>
#include <cstring>

using namespace ptrain::testing;

namespace {

TEST(Broadcast, BinaryBroadcastsBothOperands) {
  // [2, 1, 3] - [4, 1] -> [2, 4, 3]
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {10, 20, 30, 40}, out(24);
  const int64_t ad[] = {2, 1, 3}, bd[] = {4, 1}, od[] = {2, 4, 3};
  ASSERT_PTRAIN_OK(ptrain_binary_f32(PTRAIN_BINARY_SUB, a.data(), 3, ad,
                                     b.data(), 2, bd, 3, od, out.data()));
  Vec want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k)
        want.push_back(a[i * 3 + k] - b[j]);
  expectClose(out, want, 0, 0, "a - b");
}

TEST(Broadcast, BinaryKindsAndScalars) {
  std::vector<float> a = {2, -3, NAN}, out(3);
  float two = 2.0f;
  const int64_t d[] = {3};
  ASSERT_PTRAIN_OK(ptrain_binary_f32(PTRAIN_BINARY_POW, a.data(), 1, d, &two,
                                     0, nullptr, 1, d, out.data()));
  EXPECT_EQ(out[0], 4.0f);
  EXPECT_EQ(out[1], 9.0f);
  ASSERT_PTRAIN_OK(ptrain_binary_f32(PTRAIN_BINARY_MAX, a.data(), 1, d, &two,
                                     0, nullptr, 1, d, out.data()));
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[1], 2.0f);
  EXPECT_TRUE(std::isnan(out[2])) << "max propagates NaN";
  ASSERT_PTRAIN_OK(ptrain_binary_f32(PTRAIN_BINARY_DIV, &two, 0, nullptr,
                                     a.data(), 1, d, 1, d, out.data()));
  EXPECT_EQ(out[0], 1.0f);
}

TEST(Broadcast, BinaryRejectsShapesThatDoNotBroadcast) {
  std::vector<float> a(6), b(4), out(6);
  const int64_t ad[] = {2, 3}, bd[] = {4}, od[] = {2, 3};
  EXPECT_EQ(ptrain_binary_f32(PTRAIN_BINARY_ADD, a.data(), 2, ad, b.data(), 1,
                              bd, 2, od, out.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "does not broadcast"), nullptr)
      << ptrain_last_error();
  EXPECT_EQ(ptrain_binary_f32(42, a.data(), 2, ad, a.data(), 2, ad, 2, od,
                              out.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
}

TEST(Broadcast, SumToIsTheAdjointOfBroadcasting) {
  // <broadcast(b), dy> == <b, sum_to(dy)> for b [3, 1] broadcast to [2, 3, 4].
  auto b = randomFloats(3, 1), dy = randomFloats(24, 2);
  std::vector<float> bb(24), db(3);
  const int64_t bd[] = {3, 1}, od[] = {2, 3, 4};
  float zero = 0.0f;
  ASSERT_PTRAIN_OK(ptrain_binary_f32(PTRAIN_BINARY_ADD, b.data(), 2, bd, &zero,
                                     0, nullptr, 3, od, bb.data()));
  ASSERT_PTRAIN_OK(ptrain_sum_to_f32(dy.data(), 3, od, 2, bd, db.data()));
  double lhs = 0, rhs = 0;
  for (int i = 0; i < 24; ++i)
    lhs += double(bb[i]) * dy[i];
  for (int i = 0; i < 3; ++i)
    rhs += double(b[i]) * db[i];
  EXPECT_NEAR(lhs, rhs, 1e-5);
  Vec want(3, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        want[j] += dy[i * 12 + j * 4 + k];
  expectClose(db, want, 1e-6, 0, "sum_to");
  const int64_t bad[] = {5};
  EXPECT_EQ(ptrain_sum_to_f32(dy.data(), 3, od, 1, bad, db.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
}

TEST(Unary, EveryKindMatchesLibm) {
  std::vector<float> x = {0.25f, 1.5f, -0.5f}, out(3);
  struct Case {
    int32_t kind;
    double (*f)(double);
  } cases[] = {
      {PTRAIN_UNARY_EXP, [](double v) { return std::exp(v); }},
      {PTRAIN_UNARY_ERF, [](double v) { return std::erf(v); }},
      {PTRAIN_UNARY_TANH, [](double v) { return std::tanh(v); }},
      {PTRAIN_UNARY_NEG, [](double v) { return -v; }},
      {PTRAIN_UNARY_RECIPROCAL, [](double v) { return 1.0 / v; }},
      {PTRAIN_UNARY_RELU, [](double v) { return v > 0 ? v : 0.0; }},
  };
  for (const Case &c : cases) {
    ASSERT_PTRAIN_OK(ptrain_unary_f32(c.kind, x.data(), 3, out.data()));
    Vec want;
    for (float v : x)
      want.push_back(static_cast<float>(c.f(v)));
    expectClose(out, want, 0, 0, "unary");
  }
  ASSERT_PTRAIN_OK(ptrain_unary_f32(PTRAIN_UNARY_RSQRT, x.data(), 1, out.data()));
  EXPECT_EQ(out[0], 2.0f);
  ASSERT_PTRAIN_OK(ptrain_unary_f32(PTRAIN_UNARY_LOG, x.data() + 2, 1, out.data()));
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(ptrain_unary_f32(9, x.data(), 3, out.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
}

// tf2onnx's guard of negative token ids: ids * (ids >= 0) + (ids < 0) * (ids + vocab), broadcast scalars.
TEST(Integer, BinaryI64BroadcastsAndChecksOverflow) {
  const int64_t ids[] = {3, -1, 0, 7}, vocab = 64, two[] = {2, 1};
  const int64_t d22[] = {2, 2}, d2[] = {2};
  int64_t out[4];
  ASSERT_PTRAIN_OK(ptrain_binary_i64(PTRAIN_BINARY_ADD, ids, 2, d22, &vocab, 0, nullptr, 2, d22, out));
  EXPECT_EQ(out[1], 63);
  EXPECT_EQ(out[3], 71);
  ASSERT_PTRAIN_OK(ptrain_binary_i64(PTRAIN_BINARY_MUL, ids, 2, d22, two, 1, d2, 2, d22, out));
  EXPECT_EQ(out[0], 6);
  EXPECT_EQ(out[1], -1);
  EXPECT_EQ(out[2], 0);
  EXPECT_EQ(out[3], 7);
  ASSERT_PTRAIN_OK(ptrain_binary_i64(PTRAIN_BINARY_SUB, ids, 2, d22, two, 1, d2, 2, d22, out));
  EXPECT_EQ(out[1], -2);
  ASSERT_PTRAIN_OK(ptrain_binary_i64(PTRAIN_BINARY_MAX, ids, 2, d22, two, 1, d2, 2, d22, out));
  EXPECT_EQ(out[1], 1);
  ASSERT_PTRAIN_OK(ptrain_binary_i64(PTRAIN_BINARY_MIN, ids, 2, d22, two, 1, d2, 2, d22, out));
  EXPECT_EQ(out[0], 2);
  const int64_t big[] = {INT64_MAX / 2 + 1};
  const int64_t d1[] = {1};
  EXPECT_EQ(ptrain_binary_i64(PTRAIN_BINARY_MUL, big, 1, d1, two, 1, d1, 1, d1, out), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ptrain_last_error(),
               "ptrain_binary_i64: out[0] of 4611686018427387904 and 2 (binary kind 2) overflows int64");
  EXPECT_EQ(ptrain_binary_i64(PTRAIN_BINARY_DIV, ids, 2, d22, two, 1, d2, 2, d22, out),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  const int64_t d3[] = {3};
  EXPECT_EQ(ptrain_binary_i64(PTRAIN_BINARY_ADD, ids, 2, d22, two, 1, d3, 2, d22, out),
            PTRAIN_ERROR_INVALID_ARGUMENT);
}

TEST(Integer, AddAndCastCheckOverflow) {
  int64_t a[] = {1, INT64_MAX}, b[] = {2, 1}, out[2];
  ASSERT_PTRAIN_OK(ptrain_add_i64(a, b, 1, out));
  EXPECT_EQ(out[0], 3);
  EXPECT_EQ(ptrain_add_i64(a, b, 2, out), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "overflows"), nullptr);
  int64_t ids[] = {0, 255, int64_t(1) << 40};
  int32_t ids32[3];
  ASSERT_PTRAIN_OK(ptrain_cast_i64_i32(ids, 2, ids32));
  EXPECT_EQ(ids32[1], 255);
  EXPECT_EQ(ptrain_cast_i64_i32(ids, 3, ids32), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ptrain_last_error(),
               "ptrain_cast_i64_i32: x[2] = 1099511627776 is outside int32");
}

} // namespace
