//===- PowerSGD.cpp - PowerSGD encode and decode through CBLAS ------------===//
//
// #ptrain.powersgd on CPU: the phases of PowerSGD.h with cblas_sgemm for the
// three products (P = M Q, Q = M^T P, M' = P Q^T) and BLAS 1/2 calls
// (snrm2, sgemv, sger) for modified Gram-Schmidt, looped over the batch of
// same-shape matrices. The initial Q (and any all-zero column of a
// warm-start Q, which would otherwise stay zero forever) is standard normal
// (Box-Muller on SplitMix64), drawn from stream batch * rank + column of the
// seed, so every data-parallel rank starts from the same Q.
//
//===----------------------------------------------------------------------===//

#include "cpu/codecs/PowerSGD.h"
#include "cpu/codecs/Random.h"
#include "cpu/codecs/Scratch.h"

#include <cblas.h>
#include <climits>
#include <cmath>
#include <cstring>

using ptrain::runtime::fail;

namespace ptrain::runtime {
namespace {

/// Fills column j of batch entry b of Q [batch, m, rank] with N(0, 1).
void drawColumn(const PowerSgdShape &s, uint64_t seed, int64_t b, int64_t j, float *q) {
  SplitMix64 gen = SplitMix64::forStream(seed, static_cast<uint64_t>(b * s.rank + j));
  float *col = q + b * s.m * s.rank + j;
  for (int64_t i = 0; i < s.m; ++i) {
    const double u1 = gen.unitOpen(), u2 = gen.unitOpen();
    col[i * s.rank] = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
}

} // namespace

ptrain_status_t powersgdCheck(const char *call, const PowerSgdShape &s) {
  if (s.batch < 1 || s.n < 1 || s.m < 1)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "batch, n and m must be >= 1, got %lld, %lld, %lld",
                static_cast<long long>(s.batch), static_cast<long long>(s.n), static_cast<long long>(s.m));
  if (s.n > INT_MAX || s.m > INT_MAX || s.n > INT64_MAX / s.m / s.batch)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "the %lld x %lld matrix is too large for CBLAS's int",
                static_cast<long long>(s.n), static_cast<long long>(s.m));
  const int64_t minNM = s.n < s.m ? s.n : s.m;
  // DESIGN.md decision 4: the compiler clamps, the verifier rejects, the
  // runtime returns an error for anything else.
  if (s.rank < 1 || s.rank > minNM)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                "rank %lld must be in [1, min(n, m) = %lld] for the %lld x "
                "%lld matrix",
                static_cast<long long>(s.rank), static_cast<long long>(minNM), static_cast<long long>(s.n),
                static_cast<long long>(s.m));
  return PTRAIN_OK;
}

ptrain_status_t powersgdPhaseP(const char *call, const PowerSgdShape &s, const float *g, float *residual, float *qState,
                               uint64_t seed, float *p, float *q, const float **outM) {
  const int64_t numel = s.numel();
  const float *m = g;
  if (residual) {
    for (int64_t i = 0; i < numel; ++i)
      residual[i] += g[i];
    m = residual;
  }
  *outM = m;
  if (s.exact()) {
    const int64_t inP = numel < s.pCount() ? numel : s.pCount();
    std::memcpy(p, m, static_cast<size_t>(inP) * sizeof(float));
    std::memset(p + inP, 0, static_cast<size_t>(s.pCount() - inP) * sizeof(float));
    std::memcpy(q, m + inP, static_cast<size_t>(numel - inP) * sizeof(float));
    std::memset(q + (numel - inP), 0, static_cast<size_t>(s.qCount() - (numel - inP)) * sizeof(float));
    return PTRAIN_OK;
  }
  float *q0 = qState;
  if (!q0) {
    q0 = scratchArray<float>(ScratchSlot::Factor, s.qCount());
    if (!q0)
      return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "cannot allocate the initial Q");
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t j = 0; j < s.rank; ++j)
        drawColumn(s, seed, b, j, q0);
  } else {
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t j = 0; j < s.rank; ++j) {
        const float *col = q0 + b * s.m * s.rank + j;
        bool zero = true;
        for (int64_t i = 0; zero && i < s.m; ++i)
          zero = col[i * s.rank] == 0.0f;
        if (zero)
          drawColumn(s, seed, b, j, q0);
      }
  }
  const int n = static_cast<int>(s.n), mm = static_cast<int>(s.m), r = static_cast<int>(s.rank);
  for (int64_t b = 0; b < s.batch; ++b)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, r, mm, 1.0f, m + b * s.n * s.m, mm, q0 + b * s.m * s.rank,
                r, 0.0f, p + b * s.n * s.rank, r);
  return PTRAIN_OK;
}

ptrain_status_t powersgdPhaseQ(const char *call, const PowerSgdShape &s, const float *m, float *p, float *q) {
  if (s.exact())
    return PTRAIN_OK;
  const int n = static_cast<int>(s.n), mm = static_cast<int>(s.m), r = static_cast<int>(s.rank);
  float *w = scratchArray<float>(ScratchSlot::Bitmap, s.rank);
  if (!w)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "cannot allocate scratch");
  for (int64_t b = 0; b < s.batch; ++b) {
    float *pb = p + b * s.n * s.rank;
    // Modified Gram-Schmidt on the columns of the row-major n x r P.
    for (int j = 0; j < r; ++j) {
      float *col = pb + j;
      const float norm = cblas_snrm2(n, col, r);
      const float inv = norm > 0.0f ? 1.0f / norm : 0.0f;
      if (std::isfinite(inv) && inv > 0.0f) {
        cblas_sscal(n, inv, col, r);
      } else {
        for (int i = 0; i < n; ++i)
          col[static_cast<int64_t>(i) * r] = 0.0f;
        continue;
      }
      if (j + 1 < r) {
        cblas_sgemv(CblasRowMajor, CblasTrans, n, r - j - 1, 1.0f, pb + j + 1, r, col, r, 0.0f, w, 1);
        cblas_sger(CblasRowMajor, n, r - j - 1, -1.0f, col, r, w, 1, pb + j + 1, r);
      }
    }
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, mm, r, n, 1.0f, m + b * s.n * s.m, mm, pb, r, 0.0f,
                q + b * s.m * s.rank, r);
  }
  return PTRAIN_OK;
}

void powersgdFinish(const PowerSgdShape &s, const float *p, const float *q, float alpha, float *out, float *residual,
                    float beta, float *qState) {
  const int64_t numel = s.numel();
  if (s.exact()) {
    const int64_t inP = numel < s.pCount() ? numel : s.pCount();
    if (out) {
      for (int64_t i = 0; i < inP; ++i)
        out[i] = alpha * p[i];
      for (int64_t i = inP; i < numel; ++i)
        out[i] = alpha * q[i - inP];
    }
    if (residual)
      std::memset(residual, 0, static_cast<size_t>(numel) * sizeof(float));
    return;
  }
  const int n = static_cast<int>(s.n), mm = static_cast<int>(s.m), r = static_cast<int>(s.rank);
  for (int64_t b = 0; b < s.batch; ++b) {
    const float *pb = p + b * s.n * s.rank, *qb = q + b * s.m * s.rank;
    if (out)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, mm, r, alpha, pb, r, qb, r, 0.0f, out + b * s.n * s.m,
                  mm);
    if (residual)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, mm, r, -beta, pb, r, qb, r, 1.0f,
                  residual + b * s.n * s.m, mm);
  }
  if (qState) {
    if (beta == 1.0f) {
      if (qState != q)
        std::memcpy(qState, q, static_cast<size_t>(s.qCount()) * sizeof(float));
    } else {
      for (int64_t i = 0; i < s.qCount(); ++i)
        qState[i] = beta * q[i];
    }
  }
}

} // namespace ptrain::runtime

using ptrain::runtime::PowerSgdShape;

extern "C" ptrain_status_t ptrain_powersgd_encode_f32(const float *g, float *residual, float *q_state, int64_t batch,
                                                      int64_t n, int64_t m, int64_t rank, uint64_t seed, float *out_p,
                                                      float *out_q) {
  const PowerSgdShape s{batch, n, m, rank};
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::powersgdCheck(__func__, s));
  PTRAIN_CHECK_PTR(g);
  PTRAIN_CHECK_PTR(out_p);
  PTRAIN_CHECK_PTR(out_q);
  const float *mat = nullptr;
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::powersgdPhaseP(__func__, s, g, residual, q_state, seed, out_p, out_q, &mat));
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::powersgdPhaseQ(__func__, s, mat, out_p, out_q));
  ptrain::runtime::powersgdFinish(s, out_p, out_q, 1.0f, nullptr, residual, 1.0f, s.exact() ? nullptr : q_state);
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_powersgd_decode_f32(const float *p, const float *q, int64_t batch, int64_t n,
                                                      int64_t m, int64_t rank, float *out) {
  const PowerSgdShape s{batch, n, m, rank};
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::powersgdCheck(__func__, s));
  PTRAIN_CHECK_PTR(p);
  PTRAIN_CHECK_PTR(q);
  PTRAIN_CHECK_PTR(out);
  ptrain::runtime::powersgdFinish(s, p, q, 1.0f, out, nullptr, 1.0f, nullptr);
  return PTRAIN_OK;
}

// The phases, for a caller that runs the all-reduces of a compressed all-reduce itself (the multi-rank
// executor, lib/Interpreter/Codecs.cpp): p -> all-reduce P -> q -> all-reduce Q -> finish.
extern "C" ptrain_status_t ptrain_powersgd_phase_p_f32(const float *g, float *residual, float *q_state, int64_t batch,
                                                       int64_t n, int64_t m, int64_t rank, uint64_t seed, float *out_p,
                                                       float *out_q) {
  const PowerSgdShape s{batch, n, m, rank};
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::powersgdCheck(__func__, s));
  PTRAIN_CHECK_PTR(g);
  PTRAIN_CHECK_PTR(out_p);
  PTRAIN_CHECK_PTR(out_q);
  const float *mat = nullptr;
  return ptrain::runtime::powersgdPhaseP(__func__, s, g, residual, q_state, seed, out_p, out_q, &mat);
}

extern "C" ptrain_status_t ptrain_powersgd_phase_q_f32(const float *mat, int64_t batch, int64_t n, int64_t m,
                                                       int64_t rank, float *p, float *out_q) {
  const PowerSgdShape s{batch, n, m, rank};
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::powersgdCheck(__func__, s));
  PTRAIN_CHECK_PTR(mat);
  PTRAIN_CHECK_PTR(p);
  PTRAIN_CHECK_PTR(out_q);
  return ptrain::runtime::powersgdPhaseQ(__func__, s, mat, p, out_q);
}

extern "C" ptrain_status_t ptrain_powersgd_finish_f32(const float *p, const float *q, int64_t batch, int64_t n,
                                                      int64_t m, int64_t rank, float alpha, float beta, float *out,
                                                      float *residual, float *q_state) {
  const PowerSgdShape s{batch, n, m, rank};
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::powersgdCheck(__func__, s));
  PTRAIN_CHECK_PTR(p);
  PTRAIN_CHECK_PTR(q);
  ptrain::runtime::powersgdFinish(s, p, q, alpha, out, residual, beta, s.exact() ? nullptr : q_state);
  return PTRAIN_OK;
}
