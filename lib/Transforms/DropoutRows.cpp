//===- DropoutRows.cpp - dropout masks keyed by the global batch row ------===//
//
// See DropoutRows.h and ptrain.dropout's description (PTrainModelOps.td).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/DropoutRows.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::ptrain;

int64_t mlir::ptrain::keyDropoutByBatchRow(ModuleOp module, Operation *anchor, ArrayRef<func::FuncOp> stages,
                                           int64_t rows, int64_t microBatches, int64_t dp) {
  OpBuilder b(module.getContext());
  auto type = RankedTensorType::get({}, b.getI64Type());
  StateOp state = module.lookupSymbol<StateOp>(kMicroBatchRowState);
  int64_t keyed = 0;
  for (func::FuncOp fn : stages)
    fn.walk([&](DropoutOp dropout) {
      DropoutLayoutAttr layout = getDropoutLayout(dropout);
      if (layout && layout.getBatchRows())
        return;
      if (!state) {
        b.setInsertionPoint(anchor);
        state = StateOp::create(b, anchor->getLoc(), kMicroBatchRowState, kMicroBatchRowState, StateKind::StepCounter,
                                type);
      }
      // counter + 2^32 row: the step in the low 32 bits, the micro-batch's first row above.
      b.setInsertionPoint(dropout);
      Value packed = StateReadOp::create(b, dropout.getLoc(), type, state.getSymName());
      dropout.getCounterMutable().assign(
          BinaryOp::create(b, dropout.getLoc(), BinaryKind::Add, dropout.getCounter(), packed));
      if (!layout)
        layout = DropoutLayoutAttr::get(module.getContext(), std::nullopt, "", std::nullopt, "", std::nullopt);
      if (dp > 1)
        setDropoutLayout(dropout, layout.withBatchRows(rows, "dp", microBatches * rows));
      else
        setDropoutLayout(dropout, layout.withBatchRows(rows, "", std::nullopt));
      ++keyed;
    });
  return keyed;
}

void mlir::ptrain::setMicroBatchRow(OpBuilder &b, Location loc, ModuleOp module, int64_t row) {
  auto state = module.lookupSymbol<StateOp>(kMicroBatchRowState);
  if (!state)
    return;
  auto type = RankedTensorType::get({}, b.getI64Type());
  Value value = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, b.getI64IntegerAttr(row << 32)));
  StateWriteOp::create(b, loc, value, state.getSymName());
}
