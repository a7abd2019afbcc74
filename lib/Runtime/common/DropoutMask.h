//===- DropoutMask.h - The counter-based mask of ptrain.dropout -*- C++ -*-===//
//
// The keep decision of ptrain.dropout (PTrainModelOps.td) as a pure function
// of (seed, counter, global element index) on SplitMix64's finalizer (Steele,
// Lea, Flood 2014, "Fast splittable pseudorandom number generators", OOPSLA):
// no generator state, so any thread can draw any element. One definition for
// the CPU kernel (cpu/Dropout.cpp) and the GPU kernel (cuda/ModelTransformer.cu),
// so a GPU step draws the CPU's mask bit for bit (integer arithmetic, then one
// exact conversion to double); the reference interpreter's dropoutKeeps
// (lib/Interpreter/Elementwise.cpp, which links no runtime) computes the same.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_DROPOUTMASK_H
#define PTRAIN_RUNTIME_COMMON_DROPOUTMASK_H

#include "common/HostDevice.h"

#include <cstdint>

namespace ptrain::runtime {

constexpr uint64_t kDropoutGolden = 0x9E3779B97F4A7C15ULL;

/// SplitMix64's output function.
PTRAIN_HOST_DEVICE uint64_t dropoutMix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// The key of one dropout draw: the op's seed and the step's counter.
PTRAIN_HOST_DEVICE uint64_t dropoutKey(int64_t seed, int64_t counter) {
  return dropoutMix64(static_cast<uint64_t>(seed) ^ dropoutMix64(static_cast<uint64_t>(counter) + kDropoutGolden));
}

/// The uniform in [0, 1) (53 bits) of global element `g` under `key`; the element is kept when it is >= ratio.
PTRAIN_HOST_DEVICE double dropoutUniform(uint64_t key, int64_t g) {
  const uint64_t bits = dropoutMix64(key + (static_cast<uint64_t>(g) + 1) * kDropoutGolden);
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

/// The global index of local element `i` of a tensor sharded on one dimension (mid > 0: [outer, mid, inner]
/// locally, `part` of `parts` along mid) whose first row starts at `base`; mid == 0: i + base.
PTRAIN_HOST_DEVICE int64_t dropoutGlobalIndex(int64_t i, int64_t mid, int64_t inner, int64_t part, int64_t parts,
                                              int64_t base) {
  if (mid <= 0)
    return i + base;
  const int64_t r = i % inner, j = (i / inner) % mid, o = i / (inner * mid);
  return ((o * parts + part) * mid + j) * inner + r + base;
}

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_COMMON_DROPOUTMASK_H
