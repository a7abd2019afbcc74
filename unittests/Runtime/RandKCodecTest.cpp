//===- RandKCodecTest.cpp - Rand-k with a shared seed ---------------------===//

#include "GradCheck.h"

#include <set>

namespace {

/// The documented position rule, written again from its specification.
std::vector<int32_t> referencePositions(uint64_t seed, int64_t counter, int64_t n, int64_t k) {
  const uint64_t gamma = 0x9E3779B97F4A7C15ull;
  uint64_t x = seed ^ (gamma * (static_cast<uint64_t>(counter) + 1));
  auto next = [&] {
    uint64_t z = (x += gamma);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::set<int64_t> taken;
  for (int64_t j = n - k; j < n; ++j) {
    const int64_t t = static_cast<int64_t>((static_cast<unsigned __int128>(next()) * (j + 1)) >> 64);
    taken.insert(taken.count(t) ? j : t);
  }
  return std::vector<int32_t>(taken.begin(), taken.end());
}

TEST(RandKCodec, PositionsFollowTheSpecification) {
  for (int64_t n : {1, 10, 1000, 100003})
    for (int64_t k : {int64_t(1), (n + 9) / 10, n})
      for (int64_t counter : {0, 1, 41}) {
        std::vector<int32_t> idx(k);
        ASSERT_PTRAIN_OK(ptrain_randk_indices(1234, counter, n, k, idx.data()));
        ASSERT_EQ(idx, referencePositions(1234, counter, n, k)) << n << " " << k << " " << counter;
      }
  // Different counters give different positions.
  std::vector<int32_t> a(100), b(100);
  ASSERT_PTRAIN_OK(ptrain_randk_indices(5, 0, 100000, 100, a.data()));
  ASSERT_PTRAIN_OK(ptrain_randk_indices(5, 1, 100000, 100, b.data()));
  EXPECT_NE(a, b);
}

TEST(RandKCodec, EncodeDecodeWithErrorFeedbackAndCounters) {
  const int64_t n = 3000, k = 300;
  std::vector<float> g = ptrain::testing::randomFloats(n, 21);
  std::vector<float> e = ptrain::testing::randomFloats(n, 22, -0.5f, 0.5f);
  std::vector<float> v(n), values(k), decoded(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = g[i] + e[i];
  int64_t encCounter = 3, decCounter = 3;
  ASSERT_PTRAIN_OK(ptrain_randk_encode_f32(g.data(), e.data(), n, k, 99, &encCounter, values.data()));
  ASSERT_PTRAIN_OK(ptrain_randk_decode_f32(values.data(), n, k, 99, &decCounter, decoded.data()));
  EXPECT_EQ(encCounter, 4);
  EXPECT_EQ(decCounter, 4);
  const std::vector<int32_t> idx = referencePositions(99, 3, n, k);
  for (int64_t j = 0; j < k; ++j)
    ASSERT_EQ(values[j], v[idx[j]]);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(e[i], v[i] - decoded[i]) << i;
}

TEST(RandKCodec, CodesOfDifferentInputsSumLikeTheInputs) {
  // Summability: with a shared seed, code(a) + code(b) == code(a + b).
  const int64_t n = 777, k = 70;
  std::vector<float> a = ptrain::testing::randomFloats(n, 1), b = ptrain::testing::randomFloats(n, 2);
  std::vector<float> sum(n), ca(k), cb(k), cs(k);
  for (int64_t i = 0; i < n; ++i)
    sum[i] = a[i] + b[i];
  int64_t c1 = 0, c2 = 0, c3 = 0;
  ASSERT_PTRAIN_OK(ptrain_randk_encode_f32(a.data(), nullptr, n, k, 7, &c1, ca.data()));
  ASSERT_PTRAIN_OK(ptrain_randk_encode_f32(b.data(), nullptr, n, k, 7, &c2, cb.data()));
  ASSERT_PTRAIN_OK(ptrain_randk_encode_f32(sum.data(), nullptr, n, k, 7, &c3, cs.data()));
  for (int64_t j = 0; j < k; ++j)
    ASSERT_EQ(ca[j] + cb[j], cs[j]);
}

} // namespace
