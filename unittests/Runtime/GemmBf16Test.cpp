//===- GemmBf16Test.cpp - bf16 casts and the bf16 GEMM's two paths --------===//
//
// ptrain_cast_f32_bf16 / ptrain_cast_bf16_f32 on the rounding's edge cases
// and on every bf16 value; ptrain_gemm_bf16 against an fp64 reference within
// the bound of its k fused steps; the emulation of VDPBF16PS (cpu/Bf16Dot.h)
// against the instruction, one lane at a time on the edge cases and through
// the whole GEMM on random shapes (odd k, column and row tails, transposes,
// batches, tiny values that the instruction flushes). The instruction's side
// runs only where the CPU has AVX512-BF16; the emulation's always runs.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "cpu/Bf16Dot.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PTRAIN_TEST_HAVE_DPBF16 1
#endif

using namespace ptrain::testing;

namespace {

float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t toBf16(float f) {
  uint16_t b = 0;
  EXPECT_EQ(ptrain_cast_f32_bf16(&f, 1, &b), PTRAIN_OK) << ptrain_last_error();
  return b;
}

bool cpuHasDpbf16() {
#ifdef PTRAIN_TEST_HAVE_DPBF16
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

TEST(CastBf16, RoundsToNearestEven) {
  // bf16 keeps 8 significant bits: at 1 its step is 2^-7, so 1 + 2^-8 is a tie.
  EXPECT_EQ(toBf16(1.0f), 0x3f80);
  EXPECT_EQ(toBf16(1.0f + 0x1p-8f), 0x3f80);                // tie, down to the even 1
  EXPECT_EQ(toBf16(1.0f + 3 * 0x1p-8f), 0x3f82);            // tie between 0x3f81 and 0x3f82: the even one
  EXPECT_EQ(toBf16(floatOf(0x3f808001u)), 0x3f81);          // just above the tie: up
  EXPECT_EQ(toBf16(floatOf(0x3f807fffu)), 0x3f80);          // just below: down
  EXPECT_EQ(toBf16(-1.0f - 3 * 0x1p-8f), 0xbf82);           // symmetric in the sign
  EXPECT_EQ(toBf16(floatOf(0x7f7fffffu)), 0x7f80);          // FLT_MAX rounds up to inf
  EXPECT_EQ(toBf16(floatOf(0x7f7f7fffu)), 0x7f7f);          // the largest that does not
}

TEST(CastBf16, SpecialValues) {
  EXPECT_EQ(toBf16(0.0f), 0x0000);
  EXPECT_EQ(toBf16(-0.0f), 0x8000);
  EXPECT_EQ(toBf16(INFINITY), 0x7f80);
  EXPECT_EQ(toBf16(-INFINITY), 0xff80);
  // NaN stays NaN, also one whose payload lies only in the 16 bits that are cut (truncating would give inf).
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu}) {
    const uint16_t b = toBf16(floatOf(nan));
    EXPECT_EQ(b & 0x7f80, 0x7f80) << std::hex << nan;
    EXPECT_NE(b & 0x007f, 0) << std::hex << nan << " became inf";
    EXPECT_EQ(b & 0x8000, (nan >> 16) & 0x8000) << "sign of " << std::hex << nan;
  }
  // Denormals round like any value (bf16 has fp32's exponent range): no flush to zero.
  EXPECT_EQ(toBf16(floatOf(0x00000001u)), 0x0000);          // below half a bf16 denormal step
  EXPECT_EQ(toBf16(floatOf(0x00008000u)), 0x0000);          // a tie: to the even 0
  EXPECT_EQ(toBf16(floatOf(0x00018000u)), 0x0002);          // a tie: to the even 2
  EXPECT_EQ(toBf16(floatOf(0x00010001u)), 0x0001);
  EXPECT_EQ(toBf16(floatOf(0x807fffffu)), 0x8080);          // the largest denormal rounds up to -FLT_MIN
}

TEST(CastBf16, EveryBf16ValueRoundTrips) {
  std::vector<uint16_t> all(65536), back(65536);
  for (uint32_t i = 0; i < 65536; ++i)
    all[i] = static_cast<uint16_t>(i);
  std::vector<float> wide(65536);
  ASSERT_PTRAIN_OK(ptrain_cast_bf16_f32(all.data(), 65536, wide.data()));
  ASSERT_PTRAIN_OK(ptrain_cast_f32_bf16(wide.data(), 65536, back.data()));
  for (uint32_t i = 0; i < 65536; ++i) {
    ASSERT_EQ(bitsOf(wide[i]), i << 16) << "widening is exact";
    const bool nan = (i & 0x7f80) == 0x7f80 && (i & 0x7f) != 0;
    if (nan)
      ASSERT_EQ(back[i], i | 0x40) << "NaN comes back quiet, payload and sign kept";
    else
      ASSERT_EQ(back[i], i);
  }
}

TEST(CastBf16, Errors) {
  float x = 0.0f;
  uint16_t b = 0;
  EXPECT_EQ(ptrain_cast_f32_bf16(&x, -1, &b), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_cast_f32_bf16(nullptr, 1, &b), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_cast_bf16_f32(&b, 1, nullptr), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_cast_f32_bf16(nullptr, 0, nullptr), PTRAIN_OK);
}

// --- One lane of VDPBF16PS ---------------------------------------------------

/// acc + a1 * b1 + a0 * b0 as the instruction computes it (odd element first), on one lane; the bf16 inputs are
/// given as bits.
#ifdef PTRAIN_TEST_HAVE_DPBF16
__attribute__((target("avx512f,avx512vl,avx512bf16"))) float hardwarePair(float acc, uint16_t a1, uint16_t b1,
                                                                           uint16_t a0, uint16_t b0) {
  const __m128bh a = (__m128bh)_mm_set1_epi32(static_cast<int>(static_cast<uint32_t>(a1) << 16 | a0));
  const __m128bh b = (__m128bh)_mm_set1_epi32(static_cast<int>(static_cast<uint32_t>(b1) << 16 | b0));
  return _mm_cvtss_f32(_mm_dpbf16_ps(_mm_set1_ps(acc), a, b));
}
#endif

float emulatedPair(float acc, uint16_t a1, uint16_t b1, uint16_t a0, uint16_t b0) {
  using ptrain::runtime::bf16Daz;
  using ptrain::runtime::bf16DotStep;
  auto wide = [](uint16_t v) { return floatOf(static_cast<uint32_t>(bf16Daz(v)) << 16); };
  return bf16DotStep(bf16DotStep(acc, wide(a1), wide(b1)), wide(a0), wide(b0));
}

uint16_t bf(float f) { return static_cast<uint16_t>(bitsOf(f) >> 16); } // exact for these constants

struct PairCase {
  const char *what;
  float acc;
  float a1, b1, a0, b0;
  uint32_t want; // the instruction's bits, measured on an AMD EPYC (Zen 4)
};

const PairCase kPairCases[] = {
    {"one fused step per product: 1 + 2^-24 + 2^-24 ties down twice", 1.0f, 0x1p-12f, 0x1p-12f, 0x1p-12f, 0x1p-12f,
     0x3f800000u},
    {"the odd product first: 2^24 + 1 ties to 2^24, + 2 is exact (2 first: 2^24 + 4)", 0x1p24f, 1.0f, 1.0f, 2.0f,
     1.0f, 0x4b800001u},
    {"ftz: a product of 2^-130 is flushed", 0.0f, 0x1p-65f, 0x1p-65f, 0.0f, 0.0f, 0x00000000u},
    {"ftz keeps the sign (then -0 + (-0) * 0)", 0.0f, -0x1p-65f, 0x1p-65f, -0.0f, 0.0f, 0x80000000u},
    {"-0 + 0 * 0 is +0", 0.0f, -0x1p-65f, 0x1p-65f, 0.0f, 0.0f, 0x00000000u},
    {"fused: 2^-125 + 2^-130 is not flushed first", 0x1p-125f, 0x1p-65f, 0x1p-65f, 0.0f, 0.0f, 0x01040000u},
    {"tiny after rounding: 2^-126 - 0.75 * 2^-150 is flushed", FLT_MIN, -0x1.8p-76f, 0x1p-75f, 0.0f, 0.0f,
     0x00000000u},
    {"not tiny after rounding: 2^-126 - 2^-151 stays 2^-126", FLT_MIN, -0x1p-76f, 0x1p-75f, 0.0f, 0.0f, 0x00800000u},
    {"not tiny after rounding: 2^-126 - 2^-200 stays 2^-126", FLT_MIN, -0x1p-100f, 0x1p-100f, 0.0f, 0.0f,
     0x00800000u},
    {"fused: inf is not reached by 2^200 - 2^200", 0.0f, 0x1p100f, 0x1p100f, -0x1p100f, 0x1p100f, 0x7f800000u},
    {"-0 + (-0) * 0 + (-0) * 0 stays -0", -0.0f, -0.0f, 0.0f, -0.0f, 0.0f, 0x80000000u},
};

TEST(GemmBf16, EmulatedPairMatchesTheInstructionOnEdgeCases) {
  for (const PairCase &c : kPairCases)
    EXPECT_EQ(bitsOf(emulatedPair(c.acc, bf(c.a1), bf(c.b1), bf(c.a0), bf(c.b0))), c.want) << c.what;
  // DAZ: a bf16 denormal operand reads as zero (1e-39 * 2^100 would be about 1.3e-9).
  EXPECT_EQ(bitsOf(emulatedPair(1.0f, 0x0040, bf(0x1p100f), 0, 0)), 0x3f800000u);
#ifdef PTRAIN_TEST_HAVE_DPBF16
  if (!cpuHasDpbf16())
    GTEST_SKIP() << "this CPU has no AVX512-BF16: the instruction's side of the edge cases is not run (the emulation "
                    "was checked against the recorded bits)";
  for (const PairCase &c : kPairCases)
    EXPECT_EQ(bitsOf(hardwarePair(c.acc, bf(c.a1), bf(c.b1), bf(c.a0), bf(c.b0))), c.want) << c.what;
  EXPECT_EQ(bitsOf(hardwarePair(1.0f, 0x0040, bf(0x1p100f), 0, 0)), 0x3f800000u);
#endif
}

#ifdef PTRAIN_TEST_HAVE_DPBF16
TEST(GemmBf16, EmulatedPairMatchesTheInstructionOnRandomBits) {
  if (!cpuHasDpbf16())
    GTEST_SKIP() << "this CPU has no AVX512-BF16: the instruction's side is not run";
  std::mt19937 gen(24);
  // Random bit patterns over the whole range (NaNs aside), and exponents near 2^-63 so that products and sums land
  // on both sides of 2^-126, with denormal operands, zeros and ties.
  auto any = [&]() {
    for (;;) {
      const uint16_t v = static_cast<uint16_t>(gen());
      if ((v & 0x7f80) != 0x7f80)
        return v;
    }
  };
  auto tiny = [&]() {
    const uint32_t exponent = 60 + gen() % 8; // 2^-67 .. 2^-60
    return static_cast<uint16_t>((gen() & 1) << 15 | exponent << 7 | (gen() & 0x7f));
  };
  int mismatches = 0;
  for (int i = 0; i < 2000000 && mismatches < 10; ++i) {
    const bool small = i % 2;
    const uint16_t a1 = small ? tiny() : any(), b1 = small ? tiny() : any();
    const uint16_t a0 = small ? tiny() : any(), b0 = small ? tiny() : any();
    const float acc = small ? (i % 4 == 1 ? 0.0f : floatOf(static_cast<uint32_t>(tiny()) << 16 | (gen() & 0xffff)))
                            : floatOf(static_cast<uint32_t>(any()) << 16 | (gen() & 0xffff));
    if (std::fabs(acc) < FLT_MIN && acc != 0.0f)
      continue; // the GEMM's accumulator is never a denormal
    const float hw = hardwarePair(acc, a1, b1, a0, b0), emu = emulatedPair(acc, a1, b1, a0, b0);
    if (bitsOf(hw) != bitsOf(emu) && !(hw != hw && emu != emu)) {
      ++mismatches;
      ADD_FAILURE() << std::hexfloat << "acc " << acc << " a1 " << std::hex << a1 << " b1 " << b1 << " a0 " << a0
                    << " b0 " << b0 << ": instruction " << bitsOf(hw) << ", emulation " << bitsOf(emu);
    }
  }
}
#endif

// --- The GEMM ----------------------------------------------------------------

/// Random bf16 values: uniform in [-1, 1) times 2^scale, with a few zeros, -0s and bf16 denormals.
std::vector<uint16_t> randomBf16(size_t n, unsigned seed, int scale = 0) {
  std::vector<float> f = randomFloats(n, seed);
  std::vector<uint16_t> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = toBf16(std::ldexp(f[i], scale));
  for (size_t i = 3; i < n; i += 29)
    out[i] = (i % 3 == 0) ? 0x0000 : (i % 3 == 1) ? 0x8000 : 0x0011; // 0, -0, a denormal
  return out;
}

struct GemmShape {
  int32_t ta, tb;
  int64_t batch, m, n, k;
};

struct GemmRun {
  std::vector<uint16_t> a, b;
  std::vector<float> c0;
  int64_t strideA, strideB, strideC;
};

/// Operands for one shape; B is shared over the batch (stride 0) when the batch is 3.
GemmRun makeRun(const GemmShape &s, unsigned seed, int scale) {
  GemmRun r;
  r.strideA = s.m * s.k;
  r.strideB = s.batch == 3 ? 0 : s.k * s.n;
  r.strideC = s.m * s.n + 5;
  r.a = randomBf16(static_cast<size_t>(s.batch * r.strideA), seed, scale);
  r.b = randomBf16(static_cast<size_t>(s.batch == 3 ? r.strideB + s.k * s.n : s.batch * r.strideB), seed + 1, scale);
  r.c0 = randomFloats(static_cast<size_t>(s.batch * r.strideC), seed + 2);
  return r;
}

std::vector<float> runGemm(const GemmShape &s, const GemmRun &r, float alpha, float beta) {
  std::vector<float> c = r.c0;
  EXPECT_EQ(ptrain_gemm_bf16(s.ta, s.tb, s.batch, s.m, s.n, s.k, alpha, r.a.data(), r.strideA, r.b.data(),
                             r.strideB, beta, c.data(), r.strideC),
            PTRAIN_OK)
      << ptrain_last_error();
  return c;
}

float wide(uint16_t v) { return floatOf(static_cast<uint32_t>(v) << 16); }

TEST(GemmBf16, MatchesAnFp64ReferenceWithinTheBoundOfKFusedSteps) {
  // Each output is a chain of k fused multiply-adds rounded to fp32 (u = 2^-24), then alpha * acc and + beta * C:
  // |c - ref| <= gamma_{k+2} (|alpha| sum_l |a_l b_l| + |beta c0|), gamma_j = j u / (1 - j u) (Higham, "Accuracy
  // and Stability of Numerical Algorithms", 2nd ed., sec. 3.1), plus k * 2^-126 for what FTZ may drop (no operand
  // here makes a product that small) and the denormal operands read as zero, which the reference does too.
  const GemmShape shapes[] = {{0, 0, 1, 7, 9, 5}, {0, 1, 1, 64, 130, 129}, {1, 0, 2, 13, 65, 64},
                              {1, 1, 3, 6, 17, 1}, {0, 0, 1, 33, 200, 300}};
  const double u = 0x1p-24;
  for (const GemmShape &s : shapes)
    for (float alpha : {1.0f, -0.5f})
      for (float beta : {0.0f, 0.75f}) {
        const GemmRun r = makeRun(s, 100 + static_cast<unsigned>(s.k), 0);
        const std::vector<float> c = runGemm(s, r, alpha, beta);
        const double gamma = (s.k + 2) * u / (1 - (s.k + 2) * u);
        for (int64_t p = 0; p < s.batch; ++p)
          for (int64_t i = 0; i < s.m; ++i)
            for (int64_t j = 0; j < s.n; ++j) {
              double dot = 0, mag = 0;
              for (int64_t l = 0; l < s.k; ++l) {
                const uint16_t av = r.a[p * r.strideA + (s.ta ? l * s.m + i : i * s.k + l)];
                const uint16_t bv = r.b[p * r.strideB + (s.tb ? j * s.k + l : l * s.n + j)];
                const double prod = double(wide(ptrain::runtime::bf16Daz(av))) * wide(ptrain::runtime::bf16Daz(bv));
                dot += prod;
                mag += std::fabs(prod);
              }
              const double c0 = r.c0[p * r.strideC + i * s.n + j];
              const double ref = alpha * dot + (beta != 0.0f ? beta * c0 : 0.0);
              const double bound = gamma * (std::fabs(alpha) * mag + std::fabs(beta) * std::fabs(c0)) +
                                   s.k * double(FLT_MIN);
              const double got = c[p * r.strideC + i * s.n + j];
              ASSERT_LE(std::fabs(got - ref), bound) << "batch " << p << " (" << i << ", " << j << ") of " << s.m
                                                     << " x " << s.n << " x " << s.k << " ta " << s.ta << " tb "
                                                     << s.tb << " alpha " << alpha << " beta " << beta;
            }
        // Past each C entry: untouched.
        for (int64_t p = 0; p < s.batch; ++p)
          for (int64_t t = s.m * s.n; t < r.strideC; ++t)
            ASSERT_EQ(bitsOf(c[p * r.strideC + t]), bitsOf(r.c0[p * r.strideC + t]));
      }
}

/// Every shape of the bit-equality test: odd and even k (1 to 129), column tails of the 64-column panels and
/// row tails of the 6-row blocks, every transpose, batches with and without a shared B.
std::vector<GemmShape> equalityShapes() {
  std::vector<GemmShape> shapes;
  std::mt19937 gen(7);
  const int64_t ks[] = {1, 2, 3, 7, 16, 63, 129};
  const int64_t ns[] = {1, 15, 17, 64, 65, 130};
  for (int i = 0; i < 40; ++i) {
    const int32_t ta = i % 2, tb = (i / 2) % 2;
    const int64_t batch = i % 5 == 0 ? 3 : i % 7 == 0 ? 2 : 1;
    shapes.push_back({ta, tb, batch, 1 + static_cast<int64_t>(gen() % 14), ns[gen() % 6], ks[gen() % 7]});
  }
  return shapes;
}

/// The outputs' bits over every equality shape, scale (1: around 1; 2^-63: products near 2^-126, where FTZ acts),
/// alpha and beta, and a NaN and an inf operand, on the path ptrain_cpu_set_isa chose.
std::string allOutputs() {
  std::string bits;
  unsigned seed = 1;
  for (const GemmShape &s : equalityShapes())
    for (int scale : {0, -63}) {
      GemmRun r = makeRun(s, seed++, scale);
      if (seed % 5 == 0) {
        r.a[0] = 0x7fc1; // NaN
        r.b[r.b.size() - 1] = 0xff80; // -inf
      }
      for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{0.5f, -1.0f}}) {
        const std::vector<float> c = runGemm(s, r, alpha, beta);
        bits.append(reinterpret_cast<const char *>(c.data()), c.size() * sizeof(float));
      }
    }
  return bits;
}

TEST(GemmBf16, EveryPathGivesTheEmulationsBits) {
  // The emulation's clones (baseline, avx2, avx512) against each other: always.
  ASSERT_PTRAIN_OK(ptrain_cpu_set_isa("baseline"));
  const std::string emulation = allOutputs();
  std::string ran = "baseline";
  for (const char *path : {"avx2", "avx512", "avx512bf16"}) {
    if (ptrain_cpu_set_isa(path) != PTRAIN_OK) {
      std::printf("bf16 GEMM: this CPU does not run the %s path: not compared\n", path);
      continue;
    }
    EXPECT_TRUE(allOutputs() == emulation) << "the " << path << " path's bf16 GEMM differs from the emulation's bits";
    ran += std::string(", ") + path;
  }
  std::printf("bf16 GEMM paths compared bit for bit: %s\n", ran.c_str());
  if (!cpuHasDpbf16())
    std::printf("this CPU has no AVX512-BF16: the VDPBF16PS path was not run\n");
  ASSERT_PTRAIN_OK(ptrain_cpu_set_isa(nullptr));
}

TEST(GemmBf16, TinyAfterRoundingOnEveryPath) {
  // k = 2, one pair: the odd product 2^-63 * 2^-63 = 2^-126 first, then the even one. 2^-126 - 0.75 * 2^-150
  // rounds (24 bits, unbounded exponent) below 2^-126 and is flushed; 2^-126 - 2^-151 rounds to 2^-126. The
  // emulation's vectorized pass sees a result of exactly 2^-126 and redoes the pair with bf16DotStep.
  const uint16_t b[2] = {bf(0x1p-75f), bf(0x1p-63f)};
  const struct {
    float a0;
    uint32_t want;
  } cases[] = {{-0x1.8p-76f, 0x00000000u}, {-0x1p-76f, 0x00800000u}};
  for (const char *path : {"baseline", "avx2", "avx512", "avx512bf16"}) {
    if (ptrain_cpu_set_isa(path) != PTRAIN_OK)
      continue;
    for (const auto &t : cases) {
      const uint16_t a[2] = {bf(t.a0), bf(0x1p-63f)};
      float c = 1.0f;
      ASSERT_PTRAIN_OK(ptrain_gemm_bf16(0, 0, 1, 1, 1, 2, 1.0f, a, 0, b, 0, 0.0f, &c, 0));
      EXPECT_EQ(bitsOf(c), t.want) << path << ", a0 = " << t.a0;
    }
  }
  ASSERT_PTRAIN_OK(ptrain_cpu_set_isa(nullptr));
}

TEST(GemmBf16, NanResultsAreOneQuietNan) {
  const uint16_t a[2] = {0x7f80, 0x3f80}; // inf, 1
  const uint16_t b[2] = {0x0000, 0x3f80}; // 0, 1: inf * 0 is invalid
  float c = 1.0f;
  ASSERT_PTRAIN_OK(ptrain_gemm_bf16(0, 0, 1, 1, 1, 2, 1.0f, a, 0, b, 0, 0.0f, &c, 0));
  EXPECT_EQ(bitsOf(c), ptrain::runtime::kCanonicalNanBits);
}

TEST(GemmBf16, ZeroKScalesC) {
  float c[2] = {2.0f, -4.0f};
  ASSERT_PTRAIN_OK(ptrain_gemm_bf16(0, 0, 1, 1, 2, 0, 1.0f, nullptr, 0, nullptr, 0, 0.5f, c, 0));
  EXPECT_EQ(c[0], 1.0f);
  EXPECT_EQ(c[1], -2.0f);
}

TEST(GemmBf16, Errors) {
  uint16_t a = 0, b = 0;
  float c = 0.0f;
  EXPECT_EQ(ptrain_gemm_bf16(0, 0, 1, -1, 1, 1, 1.0f, &a, 0, &b, 0, 0.0f, &c, 0), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_gemm_bf16(0, 0, 1, 1, 1, 1, 1.0f, nullptr, 0, &b, 0, 0.0f, &c, 0), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ptrain_gemm_bf16(0, 0, 2, 1, 1, 1, 1.0f, &a, 0, &b, 0, 0.0f, &c, 0), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ptrain_last_error(), "ptrain_gemm_bf16: stride_c (0) must be >= m*n"), nullptr)
      << ptrain_last_error();
}

} // namespace
