//===- PTrainPlanAttrs.cpp - the plan attributes' verifiers --------------===//
//
// #ptrain.tp_slice's own constraints (C1-C5) and the dialect's check of the plan attributes where they sit
// (C6-C9), PTrainAttrs.td and PTrainPlanAttrs.h; negative tests: test/Dialect/PTrain/plan-attrs-invalid.mlir.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

using namespace mlir;
using namespace mlir::ptrain;

LogicalResult TPSliceAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef axis, int64_t dim,
                                  int64_t groups, ArrayRef<int64_t> shape, int64_t padded) {
  // (C1)
  if (axis.empty())
    return emitError() << "tp_slice needs a grid axis";
  // (C2)
  if (shape.empty() || llvm::any_of(shape, [](int64_t d) { return d < 1; }))
    return emitError() << "tp_slice shape must be a non-empty list of sizes >= 1";
  // (C3)
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size()))
    return emitError() << "tp_slice dim " << dim << " is not a dimension of the rank-" << shape.size()
                       << " shape";
  // (C4)
  if (groups < 1 || shape[dim] % groups != 0)
    return emitError() << "tp_slice groups " << groups << " must be >= 1 and divide shape[" << dim
                       << "] = " << shape[dim];
  // (C5)
  if (padded != 0 && (padded < shape[dim] || groups != 1))
    return emitError() << "tp_slice padded " << padded << " must be >= shape[" << dim << "] = " << shape[dim]
                       << ", with groups 1";
  return success();
}

LogicalResult PTrainDialect::verifyOperationAttribute(Operation *op, NamedAttribute attribute) {
  if (attribute.getName() != kTPSliceAttr)
    return success(); // the plan attributes not typed yet (PTrainPlanAttrs.h) and the passes' own
  // (C6)
  auto slice = dyn_cast<TPSliceAttr>(attribute.getValue());
  if (!slice)
    return op->emitError() << "'" << kTPSliceAttr << "' must be a #ptrain.tp_slice, got " << attribute.getValue();
  // (C7)
  auto state = dyn_cast<StateOp>(op);
  if (!state)
    return op->emitError() << "'" << kTPSliceAttr << "' belongs on a ptrain.state";
  // (C8)
  RankedTensorType local = state.getTensorType();
  ArrayRef<int64_t> global = slice.getShape();
  const int64_t dim = slice.getDim();
  if (local.getRank() != static_cast<int64_t>(global.size()))
    return op->emitError() << "'" << kTPSliceAttr << "' shape has rank " << global.size() << ", the state "
                           << local.getRank();
  for (int64_t d = 0; d < local.getRank(); ++d)
    if (d != dim && local.getDimSize(d) != global[d])
      return op->emitError() << "'" << kTPSliceAttr << "' dimension " << d << " of the state (" << local.getDimSize(d)
                             << ") differs from the sliced tensor's (" << global[d] << ")";
  // (C9)
  const int64_t part = local.getDimSize(dim);
  if (part % slice.getGroups() != 0 || slice.getPaddedSize() % part != 0)
    return op->emitError() << "'" << kTPSliceAttr << "' the state's size " << part << " in dimension " << dim
                           << " must be a multiple of groups (" << slice.getGroups() << ") and divide "
                           << slice.getPaddedSize();
  return success();
}
