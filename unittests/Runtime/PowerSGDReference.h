//===- PowerSGDReference.h - fp64 reference of one PowerSGD step -*- C++ -*-===//
//
// P = M Q0, classical Gram-Schmidt on P's columns, Q = M^T P (Vogels et al.,
// NeurIPS 2019, Algorithm 1), in fp64 on a row-major n x m matrix; the tests
// compare the fp32 BLAS kernels and the compressed all-reduce against it.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_UNITTESTS_RUNTIME_POWERSGDREFERENCE_H
#define PTRAIN_UNITTESTS_RUNTIME_POWERSGDREFERENCE_H

#include <cmath>
#include <cstdint>
#include <vector>

namespace ptrain::testing {

/// Fills p [n, r] and q [m, r] from mat [n, m] and q0 [m, r].
inline void referencePowerStep(const std::vector<double> &mat, const std::vector<float> &q0, int64_t n, int64_t m,
                               int64_t r, std::vector<double> &p, std::vector<double> &q) {
  p.assign(n * r, 0.0);
  q.assign(m * r, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < r; ++j)
      for (int64_t t = 0; t < m; ++t)
        p[i * r + j] += mat[i * m + t] * q0[t * r + j];
  for (int64_t j = 0; j < r; ++j) {
    for (int64_t prev = 0; prev < j; ++prev) {
      double dot = 0;
      for (int64_t i = 0; i < n; ++i)
        dot += p[i * r + j] * p[i * r + prev];
      for (int64_t i = 0; i < n; ++i)
        p[i * r + j] -= dot * p[i * r + prev];
    }
    double norm = 0;
    for (int64_t i = 0; i < n; ++i)
      norm += p[i * r + j] * p[i * r + j];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < n; ++i)
      p[i * r + j] = norm > 0 ? p[i * r + j] / norm : 0.0;
  }
  for (int64_t t = 0; t < m; ++t)
    for (int64_t j = 0; j < r; ++j)
      for (int64_t i = 0; i < n; ++i)
        q[t * r + j] += mat[i * m + t] * p[i * r + j];
}

} // namespace ptrain_testing

#endif // PTRAIN_UNITTESTS_RUNTIME_POWERSGDREFERENCE_H
