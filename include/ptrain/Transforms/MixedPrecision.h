//===- MixedPrecision.h - bf16 casts of a built training step -----*- C++ -*-===//
//
// The IR of `--ptrain-build-training-step="precision=bf16"` (docs/MixedPrecision.md, "The design"): fp32
// master weights, moments and checkpoint; every GEMM of the step (forward and backward) reads bf16 operands
// and accumulates in fp32 (`ptrain.matmul {accumulate = f32}`, the runtime's ptrain_gemm_bf16); everything
// else (softmax, norms, the loss, gradient accumulation, the dp reduction) stays fp32. Sources: Micikevicius
// et al., "Mixed Precision Training" (ICLR 2018), sec. 3.1 (fp32 master copy) and 3.3 (fp32 accumulation);
// Kalamkar et al., "A Study of BFLOAT16 for Deep Learning Training" (2019), sec. 3 (no loss scaling in bf16).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_MIXEDPRECISION_H
#define PTRAIN_TRANSFORMS_MIXEDPRECISION_H

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Value.h"

namespace mlir::ptrain {

// The precisions `--ptrain-build-training-step` and `ptrain-compile` accept are the enum `Precision`
// (PTrainBase.td; `symbolizePrecision` parses "fp32" and "bf16"); the module attribute that records it for the
// pipeline's messages is `ptrain.precision` (`getPrecision`, `setPrecision`: PTrainPlanAttrs.h).

/// Whether `module`'s pipeline messages (activations and their gradients between stages) travel in bf16: the
/// step was built in bf16 (`getPrecision`). The lowering casts them (LowerToRuntime.cpp) and the timing model
/// prices them at 2 bytes an element (ModuleCosts.cpp), so both read it here.
inline bool sendsBf16Messages(ModuleOp module) { return getPrecision(module) == Precision::BF16; }

/// Rewrites every fp32 `ptrain.matmul` of `func` into a bf16 GEMM with fp32 accumulation: each operand is
/// cast to bf16 once per function (`ptrain.cast`, right after the operand is defined, so a parameter read
/// once is cast once however many GEMMs read it), the matmul gets `accumulate = f32` and keeps its fp32
/// result type, so no user changes. Matmuls of other element types, or already mixed, are left as they are.
/// Returns the number of GEMMs rewritten.
int64_t placeBf16GemmCasts(func::FuncOp func);

/// `value` cast to `elementType` for `user`: an existing `ptrain.cast` of `value` to that type before `user` in
/// its block, or a new one right after the definition of `value` (at the start of its block for a block
/// argument), so that every later reader shares it.
Value castOnce(Value value, Type elementType, Operation *user);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_MIXEDPRECISION_H
