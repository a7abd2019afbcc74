//===- StateTable.h - Checks shared by state loading and saving -*- C++ -*-===//
//
// The state descriptors of a compiled step (ptrain_state_desc_t): validation
// and sizes, shared by OnnxInit.cpp and Checkpoint.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_STATETABLE_H
#define PTRAIN_RUNTIME_COMMON_STATETABLE_H

#include "common/Status.h"

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

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_COMMON_STATETABLE_H
