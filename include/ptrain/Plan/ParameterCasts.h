//===- ParameterCasts.h - The once-per-step 16-bit parameter copy -*- C++ -*-===//
//
// Under `--precision bf16|fp16` every GEMM reads its parameter operand as a `ptrain.cast` of the fp32 master
// weight (placeHalfGemmCasts, MixedPrecision.h). In a pipeline the casts sit in the stage functions
// (`@forward_stage<s>`, `@stage<s>_backward`, `@stage<s>_forward_backward`), which the training step calls once
// per micro-batch and per direction: with M micro-batches each weight was rounded 2M times a step. Megatron-LM
// rounds the fp32 master weights into the 16-bit model copy once per optimizer step
// (`Float16OptimizerWithFloat16Params._copy_main_params_to_model_params`, megatron/core/optimizer/optimizer.py;
// Micikevicius et al., "Mixed Precision Training", ICLR 2018, sec. 3.1). ptrain does the same in the IR: the
// parameter casts move out of the stage functions into the step that calls them, once at its start, and the
// stage functions take the 16-bit copies as arguments (docs/MixedPrecision.md, "The once-per-step parameter
// cast"). The copy is an SSA value of the step, not a state: a checkpoint never holds it, a resumed run derives
// it again, and a step skipped by fp16's loss scaler leaves no stale copy (the next step casts what the skip kept).
//
// The timing model (ModuleCosts.cpp) reads the same rule to price the casts once per step.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_PLAN_PARAMETERCASTS_H
#define PTRAIN_PLAN_PARAMETERCASTS_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

#include <string>

namespace mlir::ptrain {

/// Whether `cast` rounds a parameter: a float-to-float `ptrain.cast` whose input is computed from
/// `ptrain.state_read`s of states of kind `parameter` through `ptrain.transpose` and `ptrain.reshape` only (the
/// transposed weight a forward GEMM reads, the twice-transposed one of the backward's input gradient). Such a value
/// is the same in every call of the function within a step, as long as no parameter is written in between.
bool isParameterCast(CastOp cast, SymbolTable &symbols);

/// Whether `outer` undoes the transpose `inner` (their permutations compose to the identity): (W^T)^T is W, which
/// the once-per-step cast reads instead of transposing twice.
bool isInverseTranspose(TransposeOp outer, TransposeOp inner);

/// The ops `cast` is computed from (state reads, transposes, reshapes) and `cast` itself, defs before uses. Only
/// for a cast isParameterCast accepts.
llvm::SetVector<Operation *> getParameterCastSlice(CastOp cast);

/// A key equal for two parameter casts exactly when they compute the same value from the same states (the same
/// ops, properties and types on the same reads): the hoisting shares one copy per key and the timing model prices
/// one cast per key and step.
std::string getParameterCastKey(Value value);

/// The once-per-step cast: for every non-entry function F of `module` whose callers are all entry functions
/// (`ptrain.entry`, the training and eval steps of `--ptrain-lower-to-runtime`) and which calls no function, each
/// isParameterCast cast of F that reads no state F writes becomes a new trailing argument of F; every entry function
/// computes the slices of the casts its callees need once, at its start (one value per getParameterCastKey), and
/// passes them to every call. Dead reads and transposes left in F are erased. Bit-equal to the per-call cast (the
/// same ops on the same fp32 values). Fails, naming the step, the callee and the parameter, when an entry function
/// writes a cast parameter (directly or through a call) before a call that reads its copy: the copy would be
/// stale. Returns the number of casts left in entry functions (one per key and step function).
FailureOr<int64_t> hoistParameterCasts(ModuleOp module);

} // namespace mlir::ptrain

#endif // PTRAIN_PLAN_PARAMETERCASTS_H
