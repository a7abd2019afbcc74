//===- PTrainStateOps.cpp - module-level keyed state -------------*- C++ -*-===//

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainStateInit.h"

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
  if (Attribute init = (*this)->getAttr(kStateInitAttrName)) {
    // (C4)
    if (getKind() != StateKind::Parameter)
      return emitOpError() << "a " << kStateInitAttrName << " is only for a parameter, got kind "
                           << stringifyStateKind(getKind());
    // (C5)
    auto dict = dyn_cast<DictionaryAttr>(init);
    auto kind = dict ? dict.getAs<StringAttr>("kind") : StringAttr();
    auto seed = dict ? dict.getAs<IntegerAttr>("seed") : IntegerAttr();
    if (!kind || !seed || dict.size() != 2 ||
        (kind.getValue() != kOrthogonalInit && kind.getValue() != kOrthogonalTransposedInit) || seed.getInt() < 0)
      return emitOpError() << kStateInitAttrName << " must be {kind = \"" << kOrthogonalInit << "\" or \""
                           << kOrthogonalTransposedInit << "\", seed = S} with an integer S >= 0, got " << init;
    // (C6)
    RankedTensorType type = getTensorType();
    if (type.getRank() != 2 || !type.getElementType().isF32())
      return emitOpError() << "an orthogonal " << kStateInitAttrName << " needs a rank-2 f32 tensor, got " << type;
  }
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

std::optional<StateInit> mlir::ptrain::getStateInit(StateOp state) {
  auto dict = state->getAttrOfType<DictionaryAttr>(kStateInitAttrName);
  if (!dict)
    return std::nullopt;
  auto kind = dict.getAs<StringAttr>("kind");
  auto seed = dict.getAs<IntegerAttr>("seed");
  if (!kind || !seed)
    return std::nullopt;
  return StateInit{kind.getValue(), seed.getInt()};
}

void mlir::ptrain::setOrthogonalInit(StateOp state, int64_t seed, bool transposed) {
  Builder b(state.getContext());
  StringAttr kind = b.getStringAttr(transposed ? kOrthogonalTransposedInit : kOrthogonalInit);
  state->setAttr(kStateInitAttrName, b.getDictionaryAttr({b.getNamedAttr("kind", kind),
                                                          b.getNamedAttr("seed", b.getI64IntegerAttr(seed))}));
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
