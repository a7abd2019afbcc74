//===- MemoryPlan.h - Static arena offsets by liveness ----------*- C++ -*-===//
//
// Each buffer of a function is an interval [first, last] of op indices in
// which it is live and a size in bytes; the plan gives every buffer an offset
// in one arena such that buffers whose intervals overlap never overlap in
// memory. Greedy by size (Pisarchyk and Lee 2020), the algorithm of the
// memory plan (include/ptrain/Analysis/MemoryPlan.h).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_MEMORYPLAN_H
#define PTRAIN_TARGET_CPP_MEMORYPLAN_H

#include <cstdint>
#include <vector>

namespace mlir::ptrain::cpp {

struct BufferInterval {
  int64_t first, last; ///< op indices, inclusive
  int64_t bytes;
  int64_t offset = -1; ///< set by planArena
};

/// Assigns `offset` (a multiple of `alignment`) to every buffer and returns
/// the arena size in bytes.
int64_t planArena(std::vector<BufferInterval> &buffers, int64_t alignment);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_MEMORYPLAN_H
