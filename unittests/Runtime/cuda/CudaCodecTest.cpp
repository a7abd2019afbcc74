//===- CudaCodecTest.cpp - Every GPU codec kernel against the CPU's -------===//
//
// Each ptrain_cuda_* codec call against its CPU counterpart (libptrain_runtime)
// on the same inputs: bit for bit for casts, TAH-Quant, quantization (packed codes,
// scales, zero points, residuals, decode), top-k (values, indices,
// residuals, ties) and rand-k (values, counter, residuals); PowerSGD within
// 1e-4 of the largest CPU magnitude (cuBLAS sums in another order), its
// exact path bit for bit, an all-zero gradient without NaN; the codec telemetry
// (ptrain_cuda_codec_metrics_f32) within 1e-12 relative. Skipped (77) without
// a device.
//
//===----------------------------------------------------------------------===//

#include "CudaTest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

namespace {
using namespace ptrain::testing;

/// Values with many exact ties in magnitude (top-k's tie rule).
std::vector<float> tiedValues(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-40, 40);
  std::vector<float> v(n);
  for (float &x : v)
    x = static_cast<float>(dist(gen)) * 0.25f;
  return v;
}

//===----------------------------------------------------------------------===//
// Casts
//===----------------------------------------------------------------------===//

std::vector<float> castInputs() {
  std::vector<float> v = randomValues(4099, 1, 100.0f);
  // Binary16 corners: the largest finite, the overflow midpoint, subnormals,
  // their midpoints, signed zeros, inf, NaN; bfloat16 rounding ties.
  const float corners[] = {65504.0f,     65519.0f,      65520.0f,     70000.0f,    5.9604645e-8f, 2.9802322e-8f,
                           8.940697e-8f, 6.1035156e-5f, 6.097555e-5f, -0.0f,       0.0f,          INFINITY,
                           -INFINITY,    NAN,           1.0039062f,   1.01171875f, 3.3895314e38f, -1.0e-40f};
  v.insert(v.end(), std::begin(corners), std::end(corners));
  for (int i = 0; i < 2000; ++i) // every scale from 2^-30 to 2^30
    v.push_back(std::ldexp(1.0f + i / 2000.0f, i % 61 - 30));
  return v;
}

class CastCodec : public ::testing::TestWithParam<ptrain_dtype_t> {};

TEST_P(CastCodec, CodesResidualsAndDecodeEqualTheCpu) {
  const ptrain_dtype_t dtype = GetParam();
  const std::vector<float> g = castInputs();
  const int64_t n = static_cast<int64_t>(g.size());
  for (bool feedback : {false, true}) {
    std::vector<float> e = randomValues(g.size(), 2, 0.01f);
    for (size_t i = 0; i < e.size(); ++i)
      if (!std::isfinite(g[i]))
        e[i] = 0.0f;
    std::vector<uint16_t> cpuCode(n);
    std::vector<float> cpuE = e;
    ASSERT_EQ(ptrain_cast_encode_f32(g.data(), feedback ? cpuE.data() : nullptr, n, dtype, cpuCode.data()), PTRAIN_OK);
    DeviceArray<float> dg(g), de(e);
    DeviceArray<uint16_t> dcode(n);
    ASSERT_EQ(ptrain_cuda_cast_encode_f32(dg.get(), feedback ? de.get() : nullptr, n, dtype, dcode.get()), PTRAIN_OK)
        << ptrain_last_error();
    const std::vector<uint16_t> gpuCode = dcode.download();
    for (int64_t i = 0; i < n; ++i) {
      // The CPU's F16C path keeps a NaN's payload, the portable one (and the
      // GPU) gives 0x7e00: NaN codes only need to be NaN.
      const bool cpuNaN = (cpuCode[i] & 0x7fff) > (dtype == PTRAIN_DTYPE_F16 ? 0x7c00 : 0x7f80);
      const bool gpuNaN = (gpuCode[i] & 0x7fff) > (dtype == PTRAIN_DTYPE_F16 ? 0x7c00 : 0x7f80);
      if (cpuNaN || gpuNaN)
        EXPECT_TRUE(cpuNaN && gpuNaN) << "element " << i;
      else
        EXPECT_EQ(cpuCode[i], gpuCode[i]) << "element " << i << " = " << g[i];
    }
    if (feedback)
      expectSameBits(cpuE, de.download(), "residual");
    std::vector<float> cpuOut(n);
    ASSERT_EQ(ptrain_cast_decode_f32(gpuCode.data(), n, dtype, cpuOut.data()), PTRAIN_OK);
    DeviceArray<float> dout(n);
    ASSERT_EQ(ptrain_cuda_cast_decode_f32(dcode.get(), n, dtype, dout.get()), PTRAIN_OK) << ptrain_last_error();
    expectSameBits(cpuOut, dout.download(), "decoded");
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CastCodec, ::testing::Values(PTRAIN_DTYPE_F16, PTRAIN_DTYPE_BF16));

TEST(CastCodecErrors, UnknownDtypeIsRejected) {
  DeviceArray<float> g(4);
  DeviceArray<uint16_t> code(4);
  EXPECT_EQ(ptrain_cuda_cast_encode_f32(g.get(), nullptr, 4, PTRAIN_DTYPE_F64, code.get()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("dtype"), std::string::npos) << ptrain_last_error();
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

struct QuantCase {
  int64_t rows, cols;
  int32_t bits, granularity;
  int64_t block;
  bool symmetric, feedback;
  float magnitude = 1.0f; // g and e are multiplied by it
  bool nonFinite = false; // an inf and a NaN in g: non-finite groups (issue 24)
};

std::string describe(const QuantCase &c) {
  return std::to_string(c.rows) + "x" + std::to_string(c.cols) + " bits " + std::to_string(c.bits) + " granularity " +
         std::to_string(c.granularity) + " block " + std::to_string(c.block) + (c.symmetric ? " sym" : " asym") +
         (c.feedback ? " +ef" : "");
}

/// Decoded values with the same bits, or NaN on both: a non-finite group's decode (x86 keeps the operand's NaN
/// 0x7fc00000, CUDA returns its canonical NaN; common/QuantScale.h).
void expectSameDecode(const std::vector<float> &cpu, const std::vector<float> &gpu) {
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i)
    if (!(std::isnan(cpu[i]) && std::isnan(gpu[i]))) {
      ASSERT_EQ(std::memcmp(&cpu[i], &gpu[i], sizeof(float)), 0) << "decoded " << i;
    }
}

void checkQuant(const QuantCase &c) {
  SCOPED_TRACE(describe(c));
  const int64_t numel = c.rows * c.cols;
  const int64_t scales = c.granularity == PTRAIN_QUANT_TENSOR    ? 1
                         : c.granularity == PTRAIN_QUANT_CHANNEL ? c.cols
                                                                 : (numel + c.block - 1) / c.block;
  const int64_t bytes = (numel * c.bits + 7) / 8;
  std::vector<float> g = randomValues(numel, 7 + c.bits, c.magnitude);
  for (int64_t i = 0; i < numel; i += 97) // constant stretches: groups with s = 0
    g[i] = 0.5f * c.magnitude;
  if (c.nonFinite) {
    g[numel / 3] = INFINITY;
    g[numel / 2] = NAN;
  }
  const std::vector<float> e = randomValues(numel, 11, 0.05f * c.magnitude);
  std::vector<float> cpuE = e, cpuScales(scales), cpuZeros(scales);
  std::vector<uint8_t> cpuPacked(bytes);
  ASSERT_EQ(ptrain_quant_encode_f32(g.data(), c.feedback ? cpuE.data() : nullptr, c.rows, c.cols, c.bits, c.granularity,
                                    c.block, c.symmetric, cpuPacked.data(), cpuScales.data(),
                                    c.symmetric ? nullptr : cpuZeros.data()),
            PTRAIN_OK)
      << ptrain_last_error();
  DeviceArray<float> dg(g), de(e), dScales(scales), dZeros(scales);
  DeviceArray<uint8_t> dPacked(bytes);
  ASSERT_EQ(ptrain_cuda_quant_encode_f32(dg.get(), c.feedback ? de.get() : nullptr, c.rows, c.cols, c.bits,
                                         c.granularity, c.block, c.symmetric, dPacked.get(), dScales.get(),
                                         c.symmetric ? nullptr : dZeros.get()),
            PTRAIN_OK)
      << ptrain_last_error();
  expectEqualArrays(cpuPacked, dPacked.download(), "packed");
  expectSameBits(cpuScales, dScales.download(), "scales");
  if (!c.symmetric)
    expectSameBits(cpuZeros, dZeros.download(), "zero points");
  if (c.feedback)
    expectSameBits(cpuE, de.download(), "residual");
  std::vector<float> cpuOut(numel);
  ASSERT_EQ(ptrain_quant_decode_f32(cpuPacked.data(), cpuScales.data(), c.symmetric ? nullptr : cpuZeros.data(), c.rows,
                                    c.cols, c.bits, c.granularity, c.block, c.symmetric, cpuOut.data()),
            PTRAIN_OK);
  DeviceArray<float> dOut(numel);
  ASSERT_EQ(ptrain_cuda_quant_decode_f32(dPacked.get(), dScales.get(), c.symmetric ? nullptr : dZeros.get(), c.rows,
                                         c.cols, c.bits, c.granularity, c.block, c.symmetric, dOut.get()),
            PTRAIN_OK)
      << ptrain_last_error();
  expectSameDecode(cpuOut, dOut.download());
}

TEST(QuantCodec, EveryWidthGranularityAndSymmetryEqualsTheCpu) {
  for (int32_t bits : {2, 4, 8})
    for (bool symmetric : {true, false})
      for (bool feedback : {false, true}) {
        checkQuant({37, 129, bits, PTRAIN_QUANT_TENSOR, 0, symmetric, feedback});
        checkQuant({37, 129, bits, PTRAIN_QUANT_CHANNEL, 0, symmetric, feedback});
        checkQuant({1, 1000, bits, PTRAIN_QUANT_BLOCK, 64, symmetric, feedback});
        checkQuant({37, 129, bits, PTRAIN_QUANT_BLOCK, 7, symmetric, feedback});
        checkQuant({3, 5, bits, PTRAIN_QUANT_BLOCK, 1, symmetric, feedback});
      }
}

TEST(QuantCodec, LargeTensorsSpanManyChunksAndRowBlocks) {
  // Per tensor over more than one 1024-element chunk, per channel over more
  // than 65535 * 16 rows' worth of row blocks is too big for a test; 70000
  // rows still split into several row blocks.
  checkQuant({513, 1031, 4, PTRAIN_QUANT_TENSOR, 0, true, true});
  checkQuant({70000, 3, 8, PTRAIN_QUANT_CHANNEL, 0, false, true});
  checkQuant({1, 1 << 20, 2, PTRAIN_QUANT_BLOCK, 4096, true, true});
}

// The subnormal-scale NaN (issue 26): values around 1e-39 give scales at or below 2^-128, whose reciprocal
// overflows; both targets store such a group as constant (common/QuantScale.h), with the CPU's bits.
TEST(QuantCodec, SubnormalScalesEqualTheCpu) {
  for (int32_t bits : {2, 4, 8})
    for (bool symmetric : {true, false})
      for (bool feedback : {false, true}) {
        checkQuant({1, 1000, bits, PTRAIN_QUANT_BLOCK, 64, symmetric, feedback, 1e-39f});
        checkQuant({37, 129, bits, PTRAIN_QUANT_BLOCK, 7, symmetric, feedback, 3e-39f});
        checkQuant({37, 129, bits, PTRAIN_QUANT_CHANNEL, 0, symmetric, feedback, 1e-39f});
      }
}

// The inf-scale NaN (issue 26): normal values of deviation 8e37 (|x| up to 3.39e38, finite) give asymmetric
// ranges over FLT_MAX (per tensor, and in 8 to 15 of the 16 blocks of 64 at these seeds); both targets clamp the
// range to FLT_MAX (common/QuantScale.h, quantAsymmetricScale), with the CPU's bits.
TEST(QuantCodec, RangesOverFltMaxEqualTheCpu) {
  for (int32_t bits : {2, 4, 8})
    for (bool feedback : {false, true}) {
      checkQuant({1, 1000, bits, PTRAIN_QUANT_BLOCK, 64, false, feedback, 8e37f});
      checkQuant({1, 1000, bits, PTRAIN_QUANT_TENSOR, 0, false, feedback, 8e37f});
    }
}

// TAH-Quant (cuda/TahQuant.cu): codes, flags, scales, zero points, residuals and the decode equal the CPU's. The
// entropies are distinct well beyond an ulp on random data, so the selection agrees. With an inf and a NaN
// (issue 24): the non-finite tiles (entropy 0, NaN scale and zero point, codes 0, residual NaN) equal the CPU's.
TEST(TahQuantCodec, CodesFlagsAndDecodeEqualTheCpu) {
  for (int64_t tile : {8, 64})
    for (bool feedback : {false, true})
      for (bool nonFinite : {false, true}) {
        SCOPED_TRACE("tile " + std::to_string(tile) + (feedback ? " +ef" : "") + (nonFinite ? " inf/NaN" : ""));
        const int64_t numel = 96 * 128, tiles = numel / tile, high = (tiles * 8 + 5) / 10;
        std::vector<float> g = randomValues(numel, 5);
        for (int64_t t = 0; t < tiles; t += 3) // outlier tiles: rotated
          g[t * tile + t % tile] = 30.0f;
        if (nonFinite) {
          g[5 * tile + 1] = INFINITY;
          g[17 * tile] = NAN;
        }
        const std::vector<float> e = randomValues(numel, 6, 0.05f);
        const int64_t bytes = tile * (4 * high + 3 * (tiles - high)) / 8;
        std::vector<float> cpuE = e, cpuScales(tiles), cpuZeros(tiles), cpuOut(numel);
        std::vector<uint8_t> cpuPacked(bytes), cpuFlags(tiles);
        ASSERT_EQ(ptrain_tahquant_encode_f32(g.data(), feedback ? cpuE.data() : nullptr, numel, tile, 3, 4, high,
                                             cpuPacked.data(), cpuScales.data(), cpuZeros.data(), cpuFlags.data()),
                  PTRAIN_OK)
            << ptrain_last_error();
        DeviceArray<float> dg(g), de(e), dScales(tiles), dZeros(tiles), dOut(numel);
        DeviceArray<uint8_t> dPacked(bytes), dFlags(tiles);
        ASSERT_EQ(ptrain_cuda_tahquant_encode_f32(dg.get(), feedback ? de.get() : nullptr, numel, tile, 3, 4, high,
                                                  dPacked.get(), dScales.get(), dZeros.get(), dFlags.get()),
                  PTRAIN_OK)
            << ptrain_last_error();
        expectEqualArrays(cpuFlags, dFlags.download(), "flags");
        expectEqualArrays(cpuPacked, dPacked.download(), "packed");
        expectSameBits(cpuScales, dScales.download(), "scales");
        expectSameBits(cpuZeros, dZeros.download(), "zero points");
        if (feedback)
          expectSameBits(cpuE, de.download(), "residual");
        ASSERT_EQ(ptrain_tahquant_decode_f32(cpuPacked.data(), cpuScales.data(), cpuZeros.data(), cpuFlags.data(),
                                             numel, tile, 3, 4, high, cpuOut.data()),
                  PTRAIN_OK);
        ASSERT_EQ(ptrain_cuda_tahquant_decode_f32(dPacked.get(), dScales.get(), dZeros.get(), dFlags.get(), numel, tile,
                                                  3, 4, high, dOut.get()),
                  PTRAIN_OK)
            << ptrain_last_error();
        expectSameDecode(cpuOut, dOut.download());
      }
}

// Issue 24: groups with an inf or NaN are non-finite groups (NaN scale and zero point, codes 0, residual NaN)
// with the CPU's bits, the others coded as the CPU codes them; not an error.
TEST(QuantCodec, NonFiniteGroupsEqualTheCpu) {
  for (int32_t bits : {2, 4, 8})
    for (bool symmetric : {true, false})
      for (bool feedback : {false, true}) {
        checkQuant({37, 129, bits, PTRAIN_QUANT_TENSOR, 0, symmetric, feedback, 1.0f, true});
        checkQuant({37, 129, bits, PTRAIN_QUANT_CHANNEL, 0, symmetric, feedback, 1.0f, true});
        checkQuant({1, 1000, bits, PTRAIN_QUANT_BLOCK, 64, symmetric, feedback, 1.0f, true});
        checkQuant({37, 129, bits, PTRAIN_QUANT_BLOCK, 7, symmetric, feedback, 1.0f, true});
      }
}

//===----------------------------------------------------------------------===//
// Top-k
//===----------------------------------------------------------------------===//

void checkTopk(const std::vector<float> &g, int64_t k, bool feedback) {
  SCOPED_TRACE("n " + std::to_string(g.size()) + " k " + std::to_string(k) + (feedback ? " +ef" : ""));
  const int64_t n = static_cast<int64_t>(g.size());
  const std::vector<float> e = feedback ? tiedValues(g.size(), 5) : std::vector<float>(g.size(), 0.0f);
  std::vector<float> cpuE = e, cpuValues(k);
  std::vector<int32_t> cpuIdx(k);
  ASSERT_EQ(ptrain_topk_encode_f32(g.data(), feedback ? cpuE.data() : nullptr, n, k, cpuValues.data(), cpuIdx.data()),
            PTRAIN_OK);
  DeviceArray<float> dg(g), de(e), dValues(k);
  DeviceArray<int32_t> dIdx(k);
  ASSERT_EQ(ptrain_cuda_topk_encode_f32(dg.get(), feedback ? de.get() : nullptr, n, k, dValues.get(), dIdx.get()),
            PTRAIN_OK)
      << ptrain_last_error();
  expectEqualArrays(cpuIdx, dIdx.download(), "indices");
  expectSameBits(cpuValues, dValues.download(), "values");
  if (feedback)
    expectSameBits(cpuE, de.download(), "residual");
  std::vector<float> cpuOut(n);
  ASSERT_EQ(ptrain_topk_decode_f32(cpuValues.data(), cpuIdx.data(), k, n, cpuOut.data()), PTRAIN_OK);
  DeviceArray<float> dOut(n);
  ASSERT_EQ(ptrain_cuda_topk_decode_f32(dValues.get(), dIdx.get(), k, n, dOut.get()), PTRAIN_OK) << ptrain_last_error();
  expectSameBits(cpuOut, dOut.download(), "decoded");
}

TEST(TopKCodec, SelectionTiesAndResidualsEqualTheCpu) {
  const std::vector<float> tied = tiedValues(10007, 9);
  for (int64_t k : {1, 17, 1000, 5003, 10006, 10007})
    for (bool feedback : {false, true})
      checkTopk(tied, k, feedback);
  checkTopk(randomValues(1 << 20, 4), 1 << 10, true);
  std::vector<float> special = randomValues(300, 6);
  special[10] = NAN;
  special[20] = INFINITY;
  special[30] = -INFINITY;
  special[40] = -0.0f;
  checkTopk(special, 3, false);
}

TEST(TopKCodec, DecodeRejectsAnIndexOutOfRange) {
  const std::vector<float> values = {1.0f, 2.0f, 3.0f};
  const std::vector<int32_t> idx = {0, 9, 4};
  DeviceArray<float> dv(values), out(8);
  DeviceArray<int32_t> di(idx);
  EXPECT_EQ(ptrain_cuda_topk_decode_f32(dv.get(), di.get(), 3, 8, out.get()), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("indices[1] = 9"), std::string::npos) << ptrain_last_error();
}

//===----------------------------------------------------------------------===//
// Rand-k
//===----------------------------------------------------------------------===//

TEST(RandKCodec, ValuesCounterAndResidualEqualTheCpu) {
  const int64_t n = 100003;
  const std::vector<float> g = randomValues(n, 12);
  for (int64_t k : {int64_t{1}, int64_t{1000}, n})
    for (bool feedback : {false, true}) {
      SCOPED_TRACE("k " + std::to_string(k) + (feedback ? " +ef" : ""));
      const std::vector<float> e = randomValues(n, 13, 0.1f);
      std::vector<float> cpuE = e, cpuValues(k);
      int64_t cpuCounter = 41, gpuCounter = 41;
      ASSERT_EQ(ptrain_randk_encode_f32(g.data(), feedback ? cpuE.data() : nullptr, n, k, 0x5EEDull, &cpuCounter,
                                        cpuValues.data()),
                PTRAIN_OK);
      DeviceArray<float> dg(g), de(e), dValues(k);
      ASSERT_EQ(ptrain_cuda_randk_encode_f32(dg.get(), feedback ? de.get() : nullptr, n, k, 0x5EEDull, &gpuCounter,
                                             dValues.get()),
                PTRAIN_OK)
          << ptrain_last_error();
      EXPECT_EQ(cpuCounter, gpuCounter);
      expectSameBits(cpuValues, dValues.download(), "values");
      if (feedback)
        expectSameBits(cpuE, de.download(), "residual");
      std::vector<float> cpuOut(n);
      int64_t cpuDec = 41, gpuDec = 41;
      ASSERT_EQ(ptrain_randk_decode_f32(cpuValues.data(), n, k, 0x5EEDull, &cpuDec, cpuOut.data()), PTRAIN_OK);
      DeviceArray<float> dOut(n);
      ASSERT_EQ(ptrain_cuda_randk_decode_f32(dValues.get(), n, k, 0x5EEDull, &gpuDec, dOut.get()), PTRAIN_OK)
          << ptrain_last_error();
      EXPECT_EQ(cpuDec, gpuDec);
      expectSameBits(cpuOut, dOut.download(), "decoded");
    }
}

//===----------------------------------------------------------------------===//
// PowerSGD
//===----------------------------------------------------------------------===//

/// |cpu - gpu| <= tol * max |cpu| element-wise, and no NaN.
void expectClose(const std::vector<float> &cpu, const std::vector<float> &gpu, double tol, const char *what) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  double scale = 0.0;
  for (float x : cpu)
    scale = std::fmax(scale, std::fabs(x));
  int shown = 0;
  for (size_t i = 0; i < cpu.size() && shown < 5; ++i)
    if (!(std::fabs(static_cast<double>(cpu[i]) - gpu[i]) <= tol * scale)) {
      ADD_FAILURE() << what << "[" << i << "]: cpu " << cpu[i] << ", gpu " << gpu[i] << " (scale " << scale << ")";
      ++shown;
    }
}

constexpr double kPowerSgdTolerance = 1e-4;

TEST(PowerSGDCodec, Rank2On64x64WithWarmStartMatchesTheCpu) {
  const int64_t batch = 3, n = 64, m = 64, r = 2;
  const std::vector<float> g = randomValues(batch * n * m, 21);
  const std::vector<float> e = randomValues(batch * n * m, 22, 0.1f);
  // A warm-start Q with one all-zero column in batch entry 1 (redrawn from the seed).
  std::vector<float> q0 = randomValues(batch * m * r, 23);
  for (int64_t i = 0; i < m; ++i)
    q0[(1 * m + i) * r + 1] = 0.0f;
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::vector<float> cpuE = e, cpuQ = q0, cpuP(batch * n * r), cpuOutQ(batch * m * r);
    ASSERT_EQ(
        ptrain_powersgd_encode_f32(g.data(), cpuE.data(), cpuQ.data(), batch, n, m, r, 99, cpuP.data(), cpuOutQ.data()),
        PTRAIN_OK);
    DeviceArray<float> dg(g), de(e), dq(q0), dp(batch * n * r), doq(batch * m * r);
    ASSERT_EQ(ptrain_cuda_powersgd_encode_f32(dg.get(), de.get(), dq.get(), batch, n, m, r, 99, dp.get(), doq.get()),
              PTRAIN_OK)
        << ptrain_last_error();
    expectClose(cpuP, dp.download(), kPowerSgdTolerance, "P");
    expectClose(cpuOutQ, doq.download(), kPowerSgdTolerance, "Q");
    expectClose(cpuQ, dq.download(), kPowerSgdTolerance, "warm-start Q");
    expectClose(cpuE, de.download(), kPowerSgdTolerance, "residual");
    std::vector<float> cpuOut(batch * n * m);
    ASSERT_EQ(ptrain_powersgd_decode_f32(cpuP.data(), cpuOutQ.data(), batch, n, m, r, cpuOut.data()), PTRAIN_OK);
    DeviceArray<float> dOut(batch * n * m);
    ASSERT_EQ(ptrain_cuda_powersgd_decode_f32(dp.get(), doq.get(), batch, n, m, r, dOut.get()), PTRAIN_OK);
    expectClose(cpuOut, dOut.download(), kPowerSgdTolerance, "decoded");
    q0 = cpuQ; // the next step starts from the updated warm start
  }
}

TEST(PowerSGDCodec, WithoutStateTheSeedDrawsTheCpusQ) {
  const int64_t n = 96, m = 40, r = 4;
  const std::vector<float> g = randomValues(n * m, 31);
  std::vector<float> cpuP(n * r), cpuQ(m * r);
  ASSERT_EQ(ptrain_powersgd_encode_f32(g.data(), nullptr, nullptr, 1, n, m, r, 7, cpuP.data(), cpuQ.data()), PTRAIN_OK);
  DeviceArray<float> dg(g), dp(n * r), dq(m * r);
  ASSERT_EQ(ptrain_cuda_powersgd_encode_f32(dg.get(), nullptr, nullptr, 1, n, m, r, 7, dp.get(), dq.get()), PTRAIN_OK)
      << ptrain_last_error();
  expectClose(cpuP, dp.download(), kPowerSgdTolerance, "P");
  expectClose(cpuQ, dq.download(), kPowerSgdTolerance, "Q");
}

TEST(PowerSGDCodec, OneDimensionalTensorTakesTheExactPath) {
  const int64_t m = 1000;
  const std::vector<float> g = randomValues(m, 41), e = randomValues(m, 42, 0.1f);
  std::vector<float> cpuE = e, cpuP(m), cpuQ(m);
  ASSERT_EQ(ptrain_powersgd_encode_f32(g.data(), cpuE.data(), nullptr, 1, 1, m, 1, 3, cpuP.data(), cpuQ.data()),
            PTRAIN_OK);
  DeviceArray<float> dg(g), de(e), dp(m), dq(m), dOut(m);
  ASSERT_EQ(ptrain_cuda_powersgd_encode_f32(dg.get(), de.get(), nullptr, 1, 1, m, 1, 3, dp.get(), dq.get()), PTRAIN_OK)
      << ptrain_last_error();
  expectSameBits(cpuP, dp.download(), "P");
  expectSameBits(cpuQ, dq.download(), "Q");
  expectSameBits(cpuE, de.download(), "residual (zero)");
  ASSERT_EQ(ptrain_cuda_powersgd_decode_f32(dp.get(), dq.get(), 1, 1, m, 1, dOut.get()), PTRAIN_OK);
  std::vector<float> v(m);
  for (int64_t i = 0; i < m; ++i)
    v[i] = g[i] + e[i];
  expectSameBits(v, dOut.download(), "decoded = g + e exactly");
}

TEST(PowerSGDCodec, AllZeroGradientGivesZerosNotNaN) {
  const int64_t n = 32, m = 48, r = 3;
  DeviceArray<float> dg(std::vector<float>(n * m, 0.0f)), de(std::vector<float>(n * m, 0.0f));
  DeviceArray<float> dq(std::vector<float>(m * r, 0.0f)), dp(n * r), doq(m * r), dOut(n * m);
  ASSERT_EQ(ptrain_cuda_powersgd_encode_f32(dg.get(), de.get(), dq.get(), 1, n, m, r, 5, dp.get(), doq.get()),
            PTRAIN_OK)
      << ptrain_last_error();
  ASSERT_EQ(ptrain_cuda_powersgd_decode_f32(dp.get(), doq.get(), 1, n, m, r, dOut.get()), PTRAIN_OK);
  for (const auto &[what, values] : {std::pair{"P", dp.download()}, std::pair{"Q", doq.download()},
                                     std::pair{"decoded", dOut.download()}, std::pair{"residual", de.download()}})
    for (float x : values)
      ASSERT_EQ(x, 0.0f) << what;
}

TEST(PowerSGDCodec, Rank4On4x3IsRejected) {
  DeviceArray<float> g(12), p(16), q(12);
  EXPECT_EQ(ptrain_cuda_powersgd_encode_f32(g.get(), nullptr, nullptr, 1, 4, 3, 4, 1, p.get(), q.get()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("rank 4 must be in [1, min(n, m) = 3]"), std::string::npos)
      << ptrain_last_error();
}

//===----------------------------------------------------------------------===//
// Streams
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Codec telemetry
//===----------------------------------------------------------------------===//

/// ptrain_cuda_codec_metrics_f32 against ptrain_codec_metrics_f32 on the same buffers: the metrics within 1e-12
/// relative (the same fp64 sums in another order), has_lep_cos equal, the copy of g bit for bit (also in place
/// over previous_g, the generated step's use).
void checkMetrics(int64_t n, bool feedback, bool previous) {
  SCOPED_TRACE("n " + std::to_string(n) + (feedback ? " +ef" : " decoded") + (previous ? " +lep" : ""));
  const size_t len = static_cast<size_t>(n);
  const std::vector<float> g = randomValues(len, 11), e = randomValues(len, 12, 0.1f),
                           eNew = randomValues(len, 13, 0.05f), dec = randomValues(len, 14),
                           prev = randomValues(len, 15);
  const float *res = feedback ? e.data() : nullptr;
  std::vector<float> cpuCopy = prev;
  ptrain_codec_metrics_t cpu{};
  ASSERT_EQ(ptrain_codec_metrics_f32(g.data(), res, feedback ? eNew.data() : nullptr, feedback ? nullptr : dec.data(),
                                     previous ? cpuCopy.data() : nullptr, n, cpuCopy.data(), &cpu),
            PTRAIN_OK);
  DeviceArray<float> dg(g), de(e), deNew(eNew), ddec(dec), dprev(prev);
  ptrain_codec_metrics_t gpu{};
  ASSERT_EQ(ptrain_cuda_codec_metrics_f32(dg.get(), feedback ? de.get() : nullptr, feedback ? deNew.get() : nullptr,
                                          feedback ? nullptr : ddec.get(), previous ? dprev.get() : nullptr, n,
                                          dprev.get(), &gpu),
            PTRAIN_OK)
      << ptrain_last_error();
  auto close = [](double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b)); };
  EXPECT_TRUE(close(gpu.input_norm, cpu.input_norm)) << gpu.input_norm << " vs " << cpu.input_norm;
  EXPECT_TRUE(close(gpu.error, cpu.error)) << gpu.error << " vs " << cpu.error;
  EXPECT_TRUE(close(gpu.residual_norm, cpu.residual_norm)) << gpu.residual_norm << " vs " << cpu.residual_norm;
  EXPECT_EQ(gpu.has_lep_cos, cpu.has_lep_cos);
  EXPECT_TRUE(close(gpu.lep_cos, cpu.lep_cos)) << gpu.lep_cos << " vs " << cpu.lep_cos;
  if (n > 0) {
    EXPECT_GT(cpu.input_norm, 0.0);
    EXPECT_EQ(cpu.has_lep_cos, feedback && previous ? 1 : 0);
  }
  expectSameBits(cpuCopy, dprev.download(), "the copy of g");
}

TEST(CodecMetrics, ErrorResidualAndLepCosineMatchTheCpu) {
  // One block, a partial block, many blocks (the grid-stride loop past 256 blocks of 256 threads).
  for (int64_t n : {int64_t{1}, int64_t{300}, int64_t{65536}, int64_t{300001}})
    for (bool feedback : {false, true})
      for (bool previous : {false, true})
        checkMetrics(n, feedback, previous);
}

TEST(CodecMetrics, EmptyAndZeroInputsGiveZerosNotNaN) {
  checkMetrics(0, true, true);
  const std::vector<float> zeros(1000, 0.0f);
  DeviceArray<float> dz(zeros), de(zeros), deNew(zeros), dprev(zeros);
  ptrain_codec_metrics_t m{};
  ASSERT_EQ(ptrain_cuda_codec_metrics_f32(dz.get(), de.get(), deNew.get(), nullptr, dprev.get(), 1000, nullptr, &m),
            PTRAIN_OK)
      << ptrain_last_error();
  EXPECT_EQ(m.input_norm, 0.0);
  EXPECT_EQ(m.error, 0.0);
  EXPECT_EQ(m.residual_norm, 0.0);
  EXPECT_EQ(m.has_lep_cos, 0);
}

TEST(CudaStreams, CallsRunOnTheCurrentStreamInOrder) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(ptrain_cuda_set_stream(stream), PTRAIN_OK);
  const int64_t n = 1 << 16;
  const std::vector<float> g = randomValues(n, 51);
  DeviceArray<float> dg(g), dOut(n);
  DeviceArray<uint16_t> code(n);
  // Encode then decode with no synchronization in between: stream order.
  ASSERT_EQ(ptrain_cuda_cast_encode_f32(dg.get(), nullptr, n, PTRAIN_DTYPE_BF16, code.get()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_cast_decode_f32(code.get(), n, PTRAIN_DTYPE_BF16, dOut.get()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cuda_synchronize(), PTRAIN_OK);
  std::vector<uint16_t> cpuCode(n);
  std::vector<float> cpuOut(n);
  ASSERT_EQ(ptrain_cast_encode_f32(g.data(), nullptr, n, PTRAIN_DTYPE_BF16, cpuCode.data()), PTRAIN_OK);
  ASSERT_EQ(ptrain_cast_decode_f32(cpuCode.data(), n, PTRAIN_DTYPE_BF16, cpuOut.data()), PTRAIN_OK);
  expectSameBits(cpuOut, dOut.download(), "decoded");
  ASSERT_EQ(ptrain_cuda_set_stream(nullptr), PTRAIN_OK);
  cudaStreamDestroy(stream);
}

} // namespace

PTRAIN_CUDA_TEST_MAIN()
