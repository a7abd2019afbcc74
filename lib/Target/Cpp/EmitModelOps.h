//===- EmitModelOps.h - Mask, broadcast and LLaMA-style ops in --emit-cpp -*- C++ -*-===//
//
// --emit-cpp of the model ops beyond the GPT core (docs/CodegenCpu.md, "Masks and broadcasting" and
// "LLaMA-style ops and dropout"), each onto one runtime kernel through a CallWriter:
//   - EmitBroadcast.cpp: ptrain.compare (i1 masks, stored one uint8_t per element), ptrain.select,
//     ptrain.broadcast_to and ptrain.reduce, with numpy broadcasting;
//   - EmitTransformer.cpp: ptrain.rms_norm, ptrain.rotary_embedding and ptrain.dropout (the interpreter's
//     counter-based mask, bit for bit). Their gradients are ops of these two lists (rotary with -sin,
//     dropout of dy) or of the core (rms_norm's binary/unary/reduce);
//   - EmitSelection.cpp: ptrain.cast, ptrain.gather and ptrain.log_softmax (ONNX Cast, Gather, LogSoftmax).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_EMITMODELOPS_H
#define PTRAIN_TARGET_CPP_EMITMODELOPS_H

#include "EmitCodecs.h"

#include "Common/DropoutLayout.h"

#include "mlir/Support/LogicalResult.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include <string>

namespace mlir::ptrain::cpp {

/// A `static const int64_t name[] = {...}` line in the op's block; its name, or "nullptr" when empty.
std::string emitDimsArray(CallWriter &w, ArrayRef<int64_t> values, const std::string &name);

/// ptrain.compare, ptrain.select, ptrain.broadcast_to, ptrain.reduce or an i64 ptrain.binary; an error at the op
/// for what the kernels do not cover (e.g. compare of another element type, an i64 div).
LogicalResult emitBroadcastOp(Operation *op, CallWriter &w);

/// ptrain.rms_norm, ptrain.rotary_embedding or ptrain.dropout on f32 tensors.
LogicalResult emitTransformerOp(Operation *op, CallWriter &w);

/// ptrain.cast (between f32, i64 and i1 masks), ptrain.gather (i64 indices) or ptrain.log_softmax (f32, any
/// axis): EmitSelection.cpp.
LogicalResult emitSelectionOp(Operation *op, CallWriter &w);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_EMITMODELOPS_H
