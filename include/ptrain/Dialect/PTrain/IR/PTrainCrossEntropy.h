//===- PTrainCrossEntropy.h - cross-entropy options ----------------*- C++ -*-===//
//
// The options `ptrain.cross_entropy` and `ptrain.cross_entropy_grad` share: class weights (an optional [C]
// operand), `ignore_index` and `reduction` ("mean" or "sum"), with PyTorch's definition of the weighted mean
// (torch.nn.functional.cross_entropy: sum(w[y] nll) / sum(w[y]) over the positions not ignored).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINCROSSENTROPY_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINCROSSENTROPY_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir::ptrain {

/// Checks constraints (C4)-(C6) of `ptrain.cross_entropy` on `op` (either op): `weight` (may be null) is [C] of
/// the logits' element type, `reduction` is "mean" or "sum", `ignoreIndex` fits the labels' integer type.
LogicalResult verifyCrossEntropyOptions(Operation *op, RankedTensorType logits, RankedTensorType labels, Value weight,
                                        std::optional<int64_t> ignoreIndex, std::optional<StringRef> reduction);

} // namespace mlir::ptrain

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINCROSSENTROPY_H
