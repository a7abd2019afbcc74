//===- DeadStates.h - drop the parameters no op reads after legalization -*- C++ -*-===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_DEADSTATES_H
#define PTRAIN_LIB_IMPORT_ONNX_DEADSTATES_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::ptrain::onnx_import {

/// Erases every `ptrain.state` of kind parameter that no op of the module reads or writes any more, and
/// reports each with a remark at the state naming the ONNX initializer. After legalization such a state is
/// an initializer whose values were folded into constants (Hugging Face's rotary `inv_freq` buffer, folded
/// with Cos/Sin into the cos/sin tables: LegalizeSequenceOps.cpp) or one no node of the graph uses. Left
/// declared, it would be a parameter without gradient that the training step still gives AdamW moments,
/// checkpoints and loads. The model's file is unchanged: `ptrain-export` leaves that initializer as it was.
void dropUnreadParameters(ModuleOp module);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_DEADSTATES_H
