//===- TensorParallel.h - what --ptrain-raise records for --ptrain-shard-tp --*- C++ -*-===//
//
// What --ptrain-raise and --ptrain-shard-tp share: the parameter and node-error helpers, the vocabulary-parallel
// split and its cross-entropy; the attribute names they record are in ptrain/Plan/TensorParallelAttrs.h
// (docs/Plan.md, "Tensor parallelism").
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_TENSORPARALLEL_H
#define PTRAIN_TRANSFORMS_TENSORPARALLEL_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Plan/TensorParallelAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::ptrain {

/// The `ptrain.state_read` of a parameter that `weight` is, directly or through one `ptrain.transpose`
/// (a torch Linear's [out, in] weight); null otherwise. `symbols` is the module's symbol table.
StateReadOp getParameterRead(Value weight, SymbolTable &symbols);

/// An error at `op` that names its ONNX node (the NameLoc the importer gives every op):
/// `<pass>: ONNX node '/blocks.0/attn/MatMul' ('ptrain.matmul'): ...`.
InFlightDiagnostic emitNodeError(Operation *op, llvm::StringRef pass);

/// --ptrain-shard-tp's vocabulary-parallel part (lib/Transforms/VocabParallel.cpp): splits the token embedding
/// of `fn` and its LM head (tied or not) over the vocabulary, padded to a multiple of tp x `multiple`; the
/// forward returns the gathered logits. Errors name the op where the split cannot apply.
LogicalResult shardVocabParallel(ModuleOp module, func::FuncOp fn, int64_t tp, int64_t multiple);

/// The training step's cross-entropy of `logits` against `labels`: `ptrain.cross_entropy`, or, when the
/// logits are vocabulary-parallel logits gathered by --ptrain-shard-tp (possibly sliced along the positions),
/// the parallel cross-entropy of the rank's local logits (the gather then dead and removed).
Value createCrossEntropy(OpBuilder &b, Location loc, Value logits, Value labels);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_TENSORPARALLEL_H
