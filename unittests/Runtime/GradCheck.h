//===- GradCheck.h - Helpers for the runtime kernel tests -------*- C++ -*-===//
//
// Kernels are fp32; references are written in fp64 in the tests. A backward
// kernel is checked against central finite differences of the fp64
// reference: for L(x) = sum_i w_i f(x)_i, dL/dx_j ~ (L(x + h e_j) -
// L(x - h e_j)) / 2h, with the kernel given dy = w.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_UNITTESTS_RUNTIME_GRADCHECK_H
#define PTRAIN_UNITTESTS_RUNTIME_GRADCHECK_H

#include "ptrain/Runtime/ptrain_runtime.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace ptrain::testing {

/// The bits of an fp32 value (the 16-bit GEMM and cast tests compare bits).
inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

using Vec = std::vector<double>;
/// A reference function of several fp64 inputs.
using RefFn = std::function<Vec(const std::vector<Vec> &)>;

/// Uniform values in [lo, hi), rounded to fp32 so that the fp32 kernel and
/// the fp64 reference see the same numbers.
inline std::vector<float> randomFloats(size_t n, unsigned seed,
                                       float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (float &v : out)
    v = dist(gen);
  return out;
}

inline Vec toDouble(const std::vector<float> &v) {
  return Vec(v.begin(), v.end());
}

/// Central differences of sum(w * f(inputs)) with respect to inputs[which].
inline Vec numericGrad(const RefFn &f, std::vector<Vec> inputs, size_t which,
                       const Vec &w, double h = 1e-6) {
  Vec grad(inputs[which].size());
  for (size_t j = 0; j < grad.size(); ++j) {
    const double saved = inputs[which][j];
    inputs[which][j] = saved + h;
    Vec plus = f(inputs);
    inputs[which][j] = saved - h;
    Vec minus = f(inputs);
    inputs[which][j] = saved;
    double diff = 0.0;
    for (size_t i = 0; i < w.size(); ++i)
      diff += w[i] * (plus[i] - minus[i]);
    grad[j] = diff / (2.0 * h);
  }
  return grad;
}

/// Every |got - want| <= atol + rtol |want|, reporting the first few misses.
inline void expectClose(const float *got, const Vec &want, double atol,
                        double rtol, const char *what) {
  int misses = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double tol = atol + rtol * std::fabs(want[i]);
    if (!(std::fabs(got[i] - want[i]) <= tol) && misses++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want "
                    << want[i] << " (tolerance " << tol << ")";
  }
  EXPECT_EQ(misses, 0) << what << ": " << misses << " of " << want.size()
                       << " elements out of tolerance";
}

inline void expectClose(const std::vector<float> &got, const Vec &want,
                        double atol, double rtol, const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  expectClose(got.data(), want, atol, rtol, what);
}

/// Asserts a call succeeded, printing the runtime's message otherwise.
#define ASSERT_PTRAIN_OK(expr)                                                 \
  do {                                                                         \
    ptrain_status_t s_ = (expr);                                               \
    ASSERT_EQ(s_, PTRAIN_OK) << #expr << ": " << ptrain_status_string(s_)      \
                             << ": " << ptrain_last_error();                   \
  } while (0)

} // namespace ptrain_testing

#endif // PTRAIN_UNITTESTS_RUNTIME_GRADCHECK_H
