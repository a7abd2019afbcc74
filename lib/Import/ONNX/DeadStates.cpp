//===- DeadStates.cpp - drop the parameters no op reads after legalization -*- C++ -*-===//

#include "DeadStates.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::ptrain;

void mlir::ptrain::onnx_import::dropUnreadParameters(ModuleOp module) {
  SmallVector<StateOp> unread;
  for (auto state : module.getOps<StateOp>())
    if (state.getKind() == StateKind::Parameter && SymbolTable::symbolKnownUseEmpty(state, module))
      unread.push_back(state);
  for (StateOp state : unread) {
    emitRemark(state.getLoc()) << "initializer '" << state.getKey()
                               << "' is read by no op after legalization (its values were folded into "
                                  "constants, or no node uses it): its parameter state is dropped";
    state.erase();
  }
}
