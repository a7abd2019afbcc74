//===- CudaCallTable.h - The CUDA runtime calls --emit-cuda may emit -*- C++ -*-===//
//
// As lib/Target/Cpp/RuntimeCallTable.h for the CPU: the CUDA emitter names
// calls of libptrain_runtime_cuda only as `CudaCall::<name>`, an enum
// generated from include/ptrain/Runtime/RuntimeCallsCuda.def, so a call that
// is not in the table does not compile, and each call's parameter count is
// checked against its C function type.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CUDA_CUDACALLTABLE_H
#define PTRAIN_TARGET_CUDA_CUDACALLTABLE_H

#include "Cpp/RuntimeCallTable.h"
#include "ptrain/Runtime/ptrain_runtime_cuda.h"

namespace mlir::ptrain::cuda {

enum class CudaCall {
#define PTRAIN_RUNTIME_CALL(name, ret, params) name,
#include "ptrain/Runtime/RuntimeCallsCuda.def"
};

inline constexpr cpp::RuntimeCallInfo kCudaCalls[] = {
#define PTRAIN_RUNTIME_CALL(name, ret, params) {#name, cpp::FunctionArity<ret params>::value},
#include "ptrain/Runtime/RuntimeCallsCuda.def"
};

inline const cpp::RuntimeCallInfo &getCudaCallInfo(CudaCall call) { return kCudaCalls[static_cast<size_t>(call)]; }

} // namespace mlir::ptrain::cuda

#endif // PTRAIN_TARGET_CUDA_CUDACALLTABLE_H
