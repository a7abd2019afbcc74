//===- GemmF16Test.cpp - fp16 casts and the fp16 GEMM's definition --------===//
//
// ptrain_cast_f32_f16 / ptrain_cast_f16_f32 on rounding edge cases and on
// every binary16 value; ptrain_gemm_f16 against its definition (k fused
// multiply-adds in order on exactly widened operands, written here as a plain
// loop) bit for bit on random shapes with transposes, batches, broadcast B and
// column tails, on every kernel path the CPU runs; and its errors.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace ptrain::testing;

namespace {

uint16_t toF16(float f) {
  uint16_t h = 0;
  EXPECT_EQ(ptrain_cast_f32_f16(&f, 1, &h), PTRAIN_OK) << ptrain_last_error();
  return h;
}

float fromF16(uint16_t h) {
  float f = 0;
  EXPECT_EQ(ptrain_cast_f16_f32(&h, 1, &f), PTRAIN_OK) << ptrain_last_error();
  return f;
}

TEST(CastF16, RoundsToNearestEven) {
  // binary16 keeps 11 significant bits: at 1 its step is 2^-10, so 1 + 2^-11 is a tie (to even: 1).
  EXPECT_EQ(toF16(1.0f), 0x3c00);
  EXPECT_EQ(toF16(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(toF16(1.0f + 3 * 0x1p-11f), 0x3c02);     // tie between 0x3c01 and 0x3c02: even
  EXPECT_EQ(toF16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01); // above the tie
  EXPECT_EQ(toF16(65504.0f), 0x7bff);                   // the largest finite
  EXPECT_EQ(toF16(65520.0f), 0x7c00);                   // rounds past it: +inf
  EXPECT_EQ(toF16(-1e6f), 0xfc00);
  EXPECT_EQ(toF16(0x1p-24f), 0x0001);                   // the smallest subnormal
  EXPECT_EQ(toF16(0x1p-26f), 0x0000);                   // below half of it: +0
  EXPECT_EQ(toF16(-0.0f), 0x8000);
  EXPECT_EQ(toF16(NAN) & 0x7e00, 0x7e00);               // a quiet NaN
}

TEST(CastF16, EveryF16ValueRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fromF16(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_EQ(h & 0x7c00u, 0x7c00u);
      continue;
    }
    EXPECT_EQ(toF16(f), h) << "binary16 0x" << std::hex << h;
  }
}

TEST(CastF16, Errors) {
  float x = 1.0f;
  uint16_t h = 0;
  EXPECT_EQ(ptrain_cast_f32_f16(&x, -1, &h), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("ptrain_cast_f32_f16"), std::string::npos) << ptrain_last_error();
  EXPECT_EQ(ptrain_cast_f16_f32(nullptr, 1, &x), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_cast_f32_f16(nullptr, 0, nullptr), PTRAIN_OK);
}

struct Shape {
  int ta, tb, batch, m, n, k;
  int64_t strideB; // 0: B broadcast over the batch
};

/// The definition written as a loop: op(A), op(B) widened, acc = fma(a[p], b[p], acc) for p in order.
std::vector<float> definition(const Shape &s, const std::vector<uint16_t> &a, const std::vector<uint16_t> &b,
                              float alpha, float beta, std::vector<float> c) {
  for (int p = 0; p < s.batch; ++p)
    for (int i = 0; i < s.m; ++i)
      for (int j = 0; j < s.n; ++j) {
        float acc = 0.0f;
        for (int q = 0; q < s.k; ++q) {
          const uint16_t av = s.ta ? a[p * s.m * s.k + q * s.m + i] : a[p * s.m * s.k + i * s.k + q];
          const uint16_t *bp = b.data() + p * s.strideB;
          const uint16_t bv = s.tb ? bp[j * s.k + q] : bp[q * s.n + j];
          acc = std::fmaf(fromF16(av), fromF16(bv), acc);
        }
        float &out = c[p * s.m * s.n + i * s.n + j];
        float v = alpha * acc;
        if (beta != 0.0f) {
          const float old = beta * out;
          v = v + old;
        }
        out = v;
      }
  return c;
}

std::vector<uint16_t> randomF16(std::mt19937 &rng, size_t count) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> out(count);
  for (uint16_t &h : out)
    h = toF16(normal(rng));
  return out;
}

const Shape kShapes[] = {{0, 0, 1, 5, 7, 3, 21},   {0, 1, 2, 6, 64, 17, 0}, {1, 0, 3, 13, 65, 31, 65 * 31},
                         {1, 1, 2, 1, 130, 64, 130 * 64}, {0, 1, 1, 8, 3, 1, 3}};

/// Every shape's output bits, with the definition's bits compared on the way.
std::string allOutputs() {
  std::mt19937 rng(7);
  std::string bits;
  for (const Shape &s : kShapes) {
    const std::vector<uint16_t> a = randomF16(rng, static_cast<size_t>(s.batch) * s.m * s.k);
    const std::vector<uint16_t> b =
        randomF16(rng, static_cast<size_t>(s.strideB ? s.batch : 1) * s.k * s.n);
    std::vector<float> c0(static_cast<size_t>(s.batch) * s.m * s.n);
    for (float &v : c0)
      v = std::ldexp(static_cast<float>(rng() % 1024) - 512.0f, -8);
    for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{0.5f, -1.0f}}) {
      std::vector<float> c = c0;
      EXPECT_EQ(ptrain_gemm_f16(s.ta, s.tb, s.batch, s.m, s.n, s.k, alpha, a.data(), s.m * s.k, b.data(), s.strideB,
                                beta, c.data(), s.m * s.n),
                PTRAIN_OK)
          << ptrain_last_error();
      const std::vector<float> want = definition(s, a, b, alpha, beta, c0);
      for (size_t i = 0; i < c.size(); ++i)
        EXPECT_EQ(bitsOf(c[i]), bitsOf(want[i])) << "shape m=" << s.m << " n=" << s.n << " k=" << s.k << " at " << i;
      bits.append(reinterpret_cast<const char *>(c.data()), c.size() * sizeof(float));
    }
  }
  return bits;
}

TEST(GemmF16, IsItsDefinitionOnEveryPath) {
  ASSERT_PTRAIN_OK(ptrain_cpu_set_isa("baseline"));
  const std::string baseline = allOutputs();
  for (const char *path : {"avx2", "avx512", "avx512bf16"}) {
    if (ptrain_cpu_set_isa(path) != PTRAIN_OK) {
      std::printf("fp16 GEMM: this CPU does not run the %s path: not compared\n", path);
      continue;
    }
    EXPECT_TRUE(allOutputs() == baseline) << "the " << path << " path's fp16 GEMM differs from the baseline's bits";
  }
  ASSERT_PTRAIN_OK(ptrain_cpu_set_isa(nullptr));
}

TEST(GemmF16, ProductsAreExact) {
  // The largest binary16 value squared, 65504^2 = (2^11 - 1)^2 2^10, needs 22 bits: exact in fp32; the smallest
  // subnormal squared, 2^-48, is a normal fp32 (nothing to flush); two opposite products cancel to exactly 0.
  const uint16_t big = 0x7bff, tiny = 0x0001;
  float c[1] = {0};
  ASSERT_PTRAIN_OK(ptrain_gemm_f16(0, 0, 1, 1, 1, 1, 1.0f, &big, 0, &big, 0, 0.0f, c, 0));
  EXPECT_EQ(c[0], 4290774016.0f);
  ASSERT_PTRAIN_OK(ptrain_gemm_f16(0, 0, 1, 1, 1, 1, 1.0f, &tiny, 0, &tiny, 0, 0.0f, c, 0));
  EXPECT_EQ(c[0], 0x1p-48f);
  const uint16_t a[2] = {0xfbff, 0x7bff}, b[2] = {0x7bff, 0x7bff};
  ASSERT_PTRAIN_OK(ptrain_gemm_f16(0, 0, 1, 1, 1, 2, 1.0f, a, 0, b, 0, 0.0f, c, 0));
  EXPECT_EQ(c[0], 0.0f);
}

TEST(GemmF16, NanResultsAreOneQuietNan) {
  const uint16_t a[2] = {0x7c00, 0x3c00}, b[2] = {0xfc00, 0x3c00}; // inf * -inf ... + inf * 1: NaN
  const uint16_t a2[2] = {0x7c00, 0x7c00};
  float c[1] = {0};
  ASSERT_PTRAIN_OK(ptrain_gemm_f16(0, 0, 1, 1, 1, 2, 1.0f, a2, 0, b, 0, 0.0f, c, 0));
  EXPECT_EQ(bitsOf(c[0]), 0x7fc00000u);
  ASSERT_PTRAIN_OK(ptrain_gemm_f16(0, 0, 1, 1, 1, 2, 1.0f, a, 0, b, 0, 0.0f, c, 0));
  EXPECT_TRUE(std::isinf(c[0]) && c[0] < 0) << c[0];
}

TEST(GemmF16, ZeroKScalesC) {
  float c[2] = {2.0f, -4.0f};
  ASSERT_PTRAIN_OK(ptrain_gemm_f16(0, 0, 1, 1, 2, 0, 1.0f, nullptr, 0, nullptr, 0, 0.5f, c, 0));
  EXPECT_EQ(c[0], 1.0f);
  EXPECT_EQ(c[1], -2.0f);
}

TEST(GemmF16, Errors) {
  const uint16_t a[1] = {0x3c00};
  float c[1] = {0};
  EXPECT_EQ(ptrain_gemm_f16(0, 0, 1, -1, 1, 1, 1.0f, a, 0, a, 0, 0.0f, c, 0), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("ptrain_gemm_f16"), std::string::npos) << ptrain_last_error();
  EXPECT_EQ(ptrain_gemm_f16(0, 0, 1, 1, 1, 1, 1.0f, nullptr, 0, a, 0, 0.0f, c, 0), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_gemm_f16(0, 0, 2, 1, 1, 1, 1.0f, a, 0, a, 0, 0.0f, c, 0), PTRAIN_ERROR_INVALID_ARGUMENT);
}

} // namespace
