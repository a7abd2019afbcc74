//===- HalfBits.h - fp32 <-> f16 / bf16 bit conversions on the device -*- CUDA -*-===//
//
// The integer algorithms of cpu/codecs/Cast.h (F. Giesen's float_to_half_fast3_rtne, bfloat16 by adding 0x7fff
// plus the kept LSB), written again for the device so that every 16-bit code, NaN's included, equals the CPU's
// portable kernel: the cast codec (Cast.cu) and the 16-bit top-k / rand-k values of the compressed all-reduce
// (CompressedAllReduce.cu, the codec descriptor's value_dtype).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CUDA_HALFBITS_H
#define PTRAIN_RUNTIME_CUDA_HALFBITS_H

#include <cstdint>
#include <cuda_runtime.h>

namespace ptrain::cuda {

/// fp32 -> binary16, round to nearest even (overflow: +-inf, NaN: 0x7e00 with the sign).
__device__ __forceinline__ uint16_t floatToHalf(float f) {
  uint32_t x = __float_as_uint(f);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint32_t out;
  if (x >= 0x47800000u) {
    out = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (x < 0x38800000u) {
    const float sum = __fadd_rn(__uint_as_float(x), 0.5f);
    out = __float_as_uint(sum) - 0x3f000000u;
  } else {
    const uint32_t mantOdd = (x >> 13) & 1u;
    x += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu;
    x += mantOdd;
    out = x >> 13;
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

/// binary16 -> fp32, exact.
__device__ __forceinline__ float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  uint32_t out;
  if (em >= 0x7c00u)
    out = 0x7f800000u | ((em & 0x3ffu) << 13);
  else if (em >= 0x0400u)
    out = (em << 13) + (static_cast<uint32_t>(127 - 15) << 23);
  else
    out = __float_as_uint(__fmul_rn(static_cast<float>(em), 5.9604644775390625e-8f));
  return __uint_as_float(out | sign);
}

/// fp32 -> bfloat16, round to nearest even; NaN stays a quiet NaN.
__device__ __forceinline__ uint16_t floatToBf16(float f) {
  const uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// bfloat16 -> fp32, exact.
__device__ __forceinline__ float bf16ToFloat(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }

} // namespace ptrain::cuda

#endif // PTRAIN_RUNTIME_CUDA_HALFBITS_H
