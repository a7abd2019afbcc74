//===- MixedPrecision.h - 16-bit casts of a built training step ---*- C++ -*-===//
//
// The IR of `--ptrain-build-training-step="precision=bf16|fp16"` (docs/MixedPrecision.md, "The design"): fp32
// master weights, moments and checkpoint; every GEMM of the step (forward and backward) reads 16-bit operands
// (bf16, or IEEE binary16 for fp16) and accumulates in fp32 (`ptrain.matmul {accumulate = f32}`, the runtime's
// ptrain_gemm_bf16 / ptrain_gemm_f16); everything else (softmax, norms, the loss, gradient accumulation, the dp
// reduction) stays fp32. Sources: Micikevicius et al., "Mixed Precision Training" (ICLR 2018), sec. 3.1 (fp32
// master copy) and 3.3 (fp32 accumulation); Kalamkar et al., "A Study of BFLOAT16 for Deep Learning Training"
// (2019), sec. 3 (no loss scaling in bf16).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_MIXEDPRECISION_H
#define PTRAIN_TRANSFORMS_MIXEDPRECISION_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/ErrorHandling.h"

namespace mlir::ptrain {

// The precisions `--ptrain-build-training-step` and `ptrain-compile` accept are the enum `Precision`
// (PTrainBase.td; `symbolizePrecision` parses "fp32", "bf16" and "fp16"); the module attribute that records it for
// the pipeline's messages is `ptrain.precision` (`getPrecision`, `setPrecision`: PTrainPlanAttrs.h).

/// The 16-bit element type of `precision`'s GEMM operands and pipeline messages: bf16 for BF16, f16 (IEEE
/// binary16) for F16, and a null type for F32 (nothing is cast). Inline: the timing model (PTrainAnalysis, which
/// does not link PTrainTransforms) reads it through getMessageHalfType.
inline FloatType getHalfType(MLIRContext *context, Precision precision) {
  switch (precision) {
  case Precision::F32:
    return {};
  case Precision::BF16:
    return BFloat16Type::get(context);
  case Precision::F16:
    return Float16Type::get(context);
  }
  llvm_unreachable("unknown precision");
}

/// The element type `module`'s pipeline messages (activations and their gradients between stages) travel in:
/// the 16-bit type of the precision the step was built in (`getPrecision`), or a null type for fp32. The lowering
/// casts them (LowerToRuntime.cpp) and the timing model prices them at 2 bytes an element (ModuleCosts.cpp), so
/// both read it here.
inline FloatType getMessageHalfType(ModuleOp module) { return getHalfType(module.getContext(), getPrecision(module)); }

/// Whether `op` is one of the tensor-parallel all-reduces that a module built with precision=bf16 or fp16 moves in
/// 16 bits (docs/MixedPrecision.md, "16-bit TP collectives"): an fp32 `ptrain.tp_all_reduce` (Megatron's g after a
/// row-parallel linear, the gradient of f before a column-parallel one, the vocabulary-parallel embedding's sum)
/// that does not sum loss statistics: the vocabulary-parallel cross-entropy's exp-sums and target logits
/// (`ptrain.vocab_parallel_cross_entropy_parts`) stay fp32, as the design keeps softmax and loss statistics and as
/// Megatron-LM's GPT does (`vocab_parallel_cross_entropy(output.float(), labels)` unless --fp16-lm-cross-entropy). A site a codec compresses is no longer a
/// `tp_all_reduce` once lowered (CompressTensorParallel.h). Inline for the timing model (PTrainAnalysis).
inline bool isHalfTensorParallelSum(TPAllReduceOp op) {
  if (op.getAccumulate() || !op.getInput().getType().getElementType().isF32())
    return false;
  return !op.getInput().getDefiningOp<VocabParallelCrossEntropyPartsOp>();
}

/// The element type `op` travels in once `module` is lowered: `getMessageHalfType(module)` where
/// isHalfTensorParallelSum(op), else its own. `--ptrain-lower-to-runtime` casts around it (placeHalfTensorParallelSums)
/// and the timing model prices it at 2 bytes an element (ModuleCosts.cpp), so both read it here.
inline Type getTensorParallelWireType(TPAllReduceOp op, ModuleOp module) {
  if (FloatType half = getMessageHalfType(module); half && isHalfTensorParallelSum(op))
    return half;
  return op.getInput().getType().getElementType();
}

/// Rewrites every fp32 `ptrain.matmul` of `func` into a 16-bit GEMM with fp32 accumulation: each operand is
/// cast to `half` (bf16 or f16) once per function (`ptrain.cast`, right after the operand is defined, so a
/// parameter read once is cast once however many GEMMs read it), the matmul gets `accumulate = f32` and keeps
/// its fp32 result type, so no user changes. Matmuls of other element types, or already mixed, are left as they
/// are. Returns the number of GEMMs rewritten.
int64_t placeHalfGemmCasts(func::FuncOp func, FloatType half);

/// Whether `op`, an op of a forward (a stage forward, or the forward that a built step or backward clones and
/// differentiates), produces an activation that precision=bf16|fp16 stores in 16 bits (docs/MixedPrecision.md,
/// "16-bit activations: the design", slice 2): the output of a `ptrain.layer_norm`, a `ptrain.rms_norm`, a `ptrain.softmax` (the
/// attention probabilities) or a `ptrain.gelu`; the bias add a GELU reads (Megatron-LM's bias-GELU fusion saves
/// it for the backward); and a residual-stream add, a `ptrain.binary add` of two activations (the embedding sum,
/// each block's residual add), where an operand that is a constant or a parameter read (through views only:
/// a bias, the attention mask) makes it a bias add, not a residual one. The attention scores (softmax's input),
/// the GEMM outputs, the logits and the loss stay fp32 (the design's table). Only f32 results qualify.
bool isHalfActivation(Operation *op);

/// Stores the 16-bit activations of `func` (isHalfActivation, restricted to the ops `inForward` accepts) in
/// `half` (bf16 or f16), by the design's rule op16(x) = round(op32(widen(x))): right after each such op an fp32
/// result `v` is rounded once (`ptrain.cast` to `half`, nearest even) and every reader of `v` reads a widening
/// of the 16-bit value (`ptrain.cast` back to f32, exact) placed right before it, one per reader. So the value
/// live between the forward op and a late reader (the backward's layer_norm_grad, softmax_grad, gelu_grad, the
/// next residual add) is the 16-bit one, each op still computes in fp32 (its statistics included: softmax's max
/// and sum, layer norm's mean and variance), and a GEMM reading the value reads the 16-bit value itself
/// (castOnce looks through the widening). Gradients are not rounded: a reader in the backward reads the rounded
/// forward value, and the cast pair's gradient is the identity (straight-through, as autocast's). Returns the
/// number of activations rounded.
int64_t placeHalfActivationCasts(func::FuncOp func, FloatType half, llvm::function_ref<bool(Operation *)> inForward);

/// `value` cast to `elementType` for `user`: the 16-bit value `value` widens (`value` is an exact `ptrain.cast`
/// of an `elementType` value to a wider float: placeHalfActivationCasts' widening, so the round trip is the
/// identity), an existing `ptrain.cast` of `value` to that type before `user` in its block, or a new one right
/// after the definition of `value` (at the start of its block for a block argument), so that every later reader
/// shares it.
Value castOnce(Value value, Type elementType, Operation *user);

/// Rewrites every tp all-reduce of `module` that isHalfTensorParallelSum says into `half` traffic:
/// `ptrain.cast` to `half` (bf16 or f16), `ptrain.tp_all_reduce {accumulate = f32}` on the 16-bit value (its C3),
/// and a cast back to fp32, so no reader changes. Returns the number rewritten. Called by
/// `--ptrain-lower-to-runtime` after the compressed sites became compressed all-reduces.
int64_t placeHalfTensorParallelSums(ModuleOp module, FloatType half);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_MIXEDPRECISION_H
