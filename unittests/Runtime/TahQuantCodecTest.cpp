//===- TahQuantCodecTest.cpp - TAH-Quant: selection, rotation, bounds -----===//
//
// ptrain_tahquant_encode_f32 / decode_f32 (cpu/codecs/TahQuant.h) checked
// against properties derived independently of the kernel:
//   - the entropy allocation: a tile of equal magnitudes (entropy ln G, the
//     largest) takes the high width, a one-spike tile (entropy 0) the low;
//   - the rotation rule and the packed size;
//   - the round-trip error bound from the bit width: a tile of b-bit codes
//     with scale s rounds every (rotated) value to the nearest of the 2^b
//     levels z + u s covering [min, max], so each value is off by at most
//     s / 2 (plus the ulps of the arithmetic). An unrotated tile therefore
//     has max |x - x'| <= s / 2; a rotated tile, whose transform H / sqrt(G)
//     is orthonormal, has ||x - x'||_2 = ||y - y'||_2 <= sqrt(G) s / 2. And
//     s = (max y - min y) / (2^b - 1) <= 2 ||x||_2 / (2^b - 1), since every
//     |y_i| <= ||y||_2 = ||x||_2;
//   - error feedback leaves e = (g + e) - decode exactly;
//   - on outlier tiles (the case sec. 3.3 of arXiv 2506.01352 addresses) the
//     rotation beats plain per-tile 4-bit quantization (#ptrain.quant, block
//     granularity, asymmetric) of the same tiles;
//   - errors through the C API.
//
//===----------------------------------------------------------------------===//

#include "cpu/codecs/Cast.h"
#include "cpu/codecs/TahQuant.h"
#include "ptrain/Runtime/ptrain_runtime.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {
using namespace ptrain::runtime;

struct Code {
  std::vector<uint8_t> packed, flags;
  std::vector<float> scales, zeros, decoded;
};

Code roundTrip(const std::vector<float> &x, int64_t tile, int lo, int hi, int64_t high, float *residual = nullptr) {
  TahQuantLayout l;
  l.numel = static_cast<int64_t>(x.size());
  l.tile = tile;
  l.lowBits = lo;
  l.highBits = hi;
  l.highTiles = high;
  Code c;
  c.packed.assign(l.packedBytes(), 0xAB);
  c.flags.assign(l.tiles(), 0xAB);
  c.scales.assign(l.tiles(), -1.0f);
  c.zeros.assign(l.tiles(), -1.0f);
  c.decoded.assign(x.size(), -7.0f);
  EXPECT_EQ(ptrain_tahquant_encode_f32(x.data(), residual, l.numel, tile, lo, hi, high, c.packed.data(),
                                       c.scales.data(), c.zeros.data(), c.flags.data()),
            PTRAIN_OK)
      << ptrain_last_error();
  EXPECT_EQ(ptrain_tahquant_decode_f32(c.packed.data(), c.scales.data(), c.zeros.data(), c.flags.data(), l.numel, tile,
                                       lo, hi, high, c.decoded.data()),
            PTRAIN_OK)
      << ptrain_last_error();
  return c;
}

/// Gaussian activations with an outlier channel in every `every`-th tile (0: none).
std::vector<float> activations(size_t n, int64_t tile, int every, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float &v : x)
    v = normal(gen);
  if (every > 0)
    for (size_t t = 0; t * tile < n; t += every)
      x[t * tile + (t * 7) % tile] = 40.0f * (t % 2 ? 1.0f : -1.0f);
  return x;
}

TEST(TahQuantCodec, EntropyPicksTheHighPrecisionTiles) {
  // Tile 0: one spike (entropy 0); tile 1: equal magnitudes (entropy ln 8, the most); tile 2: two spikes (ln 2).
  std::vector<float> x(24, 0.0f);
  x[3] = 5.0f;
  for (int j = 0; j < 8; ++j)
    x[8 + j] = j % 2 ? 1.0f : -1.0f;
  x[16] = 1.0f;
  x[20] = 1.0f;
  Code c = roundTrip(x, 8, 2, 6, 1);
  EXPECT_EQ(c.flags[1] & kTahHigh, kTahHigh);
  EXPECT_EQ(c.flags[0] & kTahHigh, 0);
  EXPECT_EQ(c.flags[2] & kTahHigh, 0);
  // Tile 0 is an outlier tile (5 >= 2 x 0): rotated about pivot 3. Tiles 1 and 2 are not (1 < 2 x 1).
  EXPECT_EQ(c.flags[0], kTahRotated | 3);
  EXPECT_EQ(c.flags[1], kTahHigh);
  EXPECT_EQ(c.flags[2], 0);
  // Packed: 8 x (6 + 2 + 2) / 8 bytes.
  EXPECT_EQ(c.packed.size(), 10u);
  // Tile 1 has two levels, the ends of its grid (exact up to the scale's ulps); tile 0 rotates to a constant
  // (exact up to the transform's ulps).
  for (int j = 0; j < 8; ++j)
    EXPECT_NEAR(c.decoded[8 + j], x[8 + j], 1e-6f) << j;
  for (int j = 0; j < 8; ++j)
    EXPECT_NEAR(c.decoded[j], x[j], 4e-6f) << j;
  // With two high tiles the ln 2 tile is next.
  Code two = roundTrip(x, 8, 2, 6, 2);
  EXPECT_EQ(two.flags[2] & kTahHigh, kTahHigh);
  EXPECT_EQ(two.flags[0] & kTahHigh, 0);
}

TEST(TahQuantCodec, RoundTripErrorWithinTheBitWidthBound) {
  for (int64_t tile : {8, 16, 32, 64})
    for (auto [lo, hi] : {std::pair{3, 4}, std::pair{2, 4}, std::pair{4, 8}}) {
      const size_t n = 64 * 96;
      std::vector<float> x = activations(n, tile, 3, static_cast<unsigned>(tile * 10 + lo));
      const int64_t tiles = static_cast<int64_t>(n) / tile, high = (tiles * 8 + 5) / 10;
      Code c = roundTrip(x, tile, lo, hi, high);
      int64_t rotated = 0, highSeen = 0;
      double err2 = 0, x2 = 0;
      for (int64_t t = 0; t < tiles; ++t) {
        const bool isHigh = c.flags[t] & kTahHigh, isRotated = c.flags[t] & kTahRotated;
        const int b = isHigh ? hi : lo;
        highSeen += isHigh;
        rotated += isRotated;
        double norm2 = 0, e2 = 0, emax = 0;
        for (int64_t j = 0; j < tile; ++j) {
          const double v = x[t * tile + j], e = v - c.decoded[t * tile + j];
          norm2 += v * v;
          e2 += e * e;
          emax = std::max(emax, std::fabs(e));
        }
        err2 += e2;
        x2 += norm2;
        const double s = c.scales[t], slack = 1e-5 * std::sqrt(norm2) + 1e-6;
        EXPECT_LE(s, 2 * std::sqrt(norm2) / (std::ldexp(1.0, b) - 1) * (1 + 1e-6)) << "tile " << t;
        if (isRotated)
          EXPECT_LE(std::sqrt(e2), std::sqrt(static_cast<double>(tile)) * s / 2 + slack) << "tile " << t;
        else
          EXPECT_LE(emax, s / 2 + slack) << "tile " << t;
      }
      EXPECT_EQ(highSeen, high);
      EXPECT_GT(rotated, 0) << "the outlier tiles are rotated";
      // On Gaussian data the error is far below the worst-case bound: below the uniform-rounding rms of the
      // low width, s / sqrt(12) with s ~ (range of a tile) / (2^lo - 1) <= 2 x 4 sigma / (2^lo - 1).
      EXPECT_LT(std::sqrt(err2 / x2), 8.0 / (std::ldexp(1.0, lo) - 1) / std::sqrt(12.0))
          << "tile " << tile << ", bits " << lo << "/" << hi;
    }
}

TEST(TahQuantCodec, RotationBeatsPlainTileQuantizationOnOutliers) {
  const int64_t tile = 64;
  const size_t n = 64 * 128;
  std::vector<float> x = activations(n, tile, 1, 5); // an outlier in every tile
  Code tah = roundTrip(x, tile, 4, 4, 0);
  std::vector<uint8_t> packed(n / 2);
  std::vector<float> scales(n / tile), zeros(n / tile), plain(n);
  ASSERT_EQ(ptrain_quant_encode_f32(x.data(), nullptr, 1, static_cast<int64_t>(n), 4, PTRAIN_QUANT_BLOCK, tile, 0,
                                    packed.data(), scales.data(), zeros.data()),
            PTRAIN_OK);
  ASSERT_EQ(ptrain_quant_decode_f32(packed.data(), scales.data(), zeros.data(), 1, static_cast<int64_t>(n), 4,
                                    PTRAIN_QUANT_BLOCK, tile, 0, plain.data()),
            PTRAIN_OK);
  double eTah = 0, ePlain = 0;
  for (size_t i = 0; i < n; ++i) {
    eTah += (x[i] - tah.decoded[i]) * (x[i] - tah.decoded[i]);
    ePlain += (x[i] - plain[i]) * (x[i] - plain[i]);
  }
  // The outlier stretches the plain tile's range to ~40 + 3 sigma: every other channel rounds to a few levels.
  // Rotated, the outlier's energy spreads evenly over the tile (+-40 / 8 each) and the levels fit the data.
  EXPECT_LT(eTah, 0.75 * ePlain) << "rms " << std::sqrt(eTah / n) << " vs " << std::sqrt(ePlain / n);
}

TEST(TahQuantCodec, ErrorFeedbackKeepsWhatTheCodeLost) {
  const size_t n = 32 * 64;
  std::vector<float> g = activations(n, 32, 4, 11), e0 = activations(n, 32, 0, 12);
  for (float &v : e0)
    v *= 0.1f;
  std::vector<float> residual = e0;
  Code c = roundTrip(g, 32, 3, 4, 51, residual.data());
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(residual[i], (g[i] + e0[i]) - c.decoded[i]) << i;
}

// The subnormal-scale NaN (issue 26): tiles of values around 1e-39 have scales at or below 2^-128, whose
// reciprocal overflows; such a tile is stored as constant (scale 0, common/QuantScale.h), and the residual keeps
// exactly what the code lost. Before, its minimum's t = 0 * inf = NaN went through an undefined NaN-to-integer
// conversion (code 0 on x86, so the residual, decoded from the codes, happened to stay finite).
TEST(TahQuantCodec, SubnormalScalesLeaveAFiniteResidual) {
  const size_t n = 32 * 64;
  std::vector<float> g = activations(n, 32, 4, 13), e0 = activations(n, 32, 0, 14);
  for (size_t i = 0; i < n; ++i)
    g[i] *= 1e-39f, e0[i] *= 1e-40f;
  std::vector<float> residual = e0;
  Code c = roundTrip(g, 32, 3, 4, 51, residual.data());
  int constantTiles = 0;
  for (float scale : c.scales) {
    if (scale == 0.0f)
      ++constantTiles;
    else
      ASSERT_TRUE(std::isfinite(1.0f / scale)) << scale;
  }
  EXPECT_GT(constantTiles, 0);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(std::isfinite(residual[i])) << i;
    ASSERT_EQ(residual[i], (g[i] + e0[i]) - c.decoded[i]) << i;
  }
}

// Issue 24 (fp16's loss scaler): a tile whose g + e holds an inf or NaN is a non-finite tile, entropy 0 (as an
// all-zero tile), not rotated, scale and zero point NaN (0x7fc00000), codes 0, residual NaN, and decodes to NaN;
// every other tile, and the bit allocation, is what the same call with the non-finite tiles zeroed gives (an
// all-zero tile also has entropy 0 and is not rotated, so the allocation and the byte offsets agree).
TEST(TahQuantCodec, NonFiniteTilesDecodeToNaNAndLeaveTheOthersAsTheyWere) {
  const uint32_t kNaN = 0x7fc00000u;
  for (int64_t tile : {int64_t(8), int64_t(32), int64_t(64)})
    for (bool feedback : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "tile " << tile << " feedback " << feedback);
      const size_t n = 40 * static_cast<size_t>(tile);
      const int64_t tiles = 40, high = 13;
      std::vector<float> g = activations(n, tile, 3, 21), e0 = activations(n, tile, 0, 22);
      for (float &v : e0)
        v *= 0.1f;
      std::vector<float> clean = g, cleanE = e0;
      std::vector<bool> bad(tiles, false);
      g[3 * tile + 1] = INFINITY;
      g[10 * tile] = NAN;
      g[10 * tile + 2] = -INFINITY;
      bad[3] = bad[10] = true;
      if (feedback) {
        e0[20 * tile + tile - 1] = -INFINITY;
        bad[20] = true;
      }
      for (int64_t t = 0; t < tiles; ++t)
        if (bad[t])
          for (int64_t j = 0; j < tile; ++j)
            clean[t * tile + j] = cleanE[t * tile + j] = 0.0f;
      std::vector<float> residual = e0, cleanResidual = cleanE;
      const Code c = roundTrip(g, tile, 3, 5, high, feedback ? residual.data() : nullptr);
      const Code ref = roundTrip(clean, tile, 3, 5, high, feedback ? cleanResidual.data() : nullptr);
      ASSERT_EQ(c.flags, ref.flags) << "the bit allocation and the rotations";
      int64_t at = 0;
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t bytes = tile * (c.flags[t] & kTahHigh ? 5 : 3) / 8;
        if (bad[t]) {
          ASSERT_EQ(c.flags[t] & (kTahRotated | kTahPivot), 0) << "tile " << t;
          ASSERT_EQ(floatBits(c.scales[t]), kNaN) << "tile " << t;
          ASSERT_EQ(floatBits(c.zeros[t]), kNaN) << "tile " << t;
          for (int64_t b = 0; b < bytes; ++b)
            ASSERT_EQ(c.packed[at + b], 0) << "tile " << t;
          for (int64_t j = 0; j < tile; ++j) {
            ASSERT_TRUE(std::isnan(c.decoded[t * tile + j])) << "tile " << t;
            if (feedback) {
              ASSERT_EQ(floatBits(residual[t * tile + j]), kNaN) << "tile " << t;
            }
          }
        } else {
          ASSERT_EQ(floatBits(c.scales[t]), floatBits(ref.scales[t])) << "tile " << t;
          ASSERT_EQ(floatBits(c.zeros[t]), floatBits(ref.zeros[t])) << "tile " << t;
          for (int64_t b = 0; b < bytes; ++b)
            ASSERT_EQ(c.packed[at + b], ref.packed[at + b]) << "tile " << t;
          for (int64_t j = 0; j < tile; ++j) {
            ASSERT_EQ(floatBits(c.decoded[t * tile + j]), floatBits(ref.decoded[t * tile + j])) << "tile " << t;
            if (feedback) {
              ASSERT_EQ(floatBits(residual[t * tile + j]), floatBits(cleanResidual[t * tile + j])) << "tile " << t;
            }
          }
        }
        at += bytes;
      }
    }
}

TEST(TahQuantCodec, ErrorsNameTheArgument) {
  std::vector<float> x(64, 1.0f), out(64);
  std::vector<uint8_t> packed(64), flags(2);
  std::vector<float> s(2), z(2);
  EXPECT_EQ(ptrain_tahquant_encode_f32(x.data(), nullptr, 64, 48, 3, 4, 1, packed.data(), s.data(), z.data(),
                                       flags.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("tile_size must be 8, 16, 32 or 64, got 48"), std::string::npos);
  EXPECT_EQ(ptrain_tahquant_encode_f32(x.data(), nullptr, 64, 32, 5, 4, 1, packed.data(), s.data(), z.data(),
                                       flags.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("1 <= low_bits <= high_bits <= 8"), std::string::npos);
  EXPECT_EQ(ptrain_tahquant_encode_f32(x.data(), nullptr, 64, 32, 3, 4, 3, packed.data(), s.data(), z.data(),
                                       flags.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("high_tiles must be in [0, tiles = 2], got 3"), std::string::npos);
  ASSERT_EQ(ptrain_tahquant_encode_f32(x.data(), nullptr, 64, 32, 3, 4, 1, packed.data(), s.data(), z.data(),
                                       flags.data()),
            PTRAIN_OK);
  flags[0] ^= kTahHigh; // now zero or two high tiles
  EXPECT_EQ(ptrain_tahquant_decode_f32(packed.data(), s.data(), z.data(), flags.data(), 64, 32, 3, 4, 1, out.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("not a code of this codec"), std::string::npos);
}

} // namespace
