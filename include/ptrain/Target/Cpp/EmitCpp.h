//===- EmitCpp.h - The CPU code generator (--emit-cpp) ----------*- C++ -*-===//
//
// Translates a module of keyed state symbols and functions of ptrain model,
// gradient, optimizer and state ops into ONE C++17 translation unit that calls
// only the runtime's call table (include/ptrain/Runtime/RuntimeCalls.def):
// static state storage with a keyed table, a static arena planned by liveness,
// one C ABI entry point per function, and ptrain_step_init/save/load
// (docs/CodegenCpu.md).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_EMITCPP_H
#define PTRAIN_TARGET_CPP_EMITCPP_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir::ptrain {

/// Writes the C++ translation unit of `module` to `os`. Fails, with an error
/// naming the op and its location and writing nothing, on an unsupported op,
/// a dynamic shape or an element type other than f32 and i64.
LogicalResult emitCpp(ModuleOp module, raw_ostream &os);

/// Registers `--emit-cpp` with mlir-translate.
void registerEmitCppTranslation();

} // namespace mlir::ptrain

#endif // PTRAIN_TARGET_CPP_EMITCPP_H
