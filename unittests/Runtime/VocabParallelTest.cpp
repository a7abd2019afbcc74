//===- VocabParallelTest.cpp - Vocabulary-parallel kernels, casts, gathers, log-softmax ===//
//
// The rank-local kernels of cpu/VocabParallel.cpp recombined over their parts equal the unsplit embedding
// and cross-entropy; padded columns are masked; the kernels of cpu/Selection.cpp and cpu/LogSoftmax.cpp
// against known answers; bad ids, labels, parts and casts are errors that leave the output untouched.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include <algorithm>
#include <cmath>
#include <string>

using namespace ptrain::testing;

namespace {

// A vocabulary of 5 padded to 6 over 2 parts of 3 rows, hidden 2; positions 4.
constexpr int64_t kRows = 3, kParts = 2, kVocab = 5, kDim = 2, kN = 4;

TEST(VocabParallel, EmbeddingPartsSumToTheLookupAndTheirGradientsToTheScatter) {
  std::vector<float> table = randomFloats(kVocab * kDim, 7);
  table.resize(kRows * kParts * kDim, 0.0f); // the padded row
  const std::vector<int64_t> ids = {4, 0, 2, 3};
  std::vector<float> sum(kN * kDim, 0.0f), dy = randomFloats(kN * kDim, 8), dtable;
  for (int64_t part = 0; part < kParts; ++part) {
    std::vector<float> y(kN * kDim, -1.0f), dt(kRows * kDim, -1.0f);
    ASSERT_PTRAIN_OK(ptrain_vocab_parallel_embedding_fwd_f32(table.data() + part * kRows * kDim, ids.data(), kN, kRows,
                                                             kDim, part, kParts, y.data()));
    for (size_t i = 0; i < y.size(); ++i)
      sum[i] += y[i];
    ASSERT_PTRAIN_OK(
        ptrain_vocab_parallel_embedding_bwd_f32(dy.data(), ids.data(), kN, kRows, kDim, part, kParts, dt.data()));
    dtable.insert(dtable.end(), dt.begin(), dt.end());
  }
  for (int64_t i = 0; i < kN; ++i)
    for (int64_t d = 0; d < kDim; ++d) {
      EXPECT_EQ(sum[i * kDim + d], table[ids[i] * kDim + d]);
      EXPECT_EQ(dtable[ids[i] * kDim + d], dy[i * kDim + d]); // every id once: the row is dy's
    }
  for (int64_t r : {1, 5})
    EXPECT_EQ(dtable[r * kDim], 0.0f) << "row " << r << " has no id";
}

TEST(VocabParallel, CrossEntropyPartsGiveTheLossAndItsGradientWithPaddingMasked) {
  std::vector<float> logits = randomFloats(kN * kParts * kRows, 9, -3.0f, 3.0f); // [n, 6], column 5 padded
  const std::vector<int64_t> labels = {4, 0, 2, 3};
  // The global maximum over the real columns, as the step's all-gathered maxima give it (any shift works).
  std::vector<float> max(kN), sumExp(kN, 0.0f), target(kN, 0.0f);
  for (int64_t i = 0; i < kN; ++i)
    max[i] = *std::max_element(logits.begin() + i * 6, logits.begin() + i * 6 + 6);
  std::vector<std::vector<float>> cols(kParts);
  for (int64_t part = 0; part < kParts; ++part) {
    for (int64_t i = 0; i < kN; ++i)
      cols[part].insert(cols[part].end(), logits.begin() + i * 6 + part * kRows,
                        logits.begin() + i * 6 + (part + 1) * kRows);
    std::vector<float> s(kN), t(kN);
    ASSERT_PTRAIN_OK(ptrain_vocab_parallel_ce_parts_fwd_f32(cols[part].data(), labels.data(), max.data(), kN, kRows,
                                                            kVocab, part, kParts, s.data(), t.data()));
    for (int64_t i = 0; i < kN; ++i) {
      sumExp[i] += s[i];
      target[i] += t[i];
    }
  }
  for (int64_t i = 0; i < kN; ++i) {
    double lse = 0.0;
    for (int64_t c = 0; c < kVocab; ++c) // the padded column 5 is not in the sum
      lse += std::exp(double(logits[i * 6 + c]) - max[i]);
    EXPECT_NEAR(std::log(sumExp[i]) - target[i], std::log(lse) - (logits[i * 6 + labels[i]] - max[i]), 1e-6);
  }
  // d loss / d logits of the mean loss: d_sum = 1 / (N sum), d_target = -1 / N gives (softmax - onehot) / N.
  std::vector<float> dSum(kN), dTarget(kN, -1.0f / kN);
  for (int64_t i = 0; i < kN; ++i)
    dSum[i] = 1.0f / (kN * sumExp[i]);
  for (int64_t part = 0; part < kParts; ++part) {
    std::vector<float> d(kN * kRows, -1.0f);
    ASSERT_PTRAIN_OK(ptrain_vocab_parallel_ce_parts_bwd_f32(dSum.data(), dTarget.data(), cols[part].data(),
                                                            labels.data(), max.data(), kN, kRows, kVocab, part, kParts,
                                                            d.data()));
    for (int64_t i = 0; i < kN; ++i)
      for (int64_t c = 0; c < kRows; ++c) {
        const int64_t g = part * kRows + c;
        const double p = g < kVocab ? std::exp(double(logits[i * 6 + g]) - max[i]) / sumExp[i] : 0.0;
        EXPECT_NEAR(d[i * kRows + c], (p - (g == labels[i])) / kN, 1e-7) << "row " << i << " column " << g;
      }
  }
}

TEST(VocabParallel, BadIdsLabelsAndPartsAreErrors) {
  std::vector<float> table(kRows * kDim, 1.0f), y(kDim, 5.0f), s(1), t(1), max(1, 0.0f);
  const int64_t outside = kRows * kParts, padded = kVocab;
  EXPECT_EQ(ptrain_vocab_parallel_embedding_fwd_f32(table.data(), &outside, 1, kRows, kDim, 0, kParts, y.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("outside the vocabulary [0, 6)"), std::string::npos)
      << ptrain_last_error();
  EXPECT_EQ(y[0], 5.0f);
  const int64_t id = 0;
  EXPECT_EQ(ptrain_vocab_parallel_embedding_bwd_f32(y.data(), &id, 1, kRows, kDim, 2, kParts, table.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(table[0], 1.0f);
  // A label on a padded column (>= vocab) is out of range, as is vocab beyond the parts' columns.
  EXPECT_EQ(ptrain_vocab_parallel_ce_parts_fwd_f32(table.data(), &padded, max.data(), 1, kRows, kVocab, 1, kParts,
                                                   s.data(), t.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(
      ptrain_vocab_parallel_ce_parts_fwd_f32(table.data(), &id, max.data(), 1, kRows, 7, 0, kParts, s.data(), t.data()),
      PTRAIN_ERROR_INVALID_ARGUMENT);
}

TEST(Selection, CastsFollowTheInterpreter) {
  const std::vector<float> f = {2.9f, -2.9f, 0.0f, -0.0f};
  std::vector<int64_t> i(4);
  ASSERT_PTRAIN_OK(ptrain_cast_elements(f.data(), PTRAIN_CAST_F32, 4, PTRAIN_CAST_I64, i.data()));
  EXPECT_EQ(i, (std::vector<int64_t>{2, -2, 0, 0}));
  const std::vector<int64_t> big = {(int64_t(1) << 53) + 1, -7};
  std::vector<float> back(2);
  ASSERT_PTRAIN_OK(ptrain_cast_elements(big.data(), PTRAIN_CAST_I64, 2, PTRAIN_CAST_F32, back.data()));
  EXPECT_EQ(back[0], 9007199254740992.0f);
  EXPECT_EQ(back[1], -7.0f);
  std::vector<uint8_t> mask(4);
  const std::vector<float> withNan = {0.0f, std::nanf(""), -1.0f, 0.0f};
  ASSERT_PTRAIN_OK(ptrain_cast_elements(withNan.data(), PTRAIN_CAST_F32, 4, PTRAIN_CAST_MASK, mask.data()));
  EXPECT_EQ(mask, (std::vector<uint8_t>{0, 1, 1, 0}));
  std::vector<float> asFloat(4);
  ASSERT_PTRAIN_OK(ptrain_cast_elements(mask.data(), PTRAIN_CAST_MASK, 4, PTRAIN_CAST_F32, asFloat.data()));
  EXPECT_EQ(asFloat, (std::vector<float>{0.0f, 1.0f, 1.0f, 0.0f}));
  // NaN or beyond int64 is an error that leaves the output untouched; an unknown kind too.
  std::vector<int64_t> out(2, 42);
  const std::vector<float> bad = {1.0f, 1e19f};
  EXPECT_EQ(ptrain_cast_elements(bad.data(), PTRAIN_CAST_F32, 2, PTRAIN_CAST_I64, out.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(out, (std::vector<int64_t>{42, 42}));
  EXPECT_EQ(ptrain_cast_elements(bad.data(), 7, 2, PTRAIN_CAST_I64, out.data()), PTRAIN_ERROR_INVALID_ARGUMENT);
}

TEST(Selection, GatherAlongAnAxisWithNegativeIndices) {
  // data [2, 3, 2], axis 1, indices {2, -3}: out [2, 2, 2].
  const std::vector<int64_t> data = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, idx = {2, -3};
  std::vector<int64_t> out(8);
  ASSERT_PTRAIN_OK(ptrain_gather_axis(data.data(), 8, 2, 3, 2, idx.data(), 2, out.data()));
  EXPECT_EQ(out, (std::vector<int64_t>{4, 5, 0, 1, 10, 11, 6, 7}));
  const int64_t outside = 3;
  EXPECT_EQ(ptrain_gather_axis(data.data(), 8, 2, 3, 2, &outside, 1, out.data()), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("out of range [-3, 3)"), std::string::npos) << ptrain_last_error();
}

TEST(Selection, LogSoftmaxAlongAMiddleAxis) {
  // x [1, 3, 2] along the middle axis: each column is log_softmax of its 3 entries.
  const std::vector<float> x = {0.0f, 1000.0f, 1.0f, 1000.0f, 2.0f, -1000.0f};
  std::vector<float> y(6);
  ASSERT_PTRAIN_OK(ptrain_log_softmax_f32(x.data(), 1, 3, 2, y.data()));
  const double l = std::log(1.0 + std::exp(1.0) + std::exp(2.0));
  expectClose(y, Vec{0.0 - l, -std::log(2.0), 1.0 - l, -std::log(2.0), 2.0 - l, -2000.0 - std::log(2.0)}, 1e-6, 1e-6,
              "y");
}

} // namespace
