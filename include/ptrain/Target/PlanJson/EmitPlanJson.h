//===- EmitPlanJson.h - plan.json of a compiled step (--emit-plan-json) -*- C++ -*-===//
//
// The module's part of plan.json, the contract between ptrain-compile, ptrain-run and the `.ptrain_plan`
// section embedded in libstep.so (docs/Plan.md, "plan.json"): read by a walk over the step's plan state
// (the ptrain.grid, ptrain.pipeline, ptrain.schedule, the ptrain.state symbols with their ptrain.tp_slice and
// ptrain.init, the entry functions' types), never from printed IR. ptrain-compile adds the driver's own
// fields (paths, the target, the optimizer settings and policy it was given) and writes the file.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_PLANJSON_EMITPLANJSON_H
#define PTRAIN_TARGET_PLANJSON_EMITPLANJSON_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir::ptrain {

struct EmitPlanJsonOptions {
  /// The code generator the plan is for: with `cuda`, a pipeline plan also gets `cuda_state_bytes`, each
  /// stage's device state block as --emit-cuda lays it out (getCudaStateBytes).
  enum class Target { Cpu, Cuda };
  Target target = Target::Cpu;
};

/// Writes the module's plan facts to `os` as one JSON object (two-space indented, fields in plan.json's
/// order). A pipeline module (ptrain.pipeline, after --ptrain-lower-to-runtime): `dp`, `pp`, `tp`,
/// `micro_batches`, `schedule`, `virtual_stages`, `entry_points`, [`cuda_state_bytes`], `batch`, `seq`,
/// `vocab`, `states`, `codec_states`, `replica_batch`, `global_batch`. A single-rank step: `entry_points`,
/// `batch`, `seq`, `vocab`, `states`, `train_step_results`. Each state is {symbol, key, kind, shape, dtype}
/// with `tp_slice` {axis, dim, groups, global_shape[, padded]} and `init` {kind, seed} when it has them.
/// Fails, with an error at the module or the state and writing nothing, when a fact is missing or malformed
/// (no @forward(tokens) -> logits, no ptrain.schedule, a state type that is not a static tensor, ...).
LogicalResult emitPlanJson(ModuleOp module, raw_ostream &os, const EmitPlanJsonOptions &options = {});

/// Registers `--emit-plan-json` (with `--plan-json-target=cpu|cuda`) with mlir-translate.
void registerEmitPlanJsonTranslation();

} // namespace mlir::ptrain

#endif // PTRAIN_TARGET_PLANJSON_EMITPLANJSON_H
