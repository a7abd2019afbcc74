//===- PTrainStateOps.cpp - module-level keyed state -------------*- C++ -*-===//

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::ptrain;

#define GET_OP_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainStateOps.cpp.inc"

//===----------------------------------------------------------------------===//
// StateOp
//===----------------------------------------------------------------------===//

LogicalResult StateOp::verify() {
  // (C1)
  if (!getTensorType().hasStaticShape())
    return emitOpError() << "state type must have a static shape, got " << getType();
  // (C2)
  if (getKey().empty())
    return emitOpError("state key must not be empty");
  // (C3) Only the first state op of a block scans its siblings, so the check is linear in the block.
  Block *block = (*this)->getBlock();
  if (!block || *block->getOps<StateOp>().begin() != *this)
    return success();
  llvm::DenseMap<StringAttr, StateOp> byKey;
  for (StateOp state : block->getOps<StateOp>()) {
    StringAttr key = state.getKeyAttr();
    if (!key)
      continue;
    auto [it, inserted] = byKey.try_emplace(key, state);
    if (!inserted) {
      InFlightDiagnostic diag = state.emitOpError()
                                << "state key \"" << key.getValue() << "\" is already used by @"
                                << it->second.getSymName();
      diag.attachNote(it->second.getLoc()) << "first use of the key";
      return diag;
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// StateReadOp, StateWriteOp
//===----------------------------------------------------------------------===//

/// (C1) and (C2) of state_read and state_write.
static LogicalResult verifyStateUse(Operation *op, SymbolTableCollection &symbolTable,
                                    FlatSymbolRefAttr name, Type type) {
  auto state = symbolTable.lookupNearestSymbolFrom<StateOp>(op, name.getAttr());
  if (!state)
    return op->emitOpError() << name << " does not name a ptrain.state";
  if (state.getType() != type)
    return op->emitOpError() << "type " << type << " differs from the type " << state.getType()
                             << " of state " << name;
  return success();
}

LogicalResult StateReadOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyStateUse(*this, symbolTable, getStateAttr(), getResult().getType());
}

LogicalResult StateWriteOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyStateUse(*this, symbolTable, getStateAttr(), getValue().getType());
}
