//===- DropoutRows.h - dropout masks keyed by the global batch row -*- C++ -*-===//
//
// A pipeline runs each stage function once per micro-batch, so a mask keyed by the local element index
// alone would repeat across micro-batches (and data-parallel replicas). --ptrain-build-training-step gives
// every ptrain.dropout of the stage functions the counter step + @micro_batch_row, a state that
// --ptrain-lower-to-runtime sets to 2^32 i b before each call for micro-batch i (b rows), and the layout
// entries batch_rows = b (and replica_axis = "dp", replica_rows = M b) of its #ptrain.dropout_layout
// (PTrainPlanAttrs.td). The masks are then those of the one-rank step on the same global rows.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_DROPOUTROWS_H
#define PTRAIN_TRANSFORMS_DROPOUTROWS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::ptrain {

/// The state (symbol and key) holding 2^32 x the global batch row of the current micro-batch in its replica.
inline constexpr llvm::StringLiteral kMicroBatchRowState = "micro_batch_row";

/// Gives every ptrain.dropout in `stages` without batch_rows the counter + @micro_batch_row (the state created
/// before `anchor`, kind step_counter, unless the module has it) and the layout batch_rows = `rows` (the
/// micro-batch's rows) and, when `dp` > 1, replica_axis = "dp" with replica_rows = `microBatches` x `rows`.
/// Returns the number of dropouts keyed.
int64_t keyDropoutByBatchRow(ModuleOp module, Operation *anchor, ArrayRef<func::FuncOp> stages, int64_t rows,
                             int64_t microBatches, int64_t dp);

/// Writes 2^32 `row` to @micro_batch_row at `b`'s insertion point when the module has that state (a no-op
/// otherwise): the schedule's call for a micro-batch that starts at row `row` of the replica follows.
void setMicroBatchRow(OpBuilder &b, Location loc, ModuleOp module, int64_t row);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_DROPOUTROWS_H
