//===- QuantScale.h - A quantization group's scale and 1 / scale -*- C++ -*-===//
//
// The scale s a quantization group stores and the reciprocal its codes
// multiply by (t = (v - z) * (1 / s); cpu/codecs/Quant.h, cuda/Quant.cu,
// TAH-Quant on both), one definition for the CPU and the GPU kernels.
//
// A group is coded only where 1 / s is a finite fp32 number. Two kinds of
// group are not, and both are stored as a constant group (s = 0, 1 / s
// taken as 0: every value the zero code, decoded as z, or 0 when symmetric;
// with error feedback the residual keeps v - z, or v, exactly):
//   - s = 0: every value of the group equal;
//   - s <= 2^-128 (a subnormal scale; values around 1e-39): 1 / s rounds to
//     inf, and the group's minimum (asymmetric) or any zero (symmetric) would
//     give t = 0 * inf = NaN, a NaN residual, and the next call's error
//     "element ... is not finite" (issue 26, the subnormal-scale NaN).
// The scale 2^-128 + 2^-149 (the next subnormal) has 1 / s = 2^128 - 2^107
// (rounded), finite: coded.
//
// The asymmetric scale is (max - min) / (2^bits - 1) with the range clamped
// to FLT_MAX (quantAsymmetricScale). A block whose range overflows fp32
// (max - min rounds to inf: max > 0 > min, e.g. -3e38 and 3e38) had scale
// inf, 1 / s = 0, every code 0, decode 0 * inf + z = NaN and a NaN residual
// (issue 26, the inf-scale NaN). Clamped, s = FLT_MAX / (2^bits - 1) and
// (2^bits - 1) * s rounds to exactly FLT_MAX for bits 2, 4 and 8, so every
// decode u * s + z (z = min < 0) is finite; the block covers [min, min +
// FLT_MAX], values above it take the top code and, with error feedback,
// keep the rest (at most max - (min + FLT_MAX), finite) in the residual.
// Every range <= FLT_MAX is left as it was (the clamp does not fire), so its
// scales, codes and residuals are unchanged bit for bit.
//
// A group with a non-finite element (inf or NaN in g + e) is coded as a
// non-finite group (issue 24, fp16's loss scaler): scale and zero point the
// quiet NaN quantNonFinite() (0x7fc00000), every code 0, and with error
// feedback every residual element quantNonFinite(). Its decode u * s + z or
// (u - 2^(bits-1)) * s is NaN, so the overflow reaches the scaler's inf/NaN
// check after the reduction (docs/MixedPrecision.md, "Codecs on loss-scaled
// gradients"); the other groups of the call are coded as ever. A finite
// group never has a NaN scale (the clamp above), so a NaN scale marks the
// group. The bits are the same on every path (CPU ISA clones, CUDA, TAH-Quant,
// the generated encoder); the decoded NaN's payload may differ (x86 keeps the
// operand's, CUDA returns its canonical NaN).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_QUANTSCALE_H
#define PTRAIN_RUNTIME_COMMON_QUANTSCALE_H

#include "common/HostDevice.h"

#include <cfloat>
#include <cstdint>
#include <cstring>

namespace ptrain::runtime {

/// The scale, zero point and residual elements of a non-finite group: the
/// quiet NaN with bits 0x7fc00000 on both targets.
PTRAIN_HOST_DEVICE float quantNonFinite() {
#ifdef __CUDA_ARCH__
  return __uint_as_float(0x7fc00000u);
#else
  const uint32_t bits = 0x7fc00000u;
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
#endif
}

/// Whether x is finite (|x| <= FLT_MAX: false for inf and NaN), on both targets.
PTRAIN_HOST_DEVICE bool quantIsFinite(float x) {
#ifdef __CUDA_ARCH__
  return fabsf(x) <= FLT_MAX;
#else
  return (x < 0.0f ? -x : x) <= FLT_MAX;
#endif
}

/// A group's stored scale and the reciprocal its codes use (both 0 for a
/// constant group).
struct QuantScale {
  float scale;
  float inv;
};

/// The stored scale and its reciprocal for a computed scale s >= 0 (IEEE
/// division, rounded to nearest, on both targets): s and 1 / s where 1 / s is
/// finite, (0, 0) where s is 0 or 1 / s overflows (s <= 2^-128).
PTRAIN_HOST_DEVICE QuantScale quantScaleAndInverse(float scale) {
  if (!(scale > 0.0f))
    return {scale, 0.0f};
#ifdef __CUDA_ARCH__
  const float inv = __fdiv_rn(1.0f, scale);
#else
  const float inv = 1.0f / scale;
#endif
  if (inv <= FLT_MAX)
    return {scale, inv};
  return {0.0f, 0.0f};
}

/// The asymmetric scale min(max - min, FLT_MAX) / levels (levels = 2^bits - 1)
/// of a group with finite minimum lo <= maximum hi (IEEE subtraction and
/// division, rounded to nearest, on both targets); the clamp fires only where
/// max - min overflows to inf (see above).
PTRAIN_HOST_DEVICE float quantAsymmetricScale(float lo, float hi, float levels) {
#ifdef __CUDA_ARCH__
  const float range = __fsub_rn(hi, lo);
  return __fdiv_rn(range <= FLT_MAX ? range : FLT_MAX, levels);
#else
  const float range = hi - lo;
  return (range <= FLT_MAX ? range : FLT_MAX) / levels;
#endif
}

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_COMMON_QUANTSCALE_H
