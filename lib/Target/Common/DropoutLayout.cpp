//===- DropoutLayout.cpp - The global index of a dropout's mask ----------===//
//
// See DropoutLayout.h.
//
//===----------------------------------------------------------------------===//

#include "Common/DropoutLayout.h"

#include "Common/CppTypes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainDropoutLayout.h"

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
  auto layout = op->getAttrOfType<DictionaryAttr>(kDropoutLayoutAttr);
  if (!layout)
    return args;
  // The global index of the op's description, as lib/Interpreter/Elementwise.cpp's dropoutLayout computes it.
  args.global = true;
  auto integer = [&](StringRef key) { return layout.getAs<IntegerAttr>(key).getInt(); };
  RankedTensorType type = tensorOf(op.getInput());
  if (auto axis = layout.getAs<StringAttr>("shard_axis")) {
    FailureOr<std::pair<std::string, int64_t>> c = gridCoordinateOf(op, axis.getValue(), flag);
    if (failed(c))
      return failure();
    int64_t k = integer("shard_dim");
    args.mid = type.getDimSize(k);
    for (int64_t d = k + 1; d < type.getRank(); ++d)
      args.inner *= type.getDimSize(d);
    std::tie(args.part, args.parts) = *c;
  }
  if (layout.get("batch_rows")) {
    if (auto axis = layout.getAs<StringAttr>("replica_axis")) {
      FailureOr<std::pair<std::string, int64_t>> c = gridCoordinateOf(op, axis.getValue(), flag);
      if (failed(c))
        return failure();
      args.replicaCoordinate = c->first;
      args.replicaRows = integer("replica_rows");
    }
    args.packedRows = true;
    args.rowElems = type.getNumElements() / integer("batch_rows") * args.parts;
  }
  return args;
}
