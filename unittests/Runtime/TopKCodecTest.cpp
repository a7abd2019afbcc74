//===- TopKCodecTest.cpp - Top-k against a full sort ----------------------===//

#include "GradCheck.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace {

/// The reference: sort positions by (|v| descending, index ascending), keep
/// k, sort the kept positions.
std::vector<int32_t> referenceTopK(const std::vector<float> &v, int64_t k) {
  std::vector<int32_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return std::fabs(v[a]) > std::fabs(v[b]); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

TEST(TopKCodec, MatchesAFullSortWithTiesToTheSmallerIndex) {
  for (int64_t n : {1, 7, 64, 1000, 4099}) {
    // Values from a small set, so many magnitudes tie.
    std::vector<float> g(n);
    for (int64_t i = 0; i < n; ++i)
      g[i] = static_cast<float>(((i * 7919) % 13) - 6) * 0.5f;
    for (int64_t k : {int64_t(1), (n + 2) / 3, n}) {
      std::vector<float> values(k);
      std::vector<int32_t> idx(k);
      ASSERT_PTRAIN_OK(ptrain_topk_encode_f32(g.data(), nullptr, n, k, values.data(), idx.data()));
      const std::vector<int32_t> want = referenceTopK(g, k);
      ASSERT_EQ(idx, want) << "n " << n << " k " << k;
      for (int64_t j = 0; j < k; ++j)
        ASSERT_EQ(values[j], g[idx[j]]);
    }
  }
}

TEST(TopKCodec, ErrorFeedbackKeepsTheRestAndDecodeScatters) {
  const int64_t n = 5000, k = 50;
  std::vector<float> g = ptrain::testing::randomFloats(n, 11);
  std::vector<float> e = ptrain::testing::randomFloats(n, 12, -0.1f, 0.1f);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = g[i] + e[i];
  std::vector<float> values(k), decoded(n);
  std::vector<int32_t> idx(k);
  ASSERT_PTRAIN_OK(ptrain_topk_encode_f32(g.data(), e.data(), n, k, values.data(), idx.data()));
  ASSERT_EQ(idx, referenceTopK(v, k));
  ASSERT_PTRAIN_OK(ptrain_topk_decode_f32(values.data(), idx.data(), k, n, decoded.data()));
  for (int64_t i = 0; i < n; ++i) {
    // e' = v - decode(code), exactly: 0 where kept, v elsewhere.
    ASSERT_EQ(e[i], v[i] - decoded[i]) << i;
    ASSERT_EQ(decoded[i] != 0.0f, std::binary_search(idx.begin(), idx.end(), i)) << i;
  }
}

TEST(TopKCodec, NaNRanksFirstAndBadArgumentsAreErrors) {
  std::vector<float> g = {1.0f, NAN, -3.0f, 2.0f};
  float values[2];
  int32_t idx[2];
  ASSERT_PTRAIN_OK(ptrain_topk_encode_f32(g.data(), nullptr, 4, 2, values, idx));
  EXPECT_EQ(idx[0], 1);
  EXPECT_EQ(idx[1], 2);
  EXPECT_EQ(ptrain_topk_encode_f32(g.data(), nullptr, 4, 5, values, idx), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("k must be in [1, n = 4], got 5"), std::string::npos)
      << ptrain_last_error();
  int32_t bad[1] = {4};
  float out[4];
  EXPECT_EQ(ptrain_topk_decode_f32(values, bad, 1, 4, out), PTRAIN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ptrain_last_error()).find("indices[0] = 4 is outside [0, n = 4)"), std::string::npos)
      << ptrain_last_error();
}

} // namespace
