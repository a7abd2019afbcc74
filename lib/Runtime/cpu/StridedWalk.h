//===- StridedWalk.h - Row-wise walks over strided operands -----*- C++ -*-===//
//
// The dense result of an elementwise kernel (binary, sum_to, permute) is
// walked row by row instead of element by element: adjacent dimensions that
// every operand reads linearly are merged and unit dimensions dropped, then an
// odometer runs over the outer dimensions only and the innermost dimension is
// one contiguous run of the result, which the kernels write as plain loops the
// compiler vectorizes. The order in which result elements are visited is the
// row-major order of the element-by-element walk, so kernels that accumulate
// keep their summation order (and their results bit for bit).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_STRIDEDWALK_H
#define PTRAIN_RUNTIME_CPU_STRIDEDWALK_H

#include <cstdint>

namespace ptrain::runtime {

constexpr int32_t kMaxWalkRank = 8;

/// A dense index space of `rank` dims read by N operands with `strides[k]`
/// (in elements; 0 on broadcast dims), after merging and dropping dims.
template <int N> struct StridedWalk {
  int32_t rank = 0;
  int64_t dims[kMaxWalkRank] = {};
  int64_t strides[N][kMaxWalkRank] = {};

  /// The length of one row (the innermost dim; 1 for a scalar space).
  int64_t rowLength() const { return rank == 0 ? 1 : dims[rank - 1]; }
  /// Operand k's stride along a row.
  int64_t rowStride(int k) const { return rank == 0 ? 0 : strides[k][rank - 1]; }
};

/// Merges dims d and d+1 of dims[rank] wherever every operand's stride along
/// d is its stride along d+1 times dims[d+1] (it reads both as one dim) and
/// drops dims of size 1. The element count must be > 0.
template <int N>
StridedWalk<N> collapseDims(int32_t rank, const int64_t *dims, const int64_t (&strides)[N][kMaxWalkRank]) {
  StridedWalk<N> w;
  for (int32_t d = 0; d < rank; ++d) {
    if (dims[d] == 1)
      continue;
    bool merge = w.rank > 0;
    for (int k = 0; k < N && merge; ++k)
      merge = w.strides[k][w.rank - 1] == strides[k][d] * dims[d];
    if (merge) {
      w.dims[w.rank - 1] *= dims[d];
      for (int k = 0; k < N; ++k)
        w.strides[k][w.rank - 1] = strides[k][d];
      continue;
    }
    w.dims[w.rank] = dims[d];
    for (int k = 0; k < N; ++k)
      w.strides[k][w.rank] = strides[k][d];
    ++w.rank;
  }
  return w;
}

/// Calls row(o, at) for every row of w in row-major order: o is the dense
/// offset of the row's first element, at[k] operand k's offset there.
template <int N, typename F> void forEachRow(const StridedWalk<N> &w, F row) {
  const int32_t outer = w.rank == 0 ? 0 : w.rank - 1;
  const int64_t len = w.rowLength();
  int64_t rows = 1;
  for (int32_t d = 0; d < outer; ++d)
    rows *= w.dims[d];
  int64_t index[kMaxWalkRank] = {};
  int64_t at[N] = {};
  for (int64_t r = 0; r < rows; ++r) {
    row(r * len, static_cast<const int64_t *>(at));
    for (int32_t d = outer - 1; d >= 0; --d) {
      if (++index[d] < w.dims[d]) {
        for (int k = 0; k < N; ++k)
          at[k] += w.strides[k][d];
        break;
      }
      for (int k = 0; k < N; ++k)
        at[k] -= w.strides[k][d] * (w.dims[d] - 1);
      index[d] = 0;
    }
  }
}

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_STRIDEDWALK_H
