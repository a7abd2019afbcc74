//===- CompareValues.h - The comparison kinds of ptrain.compare -*- C++ -*-===//
//
// a <kind> b for the PTRAIN_COMPARE_EQ..GE kinds of ptrain_compare_f32 /
// _i64 / ptrain_logical_u8 (ptrain_runtime.h), shared by the CPU kernels
// (cpu/Broadcast.cpp) and the GPU kernels (cuda/ModelMask.cu), so both give
// the same masks: IEEE comparisons (a NaN compares false under every kind).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_COMPAREVALUES_H
#define PTRAIN_RUNTIME_COMMON_COMPAREVALUES_H

#include "common/HostDevice.h"
#include "ptrain/Runtime/ptrain_runtime.h"

namespace ptrain::runtime {

/// `kind` is checked by the caller to be one of PTRAIN_COMPARE_EQ..GE.
template <typename T> PTRAIN_HOST_DEVICE bool compareValues(int32_t kind, T a, T b) {
  switch (kind) {
  case PTRAIN_COMPARE_EQ:
    return a == b;
  case PTRAIN_COMPARE_LT:
    return a < b;
  case PTRAIN_COMPARE_LE:
    return a <= b;
  case PTRAIN_COMPARE_GT:
    return a > b;
  default: // PTRAIN_COMPARE_GE
    return a >= b;
  }
}

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_COMMON_COMPAREVALUES_H
