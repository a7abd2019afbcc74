//===- TahQuant.cpp - TAH-Quant: the C entry points -----------------------===//
//
// Checks the arguments, allocates the bit widths by tile entropy (a partial
// selection over all tiles) and codes tile by tile with the helpers and the
// formulas of TahQuant.h; the quantizer is Quant.h's asymmetric QuantGroup.
//
//===----------------------------------------------------------------------===//

#include "cpu/codecs/TahQuant.h"
#include "common/Status.h"
#include "cpu/codecs/Quant.h"
#include "cpu/codecs/Scratch.h"

#include <algorithm>
#include <cstring>
#include <numeric>

using ptrain::runtime::fail;
using ptrain::runtime::TahQuantLayout;

namespace {
using namespace ptrain::runtime;

ptrain_status_t makeLayout(const char *call, int64_t numel, int64_t tile, int32_t lowBits, int32_t highBits,
                           int64_t highTiles, TahQuantLayout &l) {
  char why[160];
  if (!ptrain::runtime::tahMakeLayout(numel, tile, lowBits, highBits, highTiles, l, why, sizeof(why)))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s", why);
  return PTRAIN_OK;
}

/// Decodes one tile's codes at `in` into y[g] (flags, scale, zero of the tile).
void decodeTile(const TahQuantLayout &l, const uint8_t *in, uint8_t flags, float scale, float zero, float *y) {
  const int bits = flags & kTahHigh ? l.highBits : l.lowBits;
  QuantGroup q = QuantGroup::make(bits, false, 0.0f, 0.0f);
  q.scale = scale;
  q.zero = zero;
  for (int64_t j = 0; j < l.tile; ++j)
    y[j] = q.decode(tahUnpack(in, j, bits));
  if (flags & kTahRotated) {
    tahHadamard(y, l.tile);
    std::swap(y[0], y[flags & kTahPivot]);
  }
}
} // namespace

extern "C" ptrain_status_t ptrain_tahquant_encode_f32(const float *g, float *residual, int64_t numel, int64_t tile_size,
                                                      int32_t low_bits, int32_t high_bits, int64_t high_tiles,
                                                      uint8_t *out_packed, float *out_scales, float *out_zero_points,
                                                      uint8_t *out_flags) {
  TahQuantLayout l;
  PTRAIN_RETURN_IF_ERROR(makeLayout(__func__, numel, tile_size, low_bits, high_bits, high_tiles, l));
  PTRAIN_CHECK_PTR(g);
  PTRAIN_CHECK_PTR(out_packed);
  PTRAIN_CHECK_PTR(out_scales);
  PTRAIN_CHECK_PTR(out_zero_points);
  PTRAIN_CHECK_PTR(out_flags);
  const int64_t tiles = l.tiles(), G = l.tile;
  double *entropy = scratchArray<double>(ScratchSlot::Keys, tiles);
  int64_t *order = scratchArray<int64_t>(ScratchSlot::Bitmap, tiles);
  if (!entropy || !order)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate the entropies of %lld tiles",
                static_cast<long long>(tiles));
  // Pass 1: v = g + e (into the residual), the tile entropies (0 for a non-finite tile).
  const float *v = residual ? residual : g;
  for (int64_t t = 0; t < tiles; ++t) {
    if (residual)
      for (int64_t i = t * G; i < (t + 1) * G; ++i)
        residual[i] += g[i];
    entropy[t] = tahEntropy(v + t * G, G);
  }
  // The high-precision tiles: the high_tiles largest entropies, ties to the smaller index.
  std::iota(order, order + tiles, int64_t{0});
  auto before = [&](int64_t a, int64_t b) { return entropy[a] > entropy[b] || (entropy[a] == entropy[b] && a < b); };
  if (l.highTiles > 0 && l.highTiles < tiles)
    std::nth_element(order, order + (l.highTiles - 1), order + tiles, before);
  std::memset(out_flags, 0, static_cast<size_t>(tiles));
  for (int64_t k = 0; k < l.highTiles; ++k)
    out_flags[order[k]] = kTahHigh;
  // Pass 2: rotate, quantize and pack tile by tile; with a residual, e = v - decode.
  std::memset(out_packed, 0, static_cast<size_t>(l.packedBytes()));
  uint8_t *at = out_packed;
  float y[kTahMaxTile], back[kTahMaxTile];
  uint32_t u[kTahMaxTile];
  for (int64_t t = 0; t < tiles; ++t) {
    const float *x = v + t * G;
    const int tileBits = out_flags[t] & kTahHigh ? l.highBits : l.lowBits;
    if (!tahTileFinite(x, G)) {
      // A non-finite tile (TahQuant.h): NaN scale and zero point, codes 0 (zeroed above), residual NaN.
      out_scales[t] = quantNonFinite();
      out_zero_points[t] = quantNonFinite();
      if (residual)
        std::fill(residual + t * G, residual + (t + 1) * G, quantNonFinite());
      at += G * tileBits / 8;
      continue;
    }
    std::memcpy(y, x, static_cast<size_t>(G) * sizeof(float));
    int64_t pivot = 0;
    if (tahPivot(y, G, pivot)) {
      std::swap(y[0], y[pivot]);
      tahHadamard(y, G);
      out_flags[t] |= static_cast<uint8_t>(kTahRotated | pivot);
    }
    const int bits = out_flags[t] & kTahHigh ? l.highBits : l.lowBits;
    const float lo = *std::min_element(y, y + G), hi = *std::max_element(y, y + G);
    const QuantGroup q = QuantGroup::make(bits, false, lo, hi);
    out_scales[t] = q.scale;
    out_zero_points[t] = q.zero;
    for (int64_t j = 0; j < G; ++j)
      u[j] = q.encode(y[j]);
    tahPack(u, G, bits, at);
    if (residual) {
      decodeTile(l, at, out_flags[t], q.scale, q.zero, back);
      for (int64_t j = 0; j < G; ++j)
        residual[t * G + j] = x[j] - back[j];
    }
    at += G * bits / 8;
  }
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_tahquant_decode_f32(const uint8_t *packed, const float *scales,
                                                      const float *zero_points, const uint8_t *flags, int64_t numel,
                                                      int64_t tile_size, int32_t low_bits, int32_t high_bits,
                                                      int64_t high_tiles, float *out) {
  TahQuantLayout l;
  PTRAIN_RETURN_IF_ERROR(makeLayout(__func__, numel, tile_size, low_bits, high_bits, high_tiles, l));
  PTRAIN_CHECK_PTR(packed);
  PTRAIN_CHECK_PTR(scales);
  PTRAIN_CHECK_PTR(zero_points);
  PTRAIN_CHECK_PTR(flags);
  PTRAIN_CHECK_PTR(out);
  const int64_t tiles = l.tiles(), G = l.tile;
  int64_t high = 0;
  for (int64_t t = 0; t < tiles; ++t) {
    high += (flags[t] & kTahHigh) != 0;
    if ((flags[t] & kTahPivot) >= G)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "tile %lld: pivot %d is outside the tile of %lld",
                  static_cast<long long>(t), flags[t] & kTahPivot, static_cast<long long>(G));
  }
  if (high != l.highTiles)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                "the flags mark %lld high-precision tiles, the codec %lld: not a code of this codec",
                static_cast<long long>(high), static_cast<long long>(l.highTiles));
  const uint8_t *at = packed;
  for (int64_t t = 0; t < tiles; ++t) {
    decodeTile(l, at, flags[t], scales[t], zero_points[t], out + t * G);
    at += G * (flags[t] & kTahHigh ? l.highBits : l.lowBits) / 8;
  }
  return PTRAIN_OK;
}
