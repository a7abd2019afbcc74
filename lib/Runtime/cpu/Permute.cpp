//===- Permute.cpp - Dense transpose of up to 8 dims ----------------------===//
//
// out = numpy.transpose(x, perm): out.shape[i] = dims[perm[i]]. Used for the
// head split/merge of attention ([B, S, H, D] <-> [B, H, S, D]).
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

namespace {
constexpr int32_t kMaxRank = 8;
} // namespace

extern "C" ptrain_status_t ptrain_permute_f32(const float *x, int32_t rank,
                                              const int64_t *dims,
                                              const int32_t *perm, float *out) {
  PTRAIN_CHECK_ARG(rank >= 1 && rank <= kMaxRank,
                   "rank must be in [1, %d], got %d", kMaxRank, rank);
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(dims);
  PTRAIN_CHECK_PTR(perm);
  PTRAIN_CHECK_PTR(out);
  bool seen[kMaxRank] = {};
  int64_t total = 1;
  for (int32_t i = 0; i < rank; ++i) {
    PTRAIN_CHECK_ARG(dims[i] >= 0, "dims[%d] must be >= 0, got %lld", i,
                     static_cast<long long>(dims[i]));
    PTRAIN_CHECK_ARG(perm[i] >= 0 && perm[i] < rank && !seen[perm[i]],
                     "perm is not a permutation of [0, %d) at index %d", rank,
                     i);
    seen[perm[i]] = true;
    total *= dims[i];
  }
  if (total == 0)
    return PTRAIN_OK;

  // Strides of x in elements, then the x-stride of each output dim.
  int64_t inStride[kMaxRank];
  inStride[rank - 1] = 1;
  for (int32_t i = rank - 2; i >= 0; --i)
    inStride[i] = inStride[i + 1] * dims[i + 1];
  int64_t outDims[kMaxRank], srcStride[kMaxRank];
  for (int32_t i = 0; i < rank; ++i) {
    outDims[i] = dims[perm[i]];
    srcStride[i] = inStride[perm[i]];
  }

  // Walk the output in order with an odometer over its index.
  int64_t index[kMaxRank] = {};
  int64_t src = 0;
  for (int64_t o = 0; o < total; ++o) {
    out[o] = x[src];
    for (int32_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < outDims[d]) {
        src += srcStride[d];
        break;
      }
      src -= srcStride[d] * (outDims[d] - 1);
      index[d] = 0;
    }
  }
  return PTRAIN_OK;
}
