//===- TiedWeights.cpp - report parameters shared by embedding and head -*- C++ -*-===//

#include "TiedWeights.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::ptrain;

/// Whether `value` (or its transpose) is an operand of a matmul.
static bool feedsMatmul(Value value) {
  for (Operation *user : value.getUsers()) {
    if (isa<MatmulOp>(user))
      return true;
    if (auto transpose = dyn_cast<TransposeOp>(user); transpose && feedsMatmul(transpose.getResult()))
      return true;
  }
  return false;
}

void mlir::ptrain::onnx_import::reportTiedWeights(ModuleOp module) {
  llvm::SetVector<StringRef> tied;
  llvm::StringMap<Location> where;
  module.walk([&](StateReadOp read) {
    bool embedding = llvm::any_of(read.getResult().getUsers(), [&](Operation *user) {
      auto lookup = dyn_cast<EmbeddingOp>(user);
      return lookup && lookup.getTable() == read.getResult();
    });
    if (embedding && feedsMatmul(read.getResult()) && tied.insert(read.getState()))
      where.try_emplace(read.getState(), read.getLoc());
  });
  if (tied.empty())
    return;
  Builder b(module.getContext());
  SmallVector<Attribute> keys;
  for (StringRef symbol : tied) {
    auto state = module.lookupSymbol<StateOp>(symbol);
    StringRef key = state ? state.getKey() : symbol;
    keys.push_back(b.getStringAttr(key));
    emitRemark(where.find(symbol)->second)
        << "parameter '" << key << "' is tied: it is the embedding table and, "
        << "directly or transposed, a matmul operand (the output head); it stays one symbol";
  }
  module->setAttr("ptrain.tied_parameters", b.getArrayAttr(keys));
}
