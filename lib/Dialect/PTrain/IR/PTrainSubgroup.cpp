//===- PTrainSubgroup.cpp - Sub-group collectives -------------------------===//
//
// See include/ptrain/Dialect/PTrain/IR/PTrainSubgroup.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainSubgroup.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::ptrain;

std::optional<Subgroup> mlir::ptrain::getSubgroup(Operation *op) {
  auto dict = op->getAttrOfType<DictionaryAttr>(kSubgroupAttr);
  if (!dict || dict.size() != 1)
    return std::nullopt;
  NamedAttribute entry = *dict.begin();
  auto members = dyn_cast<DenseI64ArrayAttr>(entry.getValue());
  if (!members)
    return std::nullopt;
  return Subgroup{entry.getName().getValue(), members.asArrayRef()};
}

void mlir::ptrain::setSubgroup(Operation *op, StringRef axis, ArrayRef<int64_t> members) {
  MLIRContext *ctx = op->getContext();
  op->setAttr(kSubgroupAttr, DictionaryAttr::get(ctx, {NamedAttribute(StringAttr::get(ctx, axis),
                                                                      DenseI64ArrayAttr::get(ctx, members))}));
}

LogicalResult mlir::ptrain::verifySubgroup(Operation *op, ArrayAttr axes) {
  Attribute attr = op->getAttr(kSubgroupAttr);
  if (!attr)
    return success();
  // (C4)
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict || dict.size() != 1 || !isa<DenseI64ArrayAttr>(dict.begin()->getValue()))
    return op->emitOpError() << kSubgroupAttr
                             << " must be a dictionary with one entry, a grid axis -> array<i64> of coordinates, got "
                             << attr;
  Subgroup group = *getSubgroup(op);
  // (C5)
  if (!llvm::is_contained(axes.getAsValueRange<StringAttr>(), group.axis))
    return op->emitOpError() << "subgroup axis '" << group.axis << "' is not one of the collective axes " << axes;
  // (C6)
  if (group.members.empty())
    return op->emitOpError() << "subgroup of axis '" << group.axis << "' has no members";
  for (auto [i, c] : llvm::enumerate(group.members)) {
    if (c < 0)
      return op->emitOpError() << "subgroup member " << c << " of axis '" << group.axis << "' is negative";
    if (i > 0 && group.members[i - 1] >= c)
      return op->emitOpError() << "subgroup members of axis '" << group.axis << "' must be strictly increasing, got "
                               << group.members[i - 1] << " before " << c;
  }
  // (C8)
  auto fn = op->getParentOfType<func::FuncOp>();
  StageAttr stage = fn ? getStage(fn) : StageAttr();
  if (stage && group.axis == "pp" && !group.contains(stage.getIndex()))
    return op->emitOpError() << "in @" << fn.getSymName() << " of stage " << stage.getIndex()
                             << ", which is not a member of its subgroup pp = [" << group.members
                             << "]: a stage outside the group must not post the collective";
  return success();
}

LogicalResult mlir::ptrain::verifySubgroupInGrid(Operation *op, GridOp grid) {
  std::optional<Subgroup> group = getSubgroup(op);
  if (!group || group->members.empty() || !grid.getAxisIndex(group->axis))
    return success(); // (C4)-(C6) and the collective's (C2) report these
  // (C7)
  const int64_t size = grid.getAxisSize(group->axis);
  if (group->members.back() >= size)
    return op->emitOpError() << "subgroup member " << group->members.back() << " is not a coordinate of axis '"
                             << group->axis << "' of grid @" << grid.getSymName() << " (size " << size << ")";
  return success();
}
