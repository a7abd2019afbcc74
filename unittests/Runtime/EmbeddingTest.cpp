//===- EmbeddingTest.cpp - Gather and scatter-add -------------------------===//

#include "GradCheck.h"

#include <string>

using namespace ptrain::testing;

namespace {

TEST(Embedding, GatherAndScatterAddMatchFiniteDifferences) {
  const int64_t vocab = 5, dim = 3, n = 6;
  auto table = randomFloats(vocab * dim, 51);
  auto dy = randomFloats(n * dim, 52);
  const int32_t ids[n] = {4, 0, 4, 2, 0, 4}; // Repeats must accumulate.
  RefFn ref = [&](const std::vector<Vec> &v) {
    Vec y(n * dim);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t d = 0; d < dim; ++d)
        y[i * dim + d] = v[0][ids[i] * dim + d];
    return y;
  };
  std::vector<float> y(n * dim);
  ASSERT_PTRAIN_OK(
      ptrain_embedding_fwd_f32(table.data(), ids, n, vocab, dim, y.data()));
  expectClose(y, ref({toDouble(table)}), 0, 0, "y");
  std::vector<float> dtable(vocab * dim, 0.0f);
  ASSERT_PTRAIN_OK(
      ptrain_embedding_bwd_f32(dy.data(), ids, n, vocab, dim, dtable.data()));
  expectClose(dtable, numericGrad(ref, {toDouble(table)}, 0, toDouble(dy)),
              1e-5, 1e-5, "dtable");
}

TEST(Embedding, ScatterAddAccumulatesIntoTheTiedGradient) {
  const int32_t ids[2] = {1, 1};
  std::vector<float> dy = {1, 2, 3, 4}, dtable = {10, 10, 10, 10};
  ASSERT_PTRAIN_OK(
      ptrain_embedding_bwd_f32(dy.data(), ids, 2, 2, 2, dtable.data()));
  expectClose(dtable, Vec{10, 10, 14, 16}, 0, 0, "dtable");
}

TEST(Embedding, OutOfRangeIdIsAnErrorNamingThePosition) {
  const int32_t ids[3] = {0, 1, 9};
  std::vector<float> table(4), y(6), dtable(4, 0.0f), dy(6, 1.0f);
  EXPECT_EQ(ptrain_embedding_fwd_f32(table.data(), ids, 3, 2, 2, y.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("ids[2] = 9"),
            std::string::npos)
      << ptrain_last_error();
  EXPECT_EQ(ptrain_embedding_bwd_f32(dy.data(), ids, 3, 2, 2, dtable.data()),
            PTRAIN_ERROR_INVALID_ARGUMENT);
  expectClose(dtable, Vec{0, 0, 0, 0}, 0, 0, "dtable untouched");
}

} // namespace
