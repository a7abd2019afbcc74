//===- PowerSGD.h - PowerSGD phases on the GPU -------------------*- C++ -*-===//
//
// The phases of one PowerSGD power step on device buffers and the current
// stream, split where the data-parallel version all-reduces (Vogels et al.
// 2019, Algorithm 2), as cpu/codecs/PowerSGD.h on the host:
//
//   phaseP:  M = g (+ e), P = M Q0                    -> [all-reduce P]
//   phaseQ:  P = orth(P), Q = M^T P                   -> [all-reduce Q]
//   finish:  out = alpha P Q^T, e = M - beta P Q^T, warm-start Q = beta Q
//
// ptrain_cuda_powersgd_encode_f32 is phaseP, phaseQ, finish(alpha unused,
// beta = 1); the compressed all-reduce (CompressedAllReduce.cu) puts NCCL
// all-reduces between them. None of them synchronizes the stream. Exact path
// ((n + m) r >= n m): the code carries M (P's floats first, then Q's).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CUDA_POWERSGD_H
#define PTRAIN_RUNTIME_CUDA_POWERSGD_H

#include "cpu/codecs/PowerSGD.h"
#include "cuda/Device.h"

namespace ptrain::cuda {

/// The host's shape (batch of n x m matrices, rank r; exact() when the factors are no smaller than the matrix).
using PowerSgdShape = ptrain::runtime::PowerSgdShape;

/// Checks shapes (rank in [1, min(n, m)], sizes within cuBLAS's int).
ptrain_status_t gpuPowersgdCheck(const char *call, const PowerSgdShape &s);

/// M = g + e into `residual` (when given); P = M Q0 into p, Q0 the warm-start `qState` (its all-zero columns
/// redrawn from the seed) or a fresh draw. Exact path: M into p and q. `outM` is M's storage.
ptrain_status_t gpuPowersgdPhaseP(const char *call, const PowerSgdShape &s, const float *g, float *residual,
                                  float *qState, uint64_t seed, float *p, float *q, const float **outM);

/// P = orth(P) (modified Gram-Schmidt per batch entry), then Q = M^T P. Nothing on the exact path.
ptrain_status_t gpuPowersgdPhaseQ(const char *call, const PowerSgdShape &s, const float *m, float *p, float *q);

/// out = alpha P Q^T (when out is given; exact path: alpha times the carried M); residual = M - beta P Q^T
/// (when given; exact path: 0); qState = beta Q (when given; not on the exact path).
ptrain_status_t gpuPowersgdFinish(const char *call, const PowerSgdShape &s, const float *p, const float *q, float alpha,
                                  float *out, float *residual, float beta, float *qState);

/// out[i] = a * x[i] (rounded once; out may be x) on the current stream.
ptrain_status_t scaleF32(const char *call, const float *x, int64_t n, float a, float *out);

} // namespace ptrain::cuda

#endif // PTRAIN_RUNTIME_CUDA_POWERSGD_H
