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

#include "mlir/Support/LogicalResult.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include <string>

namespace mlir::ptrain::cpp {

/// A `static const int64_t name[] = {...}` line in the op's block; its name, or "nullptr" when empty.
std::string emitDimsArray(CallWriter &w, ArrayRef<int64_t> values, const std::string &name);

/// ptrain.compare, ptrain.select, ptrain.broadcast_to or ptrain.reduce; an error at the op for what the
/// kernels do not cover (e.g. compare of another element type).
LogicalResult emitBroadcastOp(Operation *op, CallWriter &w);

/// ptrain.rms_norm, ptrain.rotary_embedding or ptrain.dropout on f32 tensors.
LogicalResult emitTransformerOp(Operation *op, CallWriter &w);

/// The runtime arguments of a ptrain.dropout's #ptrain.dropout_layout (PTrainPlanAttrs.h): the global index of
/// each local element, as the reference interpreter computes it. Shared by --emit-cpp and --emit-cuda (which
/// reads the counter on the device).
struct DropoutLayoutArgs {
  bool global = false;           ///< the op has a layout (else: ptrain_dropout_f32, indices 0..n-1)
  int64_t mid = 0, inner = 1;    ///< the sharded dimension's local size (0: not sharded), elements after it
  std::string part = "0";        ///< this rank's part along it (a C expression) ...
  int64_t parts = 1;             ///< ... of parts
  bool packedRows = false;       ///< the counter packs step + 2^32 row (lib/Transforms/DropoutRows.cpp) ...
  int64_t rowElems = 0;          ///< ... and a row has this many global elements
  std::string replicaCoordinate; ///< non-empty: the rows are offset by this coordinate * replicaRows
  int64_t replicaRows = 0;
};

/// The layout arguments of `op`, or an error at it (prefixed by `flag`) when the layout names an unknown axis.
FailureOr<DropoutLayoutArgs> dropoutLayoutArgs(DropoutOp op, StringRef flag);

/// ptrain.cast (between f32, i64 and i1 masks), ptrain.gather (i64 indices) or ptrain.log_softmax (f32, any
/// axis): EmitSelection.cpp.
LogicalResult emitSelectionOp(Operation *op, CallWriter &w);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_EMITMODELOPS_H
