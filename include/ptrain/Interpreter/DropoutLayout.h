//===- DropoutLayout.h - the global element index of a dropout mask -*- C++ -*-===//
//
// ptrain.dropout keys its mask by the element's global row-major index (PTrainModelOps.td): the local
// tensor's place in the whole step's tensor, given by the op's `ptrain.dropout_layout` attribute (the batch
// row packed into the counter, the data-parallel replica, the tensor-parallel part). The reference
// interpreter and the multi-rank executor compute it here; generated code passes the same numbers to
// ptrain_dropout_global_f32.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_INTERPRETER_DROPOUTLAYOUT_H
#define PTRAIN_INTERPRETER_DROPOUTLAYOUT_H

#include "ptrain/Interpreter/Tensor.h"
#include "ptrain/Interpreter/VocabParallelKernels.h" // AxisCoordinate

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

namespace mlir::ptrain::interp {

/// Where a dropout input lies in the global tensor, flattened: the local index i = (o mid + j) inner + r
/// (j on the sharded dimension) has the global index ((o parts + part) mid + j) inner + r + base; mid = 0
/// (no sharded dimension): i + base.
struct DropoutLayout {
  int64_t step = 0; ///< the step counter (the counter's low 32 bits when the row is packed into it)
  int64_t mid = 0, inner = 1, part = 0, parts = 1;
  int64_t base = 0; ///< the global batch row R of the first row times the global elements per row
  int64_t globalIndex(int64_t i) const {
    if (mid == 0)
      return i + base;
    int64_t r = i % inner, j = (i / inner) % mid, o = i / (inner * mid);
    return ((o * parts + part) * mid + j) * inner + r + base;
  }
};

/// The layout of `op`'s input for the counter value `counter` on the rank that `coordinate` describes. An
/// axis the run has no coordinate on (the one-rank interpreter has none) is an error naming it.
llvm::Expected<DropoutLayout> dropoutLayout(DropoutOp op, int64_t counter, AxisCoordinate coordinate);

/// `ptrain.dropout` with `layout`: x / (1 - ratio) where dropoutKeeps(seed, layout.step,
/// layout.globalIndex(i), ratio), else 0.
llvm::Expected<Tensor> evalDropout(const Tensor &input, double ratio, int64_t seed, const DropoutLayout &layout);

/// Evaluates `op` (one result) on the rank that `coordinate` describes; `get` returns an operand's value.
llvm::Expected<std::vector<Tensor>> evaluateDropout(DropoutOp op, llvm::function_ref<const Tensor &(Value)> get,
                                                    AxisCoordinate coordinate);

} // namespace mlir::ptrain::interp

#endif // PTRAIN_INTERPRETER_DROPOUTLAYOUT_H
