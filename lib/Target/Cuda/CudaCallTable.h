//===- CudaCallTable.h - The CUDA runtime calls --emit-cuda may emit -*- C++ -*-===//
//
// As lib/Target/Common/RuntimeCallTable.h for the CPU: the CUDA emitter names
// calls of libptrain_runtime_cuda only as `CudaCall::<name>`, an enum
// generated from include/ptrain/Runtime/RuntimeCallsCuda.def, so a call that
// is not in the table does not compile, and each call's parameter count is
// checked against its C function type.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CUDA_CUDACALLTABLE_H
#define PTRAIN_TARGET_CUDA_CUDACALLTABLE_H

#include "Common/KernelTarget.h"
#include "Common/RuntimeCallTable.h"
#include "ptrain/Runtime/ptrain_runtime_cuda.h"

#include "llvm/Support/ErrorHandling.h"

namespace mlir::ptrain::cuda {

enum class CudaCall {
#define PTRAIN_RUNTIME_CALL(name, ret, params) name,
#include "ptrain/Runtime/RuntimeCallsCuda.def"
};

inline constexpr target::RuntimeCallInfo kCudaCalls[] = {
#define PTRAIN_RUNTIME_CALL(name, ret, params) {#name, target::FunctionArity<ret params>::value},
#include "ptrain/Runtime/RuntimeCallsCuda.def"
};

inline const target::RuntimeCallInfo &getCudaCallInfo(CudaCall call) { return kCudaCalls[static_cast<size_t>(call)]; }

// Each shared kernel (lib/Target/Common/SharedKernels.def) takes as many parameters on CUDA as on the CPU.
#define PTRAIN_SHARED_KERNEL(name)                                                                                 \
  static_assert(target::FunctionArity<decltype(::ptrain_##name)>::value ==                                            \
                    target::FunctionArity<decltype(::ptrain_cuda_##name)>::value,                                     \
                "ptrain_" #name " and ptrain_cuda_" #name " differ in their parameters");
#include "Common/SharedKernels.def"

/// The CUDA runtime's call of a shared kernel: ptrain_cuda_<name> (SharedKernels.def).
inline CudaCall cudaKernel(target::Kernel kernel) {
  switch (kernel) {
#define PTRAIN_SHARED_KERNEL(name)                                                                                 \
  case target::Kernel::name:                                                                                       \
    return CudaCall::ptrain_cuda_##name;
#include "Common/SharedKernels.def"
  }
  llvm_unreachable("every shared kernel has a CUDA call");
}

} // namespace mlir::ptrain::cuda

#endif // PTRAIN_TARGET_CUDA_CUDACALLTABLE_H
