//===- Scratch.cpp - Reused per-thread scratch memory of the codecs -------===//

#include "cpu/codecs/Scratch.h"

namespace ptrain::runtime {
namespace {
struct Slot {
  void *data = nullptr;
  size_t bytes = 0;
  ~Slot() { std::free(data); }
};
thread_local Slot slots[static_cast<int>(ScratchSlot::Count)];
} // namespace

void *scratch(ScratchSlot which, size_t bytes) {
  Slot &slot = slots[static_cast<int>(which)];
  if (bytes <= slot.bytes && slot.data)
    return slot.data;
  // Grow by at least half, so a slowly growing sequence of calls reallocates
  // O(log n) times.
  size_t want = bytes < 64 ? 64 : bytes;
  if (want < slot.bytes + slot.bytes / 2)
    want = slot.bytes + slot.bytes / 2;
  want = (want + 63) / 64 * 64;
  void *fresh = std::aligned_alloc(64, want);
  if (!fresh)
    return nullptr;
  std::free(slot.data);
  slot.data = fresh;
  slot.bytes = want;
  return fresh;
}

} // namespace ptrain::runtime
