//===- StateTable.h - Checks shared by state loading and saving -*- C++ -*-===//
//
// The state descriptors of a compiled step (ptrain_state_desc_t): validation
// and sizes, shared by OnnxInit.cpp and Checkpoint.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_STATETABLE_H
#define PTRAIN_RUNTIME_COMMON_STATETABLE_H

#include "common/Status.h"

#include <cstdlib>
#include <memory>

namespace ptrain::runtime {

/// Bytes of one element of a state dtype (F32: 4, I64: 8); 0 if unsupported.
inline int64_t stateElemBytes(ptrain_dtype_t dtype) {
  return dtype == PTRAIN_DTYPE_F32 ? 4 : dtype == PTRAIN_DTYPE_I64 ? 8 : 0;
}

/// Checks every descriptor (key, data, dtype, rank, dims, unique keys) and
/// stores each state's byte size in `outBytes[i]` (allocated by the caller).
ptrain_status_t checkStateTable(const char *call,
                                const ptrain_state_desc_t *states,
                                int64_t numStates, int64_t *outBytes);

/// Per-state byte sizes, freed with std::free (allocArray's memory).
using StateBytes = std::unique_ptr<int64_t[], FreeDeleter>;

/// Allocates `outBytes` and runs checkStateTable into it: the start of every call that walks the table.
inline ptrain_status_t checkStateTable(const char *call, const ptrain_state_desc_t *states, int64_t numStates,
                                       StateBytes &outBytes) {
  outBytes.reset(allocArray<int64_t>(numStates));
  if (outBytes == nullptr)
    return fail(PTRAIN_ERROR_OUT_OF_MEMORY, call, "state table");
  return checkStateTable(call, states, numStates, outBytes.get());
}

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_COMMON_STATETABLE_H
