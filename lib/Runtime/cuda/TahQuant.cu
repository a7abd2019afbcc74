//===- TahQuant.cu - TAH-Quant on the GPU ---------------------------------===//
//
// #ptrain.tahquant with the tile rule, packing and codes of
// cpu/codecs/TahQuant.h (its tile helpers, compiled for the device), one
// thread per tile:
//
//   1. stats:  v = g + e (written into e), the tile entropies (fp64) into
//              device scratch (0 for a non-finite tile);
//   2. host:   the entropies are copied to the host (8 bytes per tile: 1/32
//              of the tensor at 64-element tiles), which selects the high
//              tiles exactly as the CPU (nth_element, ties to the smaller
//              index) and computes every tile's byte offset in the packed
//              codes; flags and offsets go back to the device;
//   3. pack:   each tile's pivot swap and Walsh-Hadamard rotation, its
//              asymmetric quantizer (the operations of Quant.h's QuantGroup,
//              each rounded on its own: the directory builds with
//              -fmad=false), codes, scale, zero point, flags, and with error
//              feedback e = v - decode; a non-finite tile (an inf or NaN
//              in v) is coded as TahQuant.h says: NaN scale and zero point,
//              codes 0, residual NaN, not rotated.
//
// Decode copies the flags to the host for the offsets (and checks them as
// the CPU does), then decodes a tile per thread. The stream synchronizes
// once per call. Codes equal the CPU's where the device's fp64 log agrees
// with the host's at the selection's boundary (CUDA's log is within 1 ulp,
// so a tie within 1 ulp of two tiles' entropies may select differently);
// the quantization itself is the same arithmetic. Compile-checked in CI (no
// GPU there).
//
//===----------------------------------------------------------------------===//

#include "common/QuantScale.h"
#include "cpu/codecs/TahQuant.h"
#include "cuda/Device.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <numeric>

using namespace ptrain::cuda;
using ptrain::runtime::kTahHigh;
using ptrain::runtime::kTahMaxTile;
using ptrain::runtime::kTahPivot;
using ptrain::runtime::kTahRotated;
using ptrain::runtime::TahQuantLayout;

namespace {

ptrain_status_t makeLayout(const char *call, int64_t numel, int64_t tile, int32_t lowBits, int32_t highBits,
                           int64_t highTiles, TahQuantLayout &l) {
  char why[160];
  if (!ptrain::runtime::tahMakeLayout(numel, tile, lowBits, highBits, highTiles, l, why, sizeof(why)))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s", why);
  return PTRAIN_OK;
}

/// The asymmetric quantizer of Quant.h's QuantGroup::make(bits, false, lo, hi).
struct Quantizer {
  float scale, inv, zero, maxCode;
  __device__ Quantizer(int bits, float lo, float hi) {
    maxCode = static_cast<float>((1 << bits) - 1);
    const ptrain::runtime::QuantScale stored =
        ptrain::runtime::quantScaleAndInverse(ptrain::runtime::quantAsymmetricScale(lo, hi, maxCode));
    scale = stored.scale;
    zero = lo;
    inv = stored.inv;
  }
  __device__ uint32_t encode(float v) const {
    float t = __fmul_rn(__fsub_rn(v, zero), inv);
    t = t < 0.0f ? 0.0f : (t > maxCode ? maxCode : t);
    const float magic = 12582912.0f; // roundEven of Quant.h
    return static_cast<uint32_t>(static_cast<int32_t>(__fsub_rn(__fadd_rn(t, magic), magic)));
  }
};

__device__ float decodeCode(uint32_t u, float scale, float zero) {
  return __fadd_rn(__fmul_rn(static_cast<float>(u), scale), zero);
}

__device__ void decodeTile(const TahQuantLayout &l, const uint8_t *in, uint8_t flags, float scale, float zero,
                           float *y) {
  const int bits = flags & kTahHigh ? l.highBits : l.lowBits;
  for (int64_t j = 0; j < l.tile; ++j)
    y[j] = decodeCode(ptrain::runtime::tahUnpack(in, j, bits), scale, zero);
  if (flags & kTahRotated) {
    ptrain::runtime::tahHadamard(y, l.tile);
    const int p = flags & kTahPivot;
    const float first = y[0];
    y[0] = y[p];
    y[p] = first;
  }
}

__global__ void stats(const float *g, float *residual, TahQuantLayout l, double *entropy) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < l.tiles();
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float *v = residual ? residual : g;
    if (residual)
      for (int64_t i = t * l.tile; i < (t + 1) * l.tile; ++i)
        residual[i] = __fadd_rn(residual[i], g[i]);
    entropy[t] = ptrain::runtime::tahEntropy(v + t * l.tile, l.tile);
  }
}

__global__ void pack(const float *g, float *residual, TahQuantLayout l, const int64_t *offsets, uint8_t *packed,
                     float *scales, float *zeros, uint8_t *flags) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < l.tiles();
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t G = l.tile;
    const float *x = (residual ? residual : g) + t * G;
    if (!ptrain::runtime::tahTileFinite(x, G)) {
      // A non-finite tile: its codes 0, NaN scale and zero point, residual NaN; flags as selected.
      uint8_t *at = packed + offsets[t];
      for (int64_t b = 0; b < G * (flags[t] & kTahHigh ? l.highBits : l.lowBits) / 8; ++b)
        at[b] = 0;
      scales[t] = ptrain::runtime::quantNonFinite();
      zeros[t] = ptrain::runtime::quantNonFinite();
      if (residual)
        for (int64_t j = 0; j < G; ++j)
          residual[t * G + j] = ptrain::runtime::quantNonFinite();
      continue;
    }
    float y[kTahMaxTile];
    for (int64_t j = 0; j < G; ++j)
      y[j] = x[j];
    int64_t pivot = 0;
    uint8_t f = flags[t];
    if (ptrain::runtime::tahPivot(y, G, pivot)) {
      const float first = y[0];
      y[0] = y[pivot];
      y[pivot] = first;
      ptrain::runtime::tahHadamard(y, G);
      f = static_cast<uint8_t>(f | kTahRotated | pivot);
    }
    const int bits = f & kTahHigh ? l.highBits : l.lowBits;
    float lo = y[0], hi = y[0];
    for (int64_t j = 1; j < G; ++j) {
      lo = fminf(lo, y[j]);
      hi = fmaxf(hi, y[j]);
    }
    const Quantizer q(bits, lo, hi);
    uint8_t *at = packed + offsets[t];
    for (int64_t b = 0; b < G * bits / 8; ++b)
      at[b] = 0;
    uint32_t u[kTahMaxTile];
    for (int64_t j = 0; j < G; ++j)
      u[j] = q.encode(y[j]);
    ptrain::runtime::tahPack(u, G, bits, at);
    scales[t] = q.scale;
    zeros[t] = q.zero;
    flags[t] = f;
    if (residual) {
      float back[kTahMaxTile];
      decodeTile(l, at, f, q.scale, q.zero, back);
      for (int64_t j = 0; j < G; ++j)
        residual[t * G + j] = __fsub_rn(x[j], back[j]);
    }
  }
}

__global__ void unpack(const uint8_t *packed, const float *scales, const float *zeros, const uint8_t *flags,
                       TahQuantLayout l, const int64_t *offsets, float *out) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < l.tiles();
       t += static_cast<int64_t>(gridDim.x) * blockDim.x)
    decodeTile(l, packed + offsets[t], flags[t], scales[t], zeros[t], out + t * l.tile);
}

/// Host: every tile's byte offset from its flags.
void offsetsOf(const TahQuantLayout &l, const uint8_t *flags, int64_t *offsets) {
  int64_t at = 0;
  for (int64_t t = 0; t < l.tiles(); ++t) {
    offsets[t] = at;
    at += l.tile * (flags[t] & kTahHigh ? l.highBits : l.lowBits) / 8;
  }
}

} // namespace

extern "C" ptrain_status_t ptrain_cuda_tahquant_encode_f32(const float *g, float *residual, int64_t numel,
                                                           int64_t tile_size, int32_t low_bits, int32_t high_bits,
                                                           int64_t high_tiles, uint8_t *out_packed, float *out_scales,
                                                           float *out_zero_points, uint8_t *out_flags) {
  TahQuantLayout l;
  PTRAIN_CUDA_RETURN_IF_ERROR(makeLayout(__func__, numel, tile_size, low_bits, high_bits, high_tiles, l));
  PTRAIN_CUDA_CHECK_PTR(g);
  PTRAIN_CUDA_CHECK_PTR(out_packed);
  PTRAIN_CUDA_CHECK_PTR(out_scales);
  PTRAIN_CUDA_CHECK_PTR(out_zero_points);
  PTRAIN_CUDA_CHECK_PTR(out_flags);
  const cudaStream_t st = currentStream();
  const int64_t tiles = l.tiles();
  auto *entropy = static_cast<double *>(deviceScratch(__func__, DeviceSlot::Keys, tiles * sizeof(double)));
  auto *offsets = static_cast<int64_t *>(deviceScratch(__func__, DeviceSlot::Values, tiles * sizeof(int64_t)));
  // Host: the entropies, the tile order, the offsets and the flags.
  const size_t hostBytes = tiles * (sizeof(double) + 2 * sizeof(int64_t) + 1);
  auto *host = static_cast<char *>(hostScratch(__func__, hostBytes));
  if (!entropy || !offsets)
    return PTRAIN_ERROR_DEVICE;
  if (!host)
    return PTRAIN_ERROR_OUT_OF_MEMORY;
  auto *entropyHost = reinterpret_cast<double *>(host);
  auto *order = reinterpret_cast<int64_t *>(entropyHost + tiles);
  int64_t *offsetsHost = order + tiles;
  auto *flagsHost = reinterpret_cast<uint8_t *>(offsetsHost + tiles);
  stats<<<gridFor(tiles), kThreads, 0, st>>>(g, residual, l, entropy);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  PTRAIN_CUDA_TRY(cudaMemcpyAsync(entropyHost, entropy, tiles * sizeof(double), cudaMemcpyDeviceToHost, st));
  PTRAIN_CUDA_TRY(cudaStreamSynchronize(st));
  std::iota(order, order + tiles, int64_t{0});
  auto before = [&](int64_t a, int64_t b) {
    return entropyHost[a] > entropyHost[b] || (entropyHost[a] == entropyHost[b] && a < b);
  };
  if (l.highTiles > 0 && l.highTiles < tiles)
    std::nth_element(order, order + (l.highTiles - 1), order + tiles, before);
  std::fill(flagsHost, flagsHost + tiles, uint8_t{0});
  for (int64_t k = 0; k < l.highTiles; ++k)
    flagsHost[order[k]] = kTahHigh;
  offsetsOf(l, flagsHost, offsetsHost);
  PTRAIN_CUDA_TRY(cudaMemcpyAsync(out_flags, flagsHost, tiles, cudaMemcpyHostToDevice, st));
  PTRAIN_CUDA_TRY(cudaMemcpyAsync(offsets, offsetsHost, tiles * sizeof(int64_t), cudaMemcpyHostToDevice, st));
  pack<<<gridFor(tiles), kThreads, 0, st>>>(g, residual, l, offsets, out_packed, out_scales, out_zero_points,
                                            out_flags);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  // The host scratch is reused by the next call: finish the copies from it.
  PTRAIN_CUDA_TRY(cudaStreamSynchronize(st));
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_tahquant_decode_f32(const uint8_t *packed, const float *scales,
                                                           const float *zero_points, const uint8_t *flags,
                                                           int64_t numel, int64_t tile_size, int32_t low_bits,
                                                           int32_t high_bits, int64_t high_tiles, float *out) {
  TahQuantLayout l;
  PTRAIN_CUDA_RETURN_IF_ERROR(makeLayout(__func__, numel, tile_size, low_bits, high_bits, high_tiles, l));
  PTRAIN_CUDA_CHECK_PTR(packed);
  PTRAIN_CUDA_CHECK_PTR(scales);
  PTRAIN_CUDA_CHECK_PTR(zero_points);
  PTRAIN_CUDA_CHECK_PTR(flags);
  PTRAIN_CUDA_CHECK_PTR(out);
  const cudaStream_t st = currentStream();
  const int64_t tiles = l.tiles();
  auto *offsets = static_cast<int64_t *>(deviceScratch(__func__, DeviceSlot::Values, tiles * sizeof(int64_t)));
  auto *host = static_cast<char *>(hostScratch(__func__, tiles * (sizeof(int64_t) + 1)));
  if (!offsets)
    return PTRAIN_ERROR_DEVICE;
  if (!host)
    return PTRAIN_ERROR_OUT_OF_MEMORY;
  auto *offsetsHost = reinterpret_cast<int64_t *>(host);
  auto *flagsHost = reinterpret_cast<uint8_t *>(offsetsHost + tiles);
  PTRAIN_CUDA_TRY(cudaMemcpyAsync(flagsHost, flags, tiles, cudaMemcpyDeviceToHost, st));
  PTRAIN_CUDA_TRY(cudaStreamSynchronize(st));
  int64_t high = 0;
  for (int64_t t = 0; t < tiles; ++t) {
    high += (flagsHost[t] & kTahHigh) != 0;
    if ((flagsHost[t] & kTahPivot) >= l.tile)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__, "tile %lld: pivot %d is outside the tile of %lld",
                  static_cast<long long>(t), flagsHost[t] & kTahPivot, static_cast<long long>(l.tile));
  }
  if (high != l.highTiles)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, __func__,
                "the flags mark %lld high-precision tiles, the codec %lld: not a code of this codec",
                static_cast<long long>(high), static_cast<long long>(l.highTiles));
  offsetsOf(l, flagsHost, offsetsHost);
  PTRAIN_CUDA_TRY(cudaMemcpyAsync(offsets, offsetsHost, tiles * sizeof(int64_t), cudaMemcpyHostToDevice, st));
  unpack<<<gridFor(tiles), kThreads, 0, st>>>(packed, scales, zero_points, flags, l, offsets, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  PTRAIN_CUDA_TRY(cudaStreamSynchronize(st));
  return PTRAIN_OK;
}
