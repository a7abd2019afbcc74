//===- TahQuant.h - TAH-Quant tile kernels --------------------------*- C++ -*-===//
//
// The TAH-Quant codec (#ptrain.tahquant; He et al., "TAH-Quant: Effective
// Activation Quantization in Pipeline Parallelism over Slow Network", arXiv
// 2506.01352, section 3) on a tensor cut into T = numel / G tiles of G
// consecutive elements (G in {8, 16, 32, 64}):
//
//   entropy   H_t = -sum_i p_i ln p_i, p_i = |x_i| / sum_j |x_j| (fp64; an
//             all-zero tile has H_t = 0)                         (sec. 3.2)
//   bits      the `highTiles` tiles of largest H_t (ties to the smaller
//             index) take highBits, the others lowBits           (sec. 3.2)
//   rotation  when max |x| > 0 and max |x| >= 2 x (the others' largest |x|):
//             swap the first largest-magnitude element (the pivot p) to
//             position 0, then y = H_G x / sqrt(G), the in-place fast
//             Walsh-Hadamard butterflies (a + b, a - b) for h = 1, 2, ...,
//             G / 2, then a multiply by fl(1 / sqrt(G))          (sec. 3.3)
//   quantize  asymmetric round-to-nearest-even of y with Quant.h's
//             QuantGroup: z = min y, s = min(max y - min y, FLT_MAX) / (2^b - 1),
//             u = rn(clamp((y - z) (1 / s), 0, 2^b - 1)), decode u s + z
//                                                                (sec. 3.1)
//
// Decode applies the same transform (orthonormal and symmetric: its own
// inverse up to rounding) and swaps the pivot back. The packed codes of tile t
// start at byte G (sum over earlier tiles of their bits) / 8 (whole bytes: G
// is a multiple of 8), LSB first, element j at bit j b of the tile. The flag
// byte of a tile: bits 0-5 the pivot, bit 6 rotated, bit 7 high precision.
//
// A tile with an inf or NaN (in g + e) is a non-finite tile (issue 24, fp16's
// loss scaler; common/QuantScale.h): entropy 0 (tahEntropy), not rotated,
// scale and zero point NaN, codes 0 and with error feedback residual NaN, so
// its decode is NaN and the scaler's check after the reduction sees it.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_CODECS_TAHQUANT_H
#define PTRAIN_RUNTIME_CPU_CODECS_TAHQUANT_H

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>

// The tile helpers are shared with cuda/TahQuant.cu, one thread per tile.
#ifdef __CUDACC__
#define PTRAIN_TAH_HD __host__ __device__
#else
#define PTRAIN_TAH_HD
#endif

namespace ptrain::runtime {

constexpr uint8_t kTahHigh = 0x80, kTahRotated = 0x40, kTahPivot = 0x3f;
constexpr int64_t kTahMaxTile = 64;

/// What a TAH-Quant call codes.
struct TahQuantLayout {
  int64_t numel = 0, tile = 64, highTiles = 0;
  int32_t lowBits = 3, highBits = 4;

  PTRAIN_TAH_HD int64_t tiles() const { return numel / tile; }
  PTRAIN_TAH_HD int64_t packedBytes() const { return (highTiles * highBits + (tiles() - highTiles) * lowBits) * tile / 8; }
};

/// Checks a call's sizes and fills `l`; on a bad argument writes why into
/// why[size] and returns false (both runtimes' entry points).
inline bool tahMakeLayout(int64_t numel, int64_t tile, int32_t lowBits, int32_t highBits, int64_t highTiles,
                          TahQuantLayout &l, char *why, size_t size) {
  if (tile != 8 && tile != 16 && tile != 32 && tile != 64)
    std::snprintf(why, size, "tile_size must be 8, 16, 32 or 64, got %lld", static_cast<long long>(tile));
  else if (numel < tile || numel % tile != 0)
    std::snprintf(why, size, "numel must be a positive multiple of tile_size %lld, got %lld",
                  static_cast<long long>(tile), static_cast<long long>(numel));
  else if (lowBits < 1 || lowBits > highBits || highBits > 8)
    std::snprintf(why, size, "needs 1 <= low_bits <= high_bits <= 8, got %d and %d", lowBits, highBits);
  else if (highTiles < 0 || highTiles > numel / tile)
    std::snprintf(why, size, "high_tiles must be in [0, tiles = %lld], got %lld", static_cast<long long>(numel / tile),
                  static_cast<long long>(highTiles));
  else {
    l.numel = numel;
    l.tile = tile;
    l.lowBits = lowBits;
    l.highBits = highBits;
    l.highTiles = highTiles;
    return true;
  }
  return false;
}

/// The normalized Walsh-Hadamard transform of x[g] in place (g a power of two).
PTRAIN_TAH_HD inline void tahHadamard(float *x, int64_t g) {
  for (int64_t h = 1; h < g; h *= 2)
    for (int64_t i = 0; i < g; i += 2 * h)
      for (int64_t j = i; j < i + h; ++j) {
        const float a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
  const float norm = static_cast<float>(1.0 / sqrt(static_cast<double>(g)));
  for (int64_t j = 0; j < g; ++j)
    x[j] *= norm;
}

/// Whether every element of x[g] is finite (not a non-finite tile).
PTRAIN_TAH_HD inline bool tahTileFinite(const float *x, int64_t g) {
  for (int64_t j = 0; j < g; ++j)
    if (!(fabsf(x[j]) <= FLT_MAX))
      return false;
  return true;
}
/// The entropy of the magnitudes of x[g] (sec. 3.2), in fp64; 0 for an
/// all-zero tile and for a non-finite tile (the sum of |x| is inf or NaN
/// exactly then: 64 finite floats sum to at most 64 FLT_MAX in fp64).
PTRAIN_TAH_HD inline double tahEntropy(const float *x, int64_t g) {
  double sum = 0;
  for (int64_t j = 0; j < g; ++j)
    sum += fabs(static_cast<double>(x[j]));
  if (!(sum > 0 && sum <= DBL_MAX))
    return 0;
  double h = 0;
  for (int64_t j = 0; j < g; ++j) {
    const double p = fabs(static_cast<double>(x[j])) / sum;
    if (p > 0)
      h -= p * log(p);
  }
  return h;
}

/// Whether tile x[g] is rotated and its pivot: the first index of the largest
/// magnitude, rotated when that magnitude is > 0 and at least twice the
/// largest of the others.
PTRAIN_TAH_HD inline bool tahPivot(const float *x, int64_t g, int64_t &pivot) {
  pivot = 0;
  float first = fabsf(x[0]);
  for (int64_t j = 1; j < g; ++j)
    if (fabsf(x[j]) > first) {
      first = fabsf(x[j]);
      pivot = j;
    }
  float second = 0;
  for (int64_t j = 0; j < g; ++j)
    if (j != pivot)
      second = fmaxf(second, fabsf(x[j]));
  return first > 0 && first >= 2 * second;
}

/// Writes the b-bit codes u[g] LSB first into the zeroed bytes at `out`.
PTRAIN_TAH_HD inline void tahPack(const uint32_t *u, int64_t g, int bits, uint8_t *out) {
  for (int64_t j = 0; j < g; ++j) {
    const int64_t bit = j * bits;
    const int shift = static_cast<int>(bit % 8);
    out[bit / 8] |= static_cast<uint8_t>(u[j] << shift);
    if (shift + bits > 8)
      out[bit / 8 + 1] |= static_cast<uint8_t>(u[j] >> (8 - shift));
  }
}

/// Reads tahPack's codes.
PTRAIN_TAH_HD inline uint32_t tahUnpack(const uint8_t *in, int64_t j, int bits) {
  const int64_t bit = j * bits;
  const int shift = static_cast<int>(bit % 8);
  uint32_t word = in[bit / 8];
  if (shift + bits > 8)
    word |= static_cast<uint32_t>(in[bit / 8 + 1]) << 8;
  return (word >> shift) & ((1u << bits) - 1u);
}

} // namespace ptrain::runtime

#undef PTRAIN_TAH_HD

#endif // PTRAIN_RUNTIME_CPU_CODECS_TAHQUANT_H
