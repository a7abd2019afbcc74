//===- MemoryPlan.cpp - Static arena offsets by liveness ------------------===//

#include "MemoryPlan.h"

#include "ptrain/Analysis/MemoryPlan.h"

using namespace mlir::ptrain::cpp;

int64_t mlir::ptrain::cpp::planArena(std::vector<BufferInterval> &buffers, int64_t alignment) {
  // The memory plan's greedy by size (include/ptrain/Analysis/MemoryPlan.h),
  // so that the arenas emitted are the ones --ptrain-memory-plan reports.
  std::vector<ArenaBuffer> arena;
  arena.reserve(buffers.size());
  for (const BufferInterval &b : buffers)
    arena.push_back({b.first, b.last, b.bytes});
  int64_t bytes = planArenaGreedyBySize(arena, alignment);
  for (size_t i = 0; i < buffers.size(); ++i)
    buffers[i].offset = arena[i].offset;
  return bytes;
}
