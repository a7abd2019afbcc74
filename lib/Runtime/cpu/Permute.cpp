//===- Permute.cpp - Dense transpose of up to 8 dims ----------------------===//
//
// out = numpy.transpose(x, perm): out.shape[i] = dims[perm[i]]. Used for the
// head split/merge of attention ([B, S, H, D] <-> [B, H, S, D]).
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"
#include "cpu/StridedWalk.h"

#include <cstring>

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

  // Row by row over the output (dims that stay adjacent merged): a row read
  // contiguously is one memcpy; otherwise, when the dim above the row is read
  // contiguously (a transpose of the last two dims), the pair is copied in
  // square tiles so that both sides stay in cache; else a strided gather.
  int64_t strides[1][kMaxRank] = {};
  for (int32_t i = 0; i < rank; ++i)
    strides[0][i] = srcStride[i];
  auto walk = ptrain::runtime::collapseDims<1>(rank, outDims, strides);
  const int64_t len = walk.rowLength(), step = walk.rowStride(0);
  if (step == 1 || walk.rank < 2 || walk.strides[0][walk.rank - 2] != 1) {
    ptrain::runtime::forEachRow(walk, [&](int64_t o, const int64_t *at) {
      const float *src = x + at[0];
      float *dst = out + o;
      if (step == 1)
        std::memcpy(dst, src, static_cast<size_t>(len) * sizeof(float));
      else
        for (int64_t c = 0; c < len; ++c)
          dst[c] = src[c * step];
    });
    return PTRAIN_OK;
  }
  // Transposed matrices: out[r][c] = src[r + c * step] for r < rows, c < len.
  const int64_t rows = walk.dims[walk.rank - 2];
  ptrain::runtime::StridedWalk<1> outer = walk;
  outer.rank -= 1;
  outer.dims[outer.rank - 1] = 1; // one "row" of the outer walk per matrix
  constexpr int64_t kTile = 16;
  ptrain::runtime::forEachRow(outer, [&](int64_t m, const int64_t *at) {
    const float *src = x + at[0];
    float *dst = out + m * rows * len;
    for (int64_t r0 = 0; r0 < rows; r0 += kTile)
      for (int64_t c0 = 0; c0 < len; c0 += kTile) {
        const int64_t r1 = r0 + kTile < rows ? r0 + kTile : rows;
        const int64_t c1 = c0 + kTile < len ? c0 + kTile : len;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c)
            dst[r * len + c] = src[r + c * step];
      }
  });
  return PTRAIN_OK;
}
