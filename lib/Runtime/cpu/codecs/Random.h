//===- Random.h - The codecs' counter-based random numbers --------*- C++ -*-===//
//
// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014): a 64-bit state advanced by the golden-ratio
// increment and a fixed mix. Codecs seed one stream per (seed, counter) or
// (seed, column) so that every rank and target derives the same numbers
// without communicating them (rand-k positions, PowerSGD's initial Q).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_CODECS_RANDOM_H
#define PTRAIN_RUNTIME_CPU_CODECS_RANDOM_H

#include <cstdint>

namespace ptrain::runtime {

constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

struct SplitMix64 {
  uint64_t x;
  /// The stream of `seed` and `stream`: state seed ^ (gamma * (stream + 1)).
  static SplitMix64 forStream(uint64_t seed, uint64_t stream) {
    return SplitMix64{seed ^ (kGoldenGamma * (stream + 1))};
  }
  uint64_t next() {
    uint64_t z = (x += kGoldenGamma);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1] from the top 53 bits.
  double unitOpen() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }
};

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_CODECS_RANDOM_H
