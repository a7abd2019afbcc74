//===- TopKCodecTest.cpp - Top-k against a full sort ----------------------===//

#include "GradCheck.h"
#include "cpu/codecs/Cast.h"

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

// Tensors of 2^16 elements or more with k <= n / 8 take the sampled-threshold pass (TopK.cpp); each case
// reaches one of its outcomes: decided by the candidates (random values, with error feedback), too many
// candidates (magnitudes from a small set: thousands tie at the threshold), too few (only the sampled
// positions are nonzero, so the sample promises far more large keys than there are).
TEST(TopKCodec, TheOnePassSelectionMatchesAFullSort) {
  const int64_t n = (int64_t(1) << 17) + 5;
  for (int pattern = 0; pattern < 3; ++pattern)
    for (int64_t k : {int64_t(1), int64_t(97), n / 100, n / 8}) {
      std::vector<float> g = ptrain::testing::randomFloats(n, 21 + pattern, -4, 4);
      if (pattern == 1)
        for (int64_t i = 0; i < n; ++i)
          g[i] = static_cast<float>(((i * 7919) % 13) - 6) * 0.5f;
      if (pattern == 2) { // nonzero at the sampled positions (s * n) / 4096 only
        std::vector<float> sampled(n, 0.0f);
        for (int64_t s = 0; s < 4096; ++s)
          sampled[(s * n) / 4096] = g[(s * n) / 4096];
        g = sampled;
      }
      std::vector<float> e = ptrain::testing::randomFloats(n, 31, -0.1f, 0.1f);
      if (pattern != 0)
        e = g; // v = 2 g exactly: the ties stay, and a v that took e twice would show
      std::vector<float> v(n);
      for (int64_t i = 0; i < n; ++i)
        v[i] = g[i] + e[i];
      std::vector<float> values(k);
      std::vector<int32_t> idx(k);
      ASSERT_PTRAIN_OK(ptrain_topk_encode_f32(g.data(), e.data(), n, k, values.data(), idx.data()));
      ASSERT_EQ(idx, referenceTopK(v, k)) << "pattern " << pattern << " k " << k;
      for (int64_t j = 0; j < k; ++j)
        ASSERT_EQ(values[j], v[idx[j]]);
      for (int64_t i = 0, j = 0; i < n; ++i) { // e' = v - decode(code): 0 where kept, v elsewhere
        const bool kept = j < k && idx[j] == i;
        j += kept;
        ASSERT_EQ(ptrain::runtime::floatBits(e[i]), ptrain::runtime::floatBits(kept ? 0.0f : v[i])) << i;
      }
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
