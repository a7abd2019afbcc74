//===- Scratch.h - Reused per-thread scratch memory of the codecs -*- C++ -*-===//
//
// Codec kernels need scratch the size of their input (top-k's selection keys,
// rand-k's bitmap, PowerSGD's Q when there is no warm start). Allocating it on
// every call would cost page faults proportional to the tensor; a thread-local
// buffer that only grows makes repeated calls allocation-free. Each slot is
// used by one kernel at a time: a kernel never holds a slot across a call to
// another kernel that uses the same slot.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_CPU_CODECS_SCRATCH_H
#define PTRAIN_RUNTIME_CPU_CODECS_SCRATCH_H

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace ptrain::runtime {

/// Scratch slots; different slots can be held at the same time.
enum class ScratchSlot { Keys = 0, Bitmap = 1, Factor = 2, Count = 3 };

/// Returns at least `bytes` bytes of this thread's scratch `slot` (64-byte
/// aligned, contents unspecified), or nullptr when the allocation fails.
void *scratch(ScratchSlot slot, size_t bytes);

template <typename T> T *scratchArray(ScratchSlot slot, int64_t count) {
  if (count < 0 || static_cast<uint64_t>(count) > SIZE_MAX / sizeof(T))
    return nullptr;
  return static_cast<T *>(scratch(slot, static_cast<size_t>(count) * sizeof(T)));
}

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_CPU_CODECS_SCRATCH_H
