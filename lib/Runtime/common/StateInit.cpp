//===- StateInit.cpp - deterministic default values of parameter states ---===//
//
// orthogonalInit: see include/ptrain/Runtime/StateInit.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Runtime/StateInit.h"

#include <cmath>
#include <memory>
#include <new>

namespace {

/// splitmix64's output for the state `x` (Steele, Lea, Flood, OOPSLA 2014).
uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr double kTwoPi = 6.283185307179586476925286766559;

/// Entry `e` of the standard normal sequence of stream `s` (Box-Muller, first output).
double gaussian(uint64_t s, uint64_t e) {
  const double u1 = static_cast<double>((splitmix64(s + 2 * e) >> 11) + 1) * 0x1.0p-53;
  const double u2 = static_cast<double>(splitmix64(s + 2 * e + 1) >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

} // namespace

bool ptrain::runtime::orthogonalInit(float *out, int64_t rows, int64_t cols, uint64_t seed, bool transposed) {
  if (out == nullptr || rows < 1 || cols < 1)
    return false;
  const int64_t n = rows >= cols ? rows : cols, k = rows >= cols ? cols : rows;
  // q holds A's columns one after the other (column j at q + j n), orthonormalized in place.
  std::unique_ptr<double[]> q(new (std::nothrow) double[static_cast<size_t>(n * k)]);
  if (!q)
    return false;
  const uint64_t stream = splitmix64(seed);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j)
      q[j * n + i] = gaussian(stream, static_cast<uint64_t>(i * k + j));
  for (int64_t j = 0; j < k; ++j) {
    double *v = q.get() + j * n;
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t p = 0; p < j; ++p) {
        const double *u = q.get() + p * n;
        double dot = 0.0;
        for (int64_t i = 0; i < n; ++i)
          dot += u[i] * v[i];
        for (int64_t i = 0; i < n; ++i)
          v[i] -= dot * u[i];
      }
    double norm = 0.0;
    for (int64_t i = 0; i < n; ++i)
      norm += v[i] * v[i];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < n; ++i)
      v[i] = norm > 0.0 ? v[i] / norm : 0.0;
  }
  // The value is Q (n x k, rows >= cols; with `transposed` rows > cols): out(i, j) = Q(i, j) = q[j n + i];
  // else Q^T: out(j, i) = Q(i, j), which is q's own order.
  const bool isQ = transposed ? rows > cols : rows >= cols;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) {
      const float value = static_cast<float>(q[j * n + i]);
      if (isQ)
        out[i * cols + j] = value;
      else
        out[j * n + i] = value;
    }
  return true;
}
