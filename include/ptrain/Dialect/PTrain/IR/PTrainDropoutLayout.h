//===- PTrainDropoutLayout.h - ptrain.dropout's layout attribute -*- C++ -*-===//
//
// The name of ptrain.dropout's optional `ptrain.dropout_layout` dictionary (PTrainModelOps.td): where the
// op's tensor lies in the whole step's tensor, so that its mask is keyed by the global element index.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINDROPOUTLAYOUT_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINDROPOUTLAYOUT_H

#include "llvm/ADT/StringRef.h"

namespace mlir::ptrain {

/// `{batch_rows, replica_axis, replica_rows, shard_axis, shard_dim}`, each optional (see the op).
inline constexpr llvm::StringLiteral kDropoutLayoutAttr = "ptrain.dropout_layout";

} // namespace mlir::ptrain

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINDROPOUTLAYOUT_H
