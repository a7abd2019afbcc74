//===- Quant.cu - Uniform 2/4/8-bit quantization on the GPU ---------------===//
//
// #ptrain.quant with the formulas, packing and codes of cpu/codecs/Quant.h
// (the specialized CPU kernels' exact operation order, every operation
// rounded to nearest with __f*_rn so no multiply-add is contracted):
//
//   1. stats:  v = g + e (written into e), per group min and max as
//              order-preserving uint32 keys combined with atomicMin/Max (a
//              warp per chunk of 1024 elements of a contiguous group, or a
//              thread per column and row chunk per channel); a non-finite
//              element sets its group's max key to kNonFiniteKey;
//   2. scales: per group, s and the zero point exactly as QuantGroup::make,
//              and 1 / s (common/QuantScale.h: s and 1 / s are 0 when s = 0
//              or 1 / s overflows, s <= 2^-128; an asymmetric range over
//              FLT_MAX clamped to it, quantAsymmetricScale);
//   3. pack:   a thread per output byte codes its 8 / bits elements,
//              r = rn(clamp((v - z) / s)) (1.5 * 2^23 added and subtracted,
//              as roundEven), u = r + 2^(bits-1) (symmetric), and with error
//              feedback e = v - (r s + z); a non-finite group (NaN scale)
//              codes 0 with residual NaN.
//
// A group with an inf or NaN is a non-finite group as on the CPU
// (common/QuantScale.h: NaN scale and zero point, codes 0, residual NaN);
// the encoder never synchronizes the stream. Min and max are order-independent, so codes, scales,
// zero points and residuals equal the CPU's bit for bit; the one exception
// is the sign of a zero group minimum or maximum when a group holds both
// -0.0 and +0.0 (the CPU keeps whichever its loop met first).
//
//===----------------------------------------------------------------------===//

#include "common/QuantScale.h"
#include "cuda/Device.h"

#include <cuda_runtime.h>

#include <climits>

using namespace ptrain::cuda;

namespace {

struct Layout {
  int64_t numel, cols, block, groups, span; // span: elements of a contiguous group
  int32_t bits, granularity;
  bool symmetric;
  __host__ __device__ int64_t group(int64_t i) const {
    return granularity == PTRAIN_QUANT_TENSOR ? 0 : granularity == PTRAIN_QUANT_CHANNEL ? i % cols : i / block;
  }
  __host__ __device__ int64_t packedBytes() const { return (numel * bits + 7) / 8; }
};

ptrain_status_t makeLayout(const char *call, int64_t rows, int64_t cols, int32_t bits, int32_t granularity,
                           int64_t blockSize, int32_t symmetric, Layout &l) {
  if (rows < 1 || cols < 1 || rows > INT64_MAX / cols)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "rows and cols must be >= 1, got %lld x %lld",
                static_cast<long long>(rows), static_cast<long long>(cols));
  if (bits != 2 && bits != 4 && bits != 8)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "bits must be 2, 4 or 8, got %d", bits);
  if (granularity < PTRAIN_QUANT_TENSOR || granularity > PTRAIN_QUANT_BLOCK)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "unknown granularity %d (tensor = 0, channel = 1, block = 2)",
                granularity);
  if ((granularity == PTRAIN_QUANT_BLOCK) != (blockSize >= 1))
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "block_size must be >= 1 exactly for block granularity, got %lld",
                static_cast<long long>(blockSize));
  if (rows * cols > INT64_MAX / 8)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%lld x %lld elements are too many to pack",
                static_cast<long long>(rows), static_cast<long long>(cols));
  l.numel = rows * cols;
  l.cols = cols;
  l.bits = bits;
  l.granularity = granularity;
  l.block = blockSize;
  l.symmetric = symmetric != 0;
  l.groups = granularity == PTRAIN_QUANT_TENSOR    ? 1
             : granularity == PTRAIN_QUANT_CHANNEL ? cols
                                                   : (l.numel + blockSize - 1) / blockSize;
  l.span = granularity == PTRAIN_QUANT_TENSOR ? l.numel : granularity == PTRAIN_QUANT_BLOCK ? blockSize : 0;
  return PTRAIN_OK;
}

/// Keys whose unsigned order is the order of the (non-NaN) floats.
__device__ __forceinline__ uint32_t orderedKey(float x) {
  const uint32_t u = __float_as_uint(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float keyToFloat(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

__device__ __forceinline__ float loadV(const float *g, float *residual, int64_t i) {
  float x = g[i];
  if (residual) {
    x = __fadd_rn(residual[i], x);
    residual[i] = x;
  }
  return x;
}

/// The max key of a group with a non-finite element: above every finite value's key (at most 0xff7fffff).
constexpr uint32_t kNonFiniteKey = 0xffffffffu;

__device__ __forceinline__ void noteValue(float x, uint32_t &lo, uint32_t &hi) {
  if (!isfinite(x)) {
    hi = kNonFiniteKey;
    return;
  }
  const uint32_t k = orderedKey(x);
  lo = k < lo ? k : lo;
  hi = k > hi ? k : hi;
}

constexpr int kChunk = 1024;
constexpr int kWarps = kThreads / 32;

/// Tensor and block granularity: one warp per (group, chunk of kChunk).
__global__ void __launch_bounds__(kThreads)
    statsContiguous(const float *__restrict__ g, float *__restrict__ residual, Layout l, int64_t chunks, int64_t items,
                    uint32_t *__restrict__ loKey, uint32_t *__restrict__ hiKey) {
  const int lane = threadIdx.x & 31;
  const int64_t warpsInGrid = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t item = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; item < items; item += warpsInGrid) {
    const int64_t s = item / chunks, c = item % chunks;
    const int64_t begin = s * l.span + c * kChunk;
    int64_t end = begin + kChunk;
    const int64_t groupEnd = (s + 1) * l.span < l.numel ? (s + 1) * l.span : l.numel;
    end = end < groupEnd ? end : groupEnd;
    uint32_t lo = 0xffffffffu, hi = 0u;
    for (int64_t i = begin + lane; i < end; i += 32)
      noteValue(loadV(g, residual, i), lo, hi);
    for (int off = 16; off > 0; off >>= 1) {
      const uint32_t olo = __shfl_xor_sync(0xffffffffu, lo, off);
      const uint32_t ohi = __shfl_xor_sync(0xffffffffu, hi, off);
      lo = olo < lo ? olo : lo;
      hi = ohi > hi ? ohi : hi;
    }
    if (lane == 0 && begin < end) {
      atomicMin(&loKey[s], lo);
      atomicMax(&hiKey[s], hi);
    }
  }
}

/// Channel granularity: a thread per column and chunk of rowsPerBlock rows.
__global__ void __launch_bounds__(kThreads)
    statsChannel(const float *__restrict__ g, float *__restrict__ residual, Layout l, int64_t rowsPerBlock,
                 uint32_t *__restrict__ loKey, uint32_t *__restrict__ hiKey) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= l.cols)
    return;
  const int64_t rows = l.numel / l.cols;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rowsPerBlock;
  const int64_t r1 = r0 + rowsPerBlock < rows ? r0 + rowsPerBlock : rows;
  uint32_t lo = 0xffffffffu, hi = 0u;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t i = r * l.cols + c;
    noteValue(loadV(g, residual, i), lo, hi);
  }
  if (r0 < r1) {
    atomicMin(&loKey[c], lo);
    atomicMax(&hiKey[c], hi);
  }
}

/// QuantGroup::make per group: scale, zero point and 1 / scale; a non-finite group NaN, NaN and 0.
__global__ void __launch_bounds__(kThreads)
    finishScales(Layout l, const uint32_t *__restrict__ loKey, const uint32_t *__restrict__ hiKey,
                 float *__restrict__ scales, float *__restrict__ zeros, float *__restrict__ inv) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t s = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; s < l.groups; s += stride) {
    if (hiKey[s] == kNonFiniteKey) {
      scales[s] = ptrain::runtime::quantNonFinite();
      if (!l.symmetric)
        zeros[s] = ptrain::runtime::quantNonFinite();
      inv[s] = 0.0f;
      continue;
    }
    const float lo = keyToFloat(loKey[s]), hi = keyToFloat(hiKey[s]);
    float scale;
    if (l.symmetric) {
      const float q = static_cast<float>((1 << (l.bits - 1)) - 1);
      scale = __fdiv_rn(fmaxf(fabsf(lo), fabsf(hi)), q);
    } else {
      scale = ptrain::runtime::quantAsymmetricScale(lo, hi, static_cast<float>((1 << l.bits) - 1));
      zeros[s] = lo;
    }
    const ptrain::runtime::QuantScale stored = ptrain::runtime::quantScaleAndInverse(scale);
    scales[s] = stored.scale;
    inv[s] = stored.inv;
  }
}

/// roundEven of cpu/codecs/Quant.h: exact for |t| <= 2^22.
__device__ __forceinline__ float roundEven(float t) {
  const float magic = 12582912.0f;
  return __fsub_rn(__fadd_rn(t, magic), magic);
}

/// v is the residual (holding g + e) with error feedback: no __restrict__ on
/// the two; each element is read before it is written, by the same thread.
template <int Bits, bool Symmetric>
__global__ void __launch_bounds__(kThreads)
    packKernel(const float *v, float *residual, Layout l, const float *__restrict__ scales,
               const float *__restrict__ zeros, const float *__restrict__ inv, uint8_t *__restrict__ packed) {
  constexpr int kPerByte = 8 / Bits;
  const float minCode = Symmetric ? -static_cast<float>((1 << (Bits - 1)) - 1) : 0.0f;
  const float maxCode = Symmetric ? static_cast<float>((1 << (Bits - 1)) - 1) : static_cast<float>((1 << Bits) - 1);
  const float offset = Symmetric ? static_cast<float>(1 << (Bits - 1)) : 0.0f;
  const int64_t bytes = l.packedBytes();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < bytes; b += stride) {
    uint32_t byte = 0;
#pragma unroll
    for (int j = 0; j < kPerByte; ++j) {
      const int64_t i = b * kPerByte + j;
      if (i >= l.numel)
        break;
      const int64_t s = l.group(i);
      const float x = v[i];
      if (isnan(scales[s])) { // a non-finite group: code 0
        if (residual)
          residual[i] = ptrain::runtime::quantNonFinite();
        continue;
      }
      const float z = Symmetric ? 0.0f : zeros[s];
      float t = __fmul_rn(__fsub_rn(x, z), inv[s]);
      t = t < minCode ? minCode : t;
      t = maxCode < t ? maxCode : t;
      const float r = roundEven(t);
      byte |= static_cast<uint32_t>(static_cast<int32_t>(__fadd_rn(r, offset))) << (j * Bits);
      if (residual)
        residual[i] = __fsub_rn(x, __fadd_rn(__fmul_rn(r, scales[s]), z));
    }
    packed[b] = static_cast<uint8_t>(byte);
  }
}

template <int Bits, bool Symmetric>
__global__ void __launch_bounds__(kThreads)
    unpackKernel(const uint8_t *__restrict__ packed, const float *__restrict__ scales, const float *__restrict__ zeros,
                 Layout l, float *__restrict__ out) {
  constexpr int kPerByte = 8 / Bits;
  constexpr uint32_t kMask = (1u << Bits) - 1u;
  const float offset = static_cast<float>(1 << (Bits - 1));
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < l.numel; i += stride) {
    const int64_t s = l.group(i);
    const float u = static_cast<float>((packed[i / kPerByte] >> ((i % kPerByte) * Bits)) & kMask);
    out[i] = Symmetric ? __fmul_rn(__fsub_rn(u, offset), scales[s]) : __fadd_rn(__fmul_rn(u, scales[s]), zeros[s]);
  }
}

template <int Bits>
void launchPack(bool symmetric, unsigned grid, cudaStream_t st, const float *v, float *residual, const Layout &l,
                const float *scales, const float *zeros, const float *inv, uint8_t *packed) {
  if (symmetric)
    packKernel<Bits, true><<<grid, kThreads, 0, st>>>(v, residual, l, scales, zeros, inv, packed);
  else
    packKernel<Bits, false><<<grid, kThreads, 0, st>>>(v, residual, l, scales, zeros, inv, packed);
}

template <int Bits>
void launchUnpack(bool symmetric, unsigned grid, cudaStream_t st, const uint8_t *packed, const float *scales,
                  const float *zeros, const Layout &l, float *out) {
  if (symmetric)
    unpackKernel<Bits, true><<<grid, kThreads, 0, st>>>(packed, scales, zeros, l, out);
  else
    unpackKernel<Bits, false><<<grid, kThreads, 0, st>>>(packed, scales, zeros, l, out);
}

} // namespace

extern "C" ptrain_status_t ptrain_cuda_quant_encode_f32(const float *g, float *residual, int64_t rows, int64_t cols,
                                                        int32_t bits, int32_t granularity, int64_t block_size,
                                                        int32_t symmetric, uint8_t *out_packed, float *out_scales,
                                                        float *out_zero_points) {
  Layout l;
  PTRAIN_CUDA_RETURN_IF_ERROR(makeLayout(__func__, rows, cols, bits, granularity, block_size, symmetric, l));
  PTRAIN_CUDA_CHECK_PTR(g);
  PTRAIN_CUDA_CHECK_PTR(out_packed);
  PTRAIN_CUDA_CHECK_PTR(out_scales);
  PTRAIN_CUDA_CHECK_ARG(l.symmetric || out_zero_points, "'out_zero_points' must not be null when asymmetric");
  const cudaStream_t st = currentStream();
  const size_t groupBytes = static_cast<size_t>(l.groups) * sizeof(uint32_t);
  auto *lo = static_cast<uint32_t *>(deviceScratch(__func__, DeviceSlot::Keys, groupBytes));
  auto *hi = static_cast<uint32_t *>(deviceScratch(__func__, DeviceSlot::Values, groupBytes));
  auto *inv = static_cast<float *>(deviceScratch(__func__, DeviceSlot::SortedKeys, groupBytes));
  if (!lo || !hi || !inv)
    return PTRAIN_ERROR_DEVICE;
  PTRAIN_CUDA_TRY(cudaMemsetAsync(lo, 0xff, groupBytes, st));
  PTRAIN_CUDA_TRY(cudaMemsetAsync(hi, 0, groupBytes, st));
  if (l.granularity == PTRAIN_QUANT_CHANNEL) {
    const int64_t rowsTotal = l.numel / l.cols;
    const int64_t rowsPerBlock = rowsTotal / 65535 + 16;
    const int64_t colBlocks = (l.cols + kThreads - 1) / kThreads;
    PTRAIN_CUDA_CHECK_ARG(colBlocks <= INT32_MAX, "%lld columns are too many for one grid",
                          static_cast<long long>(l.cols));
    const dim3 grid(static_cast<unsigned>(colBlocks),
                    static_cast<unsigned>((rowsTotal + rowsPerBlock - 1) / rowsPerBlock));
    statsChannel<<<grid, kThreads, 0, st>>>(g, residual, l, rowsPerBlock, lo, hi);
  } else {
    const int64_t chunks = (l.span + kChunk - 1) / kChunk;
    const int64_t items = l.groups * chunks;
    const int64_t blocks = (items + kWarps - 1) / kWarps;
    statsContiguous<<<static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0, st>>>(
        g, residual, l, chunks, items, lo, hi);
  }
  PTRAIN_CUDA_TRY(cudaGetLastError());
  float *zeros = l.symmetric ? nullptr : out_zero_points;
  finishScales<<<gridFor(l.groups), kThreads, 0, st>>>(l, lo, hi, out_scales, zeros, inv);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  const float *v = residual ? residual : g;
  const unsigned grid = gridFor(l.packedBytes());
  if (bits == 2)
    launchPack<2>(l.symmetric, grid, st, v, residual, l, out_scales, zeros, inv, out_packed);
  else if (bits == 4)
    launchPack<4>(l.symmetric, grid, st, v, residual, l, out_scales, zeros, inv, out_packed);
  else
    launchPack<8>(l.symmetric, grid, st, v, residual, l, out_scales, zeros, inv, out_packed);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_cuda_quant_decode_f32(const uint8_t *packed, const float *scales,
                                                        const float *zero_points, int64_t rows, int64_t cols,
                                                        int32_t bits, int32_t granularity, int64_t block_size,
                                                        int32_t symmetric, float *out) {
  Layout l;
  PTRAIN_CUDA_RETURN_IF_ERROR(makeLayout(__func__, rows, cols, bits, granularity, block_size, symmetric, l));
  PTRAIN_CUDA_CHECK_PTR(packed);
  PTRAIN_CUDA_CHECK_PTR(scales);
  PTRAIN_CUDA_CHECK_PTR(out);
  PTRAIN_CUDA_CHECK_ARG(l.symmetric || zero_points, "'zero_points' must not be null when asymmetric");
  const cudaStream_t st = currentStream();
  const unsigned grid = gridFor(l.numel);
  const float *zeros = l.symmetric ? nullptr : zero_points;
  if (bits == 2)
    launchUnpack<2>(l.symmetric, grid, st, packed, scales, zeros, l, out);
  else if (bits == 4)
    launchUnpack<4>(l.symmetric, grid, st, packed, scales, zeros, l, out);
  else
    launchUnpack<8>(l.symmetric, grid, st, packed, scales, zeros, l, out);
  PTRAIN_CUDA_TRY(cudaGetLastError());
  return PTRAIN_OK;
}
