//===- CrossEntropyTest.cpp - Cross-entropy vs an fp64 reference ----------===//

#include "GradCheck.h"

#include <cmath>
#include <string>

using namespace ptrain::testing;

namespace {

constexpr int64_t kN = 5, kV = 7;

TEST(CrossEntropy, LossAndGradientMatchTheReference) {
  auto logits = randomFloats(kN * kV, 71, -3.0f, 3.0f);
  const int32_t targets[kN] = {3, -1, 0, 6, 3}; // Row 1 is padding.
  RefFn ref = [&](const std::vector<Vec> &v) {
    double total = 0.0;
    int count = 0;
    for (int64_t i = 0; i < kN; ++i) {
      if (targets[i] < 0)
        continue;
      double sum = 0.0;
      for (int64_t j = 0; j < kV; ++j)
        sum += std::exp(v[0][i * kV + j]);
      total += std::log(sum) - v[0][i * kV + targets[i]];
      ++count;
    }
    return Vec{total / count};
  };
  float loss = 0.0f;
  std::vector<float> lse(kN), dlogits(kN * kV);
  ASSERT_PTRAIN_OK(ptrain_cross_entropy_fwd_f32(logits.data(), targets, kN, kV, &loss, lse.data()));
  EXPECT_NEAR(loss, ref({toDouble(logits)})[0], 1e-6);
  const float dloss = 0.75f;
  ASSERT_PTRAIN_OK(ptrain_cross_entropy_bwd_f32(dloss, logits.data(), targets, lse.data(), kN, kV, dlogits.data()));
  expectClose(dlogits, numericGrad(ref, {toDouble(logits)}, 0, Vec{dloss}), 1e-6, 1e-4, "dlogits");
}

TEST(CrossEntropy, RowGroupsGiveEachRowsBitsAlone) {
  // The forward sums four rows' exponentials at a time (four fp64 chains, each in vocabulary order, in chunks
  // of 64): every row of a 6-row call over a vocabulary of 150 has the log-sum-exp bits of a one-row call.
  constexpr int64_t kRows = 6, kVocab = 150;
  auto logits = randomFloats(kRows * kVocab, 93, -8.0f, 8.0f);
  std::vector<int32_t> targets = {5, 149, 0, 77, 12, 3};
  std::vector<float> lse(kRows);
  float loss = 0.0f, oneLoss = 0.0f, oneLse = 0.0f;
  ASSERT_PTRAIN_OK(ptrain_cross_entropy_fwd_f32(logits.data(), targets.data(), kRows, kVocab, &loss, lse.data()));
  double total = 0.0;
  for (int64_t r = 0; r < kRows; ++r) {
    ASSERT_PTRAIN_OK(
        ptrain_cross_entropy_fwd_f32(logits.data() + r * kVocab, &targets[r], 1, kVocab, &oneLoss, &oneLse));
    ASSERT_EQ(lse[r], oneLse) << "row " << r;
    total += static_cast<double>(oneLse) - logits[r * kVocab + targets[r]];
  }
  EXPECT_NEAR(loss, total / kRows, 1e-6);
}

TEST(CrossEntropy, UniformLogitsGiveLogVocab) {
  std::vector<float> logits(2 * 256, 0.0f), lse(2);
  const int32_t targets[2] = {17, 255};
  float loss = 0.0f;
  ASSERT_PTRAIN_OK(ptrain_cross_entropy_fwd_f32(logits.data(), targets, 2, 256, &loss, lse.data()));
  EXPECT_NEAR(loss, std::log(256.0), 1e-6);
}

TEST(CrossEntropy, TargetBeyondTheVocabularyIsAnError) {
  std::vector<float> logits(4), lse(2);
  const int32_t targets[2] = {1, 2};
  float loss = 0.0f;
  EXPECT_EQ(ptrain_cross_entropy_fwd_f32(logits.data(), targets, 2, 2, &loss, lse.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("targets[1] = 2"), std::string::npos) << ptrain_last_error();
}

TEST(CrossEntropy, WeightedIgnoreIndexMeanAndSumMatchTheReference) {
  // torch.nn.functional.cross_entropy(weight=w, ignore_index=-100): sum(w[t] nll) / sum(w[t]) over the rows
  // whose target is not -100 (rows 1 and 4); reduction sum without the division.
  auto logits = randomFloats(kN * kV, 72, -3.0f, 3.0f);
  const int32_t targets[kN] = {3, -100, 0, 6, -100};
  const float weights[kV] = {0.5f, 1.0f, 1.5f, 2.0f, 0.25f, 1.0f, 3.0f};
  for (int32_t sum = 0; sum <= 1; ++sum) {
    RefFn ref = [&](const std::vector<Vec> &v) {
      double total = 0.0, weightSum = 0.0;
      for (int64_t i = 0; i < kN; ++i) {
        if (targets[i] == -100)
          continue;
        double e = 0.0;
        for (int64_t j = 0; j < kV; ++j)
          e += std::exp(v[0][i * kV + j]);
        total += weights[targets[i]] * (std::log(e) - v[0][i * kV + targets[i]]);
        weightSum += weights[targets[i]];
      }
      return Vec{sum ? total : total / weightSum};
    };
    float loss = 0.0f;
    std::vector<float> lse(kN), dlogits(kN * kV);
    ASSERT_PTRAIN_OK(ptrain_cross_entropy_weighted_fwd_f32(logits.data(), targets, weights, kN, kV, 1, -100, sum, &loss,
                                                           lse.data()));
    EXPECT_NEAR(loss, ref({toDouble(logits)})[0], 1e-6) << "reduction_sum " << sum;
    const float dloss = 0.75f;
    ASSERT_PTRAIN_OK(ptrain_cross_entropy_weighted_bwd_f32(dloss, logits.data(), targets, weights, lse.data(), kN, kV,
                                                           1, -100, sum, dlogits.data()));
    expectClose(dlogits, numericGrad(ref, {toDouble(logits)}, 0, Vec{dloss}), 1e-6, 1e-4, "dlogits");
    for (int64_t j = 0; j < kV; ++j)
      EXPECT_EQ(dlogits[1 * kV + j], 0.0f) << "ignored row 1, class " << j;
  }
}

TEST(CrossEntropy, WeightedWithoutOptionsIsThePlainKernel) {
  // No weights, no ignore_index, mean: bit for bit the unweighted kernel (a negative target is then an error).
  auto logits = randomFloats(kN * kV, 73, -3.0f, 3.0f);
  const int32_t targets[kN] = {3, 1, 0, 6, 3};
  float plain = 0.0f, weighted = 0.0f;
  std::vector<float> lse(kN), lse2(kN), d(kN * kV), d2(kN * kV);
  ASSERT_PTRAIN_OK(ptrain_cross_entropy_fwd_f32(logits.data(), targets, kN, kV, &plain, lse.data()));
  ASSERT_PTRAIN_OK(
      ptrain_cross_entropy_weighted_fwd_f32(logits.data(), targets, nullptr, kN, kV, 0, 0, 0, &weighted, lse2.data()));
  EXPECT_EQ(plain, weighted);
  ASSERT_PTRAIN_OK(ptrain_cross_entropy_bwd_f32(0.5f, logits.data(), targets, lse.data(), kN, kV, d.data()));
  ASSERT_PTRAIN_OK(ptrain_cross_entropy_weighted_bwd_f32(0.5f, logits.data(), targets, nullptr, lse.data(), kN, kV, 0,
                                                         0, 0, d2.data()));
  EXPECT_EQ(d, d2);
  const int32_t padded[kN] = {3, -1, 0, 6, 3};
  EXPECT_EQ(
      ptrain_cross_entropy_weighted_fwd_f32(logits.data(), padded, nullptr, kN, kV, 0, 0, 0, &weighted, lse2.data()),
      PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("ptrain_cross_entropy_weighted_fwd_f32"), std::string::npos)
      << ptrain_last_error();
  // Every row ignored: the mean is NaN (0 / 0, as torch), its gradient 0.
  const int32_t none[kN] = {-100, -100, -100, -100, -100};
  ASSERT_PTRAIN_OK(
      ptrain_cross_entropy_weighted_fwd_f32(logits.data(), none, nullptr, kN, kV, 1, -100, 0, &weighted, lse2.data()));
  EXPECT_TRUE(std::isnan(weighted));
}

} // namespace
