//===- DropoutLayout.cpp - The global index of a dropout's mask ----------===//
//
// See DropoutLayout.h.
//
//===----------------------------------------------------------------------===//

#include "Common/DropoutLayout.h"

#include "Common/CppTypes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::target;

/// `gridCoordinate(ptrain_rank, d)` (the generated code's helper) for the grid axis `axis` of the module's grid,
/// and the axis' size; fails at `op` when no grid of the module has that axis.
static FailureOr<std::pair<std::string, int64_t>> gridCoordinateOf(Operation *op, StringRef axis, StringRef flag) {
  for (GridOp grid : op->getParentOfType<ModuleOp>().getOps<GridOp>())
    if (std::optional<unsigned> d = grid.getAxisIndex(axis))
      return std::make_pair("gridCoordinate(ptrain_rank, " + std::to_string(*d) + ")", grid.getAxisSize(axis));
  return op->emitError(flag) << ": the dropout layout names grid axis '" << axis << "', which no grid has";
}

FailureOr<DropoutLayoutArgs> mlir::ptrain::target::dropoutLayoutArgs(DropoutOp op, StringRef flag) {
  DropoutLayoutArgs args;
  DropoutLayoutAttr layout = getDropoutLayout(op);
  if (!layout)
    return args;
  // The global index of the op's description, as lib/Interpreter/Elementwise.cpp's dropoutLayout computes it.
  args.global = true;
  RankedTensorType type = tensorOf(op.getInput());
  if (std::optional<int64_t> shardDim = layout.getShardDim()) { // with shard_axis (C2)
    FailureOr<std::pair<std::string, int64_t>> c = gridCoordinateOf(op, layout.getShardAxis(), flag);
    if (failed(c))
      return failure();
    int64_t k = *shardDim;
    args.mid = type.getDimSize(k);
    for (int64_t d = k + 1; d < type.getRank(); ++d)
      args.inner *= type.getDimSize(d);
    std::tie(args.part, args.parts) = *c;
  }
  if (std::optional<int64_t> batchRows = layout.getBatchRows()) {
    if (std::optional<int64_t> replicaRows = layout.getReplicaRows()) { // with replica_axis (C3)
      FailureOr<std::pair<std::string, int64_t>> c = gridCoordinateOf(op, layout.getReplicaAxis(), flag);
      if (failed(c))
        return failure();
      args.replicaCoordinate = c->first;
      args.replicaRows = *replicaRows;
    }
    args.packedRows = true;
    args.rowElems = type.getNumElements() / *batchRows * args.parts;
  }
  return args;
}
