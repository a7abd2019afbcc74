//===- VocabParallelAxis.h - The grid axis of a vocabulary-parallel op -*- C++ -*-===//
//
// Megatron-LM's vocabulary-parallel ops (PTrainVocabParallelOps.td) and
// ptrain.tp_all_gather name the grid and axis whose ranks split the vocabulary:
// both targets take the rank's part on it and the axis' communicator from it.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_VOCABPARALLELAXIS_H
#define PTRAIN_TARGET_COMMON_VOCABPARALLELAXIS_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

#include <utility>

namespace mlir::ptrain::target {

/// The (grid, axis) a vocabulary-parallel op or ptrain.tp_all_gather names; empty for any other op.
std::pair<StringRef, StringRef> vocabParallelAxis(Operation *op);

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_VOCABPARALLELAXIS_H
