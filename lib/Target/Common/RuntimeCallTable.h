//===- RuntimeCallTable.h - The runtime calls the emitters may emit -*- C++ -*-===//
//
// The emitters name runtime calls only through `RuntimeCall::<name>`, an enum
// generated from include/ptrain/Runtime/RuntimeCalls.def with its X-macro, so
// a call that is not in the table does not compile (STYLE.md habit 7). Each
// entry also knows its parameter count, derived from the C function type in
// the table, which the emitters check for every call they write
// (writeCheckedCall). The CPU target calls these in its step; the CUDA target
// on the host (communicators, checkpoints, rendezvous) beside its own table
// (lib/Target/Cuda/CudaCallTable.h, entries of the same RuntimeCallInfo).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_RUNTIMECALLTABLE_H
#define PTRAIN_TARGET_COMMON_RUNTIMECALLTABLE_H

#include "Common/EmitHelpers.h" // also: the CPU and CUDA namespaces find these names unqualified
#include "Common/RuntimeEnums.h"
#include "ptrain/Runtime/ptrain_runtime.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include <cstddef>
#include <string>

namespace mlir::ptrain::target {

enum class RuntimeCall {
#define PTRAIN_RUNTIME_CALL(name, ret, params) name,
#include "ptrain/Runtime/RuntimeCalls.def"
};

template <typename F> struct FunctionArity;
template <typename R, typename... Args> struct FunctionArity<R(Args...)> {
  static constexpr size_t value = sizeof...(Args);
};

struct RuntimeCallInfo {
  const char *name;
  size_t arity;
};

/// Indexed by RuntimeCall.
inline constexpr RuntimeCallInfo kRuntimeCalls[] = {
#define PTRAIN_RUNTIME_CALL(name, ret, params)                                 \
  {#name, FunctionArity<ret params>::value},
#include "ptrain/Runtime/RuntimeCalls.def"
};

inline const RuntimeCallInfo &getRuntimeCallInfo(RuntimeCall call) {
  return kRuntimeCalls[static_cast<size_t>(call)];
}

/// Appends `    PTRAIN_STEP_CALL(<name>(<args>));` to `block`: one checked call of the table entry `info`. An internal
/// error at `op` (prefixed by `flag`, "--emit-cpp" or "--emit-cuda") when `args` is not the entry's arity.
LogicalResult writeCheckedCall(std::string &block, Operation *op, StringRef flag, const RuntimeCallInfo &info,
                               ArrayRef<std::string> args);

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_RUNTIMECALLTABLE_H
