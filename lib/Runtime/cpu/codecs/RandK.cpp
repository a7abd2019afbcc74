//===- RandK.cpp - Random-k sparsification with a shared seed -------------===//
//
// #ptrain.randk (Bian et al., MLSys 2024; with a seed shared by sender and
// receiver no indices are sent, and because every rank keeps the same
// positions the code is summable). The positions are a function of
// (seed, counter, n, k) only, specified exactly so that every rank and every
// target (the CUDA runtime included) derives the same ones:
//
//   generator: SplitMix64 (Steele, Lea, Flood, OOPSLA 2014) with state
//     x0 = seed ^ (0x9E3779B97F4A7C15 * (counter + 1)); each draw adds
//     0x9E3779B97F4A7C15 to x and returns the SplitMix64 mix of x;
//   uniform integer in [0, j]: the high 64 bits of draw * (j + 1) (Lemire's
//     multiply-shift, "Fast random integer generation in an interval", 2019,
//     without the rejection step: the bias is below (j + 1) / 2^64);
//   k distinct positions: R. W. Floyd's algorithm (Bentley, "Programming
//     Pearls: A sample of brilliance", CACM 1987): for j = n - k .. n - 1,
//     t = uniform[0, j], take t unless taken, else take j;
//   order: ascending.
//
// The counter is the codec's state (tensor<i64> on both sides): every encode
// and decode uses it and then increments it, so both sides stay in step.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"
#include "cpu/codecs/Codec.h"
#include "cpu/codecs/Random.h"
#include "cpu/codecs/Scratch.h"

#include <climits>
#include <cstring>

using ptrain::runtime::fail;

namespace ptrain::runtime {
/// The k positions of (seed, counter) in ascending order into `indices`.
ptrain_status_t randkPositions(const char *call, uint64_t seed, int64_t counter, int64_t n, int64_t k,
                               int32_t *indices) {
  const int64_t words = (n + 63) / 64;
  uint64_t *taken = scratchArray<uint64_t>(ScratchSlot::Bitmap, words);
  if (!taken)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "cannot allocate a bitmap of %lld bits", static_cast<long long>(n));
  std::memset(taken, 0, static_cast<size_t>(words) * 8);
  SplitMix64 gen = SplitMix64::forStream(seed, static_cast<uint64_t>(counter));
  for (int64_t j = n - k; j < n; ++j) {
    const uint64_t t =
        static_cast<uint64_t>((static_cast<unsigned __int128>(gen.next()) * static_cast<uint64_t>(j + 1)) >> 64);
    const uint64_t pick = (taken[t / 64] >> (t % 64)) & 1u ? static_cast<uint64_t>(j) : t;
    taken[pick / 64] |= 1ull << (pick % 64);
  }
  int64_t out = 0;
  for (int64_t w = 0; w < words; ++w)
    for (uint64_t bits = taken[w]; bits != 0; bits &= bits - 1)
      indices[out++] = static_cast<int32_t>(w * 64 + __builtin_ctzll(bits));
  if (out != k)
    return fail(PTRAIN_ERROR_INTERNAL, call, "drew %lld positions instead of k = %lld", static_cast<long long>(out),
                static_cast<long long>(k));
  return PTRAIN_OK;
}
} // namespace ptrain::runtime

extern "C" ptrain_status_t ptrain_randk_indices(uint64_t seed, int64_t counter, int64_t n, int64_t k,
                                                int32_t *out_indices) {
  PTRAIN_CHECK_PTR(out_indices);
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkSparsity(__func__, n, k));
  return ptrain::runtime::randkPositions(__func__, seed, counter, n, k, out_indices);
}

extern "C" ptrain_status_t ptrain_randk_encode_f32(const float *g, float *residual, int64_t n, int64_t k, uint64_t seed,
                                                   int64_t *counter, float *out_values) {
  PTRAIN_CHECK_PTR(g);
  PTRAIN_CHECK_PTR(counter);
  PTRAIN_CHECK_PTR(out_values);
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkSparsity(__func__, n, k));
  int32_t *idx = ptrain::runtime::scratchArray<int32_t>(ptrain::runtime::ScratchSlot::Keys, k);
  if (!idx)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate indices");
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::randkPositions(__func__, seed, *counter, n, k, idx));
  if (residual) {
    // e = g + e everywhere (one pass), then the kept values leave e.
    for (int64_t i = 0; i < n; ++i)
      residual[i] += g[i];
    for (int64_t j = 0; j < k; ++j) {
      out_values[j] = residual[idx[j]];
      residual[idx[j]] = 0.0f;
    }
  } else {
    for (int64_t j = 0; j < k; ++j)
      out_values[j] = g[idx[j]];
  }
  ++*counter;
  return PTRAIN_OK;
}

extern "C" ptrain_status_t ptrain_randk_decode_f32(const float *values, int64_t n, int64_t k, uint64_t seed,
                                                   int64_t *counter, float *out) {
  PTRAIN_CHECK_PTR(values);
  PTRAIN_CHECK_PTR(counter);
  PTRAIN_CHECK_PTR(out);
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkSparsity(__func__, n, k));
  int32_t *idx = ptrain::runtime::scratchArray<int32_t>(ptrain::runtime::ScratchSlot::Keys, k);
  if (!idx)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, __func__, "cannot allocate indices");
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::randkPositions(__func__, seed, *counter, n, k, idx));
  std::memset(out, 0, static_cast<size_t>(n) * sizeof(float));
  for (int64_t j = 0; j < k; ++j)
    out[idx[j]] = values[j];
  ++*counter;
  return PTRAIN_OK;
}
