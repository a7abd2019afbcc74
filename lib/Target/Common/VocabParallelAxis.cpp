//===- VocabParallelAxis.cpp - The grid axis of a vocabulary-parallel op --===//

#include "Common/VocabParallelAxis.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ptrain;

std::pair<StringRef, StringRef> mlir::ptrain::target::vocabParallelAxis(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::pair<StringRef, StringRef>>(op)
      .Case<TPAllGatherOp, VocabParallelEmbeddingOp, VocabParallelEmbeddingGradOp, VocabParallelCrossEntropyPartsOp,
            VocabParallelCrossEntropyPartsGradOp>([](auto o) { return std::make_pair(o.getGrid(), o.getAxis()); })
      .Default([](Operation *) { return std::make_pair(StringRef(), StringRef()); });
}
