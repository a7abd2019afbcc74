//===- GradScalerRule.h - fp16's dynamic loss scaler, one definition -*- C++ -*-===//
//
// Megatron-LM's DynamicGradScaler.update (megatron/core/optimizer/grad_scaler.py) on the state {scale,
// growth_tracker, hysteresis_tracker}, and the check of its options, shared by the CPU runtime
// (cpu/GradScaler.cpp) and the CUDA kernel (cuda/GradScaler.cu) so that both compute one rule. Every value the
// state takes is exact in fp32 (scales are the initial scale times powers of the factors, the trackers small
// integers); the products round once (the CUDA runtime builds with -fmad=false).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_GRADSCALERRULE_H
#define PTRAIN_RUNTIME_COMMON_GRADSCALERRULE_H

#include "common/HostDevice.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace ptrain::runtime {

/// One update of `state` = {scale, growth_tracker, hysteresis_tracker}. `foundInf`: growth_tracker = 0,
/// hysteresis_tracker -= 1, and when it is <= 0 scale = max(scale * backoffFactor, minScale) (the step is skipped
/// by the caller). Otherwise growth_tracker += 1; at growthInterval it resets to 0, hysteresis_tracker to
/// `hysteresis`, and scale *= growthFactor.
PTRAIN_HOST_DEVICE void gradScalerUpdate(float *state, bool foundInf, float growthFactor, float backoffFactor,
                                         int64_t growthInterval, int64_t hysteresis, float minScale) {
  float &scale = state[0], &growth = state[1], &hyst = state[2];
  if (foundInf) {
    growth = 0.0f;
    hyst -= 1.0f;
    if (hyst <= 0.0f)
      scale = fmaxf(scale * backoffFactor, minScale);
    return;
  }
  growth += 1.0f;
  if (growth == static_cast<float>(growthInterval)) {
    growth = 0.0f;
    hyst = static_cast<float>(hysteresis);
    scale = scale * growthFactor;
  }
}

/// Whether the options are invalid (growthFactor <= 1 or not finite, backoffFactor outside (0, 1), an interval or
/// hysteresis below 1, minScale <= 0 or not finite); then `why` (of `size` bytes) says which.
inline bool gradScalerOptionsInvalid(float growthFactor, float backoffFactor, int64_t growthInterval,
                                     int64_t hysteresis, float minScale, char *why, size_t size) {
  if (!(growthFactor > 1.0f && std::isfinite(growthFactor)))
    std::snprintf(why, size, "growth_factor must be > 1, got %g", static_cast<double>(growthFactor));
  else if (!(backoffFactor > 0.0f && backoffFactor < 1.0f))
    std::snprintf(why, size, "backoff_factor must be in (0, 1), got %g", static_cast<double>(backoffFactor));
  else if (growthInterval < 1 || hysteresis < 1)
    std::snprintf(why, size, "growth_interval (%lld) and hysteresis (%lld) must be >= 1",
                  static_cast<long long>(growthInterval), static_cast<long long>(hysteresis));
  else if (!(minScale > 0.0f && std::isfinite(minScale)))
    std::snprintf(why, size, "min_scale must be finite and > 0, got %g", static_cast<double>(minScale));
  else
    return false;
  return true;
}

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_COMMON_GRADSCALERRULE_H
