//===- RuntimeCallTable.h - The runtime calls the emitter may emit -*- C++ -*-===//
//
// The emitter names runtime calls only through `RuntimeCall::<name>`, an enum
// generated from include/ptrain/Runtime/RuntimeCalls.def with its X-macro, so
// a call that is not in the table does not compile (STYLE.md habit 7). Each
// entry also knows its parameter count, derived from the C function type in
// the table, which the emitter checks for every call it writes.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_RUNTIMECALLTABLE_H
#define PTRAIN_TARGET_CPP_RUNTIMECALLTABLE_H

#include "RuntimeEnums.h"
#include "ptrain/Runtime/ptrain_runtime.h"

#include <cstddef>

namespace mlir::ptrain::cpp {

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

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_RUNTIMECALLTABLE_H
