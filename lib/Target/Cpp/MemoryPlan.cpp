//===- MemoryPlan.cpp - Static arena offsets by liveness ------------------===//

#include "MemoryPlan.h"

#include <algorithm>
#include <numeric>

using namespace mlir::ptrain::cpp;

int64_t mlir::ptrain::cpp::planArena(std::vector<BufferInterval> &buffers,
                                     int64_t alignment) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].first < buffers[b].first;
  });
  auto align = [&](int64_t x) { return (x + alignment - 1) / alignment * alignment; };
  // The placed buffers that are still live, kept sorted by offset.
  std::vector<size_t> active;
  int64_t arenaBytes = 0;
  for (size_t idx : order) {
    BufferInterval &buf = buffers[idx];
    active.erase(std::remove_if(active.begin(), active.end(),
                                [&](size_t o) { return buffers[o].last < buf.first; }),
                 active.end());
    // Lowest gap between live buffers that fits.
    int64_t offset = 0;
    const int64_t size = align(std::max<int64_t>(buf.bytes, 1));
    for (size_t o : active) {
      if (offset + size <= buffers[o].offset)
        break;
      offset = std::max(offset, align(buffers[o].offset + buffers[o].bytes));
    }
    buf.offset = offset;
    arenaBytes = std::max(arenaBytes, offset + size);
    active.insert(std::upper_bound(active.begin(), active.end(), idx,
                                   [&](size_t a, size_t b) { return buffers[a].offset < buffers[b].offset; }),
                  idx);
  }
  return arenaBytes;
}
