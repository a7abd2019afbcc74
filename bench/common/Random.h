//===- Random.h - The benchmarks' random inputs -----------------*- C++ -*-===//

#ifndef PTRAIN_BENCH_COMMON_RANDOM_H
#define PTRAIN_BENCH_COMMON_RANDOM_H

#include <cstdint>
#include <random>
#include <vector>

namespace ptrain::bench {

/// n values uniform in [-1, 1) from a Mersenne twister seeded with `seed`.
inline std::vector<float> randomFloats(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

} // namespace ptrain::bench

#endif // PTRAIN_BENCH_COMMON_RANDOM_H
