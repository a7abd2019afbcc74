//===- RuntimeCallTable.cpp - One checked call of a call table ------------===//
//
// See RuntimeCallTable.h: the one writer of a checked runtime call, for the
// CPU target's table and the CUDA target's.
//
//===----------------------------------------------------------------------===//

#include "Common/RuntimeCallTable.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::ptrain::target {

LogicalResult writeCheckedCall(std::string &block, Operation *op, StringRef flag, const RuntimeCallInfo &info,
                               ArrayRef<std::string> args) {
  if (args.size() != info.arity)
    return op->emitError(flag) << " internal error: " << info.name << " takes " << info.arity
                               << " arguments, the emitter passed " << args.size();
  block += "    PTRAIN_STEP_CALL(" + std::string(info.name) + "(";
  for (auto [i, a] : llvm::enumerate(args))
    block += (i ? ", " : "") + a;
  block += "));\n";
  return success();
}

} // namespace mlir::ptrain::target
