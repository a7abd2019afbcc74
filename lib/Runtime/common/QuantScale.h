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
// (rounded), finite: coded. A scale of inf (an asymmetric range over
// FLT_MAX) keeps 1 / s = 0, as before.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_QUANTSCALE_H
#define PTRAIN_RUNTIME_COMMON_QUANTSCALE_H

#include "common/HostDevice.h"

#include <cfloat>

namespace ptrain::runtime {

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

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_COMMON_QUANTSCALE_H
