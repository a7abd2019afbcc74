//===- EmitVocabParallel.h - Vocabulary-parallel ops in --emit-cpp -*- C++ -*-===//
//
// --emit-cpp of ptrain.tp_all_gather and the vocabulary-parallel embedding and cross-entropy ops
// (PTrainVocabParallelOps.td; docs/CodegenCpu.md, "Tensor parallelism"), onto cpu/VocabParallel.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_EMITVOCABPARALLEL_H
#define PTRAIN_TARGET_CPP_EMITVOCABPARALLEL_H

#include "EmitCodecs.h"

#include "Common/VocabParallelAxis.h"

#include "mlir/Support/LogicalResult.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include <string>
#include <utility>

namespace mlir::ptrain::cpp {

/// One vocabulary-parallel op or ptrain.tp_all_gather, over the communicator variable `comm` of its axis
/// on `grid`: the rank-local kernels get this rank's coordinate on the axis, the gather is blocking.
LogicalResult emitVocabParallelOp(Operation *op, const std::string &comm, GridOp grid, CallWriter &w);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_EMITVOCABPARALLEL_H
