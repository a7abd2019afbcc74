//===- PowerSGDCodecTest.cpp - PowerSGD encode/decode ---------------------===//
//
// Against an fp64 reference of one power step (Vogels et al. 2019,
// Algorithm 1) from the same Q0, with a stated tolerance for the fp32 BLAS
// path (1e-4 relative to the largest entry); exact results for the exact
// path and for matrices whose rank is at most the codec's.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"
#include "PowerSGDReference.h"

#include <cmath>
#include <string>

namespace {

using Vec = std::vector<double>;

/// fp64 reference: the power step of PowerSGDReference.h, then M' = P Q^T.
void referenceStep(const std::vector<float> &m, const std::vector<float> &q0, int64_t n, int64_t cols, int64_t r,
                   Vec &p, Vec &q, Vec &approx) {
  ptrain::testing::referencePowerStep(Vec(m.begin(), m.end()), q0, n, cols, r, p, q);
  approx.assign(n * cols, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t t = 0; t < cols; ++t)
      for (int64_t j = 0; j < r; ++j)
        approx[i * cols + t] += p[i * r + j] * q[t * r + j];
}

double maxAbs(const std::vector<float> &v) {
  double m = 0;
  for (float x : v)
    m = std::max(m, double(std::fabs(x)));
  return m;
}

TEST(PowerSGDCodec, OneDimensionalTensorTakesTheExactPath) {
  // A 1-D tensor of 10 elements is the 1 x 10 matrix view; rank 1.
  const int64_t m = 10;
  std::vector<float> g = ptrain::testing::randomFloats(m, 61), e = ptrain::testing::randomFloats(m, 62);
  std::vector<float> v(m), p(1), q(m), out(m);
  for (int64_t i = 0; i < m; ++i)
    v[i] = g[i] + e[i];
  ASSERT_PTRAIN_OK(ptrain_powersgd_encode_f32(g.data(), e.data(), nullptr, 1, 1, m, 1, 5, p.data(), q.data()));
  ASSERT_PTRAIN_OK(ptrain_powersgd_decode_f32(p.data(), q.data(), 1, 1, m, 1, out.data()));
  for (int64_t i = 0; i < m; ++i) {
    ASSERT_EQ(out[i], v[i]) << i;
    ASSERT_EQ(e[i], 0.0f) << i;
  }
}

TEST(PowerSGDCodec, Rank2On64x64MatchesTheReference) {
  const int64_t n = 64, m = 64, r = 2;
  std::vector<float> g = ptrain::testing::randomFloats(n * m, 71);
  std::vector<float> q0 = ptrain::testing::randomFloats(m * r, 72);
  std::vector<float> qState = q0, e(n * m, 0.0f), p(n * r), q(m * r), out(n * m);
  ASSERT_PTRAIN_OK(ptrain_powersgd_encode_f32(g.data(), e.data(), qState.data(), 1, n, m, r, 0, p.data(), q.data()));
  ASSERT_PTRAIN_OK(ptrain_powersgd_decode_f32(p.data(), q.data(), 1, n, m, r, out.data()));
  Vec rp, rq, approx;
  referenceStep(g, q0, n, m, r, rp, rq, approx);
  const double tol = 1e-4 * maxAbs(g);
  ptrain::testing::expectClose(p, rp, 1e-4, 0, "P");
  ptrain::testing::expectClose(q, rq, tol * n, 0, "Q");
  ptrain::testing::expectClose(out, approx, tol, 0, "P Q^T");
  // P is orthonormal, the warm-start Q is the new Q, e = M - P Q^T.
  for (int64_t a = 0; a < r; ++a)
    for (int64_t b = 0; b < r; ++b) {
      double dot = 0;
      for (int64_t i = 0; i < n; ++i)
        dot += double(p[i * r + a]) * p[i * r + b];
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-5);
    }
  EXPECT_EQ(qState, q);
  for (int64_t i = 0; i < n * m; ++i)
    ASSERT_NEAR(e[i], g[i] - approx[i], tol) << i;
}

TEST(PowerSGDCodec, LowRankMatricesAreRecoveredAndBatchesAreIndependent) {
  // Three 30 x 20 matrices of rank 2; rank 2 recovers each from a random Q0.
  const int64_t batch = 3, n = 30, m = 20, r = 2;
  std::vector<float> g(batch * n * m);
  std::vector<float> u = ptrain::testing::randomFloats(batch * n * r, 81);
  std::vector<float> w = ptrain::testing::randomFloats(batch * m * r, 82);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t t = 0; t < m; ++t) {
        double s = 0;
        for (int64_t j = 0; j < r; ++j)
          s += double(u[(b * n + i) * r + j]) * w[(b * m + t) * r + j];
        g[(b * n + i) * m + t] = static_cast<float>(s);
      }
  std::vector<float> p(batch * n * r), q(batch * m * r), out(batch * n * m);
  ASSERT_PTRAIN_OK(ptrain_powersgd_encode_f32(g.data(), nullptr, nullptr, batch, n, m, r, 9, p.data(), q.data()));
  ASSERT_PTRAIN_OK(ptrain_powersgd_decode_f32(p.data(), q.data(), batch, n, m, r, out.data()));
  ptrain::testing::expectClose(out, ptrain::testing::toDouble(g), 1e-4 * maxAbs(g), 0, "low-rank M");
  // Entry 1 encoded alone gives the same factors as inside the batch when it
  // starts from the same Q0 (the warm-start state pins Q0).
  std::vector<float> qBatch(batch * m * r, 0.0f), q1(m * r);
  for (int64_t i = 0; i < batch * m * r; ++i)
    qBatch[i] = static_cast<float>((i * 37) % 11) - 5.0f;
  std::vector<float> qAlone(qBatch.begin() + m * r, qBatch.begin() + 2 * m * r);
  std::vector<float> pAlone(n * r), qOut(m * r);
  ASSERT_PTRAIN_OK(ptrain_powersgd_encode_f32(g.data(), nullptr, qBatch.data(), batch, n, m, r, 0, p.data(), q.data()));
  ASSERT_PTRAIN_OK(
      ptrain_powersgd_encode_f32(g.data() + n * m, nullptr, qAlone.data(), 1, n, m, r, 0, pAlone.data(), qOut.data()));
  for (int64_t i = 0; i < n * r; ++i)
    ASSERT_EQ(pAlone[i], p[n * r + i]) << i;
}

TEST(PowerSGDCodec, RankAboveMinNMIsRejected) {
  std::vector<float> g(12, 1.0f), p(16), q(12);
  EXPECT_EQ(ptrain_powersgd_encode_f32(g.data(), nullptr, nullptr, 1, 4, 3, 4, 0, p.data(), q.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("rank 4 must be in [1, min(n, m) = 3] for the 4 x 3 matrix"),
            std::string::npos)
      << ptrain_last_error();
}

TEST(PowerSGDCodec, AllZeroGradientGivesZerosNotNaN) {
  const int64_t n = 16, m = 8, r = 3;
  std::vector<float> g(n * m, 0.0f), e(n * m, 0.0f), qState(m * r, 0.0f), p(n * r), q(m * r), out(n * m);
  for (int step = 0; step < 2; ++step) {
    ASSERT_PTRAIN_OK(ptrain_powersgd_encode_f32(g.data(), e.data(), qState.data(), 1, n, m, r, 3, p.data(), q.data()));
    ASSERT_PTRAIN_OK(ptrain_powersgd_decode_f32(p.data(), q.data(), 1, n, m, r, out.data()));
    for (float x : p)
      ASSERT_EQ(x, 0.0f);
    for (float x : out)
      ASSERT_EQ(x, 0.0f);
    for (float x : e)
      ASSERT_EQ(x, 0.0f);
  }
  // The zero Q state is redrawn, so a later non-zero gradient is not lost.
  std::vector<float> g2 = ptrain::testing::randomFloats(n * m, 91);
  ASSERT_PTRAIN_OK(ptrain_powersgd_encode_f32(g2.data(), nullptr, qState.data(), 1, n, m, r, 3, p.data(), q.data()));
  EXPECT_GT(maxAbs(q), 0.0);
}

} // namespace

namespace {

TEST(PowerSGDCodec, PhasesComposeToEncodeThenDecode) {
  // With no all-reduce between them and alpha = beta = 1, the phases give
  // the one-party encode and decode bit for bit, warm start and residual
  // included, on the low-rank and on the exact path.
  struct Case {
    int64_t n, m, r;
  };
  for (Case c : {Case{20, 12, 3}, Case{1, 9, 1}}) {
    const int64_t nm = c.n * c.m;
    std::vector<float> g = ptrain::testing::randomFloats(nm, 101), e0 = ptrain::testing::randomFloats(nm, 102);
    std::vector<float> q0 = ptrain::testing::randomFloats(c.m * c.r, 103);
    std::vector<float> e1 = e0, qs1 = q0, p1(c.n * c.r), q1(c.m * c.r), out1(nm);
    ASSERT_PTRAIN_OK(
        ptrain_powersgd_encode_f32(g.data(), e1.data(), qs1.data(), 1, c.n, c.m, c.r, 4, p1.data(), q1.data()));
    ASSERT_PTRAIN_OK(ptrain_powersgd_decode_f32(p1.data(), q1.data(), 1, c.n, c.m, c.r, out1.data()));
    std::vector<float> e2 = e0, qs2 = q0, p2(c.n * c.r), q2(c.m * c.r), out2(nm);
    ASSERT_PTRAIN_OK(
        ptrain_powersgd_phase_p_f32(g.data(), e2.data(), qs2.data(), 1, c.n, c.m, c.r, 4, p2.data(), q2.data()));
    ASSERT_PTRAIN_OK(ptrain_powersgd_phase_q_f32(e2.data(), 1, c.n, c.m, c.r, p2.data(), q2.data()));
    ASSERT_PTRAIN_OK(ptrain_powersgd_finish_f32(p2.data(), q2.data(), 1, c.n, c.m, c.r, 1.0f, 1.0f, out2.data(),
                                                e2.data(), qs2.data()));
    EXPECT_EQ(p2, p1);
    EXPECT_EQ(q2, q1);
    EXPECT_EQ(out2, out1);
    EXPECT_EQ(e2, e1);
    EXPECT_EQ(qs2, qs1);
  }
}

} // namespace
