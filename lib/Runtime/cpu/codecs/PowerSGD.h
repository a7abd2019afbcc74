//===- PowerSGD.h - PowerSGD phases shared with the collectives -*- C++ -*-===//
//
// The phases of one PowerSGD power step (Vogels, Karimireddy, Jaggi,
// "PowerSGD", NeurIPS 2019, Algorithm 1), split where the data-parallel
// version all-reduces (Algorithm 2; Optimus-CC section 5: all-reduce P,
// orthogonalize, Q = M^T P, all-reduce Q):
//
//   phaseP:  M = g (+ e), P = M Q0                    -> [all-reduce P]
//   phaseQ:  P = orth(P), Q = M^T P                   -> [all-reduce Q]
//   finish:  out = alpha P Q^T, e = M - beta P Q^T, warm-start Q = beta Q
//
// On the exact path ((n + m) r >= n m: the factors are no smaller than the
// matrix, 1-D tensors included) the code buffers carry M itself: the
// batch * n * m values of M, row-major, fill P's batch * n * r floats first
// and continue in Q's; the rest is zero. Sums of such codes are sums of M, so
// the code stays summable; orthogonalization is skipped and e becomes 0.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_CODECS_POWERSGD_H
#define PTRAIN_RUNTIME_CPU_CODECS_POWERSGD_H

#include "common/Status.h"

namespace ptrain::runtime {

struct PowerSgdShape {
  int64_t batch = 1, n = 1, m = 1, rank = 1;
  bool exact() const { return (n + m) * rank >= n * m; }
  int64_t pCount() const { return batch * n * rank; }
  int64_t qCount() const { return batch * m * rank; }
  int64_t numel() const { return batch * n * m; }
  /// The exact path's code floats that carry M, for a code whose Q section starts `qOffsetFloats` floats in
  /// (the layout's offset[1] / 4): M's values fill P first, so numel() where they fit in P, else P's section
  /// with its alignment padding (zero on every rank) and M's rest in Q. The exact path all-reduces only these,
  /// not the zero tail of the (n + m) r code (issue 25: the timing model prices n m floats).
  int64_t exactCodeFloats(int64_t qOffsetFloats) const {
    return numel() <= pCount() ? numel() : qOffsetFloats + (numel() - pCount());
  }
};

/// Checks shapes (rank in [1, min(n, m)], sizes within BLAS's int).
ptrain_status_t powersgdCheck(const char *call, const PowerSgdShape &s);

/// M = g + e written into `residual` (when given); P = M Q0 into p, with Q0
/// the warm-start `qState` (zero columns redrawn from the seed) or, without
/// one, drawn from `seed`. Exact path: M into p and q. `outM` is M's storage
/// (residual, or g without error feedback).
ptrain_status_t powersgdPhaseP(const char *call, const PowerSgdShape &s, const float *g, float *residual, float *qState,
                               uint64_t seed, float *p, float *q, const float **outM);

/// P = orth(P) (modified Gram-Schmidt per batch entry; a zero column stays
/// zero, so an all-zero gradient gives no NaN), then Q = M^T P.
ptrain_status_t powersgdPhaseQ(const char *call, const PowerSgdShape &s, const float *m, float *p, float *q);

/// out = alpha P Q^T (exact path: alpha times the carried M); when given,
/// residual = M - beta P Q^T (exact path: 0); when given, qState = beta Q.
void powersgdFinish(const PowerSgdShape &s, const float *p, const float *q, float alpha, float *out, float *residual,
                    float beta, float *qState);

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_CODECS_POWERSGD_H
