//===- FoldedClipScale.cpp - The clip scale an AdamW kernel folds in ------===//
//
// See include/ptrain/Analysis/FoldedClipScale.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/FoldedClipScale.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::ptrain;

BinaryOp mlir::ptrain::foldedClipScaleOf(AdamWOp op) {
  auto mul = op.getGrad().getDefiningOp<BinaryOp>();
  if (!mul || mul.getKind() != BinaryKind::Mul || !mul.getResult().hasOneUse())
    return {};
  auto isScale = [](Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && type.getRank() == 0 && type.getElementType().isF32();
  };
  Type grad = op.getGrad().getType();
  if ((mul.getLhs().getType() == grad && isScale(mul.getRhs())) ||
      (mul.getRhs().getType() == grad && isScale(mul.getLhs())))
    return mul;
  return {};
}

bool mlir::ptrain::isFoldedIntoAdamWKernel(BinaryOp op) {
  if (!op.getResult().hasOneUse())
    return false;
  auto update = dyn_cast<AdamWOp>(*op.getResult().getUsers().begin());
  auto kernel = update ? update->getAttrOfType<SymbolRefAttr>(kAdamWKernelAttr) : SymbolRefAttr();
  if (!kernel || foldedClipScaleOf(update) != op)
    return false;
  auto callee = dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupNearestSymbolFrom(update, kernel));
  return callee && callee.getNumArguments() == 8;
}
