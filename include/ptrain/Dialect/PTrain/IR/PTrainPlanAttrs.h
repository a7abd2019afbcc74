//===- PTrainPlanAttrs.h - typed accessors of the plan attributes -*- C++ -*-===//
//
// The discardable attributes through which the passes hand the parallel plan to the code generators, the
// executor and plan.json, with one typed accessor each (issue 28, item 2). Each is an AttrDef of
// PTrainPlanAttrs.td (tp_slice: PTrainAttrs.td) whose constraints are numbered there, checked on the attribute (its
// verify) and where it sits (PTrainDialect::verifyOperationAttribute, lib/Dialect/PTrain/IR/PTrainPlanAttrs.cpp), with
// one negative test per error in test/Dialect/PTrain/plan-attrs-invalid.mlir:
//   ptrain.pipeline = #ptrain.pipeline<...>  on the module (--ptrain-split-stages, --ptrain-build-training-step)
//   ptrain.stage    = #ptrain.stage<k>       on a stage's functions (split-stages, build-training-step, lowering)
//   ptrain.schedule = #ptrain.schedule<...>  on the module (--ptrain-schedule, --ptrain-critical-path)
//   ptrain.tp_slice = #ptrain.tp_slice<...>  on a sliced ptrain.state (--ptrain-shard-tp)
//   ptrain.compression = #ptrain.compression<...>  on the module (--ptrain-compress; read through
//                                                  readCompressionPlan, lib/Plan/CompressionPlan.cpp), its
//                                                  tp_all_reduces a list of #ptrain.tp_site<...>
//                                                  (readTensorParallelRecord, CompressTensorParallel.h)
//   ptrain.zero_bucket = #ptrain.zero_bucket<...>  on a ZeRO-1 moment state (--ptrain-build-training-step)
//   ptrain.dropout_layout = #ptrain.dropout_layout<...>  on a ptrain.dropout of a partitioned plan
//                                                        (--ptrain-shard-tp, --ptrain-build-training-step)
//   ptrain.precision = #ptrain.precision<bf16>  on the module (--ptrain-build-training-step precision=bf16; an
//                                               enum attribute of PTrainBase.td)
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINPLANATTRS_H
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINPLANATTRS_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>

#define GET_ATTRDEF_CLASSES
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h.inc"

namespace mlir::ptrain {

/// On a pipelined module: a #ptrain.pipeline (C1-C8).
inline constexpr llvm::StringLiteral kPipelineAttr = "ptrain.pipeline";
/// On a function of a pipelined module: a #ptrain.stage, the pipeline rank it runs on (C1-C4).
inline constexpr llvm::StringLiteral kStageAttr = "ptrain.stage";
/// On a scheduled module: a #ptrain.schedule (C1-C8).
inline constexpr llvm::StringLiteral kScheduleAttr = "ptrain.schedule";
/// On a compressed module: a #ptrain.compression, the decisions of --ptrain-compress (C1-C11).
inline constexpr llvm::StringLiteral kCompressionAttr = "ptrain.compression";
/// On a sliced `ptrain.state`: a #ptrain.tp_slice (--ptrain-shard-tp's description of the slice).
inline constexpr llvm::StringLiteral kTPSliceAttr = "ptrain.tp_slice";
/// On a ZeRO-1 AdamW moment `ptrain.state`: a #ptrain.zero_bucket, the bucket whose shard it holds (C1-C6).
inline constexpr llvm::StringLiteral kZeroBucketAttr = "ptrain.zero_bucket";
/// On a `ptrain.dropout`: a #ptrain.dropout_layout, where its tensor lies in the step's batch (C1-C3; the op's
/// C4-C6).
inline constexpr llvm::StringLiteral kDropoutLayoutAttr = "ptrain.dropout_layout";
/// On a module built in 16-bit precision: a #ptrain.precision, the format of its pipeline messages (C1-C2).
inline constexpr llvm::StringLiteral kPrecisionAttr = "ptrain.precision";

/// The module's pipeline split, or null when the module is not split into stages.
inline PipelineAttr getPipeline(ModuleOp module) { return module->getAttrOfType<PipelineAttr>(kPipelineAttr); }

/// Records the module's pipeline split.
inline void setPipeline(ModuleOp module, PipelineAttr pipeline) { module->setAttr(kPipelineAttr, pipeline); }

/// The precision the module's training step was built in: fp32 when it has no `ptrain.precision`.
inline Precision getPrecision(ModuleOp module) {
  auto attr = module->getAttrOfType<PrecisionAttr>(kPrecisionAttr);
  return attr ? attr.getValue() : Precision::F32;
}

/// Records the precision the module's training step was built in.
inline void setPrecision(ModuleOp module, Precision precision) {
  module->setAttr(kPrecisionAttr, PrecisionAttr::get(module.getContext(), precision));
}

/// The pipeline rank `fn` runs on, or null when it belongs to no stage.
inline StageAttr getStage(Operation *fn) { return fn->getAttrOfType<StageAttr>(kStageAttr); }

/// Records that `fn` runs on pipeline rank `index` (>= 0, < the module's pp).
inline void setStage(Operation *fn, int64_t index) { fn->setAttr(kStageAttr, StageAttr::get(fn->getContext(), index)); }

/// The module's pipeline schedule, or null before --ptrain-schedule.
inline ScheduleAttr getSchedule(ModuleOp module) { return module->getAttrOfType<ScheduleAttr>(kScheduleAttr); }

/// Records the module's pipeline schedule.
inline void setSchedule(ModuleOp module, ScheduleAttr schedule) { module->setAttr(kScheduleAttr, schedule); }

/// The module's compression decisions, or null before --ptrain-compress.
inline CompressionAttr getCompression(ModuleOp module) {
  return module->getAttrOfType<CompressionAttr>(kCompressionAttr);
}

/// Records the module's compression decisions.
inline void setCompression(ModuleOp module, CompressionAttr compression) {
  module->setAttr(kCompressionAttr, compression);
}

/// Drops the module's compression decisions (CompressAuto's probes).
inline void removeCompression(ModuleOp module) { module->removeAttr(kCompressionAttr); }

/// The slice of `state`, or null when the state is not sliced (verified: C1-C9).
inline TPSliceAttr getTPSlice(StateOp state) { return state->getAttrOfType<TPSliceAttr>(kTPSliceAttr); }

/// Records that `state` is the local part of `slice`.
inline void setTPSlice(StateOp state, TPSliceAttr slice) { state->setAttr(kTPSliceAttr, slice); }

/// The ZeRO-1 bucket whose AdamW moment shard `state` holds, or null (verified: C1-C6).
inline ZeroBucketAttr getZeroBucket(StateOp state) { return state->getAttrOfType<ZeroBucketAttr>(kZeroBucketAttr); }

/// Records that `state` holds a moment shard of `bucket`.
inline void setZeroBucket(StateOp state, ZeroBucketAttr bucket) { state->setAttr(kZeroBucketAttr, bucket); }

/// The layout of `dropout`'s tensor in the step's batch, or null (the one-rank step's own).
inline DropoutLayoutAttr getDropoutLayout(DropoutOp dropout) {
  return dropout->getAttrOfType<DropoutLayoutAttr>(kDropoutLayoutAttr);
}

/// Records the layout of `dropout`'s tensor.
inline void setDropoutLayout(DropoutOp dropout, DropoutLayoutAttr layout) {
  dropout->setAttr(kDropoutLayoutAttr, layout);
}

} // namespace mlir::ptrain

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINPLANATTRS_H
