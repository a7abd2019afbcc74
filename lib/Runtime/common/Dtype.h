//===- Dtype.h - Names of the runtime's collective dtypes -------*- C++ -*-===//
//
// The name of a ptrain_dtype_t as error messages print it ("f32", "bf16",
// ...) and its element size. Header-only so that both libptrain_runtime (MPI) and
// libptrain_runtime_cuda (NCCL), which cannot call each other's hidden
// symbols, print the same names.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_RUNTIME_COMMON_DTYPE_H
#define PTRAIN_RUNTIME_COMMON_DTYPE_H

#include "ptrain/Runtime/ptrain_runtime.h"

namespace ptrain::runtime {

inline const char *dtypeName(ptrain_dtype_t dtype) {
  switch (dtype) {
  case PTRAIN_DTYPE_F32:
    return "f32";
  case PTRAIN_DTYPE_F64:
    return "f64";
  case PTRAIN_DTYPE_I64:
    return "i64";
  case PTRAIN_DTYPE_F16:
    return "f16";
  case PTRAIN_DTYPE_BF16:
    return "bf16";
  }
  return "unknown dtype";
}

/// Bytes of one element of a collective dtype (0 if unknown): the MPI and NCCL
/// communicators' traffic counters.
inline int64_t dtypeBytes(ptrain_dtype_t dtype) {
  switch (dtype) {
  case PTRAIN_DTYPE_F32:
    return 4;
  case PTRAIN_DTYPE_F64:
  case PTRAIN_DTYPE_I64:
    return 8;
  case PTRAIN_DTYPE_F16:
  case PTRAIN_DTYPE_BF16:
    return 2;
  }
  return 0;
}

} // namespace ptrain::runtime

#endif // PTRAIN_RUNTIME_COMMON_DTYPE_H
