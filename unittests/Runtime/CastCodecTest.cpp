//===- CastCodecTest.cpp - fp16 / bf16 casts, round to nearest even -------===//
//
// The conversions of cpu/codecs/Cast.h against GCC's _Float16 (IEEE binary16
// with round-to-nearest-even) and a bf16 reference written with nextafter,
// on every binary16 value, every midpoint between neighbours, and random
// fp32 values; the fused error-feedback encode through the C API.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"
#include "cpu/codecs/Cast.h"

#include <cmath>
#include <cstring>
#include <random>

namespace {
using namespace ptrain::runtime;

uint16_t refHalf(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

/// bf16 by definition: the nearer of the two bf16 neighbours (truncation and
/// truncation + 1 ulp), ties to the even mantissa.
uint16_t refBf16(float f) {
  uint32_t x = floatBits(f);
  if (std::isnan(f))
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t lo = x & 0xffff0000u;
  const uint32_t hi = lo + 0x10000u;
  const double dl = std::fabs(static_cast<double>(f) - bitsFloat(lo));
  const double dh = std::isinf(bitsFloat(hi)) && !std::isinf(f)
                        ? std::fabs(static_cast<double>(f) - std::ldexp(1.0, 128) * (f < 0 ? -1 : 1))
                        : std::fabs(static_cast<double>(f) - bitsFloat(hi));
  if (dl < dh || (dl == dh && ((lo >> 16) & 1u) == 0))
    return static_cast<uint16_t>(lo >> 16);
  return static_cast<uint16_t>(hi >> 16);
}

TEST(CastCodec, HalfMatchesTheCompilerOnEveryValueAndMidpoint) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint16_t u = static_cast<uint16_t>(h);
    const float f = halfToFloat(u);
    _Float16 ref;
    std::memcpy(&ref, &u, 2);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(static_cast<float>(ref)));
      ASSERT_EQ(floatToHalf(f) & 0x7c00u, 0x7c00u);
      continue;
    }
    ASSERT_EQ(floatBits(f), floatBits(static_cast<float>(ref))) << h;
    ASSERT_EQ(floatToHalf(f), u) << h;
    // The midpoint to the next value up (exact in fp32) rounds to even.
    if ((h & 0x7fffu) < 0x7bffu) {
      const float next = halfToFloat(static_cast<uint16_t>(h + 1));
      const float mid = (f + next) / 2; // exact: 11-bit significands
      ASSERT_EQ(floatToHalf(mid), refHalf(mid)) << h;
      ASSERT_EQ(floatToHalf(std::nextafter(mid, 0.0f)), refHalf(std::nextafter(mid, 0.0f))) << h;
      ASSERT_EQ(floatToHalf(std::nextafter(mid, 1e30f * f)), refHalf(std::nextafter(mid, 1e30f * f))) << h;
    }
  }
}

TEST(CastCodec, HalfAndBf16MatchTheReferencesOnRandomFloats) {
  std::mt19937 gen(7);
  for (int i = 0; i < 2000000; ++i) {
    const float f = bitsFloat(static_cast<uint32_t>(gen()));
    if (std::isnan(f))
      continue;
    ASSERT_EQ(floatToHalf(f), refHalf(f)) << f;
    ASSERT_EQ(floatToBf16(f), refBf16(f)) << f;
  }
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00u);         // rounds up to inf
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bffu);         // 65504
  EXPECT_EQ(floatToBf16(1.0f + 0x1.0p-8f), 0x3f80u); // tie to even (down)
  EXPECT_EQ(floatToBf16(1.0f + 0x3.0p-8f), 0x3f82u); // tie to even (up)
}

TEST(CastCodec, FusedErrorFeedbackKeepsWhatTheCodeLost) {
  for (ptrain_dtype_t dtype : {PTRAIN_DTYPE_F16, PTRAIN_DTYPE_BF16}) {
    const int64_t n = 1001;
    std::vector<float> g = ptrain::testing::randomFloats(n, 3, -70000, 70000);
    std::vector<float> e = ptrain::testing::randomFloats(n, 4, -1, 1);
    std::vector<float> e0 = e, decoded(n);
    std::vector<uint16_t> code(n);
    ASSERT_PTRAIN_OK(ptrain_cast_encode_f32(g.data(), e.data(), n, dtype, code.data()));
    ASSERT_PTRAIN_OK(ptrain_cast_decode_f32(code.data(), n, dtype, decoded.data()));
    for (int64_t i = 0; i < n; ++i) {
      const float v = g[i] + e0[i];
      const uint16_t want = dtype == PTRAIN_DTYPE_F16 ? refHalf(v) : refBf16(v);
      ASSERT_EQ(code[i], want) << i;
      ASSERT_EQ(floatBits(e[i]), floatBits(v - decoded[i])) << i;
    }
    // Without a residual the code is the plain cast.
    std::vector<uint16_t> plain(n);
    ASSERT_PTRAIN_OK(ptrain_cast_encode_f32(g.data(), nullptr, n, dtype, plain.data()));
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(plain[i], dtype == PTRAIN_DTYPE_F16 ? refHalf(g[i]) : refBf16(g[i]));
  }
}

TEST(CastCodec, RejectsOtherTargetTypes) {
  float g = 1.0f;
  uint16_t code;
  EXPECT_EQ(ptrain_cast_encode_f32(&g, nullptr, 1, PTRAIN_DTYPE_F64, &code), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("f16 (3) or bf16 (4)"), std::string::npos);
}

} // namespace
