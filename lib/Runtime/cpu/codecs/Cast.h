//===- Cast.h - fp16 and bf16 conversions, round to nearest even -*- C++ -*-===//
//
// IEEE 754 binary16 and bfloat16 conversions of fp32 with round-to-nearest,
// ties-to-even (the IEEE default, and what CUDA's __float2half_rn and
// __float2bfloat16_rn do), branch-light so that loops over them vectorize.
// Shared by the cast codec (Cast.cpp), the 16-bit reductions of the
// communicator and the tests, which check every template instance against
// the compiler's _Float16 and against a reference written with frexp.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_CODECS_CAST_H
#define PTRAIN_RUNTIME_CPU_CODECS_CAST_H

#include "ptrain/Runtime/ptrain_runtime.h"

#include <cstdint>
#include <cstring>

namespace ptrain::runtime {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// fp32 -> binary16, round to nearest even; overflow gives +-inf, NaN a quiet
/// NaN, tiny values binary16 subnormals. F. Giesen's float_to_half_fast3_rtne
/// (public domain, "half.h" gist, 2016): subnormals through the FPU's own
/// rounding by adding 0.5, normals by adding 0xfff plus the kept LSB.
inline uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint32_t out;
  if (x >= 0x47800000u) { // >= 65536, inf or NaN
    out = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (x < 0x38800000u) { // < 2^-14: subnormal or zero in binary16
    // 0.5f: adding it aligns the binary16 subnormal LSB with the fp32 LSB.
    const float sum = bitsFloat(x) + 0.5f;
    out = floatBits(sum) - 0x3f000000u;
  } else {
    const uint32_t mantOdd = (x >> 13) & 1u;
    x += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu;
    x += mantOdd;
    out = x >> 13;
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

/// binary16 -> fp32, exact.
inline float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  uint32_t out;
  if (em >= 0x7c00u) // inf or NaN: keep the payload
    out = 0x7f800000u | ((em & 0x3ffu) << 13);
  else if (em >= 0x0400u) // normal: rebias the exponent
    out = (em << 13) + (static_cast<uint32_t>(127 - 15) << 23);
  else // subnormal or zero: em * 2^-24 is exact in fp32
    out = floatBits(static_cast<float>(em) * 5.9604644775390625e-8f);
  return bitsFloat(out | sign);
}

/// fp32 -> bfloat16, round to nearest even; NaN stays a quiet NaN.
inline uint16_t floatToBf16(float f) {
  const uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// bfloat16 -> fp32, exact.
inline float bf16ToFloat(uint16_t b) { return bitsFloat(static_cast<uint32_t>(b) << 16); }

/// The conversions of one 16-bit type, for templates over the cast target.
template <ptrain_dtype_t Dtype> struct Half16;
template <> struct Half16<PTRAIN_DTYPE_F16> {
  static uint16_t encode(float f) { return floatToHalf(f); }
  static float decode(uint16_t h) { return halfToFloat(h); }
};
template <> struct Half16<PTRAIN_DTYPE_BF16> {
  static uint16_t encode(float f) { return floatToBf16(f); }
  static float decode(uint16_t h) { return bf16ToFloat(h); }
};

/// The fused cast encode of one template instance: code = cast(v) and, with
/// a residual, v = g + e and e = v - decode(code), one pass over memory.
template <ptrain_dtype_t Dtype> void castEncode(const float *g, float *residual, int64_t n, uint16_t *code) {
  using H = Half16<Dtype>;
  if (residual) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = g[i] + residual[i];
      const uint16_t c = H::encode(v);
      code[i] = c;
      residual[i] = v - H::decode(c);
    }
  } else {
    for (int64_t i = 0; i < n; ++i)
      code[i] = H::encode(g[i]);
  }
}

template <ptrain_dtype_t Dtype> void castDecode(const uint16_t *code, int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = Half16<Dtype>::decode(code[i]);
}

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_CODECS_CAST_H
