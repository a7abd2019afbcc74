//===- Slice.cpp - Static unit-stride slices and their inverse ------------===//
//
// ptrain_slice reads a box of x; ptrain_insert_slice writes x into a box of
// out. With them the lowering composes ptrain.slice, ptrain.split (one slice
// per piece), ptrain.pad (zero + insert) and ptrain.concat (one insert per
// input). Element-type agnostic: rows of the innermost dimension are moved
// with memcpy.
//
//===----------------------------------------------------------------------===//

#include "common/Status.h"

#include <cstring>

namespace {
constexpr int32_t kMaxRank = 8;

/// Copies the box `box[rank]` between a "big" tensor of shape `big[rank]`
/// (starting at `offsets`) and a dense "small" tensor of shape `box`.
/// `toSmall` selects the direction.
ptrain_status_t moveBox(const char *call, char *bigData, const char *bigConst,
                        char *smallData, const char *smallConst,
                        int64_t elemBytes, int32_t rank, const int64_t *big,
                        const int64_t *offsets, const int64_t *box,
                        bool toSmall) {
  if (elemBytes != 1 && elemBytes != 2 && elemBytes != 4 && elemBytes != 8)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                 "elem_bytes must be 1, 2, 4 or 8, got %lld",
                                 static_cast<long long>(elemBytes));
  if (rank < 0 || rank > kMaxRank)
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                 "rank must be in [0, %d], got %d", kMaxRank,
                                 rank);
  if (rank > 0 && (big == nullptr || offsets == nullptr || box == nullptr))
    return ptrain::runtime::fail(PTRAIN_ERROR_INVALID_ARGUMENT, call,
                                 "dims, offsets and box dims must not be null");
  int64_t count = 1;
  for (int32_t d = 0; d < rank; ++d) {
    if (box[d] < 0 || offsets[d] < 0 || offsets[d] + box[d] > big[d])
      return ptrain::runtime::fail(
          PTRAIN_ERROR_INVALID_ARGUMENT, call,
          "dim %d: the box [%lld, %lld) is not inside [0, %lld)", d,
          static_cast<long long>(offsets[d]),
          static_cast<long long>(offsets[d] + box[d]),
          static_cast<long long>(big[d]));
    count *= box[d];
  }
  if (count == 0)
    return PTRAIN_OK;
  if (rank == 0) {
    if (toSmall)
      std::memcpy(smallData, bigConst, static_cast<size_t>(elemBytes));
    else
      std::memcpy(bigData, smallConst, static_cast<size_t>(elemBytes));
    return PTRAIN_OK;
  }
  int64_t bigStride[kMaxRank];
  bigStride[rank - 1] = 1;
  for (int32_t d = rank - 2; d >= 0; --d)
    bigStride[d] = bigStride[d + 1] * big[d + 1];
  const int64_t rowElems = box[rank - 1];
  const size_t rowBytes = static_cast<size_t>(rowElems * elemBytes);
  const int64_t rows = count / rowElems;
  int64_t index[kMaxRank] = {};
  for (int64_t r = 0; r < rows; ++r) {
    int64_t bigOffset = offsets[rank - 1];
    for (int32_t d = 0; d + 1 < rank; ++d)
      bigOffset += (offsets[d] + index[d]) * bigStride[d];
    const int64_t smallOffset = r * rowElems;
    if (toSmall)
      std::memcpy(smallData + smallOffset * elemBytes,
                  bigConst + bigOffset * elemBytes, rowBytes);
    else
      std::memcpy(bigData + bigOffset * elemBytes,
                  smallConst + smallOffset * elemBytes, rowBytes);
    for (int32_t d = rank - 2; d >= 0; --d) {
      if (++index[d] < box[d])
        break;
      index[d] = 0;
    }
  }
  return PTRAIN_OK;
}
} // namespace

extern "C" ptrain_status_t ptrain_slice(const void *x, int64_t elem_bytes,
                                        int32_t rank, const int64_t *dims,
                                        const int64_t *offsets,
                                        const int64_t *out_dims, void *out) {
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out);
  return moveBox(__func__, nullptr, static_cast<const char *>(x),
                 static_cast<char *>(out), nullptr, elem_bytes, rank, dims,
                 offsets, out_dims, /*toSmall=*/true);
}

extern "C" ptrain_status_t
ptrain_insert_slice(const void *x, int64_t elem_bytes, int32_t rank,
                    const int64_t *x_dims, const int64_t *offsets,
                    const int64_t *out_dims, void *out) {
  PTRAIN_CHECK_PTR(x);
  PTRAIN_CHECK_PTR(out);
  return moveBox(__func__, static_cast<char *>(out), nullptr, nullptr,
                 static_cast<const char *>(x), elem_bytes, rank, out_dims,
                 offsets, x_dims, /*toSmall=*/false);
}
