//===- TopK.cpp - Top-k sparsification with error feedback ----------------===//
//
// #ptrain.topk (Bian et al., MLSys 2024, "The compressors": global top-k by
// magnitude over the whole tensor; the receiver scatters the values into a
// zero tensor). The k kept positions are those of the k largest |v|; ties
// at the k-th magnitude go to the smaller index, so the code is a function of
// the input alone (the same on every rank and target). Magnitudes are ordered
// by their fp32 bit patterns with the sign cleared, a total order in which
// NaN ranks above +inf.
//
// Encode: three passes over memory and no scratch of the tensor's size.
// Pass 1 forms v = g + e (written into e) and a histogram of the keys' top
// 11 bits; pass 2 collects the keys of the bin that holds the k-th largest,
// where std::nth_element finds the k-th largest key T (a radix select);
// pass 3 keeps every key > T and the first (k - #{key > T}) keys == T in
// index order, writing values and indices in ascending index order and
// zeroing e at the kept positions (e = v - decode(code)).
//
// Large tensors with k <= n / 8 take one pass instead (issue 26: encode + EF
// near memcpy bandwidth): a threshold t estimated from 4096 evenly spaced
// samples of v, at the sample rank that expects about 1.5 k + 16 keys >= t;
// then one pass forms v (into e) and appends every (key, index) with
// key >= t, in index order. When between k and the buffer's 4 k + 4096
// candidates arrive, all keys >= the k-th largest are among them (the k-th
// largest is >= t exactly when at least k keys are), so T, the count above
// it and the ties in index order come out of the candidates alone, with the
// three-pass rule's result bit for bit; otherwise (a sample that missed, many
// ties at t) the three passes run over v as the fallback.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"
#include "cpu/codecs/Cast.h"
#include "cpu/codecs/Codec.h"
#include "cpu/codecs/Scratch.h"

#include <algorithm>
#include <climits>

using ptrain::runtime::fail;

namespace {
inline uint32_t magnitudeKey(float v) { return ptrain::runtime::floatBits(v) & 0x7fffffffu; }
} // namespace

namespace {
/// The selection rule once T is known: every key > T, and the first
/// `tiesLeft` keys == T in index order.
struct KeepRule {
  uint32_t threshold;
  int64_t tiesLeft;
  bool keep(uint32_t key) {
    if (key < threshold)
      return false;
    if (key == threshold) {
      if (tiesLeft == 0)
        return false;
      --tiesLeft;
    }
    return true;
  }
};

/// The three-pass exact select over v = g (+ e, added into e first when
/// `addResidual`; else e already holds v): see the file comment.
ptrain_status_t topkEncodeThreePasses(const char *call, const float *g, float *residual, bool addResidual, int64_t n,
                                      int64_t k, float *out_values, int32_t *out_indices) {
  // Pass 1: v = g + e (into e) and a histogram of the keys' top 11 bits,
  // counted in four interleaved histograms so that equal neighbouring keys
  // (the common case: magnitudes cluster in a few bins) do not serialize on
  // one counter.
  constexpr int kShift = 20, kBins = 1 << (31 - kShift);
  uint32_t partial[4][kBins] = {};
  const float *v = residual ? residual : g;
  auto count = [&](int64_t i, int j) {
    float x = v[i];
    if (residual && addResidual) {
      x = g[i];
      x += residual[i];
      residual[i] = x;
    }
    ++partial[j][magnitudeKey(x) >> kShift];
  };
  int64_t i4 = 0;
  for (; i4 + 4 <= n; i4 += 4)
    for (int j = 0; j < 4; ++j)
      count(i4 + j, j);
  for (; i4 < n; ++i4)
    count(i4, 0);
  int64_t hist[kBins];
  for (int b = 0; b < kBins; ++b)
    hist[b] = static_cast<int64_t>(partial[0][b]) + partial[1][b] + partial[2][b] + partial[3][b];
  // The bin holding the k-th largest key, and how many keys lie above it.
  int bin = kBins - 1;
  int64_t above = 0;
  while (above + hist[bin] < k)
    above += hist[bin--];
  // Pass 2: the keys of that bin; the threshold T is their (k - above)-th
  // largest (radix select, then std::nth_element on one bin).
  const int64_t inBin = hist[bin];
  uint32_t *keys = ptrain::runtime::scratchArray<uint32_t>(ptrain::runtime::ScratchSlot::Keys, inBin);
  if (!keys)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "cannot allocate %lld selection keys", static_cast<long long>(inBin));
  int64_t fill = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t key = magnitudeKey(v[i]);
    if (static_cast<int>(key >> kShift) == bin)
      keys[fill++] = key;
  }
  const int64_t rankInBin = k - above; // 1-based from the top
  std::nth_element(keys, keys + (inBin - rankInBin), keys + inBin);
  const uint32_t threshold = keys[inBin - rankInBin];
  for (int64_t i = inBin - rankInBin + 1; i < inBin; ++i)
    above += keys[i] > threshold;
  KeepRule rule{threshold, k - above};
  int64_t out = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!rule.keep(magnitudeKey(v[i])))
      continue;
    out_values[out] = v[i];
    out_indices[out] = static_cast<int32_t>(i);
    ++out;
    if (residual)
      residual[i] = 0.0f;
  }
  if (out != k)
    return fail(PTRAIN_ERROR_INTERNAL, call, "selected %lld values instead of k = %lld", static_cast<long long>(out),
                static_cast<long long>(k));
  return PTRAIN_OK;
}

/// What topkEncodeOnePass did.
enum class OnePass { Done, FormedV, NotTried };

/// The sampled-threshold pass (file comment). FormedV: v is in e, but the
/// candidates cannot decide; NotTried: no scratch for the candidates.
OnePass topkEncodeOnePass(const float *g, float *residual, int64_t n, int64_t k, float *out_values,
                       int32_t *out_indices) {
  using ptrain::runtime::ScratchSlot;
  using ptrain::runtime::scratchArray;
  constexpr int64_t kSamples = 4096;
  uint32_t sample[kSamples];
  for (int64_t s = 0; s < kSamples; ++s) {
    const int64_t i = (s * n) / kSamples;
    float x = g[i];
    if (residual)
      x += residual[i];
    sample[s] = magnitudeKey(x);
  }
  // The rank (from the top) whose key leaves about 1.5 k + 16 keys above it.
  const int64_t rank = std::min<int64_t>(kSamples, (3 * k * kSamples) / (2 * n) + 16);
  std::nth_element(sample, sample + (kSamples - rank), sample + kSamples);
  const uint32_t low = sample[kSamples - rank];
  const int64_t capacity = 4 * k + 4096;
  uint32_t *candKeys = scratchArray<uint32_t>(ScratchSlot::Keys, capacity + 1);
  int32_t *candIdx = scratchArray<int32_t>(ScratchSlot::Bitmap, capacity + 1);
  uint32_t *sorted = scratchArray<uint32_t>(ScratchSlot::Factor, capacity);
  if (!candKeys || !candIdx || !sorted)
    return OnePass::NotTried;
  // One pass; about 1.5 k / n of the elements append (a branch that is
  // rarely taken: branch-free appends, two stores per element, measured
  // slower). A full buffer only counts.
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    float x = g[i];
    if (residual) {
      x += residual[i];
      residual[i] = x;
    }
    const uint32_t key = magnitudeKey(x);
    if (key >= low) {
      if (count < capacity) {
        candKeys[count] = key;
        candIdx[count] = static_cast<int32_t>(i);
      }
      ++count;
    }
  }
  if (count < k || count > capacity)
    return OnePass::FormedV;
  std::copy(candKeys, candKeys + count, sorted);
  std::nth_element(sorted, sorted + (count - k), sorted + count);
  const uint32_t threshold = sorted[count - k];
  int64_t above = 0;
  for (int64_t j = count - k + 1; j < count; ++j)
    above += sorted[j] > threshold;
  KeepRule rule{threshold, k - above};
  int64_t out = 0;
  const float *v = residual ? residual : g;
  for (int64_t j = 0; j < count; ++j) {
    if (!rule.keep(candKeys[j]))
      continue;
    const int32_t i = candIdx[j];
    out_values[out] = v[i];
    out_indices[out] = i;
    ++out;
  }
  if (residual)
    for (int64_t j = 0; j < k; ++j)
      residual[out_indices[j]] = 0.0f;
  return OnePass::Done;
}
} // namespace

extern "C" ptrain_status_t ptrain_topk_encode_f32(const float *g, float *residual, int64_t n, int64_t k,
                                                  float *out_values, int32_t *out_indices) {
  PTRAIN_CHECK_PTR(g);
  PTRAIN_CHECK_PTR(out_values);
  PTRAIN_CHECK_PTR(out_indices);
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkSparsity(__func__, n, k));
  constexpr int64_t kOnePassMinN = int64_t(1) << 16;
  if (n >= kOnePassMinN && k <= n / 8) {
    const OnePass done = topkEncodeOnePass(g, residual, n, k, out_values, out_indices);
    if (done == OnePass::Done)
      return PTRAIN_OK;
    if (done == OnePass::FormedV) // v is in e now: the three passes without adding it again
      return topkEncodeThreePasses(__func__, g, residual, false, n, k, out_values, out_indices);
  }
  return topkEncodeThreePasses(__func__, g, residual, true, n, k, out_values, out_indices);
}

namespace ptrain::runtime {
/// Scatters (or, with `accumulate`, scatter-adds) top-k codes into out[n].
ptrain_status_t topkScatter(const char *call, const float *values, const int32_t *indices, int64_t k, int64_t n,
                            float *out, bool accumulate) {
  if (!accumulate)
    std::fill(out, out + n, 0.0f);
  for (int64_t j = 0; j < k; ++j) {
    const int32_t i = indices[j];
    if (i < 0 || i >= n)
      return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "indices[%lld] = %d is outside [0, n = %lld)",
                  static_cast<long long>(j), i, static_cast<long long>(n));
    out[i] = accumulate ? out[i] + values[j] : values[j];
  }
  return PTRAIN_OK;
}
} // namespace ptrain::runtime

extern "C" ptrain_status_t ptrain_topk_decode_f32(const float *values, const int32_t *indices, int64_t k, int64_t n,
                                                  float *out) {
  PTRAIN_CHECK_PTR(values);
  PTRAIN_CHECK_PTR(indices);
  PTRAIN_CHECK_PTR(out);
  PTRAIN_RETURN_IF_ERROR(ptrain::runtime::checkSparsity(__func__, n, k));
  return ptrain::runtime::topkScatter(__func__, values, indices, k, n, out,
                                      /*accumulate=*/false);
}
