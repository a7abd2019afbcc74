//===- AttentionTest.cpp - Multi-head attention vs an fp64 reference ------===//

#include "GradCheck.h"

#include <cmath>

using namespace ptrain::testing;

namespace {

constexpr int64_t kB = 2, kH = 2, kS = 5, kD = 3;

/// O = softmax(scale Q K^T [causal]) V per (batch, head), all in fp64.
Vec attentionRef(const std::vector<Vec> &v, double scale, bool causal) {
  const Vec &q = v[0], &k = v[1], &val = v[2];
  Vec o(kB * kH * kS * kD, 0.0);
  for (int64_t bh = 0; bh < kB * kH; ++bh) {
    const int64_t base = bh * kS * kD;
    for (int64_t i = 0; i < kS; ++i) {
      const int64_t valid = causal ? i + 1 : kS;
      Vec s(valid);
      double mx = -INFINITY, sum = 0.0;
      for (int64_t j = 0; j < valid; ++j) {
        double dot = 0.0;
        for (int64_t d = 0; d < kD; ++d)
          dot += q[base + i * kD + d] * k[base + j * kD + d];
        s[j] = scale * dot;
        mx = std::fmax(mx, s[j]);
      }
      for (int64_t j = 0; j < valid; ++j)
        sum += (s[j] = std::exp(s[j] - mx));
      for (int64_t j = 0; j < valid; ++j)
        for (int64_t d = 0; d < kD; ++d)
          o[base + i * kD + d] += s[j] / sum * val[base + j * kD + d];
    }
  }
  return o;
}

class AttentionMask : public ::testing::TestWithParam<bool> {};

TEST_P(AttentionMask, ForwardAndBackwardMatchTheReference) {
  const bool causal = GetParam();
  const int64_t n = kB * kH * kS * kD;
  const float scale = 1.0f / std::sqrt(static_cast<float>(kD));
  auto q = randomFloats(n, 61), k = randomFloats(n, 62),
       v = randomFloats(n, 63), dO = randomFloats(n, 64);
  std::vector<float> o(n), probs(kB * kH * kS * kS);
  ASSERT_PTRAIN_OK(ptrain_attention_fwd_f32(q.data(), k.data(), v.data(), kB,
                                            kH, kS, kD, scale, causal, o.data(),
                                            probs.data()));
  RefFn ref = [&](const std::vector<Vec> &in) {
    return attentionRef(in, scale, causal);
  };
  const std::vector<Vec> in = {toDouble(q), toDouble(k), toDouble(v)};
  expectClose(o, ref(in), 1e-5, 1e-5, "O");

  std::vector<float> workspace(probs.size()), dq(n), dk(n), dv(n);
  ASSERT_PTRAIN_OK(ptrain_attention_bwd_f32(
      dO.data(), q.data(), k.data(), v.data(), probs.data(), kB, kH, kS, kD,
      scale, workspace.data(), dq.data(), dk.data(), dv.data()));
  const Vec w = toDouble(dO);
  expectClose(dq, numericGrad(ref, in, 0, w), 1e-4, 1e-3, "dQ");
  expectClose(dk, numericGrad(ref, in, 1, w), 1e-4, 1e-3, "dK");
  expectClose(dv, numericGrad(ref, in, 2, w), 1e-4, 1e-3, "dV");
}

INSTANTIATE_TEST_SUITE_P(CausalAndFull, AttentionMask,
                         ::testing::Values(false, true));

TEST(Attention, CausalFirstQueryOnlySeesItself) {
  const int64_t n = kS * kD;
  auto q = randomFloats(n, 65), k = randomFloats(n, 66), v = randomFloats(n, 67);
  std::vector<float> o(n), probs(kS * kS);
  ASSERT_PTRAIN_OK(ptrain_attention_fwd_f32(q.data(), k.data(), v.data(), 1, 1,
                                            kS, kD, 1.0f, 1, o.data(),
                                            probs.data()));
  EXPECT_EQ(probs[0], 1.0f);
  for (int64_t d = 0; d < kD; ++d)
    EXPECT_FLOAT_EQ(o[d], v[d]);
}

} // namespace
