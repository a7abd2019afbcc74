//===- QuantCodecTest.cpp - Uniform quantization: instances and grids -----===//
//
// Every quantEncode<Bits> / quantDecode<Bits> instance against the generic
// kernel, bit for bit, over granularities, symmetry, error feedback and
// shapes whose blocks and rows do not fill whole bytes; the C entry point's
// block encoder on every ISA path against it, on values that reach the
// lanes' sign-of-zero rule and the register, lane and tail paths; the grid
// itself against an independent reference; non-finite groups (issue 24) on
// every path; errors through the C API.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"
#include "cpu/codecs/Cast.h"
#include "cpu/codecs/Quant.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

namespace {
using namespace ptrain::runtime;

struct Encoded {
  std::vector<uint8_t> packed;
  std::vector<float> scales, zeros, residual, decoded;
};

Encoded runInstance(const QuantLayout &l, const std::vector<float> &g, const std::vector<float> *e, bool generic) {
  Encoded out;
  out.packed.assign(l.packedBytes(), 0xAB);
  out.scales.assign(l.numScales(), -1.0f);
  out.zeros.assign(l.numScales(), -1.0f);
  std::vector<float> lo(l.numScales());
  std::vector<float> inv(l.numScales());
  if (e)
    out.residual = *e;
  float *res = e ? out.residual.data() : nullptr;
  float *zeros = l.symmetric ? nullptr : out.zeros.data();
  int64_t bad = -1;
  if (generic)
    bad = quantEncodeGeneric(l, g.data(), res, out.packed.data(), out.scales.data(), zeros, lo.data());
  else if (l.bits == 2)
    bad = quantEncode<2>(l, g.data(), res, out.packed.data(), out.scales.data(), zeros, lo.data(), inv.data());
  else if (l.bits == 4)
    bad = quantEncode<4>(l, g.data(), res, out.packed.data(), out.scales.data(), zeros, lo.data(), inv.data());
  else
    bad = quantEncode<8>(l, g.data(), res, out.packed.data(), out.scales.data(), zeros, lo.data(), inv.data());
  EXPECT_EQ(bad, -1);
  out.decoded.assign(l.numel, NAN);
  if (generic)
    quantDecodeGeneric(l, out.packed.data(), out.scales.data(), zeros, out.decoded.data());
  else if (l.bits == 2)
    quantDecode<2>(l, out.packed.data(), out.scales.data(), zeros, out.decoded.data());
  else if (l.bits == 4)
    quantDecode<4>(l, out.packed.data(), out.scales.data(), zeros, out.decoded.data());
  else
    quantDecode<8>(l, out.packed.data(), out.scales.data(), zeros, out.decoded.data());
  return out;
}

/// ptrain_quant_encode_f32 on the ISA path selected now, of g with residual e (error feedback when e is given),
/// outputs pre-filled as runInstance's; then ptrain_quant_decode_f32 of the codes.
Encoded encodeThroughCApi(const QuantLayout &l, const std::vector<float> &g, const std::vector<float> *e) {
  Encoded out;
  out.packed.assign(l.packedBytes(), 0xAB);
  out.scales.assign(l.numScales(), -1.0f);
  out.zeros.assign(l.numScales(), -1.0f);
  if (e)
    out.residual = *e;
  const int64_t rows = l.numel / l.cols;
  EXPECT_EQ(ptrain_quant_encode_f32(g.data(), e ? out.residual.data() : nullptr, rows, l.cols, l.bits, l.granularity,
                                    l.block, l.symmetric, out.packed.data(), out.scales.data(), out.zeros.data()),
            PTRAIN_OK)
      << ptrain_last_error();
  out.decoded.assign(l.numel, -1.0f);
  EXPECT_EQ(ptrain_quant_decode_f32(out.packed.data(), out.scales.data(), l.symmetric ? nullptr : out.zeros.data(),
                                    rows, l.cols, l.bits, l.granularity, l.block, l.symmetric, out.decoded.data()),
            PTRAIN_OK)
      << ptrain_last_error();
  return out;
}

void expectBitEqual(const std::vector<float> &a, const std::vector<float> &b, const char *what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(ptrain::runtime::floatBits(a[i]), ptrain::runtime::floatBits(b[i])) << what << "[" << i << "]";
}

TEST(QuantCodec, EveryInstanceMatchesTheGenericKernel) {
  struct Shape {
    int64_t rows, cols;
  };
  for (int bits : {2, 4, 8})
    for (int granularity : {PTRAIN_QUANT_TENSOR, PTRAIN_QUANT_CHANNEL, PTRAIN_QUANT_BLOCK})
      for (bool symmetric : {true, false})
        for (bool feedback : {false, true})
          for (Shape shape : {Shape{1, 1}, Shape{3, 5}, Shape{16, 64}, Shape{7, 129}})
            for (int64_t block : {int64_t(1), int64_t(3), int64_t(64)}) {
              if (granularity != PTRAIN_QUANT_BLOCK && block != 1)
                continue;
              QuantLayout l;
              l.numel = shape.rows * shape.cols;
              l.cols = shape.cols;
              l.bits = bits;
              l.granularity = granularity;
              l.block = granularity == PTRAIN_QUANT_BLOCK ? block : 0;
              l.symmetric = symmetric;
              std::vector<float> g = ptrain::testing::randomFloats(l.numel, 31 + bits, -3, 5);
              std::vector<float> e = ptrain::testing::randomFloats(l.numel, 32, -0.2f, 0.2f);
              SCOPED_TRACE(::testing::Message() << "bits " << bits << " granularity " << granularity << " symmetric "
                                                << symmetric << " feedback " << feedback << " shape " << shape.rows
                                                << "x" << shape.cols << " block " << block);
              const Encoded want = runInstance(l, g, feedback ? &e : nullptr, true);
              const Encoded got = runInstance(l, g, feedback ? &e : nullptr, false);
              ASSERT_EQ(got.packed, want.packed);
              expectBitEqual(got.scales, want.scales, "scales");
              if (!symmetric)
                expectBitEqual(got.zeros, want.zeros, "zeros");
              expectBitEqual(got.residual, want.residual, "residual");
              expectBitEqual(got.decoded, want.decoded, "decoded");
            }
}

/// The ISA paths this CPU runs, by the runtime's own test (ptrain_cpu_set_isa refuses the others).
std::vector<std::string> pathsThisCpuRuns() {
  std::vector<std::string> paths;
  for (const char *isa : {"baseline", "avx2", "avx512"})
    if (ptrain_cpu_set_isa(isa) == PTRAIN_OK)
      paths.push_back(isa);
  EXPECT_EQ(ptrain_cpu_set_isa(nullptr), PTRAIN_OK);
  return paths;
}

/// Values the block encoder's lanes must treat as the sequential loop does: blocks of +-0 only (the first
/// zero's sign is the min's and the max's, hence the zero point's bits), a min or max of 0 reached by -0 before
/// +0 and the reverse, tiny blocks with subnormal values, huge ones, ties to even, a block of one value; the rest
/// random.
std::vector<float> blockEdgeValues(int64_t n, unsigned seed) {
  std::vector<float> g = ptrain::testing::randomFloats(n, seed, -3, 5);
  for (int64_t b = 0; b * 64 < n; ++b) {
    const int64_t at = b * 64, len = std::min<int64_t>(64, n - at);
    switch (b % 9) {
    case 0: // +-0 only, -0 first
      for (int64_t i = 0; i < len; ++i)
        g[at + i] = (i * 7 + b) % 3 == 0 ? -0.0f : 0.0f;
      g[at] = -0.0f;
      break;
    case 1: // +-0 only, +0 first
      for (int64_t i = 0; i < len; ++i)
        g[at + i] = i % 2 ? -0.0f : 0.0f;
      break;
    case 2: // min 0: -0 (element 5, lane 5) before +0 (element 20 or 36, lane 4: the lanes' fold keeps it)
      for (int64_t i = 0; i < len; ++i)
        g[at + i] = std::fabs(g[at + i]) + 0.5f;
      g[at + std::min<int64_t>(len - 1, b % 2 ? 20 : 36)] = 0.0f;
      g[at + std::min<int64_t>(len - 1, 5)] = -0.0f;
      break;
    case 3: // max 0: +0 before -0, the rest negative
      for (int64_t i = 0; i < len; ++i)
        g[at + i] = -std::fabs(g[at + i]) - 0.5f;
      g[at + std::min<int64_t>(len - 1, 3)] = 0.0f;
      g[at + std::min<int64_t>(len - 1, 50)] = -0.0f;
      break;
    case 4: // tiny, with subnormal values (the scale stays normal: see SubnormalScalesAreCoded... below)
      for (int64_t i = 0; i < len; ++i)
        g[at + i] *= 1e-36f;
      g[at + len / 2] = 1e-40f;
      break;
    case 5: // huge
      for (int64_t i = 0; i < len; ++i)
        g[at + i] *= 1e37f;
      break;
    case 6: // k + 0.5 in [0, 15]: ties to even at 4 bits asymmetric (scale 1)
      for (int64_t i = 0; i < len; ++i)
        g[at + i] = static_cast<float>(i % 15) + 0.5f;
      g[at] = 0.0f, g[at + len - 1] = 15.0f;
      break;
    case 7: // one value
      for (int64_t i = 0; i < len; ++i)
        g[at + i] = 0.3f;
      break;
    default:
      break;
    }
  }
  return g;
}

TEST(QuantCodec, TheBlockEncoderOnEveryIsaPathMatchesTheGenericKernel) {
  const std::vector<std::string> paths = pathsThisCpuRuns();
  ASSERT_FALSE(paths.empty());
  // 64: whole blocks in registers, the last one partial (lanes + tail); 32 and 16: lanes; 8 and 24: lanes and
  // a tail of 8 (whole bytes at every width).
  for (int64_t block : {int64_t(64), int64_t(32), int64_t(16), int64_t(24), int64_t(8)})
    for (int bits : {2, 4, 8})
      for (bool symmetric : {true, false})
        for (bool feedback : {false, true}) {
          const int64_t rows = 23, cols = 64 - 4; // 1380 elements: 21 blocks of 64 and 36 over
          QuantLayout l;
          l.numel = rows * cols;
          l.cols = cols;
          l.bits = bits;
          l.granularity = PTRAIN_QUANT_BLOCK;
          l.block = block;
          l.symmetric = symmetric;
          const std::vector<float> g = blockEdgeValues(l.numel, 61 + bits);
          std::vector<float> e = ptrain::testing::randomFloats(l.numel, 62, -0.2f, 0.2f);
          for (int64_t i = 0; i < l.numel; ++i) // the edge blocks keep their values: -0 + g is g, +-0 included
            if ((i / 64) % 9 != 8)
              e[i] = -0.0f;
          SCOPED_TRACE(::testing::Message() << "block " << block << " bits " << bits << " symmetric " << symmetric
                                            << " feedback " << feedback);
          const Encoded want = runInstance(l, g, feedback ? &e : nullptr, true);
          for (const std::string &isa : paths) {
            SCOPED_TRACE(isa);
            ASSERT_EQ(ptrain_cpu_set_isa(isa.c_str()), PTRAIN_OK);
            const Encoded got = encodeThroughCApi(l, g, feedback ? &e : nullptr);
            ASSERT_EQ(got.packed, want.packed);
            expectBitEqual(got.scales, want.scales, "scales");
            if (!symmetric)
              expectBitEqual(got.zeros, want.zeros, "zeros");
            if (feedback)
              expectBitEqual(got.residual, want.residual, "residual");
          }
          ASSERT_EQ(ptrain_cpu_set_isa(nullptr), PTRAIN_OK);
        }
}

/// A one-row block layout `l` with error feedback on every ISA path in `paths` through the C entry points
/// (encode g with residual e, then decode): codes, scales, zero points, residual and decoded values bit for bit
/// those of `want` (the generic reference); then the next step's encode of `next` with that residual succeeds
/// (the residual is finite) and leaves a finite residual.
void expectEveryIsaPathEqualsTheReference(const std::vector<std::string> &paths, const QuantLayout &l,
                                          const std::vector<float> &g, const std::vector<float> &e, const Encoded &want,
                                          const std::vector<float> &next) {
  const int64_t n = l.numel;
  for (const std::string &isa : paths) {
    SCOPED_TRACE(isa);
    ASSERT_EQ(ptrain_cpu_set_isa(isa.c_str()), PTRAIN_OK);
    std::vector<uint8_t> packed(l.packedBytes(), 0xAB);
    std::vector<float> scales(l.numScales(), -1.0f), zeros(l.numScales(), -1.0f), residual = e;
    float *zp = l.symmetric ? nullptr : zeros.data();
    ASSERT_PTRAIN_OK(ptrain_quant_encode_f32(g.data(), residual.data(), 1, n, l.bits, PTRAIN_QUANT_BLOCK, l.block,
                                             l.symmetric, packed.data(), scales.data(), zp));
    ASSERT_EQ(packed, want.packed);
    expectBitEqual(scales, want.scales, "scales");
    if (!l.symmetric)
      expectBitEqual(zeros, want.zeros, "zeros");
    expectBitEqual(residual, want.residual, "residual");
    std::vector<float> decoded(n, NAN);
    ASSERT_PTRAIN_OK(ptrain_quant_decode_f32(packed.data(), scales.data(), zp, 1, n, l.bits, PTRAIN_QUANT_BLOCK,
                                             l.block, l.symmetric, decoded.data()));
    expectBitEqual(decoded, want.decoded, "decoded");
    ASSERT_PTRAIN_OK(ptrain_quant_encode_f32(next.data(), residual.data(), 1, n, l.bits, PTRAIN_QUANT_BLOCK, l.block,
                                             l.symmetric, packed.data(), scales.data(), zp));
    for (int64_t i = 0; i < n; ++i)
      ASSERT_TRUE(std::isfinite(residual[i])) << "next residual " << i;
  }
  ASSERT_EQ(ptrain_cpu_set_isa(nullptr), PTRAIN_OK);
}

/// A block of 64 values x in [-3, 5) spread over [lo, hi] (x -> lo (1 - t) + hi t, t = (x + 3) / 8, finite even
/// where hi - lo is not), with lo first and hi last.
void spreadBlock(float *x, float lo, float hi) {
  for (int64_t i = 0; i < 64; ++i) {
    const float t = (x[i] + 3.0f) / 8.0f;
    x[i] = std::min(hi, std::max(lo, lo * (1.0f - t) + hi * t));
  }
  x[0] = lo;
  x[63] = hi;
}

/// One row of n elements quantized in blocks.
QuantLayout oneRowOfBlocks(int64_t n, int bits, int64_t block, bool symmetric) {
  QuantLayout l;
  l.numel = n;
  l.cols = n;
  l.bits = bits;
  l.granularity = PTRAIN_QUANT_BLOCK;
  l.block = block;
  l.symmetric = symmetric;
  return l;
}

/// k units of the smallest subnormal, 2^-149 (exact for k < 2^24 or with trailing zeros).
float subnormalUnits(int64_t k) { return std::ldexp(static_cast<float>(k), -149); }

/// Blocks of 64 whose scale lies around 2^-128, where 1 / scale overflows fp32 (common/QuantScale.h): for the
/// code range D (2^bits - 1 asymmetric, 2^(bits-1) - 1 symmetric) a block spanning D * S has scale S (or its
/// rounding): S = 2^-128 (the largest scale whose reciprocal overflows), 2^-128 - 2^-149, 2^-128 + j 2^-149
/// (j = 1, 2, 3: coded, reciprocal just under FLT_MAX), 2^-149 (the smallest), 2^-126 (FLT_MIN, coded), and
/// random values times 1e-39 (a scale's division rounded). Each block has its extremes first and last, its
/// middle values in between: [0, span] (symmetric: [-span / 2, span]) and [-span, 0] (a negative zero point,
/// or the symmetric amax reached by a negative value). With error feedback the residual comes in as -0 (x = g).
std::vector<float> subnormalScaleBlocks(int bits, bool symmetric, unsigned seed) {
  const int64_t range = symmetric ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
  const int64_t units[] = {int64_t(1) << 21,       (int64_t(1) << 21) - 1,
                           (int64_t(1) << 21) + 1, (int64_t(1) << 21) + 2,
                           (int64_t(1) << 21) + 3, 1,
                           int64_t(1) << 23,       0};
  const int64_t kinds = sizeof(units) / sizeof(units[0]);
  std::vector<float> g = ptrain::testing::randomFloats(64 * kinds * 2, seed, -3, 5);
  for (int64_t b = 0; b < 2 * kinds; ++b) {
    float *x = g.data() + 64 * b;
    const int64_t k = units[b % kinds];
    if (k == 0) { // random values around 1e-39
      for (int64_t i = 0; i < 64; ++i)
        x[i] *= 1e-39f;
      continue;
    }
    const float span = static_cast<float>(range) * subnormalUnits(k); // rounded where not exact
    const bool negative = b >= kinds;
    const float lo = negative ? -span : (symmetric ? -0.5f * span : 0.0f), hi = negative ? 0.0f : span;
    spreadBlock(x, lo, hi);
  }
  return g;
}

// The subnormal-scale NaN (issue 26): a block whose scale is at most 2^-128 had 1 / scale = inf, its minimum's
// t = 0 * inf = NaN, a NaN residual (and the generic reference decoded the NaN's integer conversion). Such a
// block is now stored as a constant block (scale 0). On every ISA path the CPU runs and in the generic
// reference, for blocks around the threshold: the same bits, no NaN anywhere, a flushed block's scale 0 and
// every other scale's reciprocal finite, and the residual exactly v - decode(u) (error feedback loses
// nothing). The cases are checked to reach both sides of the threshold.
TEST(QuantCodec, SubnormalScalesAreCodedOrConstantWithoutNaN) {
  const std::vector<std::string> paths = pathsThisCpuRuns();
  ASSERT_FALSE(paths.empty());
  for (int bits : {2, 4, 8})
    for (bool symmetric : {true, false})
      for (int64_t block : {int64_t(64), int64_t(16), int64_t(24)}) {
        SCOPED_TRACE(::testing::Message() << "bits " << bits << " symmetric " << symmetric << " block " << block);
        const std::vector<float> g = subnormalScaleBlocks(bits, symmetric, 81 + bits);
        const int64_t n = static_cast<int64_t>(g.size());
        const QuantLayout l = oneRowOfBlocks(n, bits, block, symmetric);
        const std::vector<float> e(n, -0.0f);
        const Encoded want = runInstance(l, g, &e, true);
        // Soundness of the reference (the paths are compared with it below).
        int flushed = 0, codedBelowFltMin = 0, codedNearThreshold = 0;
        for (int64_t s = 0; s < l.numScales(); ++s) {
          const float lo = *std::min_element(g.begin() + s * block, g.begin() + std::min(n, (s + 1) * block));
          const float hi = *std::max_element(g.begin() + s * block, g.begin() + std::min(n, (s + 1) * block));
          const float scale = want.scales[s];
          if (scale == 0.0f && lo != hi)
            ++flushed;
          else
            ASSERT_LE(1.0f / scale, FLT_MAX) << "block " << s << ": a coded scale has a finite reciprocal";
          if (scale > 0.0f && scale < FLT_MIN)
            ++codedBelowFltMin;
          if (scale > subnormalUnits(int64_t(1) << 21) && scale <= subnormalUnits((int64_t(1) << 21) + 3))
            ++codedNearThreshold;
        }
        EXPECT_GT(flushed, 0);
        EXPECT_GT(codedBelowFltMin, 0);
        if (block == 64) {
          EXPECT_GT(codedNearThreshold, 0);
        }
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_FALSE(std::isnan(want.residual[i])) << "residual " << i;
          ASSERT_FALSE(std::isnan(want.decoded[i])) << "decoded " << i;
          ASSERT_EQ(floatBits(want.residual[i]), floatBits(g[i] - want.decoded[i])) << "e = v - decode(u) at " << i;
        }
        // Every ISA path: the reference's bits; the next step's encode of the same site.
        expectEveryIsaPathEqualsTheReference(paths, l, g, e, want, g);
      }
}

/// Blocks of 64 around the asymmetric range FLT_MAX (common/QuantScale.h, quantAsymmetricScale), extremes first
/// and last, the middle values spread between them: ranges that overflow fp32 ([-FLT_MAX, FLT_MAX],
/// [-2^127, 2^127] = 2^128, [-2^103, FLT_MAX] whose exact range 2^128 - 2^103 is the tie that rounds to inf,
/// random values in [-1.95e38, 3.25e38]) and ranges just inside it ([-(2^103 - 2^79), FLT_MAX] rounding down to
/// FLT_MAX, [0, FLT_MAX], [-FLT_MAX, 0], [-1e38, 1e38]).
std::vector<float> hugeRangeBlocks(unsigned seed) {
  const float below103 = std::nextafter(0x1p103f, 0.0f);
  const float bounds[][2] = {{-FLT_MAX, FLT_MAX},  {-0x1p127f, 0x1p127f}, {-0x1p103f, FLT_MAX}, {0.0f, 0.0f},
                             {-below103, FLT_MAX}, {0.0f, FLT_MAX},       {-FLT_MAX, 0.0f},     {-1e38f, 1e38f}};
  const int64_t kinds = sizeof(bounds) / sizeof(bounds[0]);
  std::vector<float> g = ptrain::testing::randomFloats(64 * kinds, seed, -3, 5);
  for (int64_t b = 0; b < kinds; ++b) {
    float *x = g.data() + 64 * b;
    const float lo = bounds[b][0], hi = bounds[b][1];
    if (lo == hi) { // random values whose range is about 5.2e38
      for (int64_t i = 0; i < 64; ++i)
        x[i] *= 6.5e37f;
      continue;
    }
    spreadBlock(x, lo, hi);
  }
  return g;
}

// The inf-scale NaN (issue 26): an asymmetric block whose max - min overflows fp32 had scale inf, every code 0
// and decode 0 * inf + min = NaN, a NaN residual. The range is now clamped to FLT_MAX. On every ISA path the CPU
// runs and in the generic reference, bits 2, 4 and 8, blocks of 64 (registers), 16 (lanes) and 24 (lanes and
// tail): the same bits; a clamped block's scale fl(FLT_MAX / (2^bits - 1)) with (2^bits - 1) s = FLT_MAX; every
// other block's scale the unclamped fl((max - min) / (2^bits - 1)) (ranges up to FLT_MAX unchanged); decode and
// residual finite, e = v - decode(u) exactly, within half a step (plus rounding) inside [min, min + FLT_MAX] and
// the top code above it; and the next step's encode of the residual alone (gradient 0) succeeds.
TEST(QuantCodec, AsymmetricRangesOverFltMaxAreClampedWithoutNaN) {
  const std::vector<std::string> paths = pathsThisCpuRuns();
  ASSERT_FALSE(paths.empty());
  for (int bits : {2, 4, 8})
    for (int64_t block : {int64_t(64), int64_t(16), int64_t(24)}) {
      SCOPED_TRACE(::testing::Message() << "bits " << bits << " block " << block);
      const std::vector<float> g = hugeRangeBlocks(91 + bits);
      const int64_t n = static_cast<int64_t>(g.size());
      const float levels = static_cast<float>((1 << bits) - 1);
      const QuantLayout l = oneRowOfBlocks(n, bits, block, false);
      const std::vector<float> e(n, -0.0f);
      const Encoded want = runInstance(l, g, &e, true);
      // Soundness of the reference (the paths are compared with it below).
      int clamped = 0, unclampedHuge = 0;
      for (int64_t s = 0; s < l.numScales(); ++s) {
        const int64_t begin = s * block, end = std::min(n, (s + 1) * block);
        const float lo = *std::min_element(g.begin() + begin, g.begin() + end);
        const float hi = *std::max_element(g.begin() + begin, g.begin() + end);
        const volatile float range = hi - lo; // volatile: the fp32 subtraction, as the encoder rounds it
        const float scale = want.scales[s];
        ASSERT_EQ(floatBits(want.zeros[s]), floatBits(lo)) << "block " << s;
        if (!(range <= FLT_MAX)) {
          ++clamped;
          ASSERT_EQ(floatBits(scale), floatBits(FLT_MAX / levels)) << "block " << s << ": clamped";
          ASSERT_EQ(floatBits(levels * scale), floatBits(FLT_MAX)) << "block " << s;
        } else {
          ASSERT_EQ(floatBits(scale), floatBits(range / levels)) << "block " << s << ": as before the clamp";
          if (range >= 1e38f)
            ++unclampedHuge;
        }
        for (int64_t i = begin; i < end; ++i) {
          ASSERT_TRUE(std::isfinite(want.decoded[i])) << "decoded " << i << " of " << g[i];
          ASSERT_TRUE(std::isfinite(want.residual[i])) << "residual " << i << " of " << g[i];
          ASSERT_EQ(floatBits(want.residual[i]), floatBits(g[i] - want.decoded[i])) << "e = v - decode(u) at " << i;
          const double top = static_cast<double>(lo) + static_cast<double>(levels) * scale;
          const double error = std::fabs(static_cast<double>(g[i]) - want.decoded[i]);
          if (g[i] <= top)
            ASSERT_LE(error, (0.5 + 0x1p-12) * scale) << "element " << i << " inside the covered range";
          else
            ASSERT_EQ(floatBits(want.decoded[i]), floatBits(levels * scale + lo)) << "element " << i << ": top code";
        }
      }
      EXPECT_GT(clamped, 0);
      EXPECT_GT(unclampedHuge, 0);
      // Every ISA path: the reference's bits; the next step with a zero gradient encodes the residual alone.
      expectEveryIsaPathEqualsTheReference(paths, l, g, e, want, std::vector<float>(n, 0.0f));
    }
}

TEST(QuantCodec, DecodedValuesLieOnTheGridWithinHalfAStep) {
  // An independent reference of the grid: per-channel symmetric 4-bit.
  const int64_t rows = 33, cols = 10;
  std::vector<float> g = ptrain::testing::randomFloats(rows * cols, 41, -2, 2);
  g[5] = 0.0f; // column 5 keeps a zero
  for (int64_t r = 0; r < rows; ++r)
    g[r * cols + 7] = 0.0f; // an all-zero column: scale 0, decodes to 0
  std::vector<uint8_t> packed((rows * cols * 4 + 7) / 8);
  std::vector<float> scales(cols), out(rows * cols);
  ASSERT_PTRAIN_OK(ptrain_quant_encode_f32(g.data(), nullptr, rows, cols, 4, PTRAIN_QUANT_CHANNEL, 0, 1, packed.data(),
                                           scales.data(), nullptr));
  ASSERT_PTRAIN_OK(ptrain_quant_decode_f32(packed.data(), scales.data(), nullptr, rows, cols, 4, PTRAIN_QUANT_CHANNEL,
                                           0, 1, out.data()));
  for (int64_t c = 0; c < cols; ++c) {
    float amax = 0.0f;
    for (int64_t r = 0; r < rows; ++r)
      amax = std::max(amax, std::fabs(g[r * cols + c]));
    ASSERT_EQ(scales[c], amax / 7.0f) << c;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = r * cols + c;
      const int code = (packed[i / 2] >> ((i % 2) * 4)) & 0xf;
      ASSERT_GE(code, 1);
      ASSERT_EQ(out[i], (static_cast<float>(code) - 8.0f) * scales[c]) << i;
      ASSERT_LE(std::fabs(out[i] - g[i]), scales[c] * 0.5f * (1 + 1e-5f)) << i;
    }
  }
  EXPECT_EQ(out[5], 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    ASSERT_EQ(out[r * cols + 7], 0.0f);
}

TEST(QuantCodec, AsymmetricBlocksHitTheirMinimumAndMaximum) {
  const int64_t n = 1000, block = 64;
  std::vector<float> g = ptrain::testing::randomFloats(n, 51, 1, 9);
  const int64_t blocks = (n + block - 1) / block;
  std::vector<uint8_t> packed(n);
  std::vector<float> scales(blocks), zeros(blocks), out(n);
  ASSERT_PTRAIN_OK(ptrain_quant_encode_f32(g.data(), nullptr, 1, n, 8, PTRAIN_QUANT_BLOCK, block, 0, packed.data(),
                                           scales.data(), zeros.data()));
  ASSERT_PTRAIN_OK(ptrain_quant_decode_f32(packed.data(), scales.data(), zeros.data(), 1, n, 8, PTRAIN_QUANT_BLOCK,
                                           block, 0, out.data()));
  for (int64_t b = 0; b < blocks; ++b) {
    float lo = 1e30f, hi = -1e30f;
    for (int64_t i = b * block; i < std::min(n, (b + 1) * block); ++i) {
      lo = std::min(lo, g[i]);
      hi = std::max(hi, g[i]);
      ASSERT_EQ(out[i], static_cast<float>(packed[i]) * scales[b] + zeros[b]);
    }
    ASSERT_EQ(zeros[b], lo);
    ASSERT_EQ(scales[b], (hi - lo) / 255.0f);
  }
}

TEST(QuantCodec, BadArgumentsAreErrors) {
  std::vector<float> g(8, 1.0f);
  std::vector<uint8_t> packed(8);
  float scales[8];
  EXPECT_EQ(
      ptrain_quant_encode_f32(g.data(), nullptr, 1, 8, 3, PTRAIN_QUANT_TENSOR, 0, 1, packed.data(), scales, nullptr),
      PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("bits must be 2, 4 or 8, got 3"), std::string::npos);
  EXPECT_EQ(
      ptrain_quant_encode_f32(g.data(), nullptr, 1, 8, 8, PTRAIN_QUANT_BLOCK, 0, 1, packed.data(), scales, nullptr),
      PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(
      ptrain_quant_encode_f32(g.data(), nullptr, 1, 8, 8, PTRAIN_QUANT_TENSOR, 0, 0, packed.data(), scales, nullptr),
      PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("out_zero_points"), std::string::npos);
}

/// The generic encoder on (g, e) with its return value (runInstance expects -1).
Encoded encodeGeneric(const QuantLayout &l, const std::vector<float> &g, const std::vector<float> *e, int64_t &bad) {
  Encoded out;
  out.packed.assign(l.packedBytes(), 0xAB);
  out.scales.assign(l.numScales(), -1.0f);
  out.zeros.assign(l.numScales(), -1.0f);
  std::vector<float> lo(l.numScales());
  if (e)
    out.residual = *e;
  float *zeros = l.symmetric ? nullptr : out.zeros.data();
  bad = quantEncodeGeneric(l, g.data(), e ? out.residual.data() : nullptr, out.packed.data(), out.scales.data(), zeros,
                           lo.data());
  out.decoded.assign(l.numel, -1.0f);
  quantDecodeGeneric(l, out.packed.data(), out.scales.data(), zeros, out.decoded.data());
  return out;
}

// Issue 24 (fp16's loss scaler): a group whose g + e holds an inf or NaN is a non-finite group, scale and zero
// point NaN (0x7fc00000), codes 0, residual NaN, so it decodes to NaN and the scaler's check after the reduction
// sees the overflow; every other group is coded exactly as the same call without the non-finite values codes it.
// Checked against that independent rule for every granularity (blocks in registers, lanes, tails, and blocks
// that are not whole bytes: the two-pass path), every width, symmetry and error feedback (a NaN reached through
// the residual too); every specialized instance and the C entry point on every ISA path give the generic
// kernel's bits and return the first non-finite element (the C entry point: PTRAIN_OK).
TEST(QuantCodec, NonFiniteGroupsDecodeToNaNAndLeaveTheOthersAsTheyWere) {
  const std::vector<std::string> paths = pathsThisCpuRuns();
  ASSERT_FALSE(paths.empty());
  const uint32_t kNaN = 0x7fc00000u;
  struct Case {
    int32_t granularity;
    int64_t block;
  };
  for (Case c : {Case{PTRAIN_QUANT_BLOCK, 64}, Case{PTRAIN_QUANT_BLOCK, 24}, Case{PTRAIN_QUANT_BLOCK, 8},
                 Case{PTRAIN_QUANT_BLOCK, 7}, Case{PTRAIN_QUANT_CHANNEL, 0}, Case{PTRAIN_QUANT_TENSOR, 0}})
    for (int bits : {2, 4, 8})
      for (bool symmetric : {true, false})
        for (bool feedback : {false, true}) {
          const int64_t rows = 23, cols = 60;
          QuantLayout l;
          l.numel = rows * cols;
          l.cols = cols;
          l.bits = bits;
          l.granularity = c.granularity;
          l.block = c.block;
          l.symmetric = symmetric;
          SCOPED_TRACE(::testing::Message() << "granularity " << c.granularity << " block " << c.block << " bits "
                                            << bits << " symmetric " << symmetric << " feedback " << feedback);
          const std::vector<float> clean = ptrain::testing::randomFloats(l.numel, 71 + bits, -2.0f, 3.0f);
          std::vector<float> e = ptrain::testing::randomFloats(l.numel, 72, -0.2f, 0.2f);
          std::vector<float> g = clean;
          g[100] = INFINITY;
          g[101] = -INFINITY;
          g[700] = NAN;
          g[1379] = INFINITY; // the last element (of a partial last block)
          if (feedback)
            e[1000] = INFINITY; // g + e is inf
          std::vector<bool> bad(l.numel, false);
          for (int64_t i : {100, 101, 700, 1379})
            bad[i] = true;
          if (feedback)
            bad[1000] = true;
          std::vector<bool> badGroup(l.numScales(), false);
          for (int64_t i = 0; i < l.numel; ++i)
            if (bad[i])
              badGroup[l.group(i)] = true;
          int64_t first = -2, cleanFirst = -2;
          const Encoded want = encodeGeneric(l, g, feedback ? &e : nullptr, first);
          ASSERT_EQ(first, 100);
          // The same call without the non-finite values: every finite group is coded from its own values only.
          std::vector<float> eClean = e;
          eClean[1000] = 0.0f;
          const Encoded ref = encodeGeneric(l, clean, feedback ? &eClean : nullptr, cleanFirst);
          ASSERT_EQ(cleanFirst, -1);
          const uint32_t mask = (1u << bits) - 1u;
          for (int64_t s = 0; s < l.numScales(); ++s) {
            if (badGroup[s]) {
              ASSERT_EQ(floatBits(want.scales[s]), kNaN) << "scale of non-finite group " << s;
              if (!symmetric) {
                ASSERT_EQ(floatBits(want.zeros[s]), kNaN) << "zero point of non-finite group " << s;
              }
            } else {
              ASSERT_EQ(floatBits(want.scales[s]), floatBits(ref.scales[s])) << "scale of group " << s;
              if (!symmetric) {
                ASSERT_EQ(floatBits(want.zeros[s]), floatBits(ref.zeros[s])) << "zero point of group " << s;
              }
            }
          }
          for (int64_t i = 0; i < l.numel; ++i) {
            const int64_t bit = i * bits;
            const uint32_t code = (want.packed[bit / 8] >> (bit % 8)) & mask;
            if (badGroup[l.group(i)]) {
              ASSERT_EQ(code, 0u) << "code " << i;
              ASSERT_TRUE(std::isnan(want.decoded[i])) << "decoded " << i;
              if (feedback) {
                ASSERT_EQ(floatBits(want.residual[i]), kNaN) << "residual " << i;
              }
            } else {
              ASSERT_EQ(code, (ref.packed[bit / 8] >> (bit % 8)) & mask) << "code " << i;
              ASSERT_EQ(floatBits(want.decoded[i]), floatBits(ref.decoded[i])) << "decoded " << i;
              if (feedback) {
                ASSERT_EQ(floatBits(want.residual[i]), floatBits(ref.residual[i])) << "residual " << i;
              }
            }
          }
          // A path's outputs against the generic kernel's, and its decode NaN exactly on the non-finite groups.
          auto expectGeneric = [&](const std::vector<uint8_t> &packed, const std::vector<float> &scales,
                                   const std::vector<float> &zeros, const std::vector<float> &residual,
                                   const std::vector<float> &decoded) {
            ASSERT_EQ(packed, want.packed);
            expectBitEqual(scales, want.scales, "scales");
            if (!symmetric)
              expectBitEqual(zeros, want.zeros, "zeros");
            if (feedback)
              expectBitEqual(residual, want.residual, "residual");
            for (int64_t i = 0; i < l.numel; ++i)
              ASSERT_EQ(std::isnan(decoded[i]), static_cast<bool>(badGroup[l.group(i)])) << "decoded " << i;
          };
          // Every specialized instance (the block encoder's lanes at each width are the ISA paths below).
          {
            std::vector<uint8_t> packed(l.packedBytes(), 0xAB);
            std::vector<float> scales(l.numScales(), -1.0f), zeros(l.numScales(), -1.0f), lo(l.numScales()),
                inv(l.numScales());
            std::vector<float> residual = e;
            float *res = feedback ? residual.data() : nullptr;
            float *z = symmetric ? nullptr : zeros.data();
            const int64_t at =
                bits == 2   ? quantEncode<2>(l, g.data(), res, packed.data(), scales.data(), z, lo.data(), inv.data())
                : bits == 4 ? quantEncode<4>(l, g.data(), res, packed.data(), scales.data(), z, lo.data(), inv.data())
                            : quantEncode<8>(l, g.data(), res, packed.data(), scales.data(), z, lo.data(), inv.data());
            ASSERT_EQ(at, 100);
            std::vector<float> decoded(l.numel);
            if (bits == 2)
              quantDecode<2>(l, packed.data(), scales.data(), z, decoded.data());
            else if (bits == 4)
              quantDecode<4>(l, packed.data(), scales.data(), z, decoded.data());
            else
              quantDecode<8>(l, packed.data(), scales.data(), z, decoded.data());
            ASSERT_NO_FATAL_FAILURE(expectGeneric(packed, scales, zeros, residual, decoded));
          }
          for (const std::string &isa : paths) {
            SCOPED_TRACE(isa);
            ASSERT_EQ(ptrain_cpu_set_isa(isa.c_str()), PTRAIN_OK);
            const Encoded got = encodeThroughCApi(l, g, feedback ? &e : nullptr);
            ASSERT_NO_FATAL_FAILURE(expectGeneric(got.packed, got.scales, got.zeros, got.residual, got.decoded));
          }
          ASSERT_EQ(ptrain_cpu_set_isa(nullptr), PTRAIN_OK);
        }
}

} // namespace
