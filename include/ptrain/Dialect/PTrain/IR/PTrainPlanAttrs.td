//===- PTrainPlanAttrs.td - the typed plan attributes -------*- tablegen -*-===//
//
// The discardable attributes through which the passes hand the parallel plan to the code generators, the
// executor and plan.json (issue 28, item 2): #ptrain.pipeline, #ptrain.stage, #ptrain.schedule. Typed
// accessors: PTrainPlanAttrs.h; verifiers: lib/Dialect/PTrain/IR/PTrainPlanAttrs.cpp. (#ptrain.tp_slice, the
// first of them, is in PTrainAttrs.td.) Their declarations are generated apart from PTrainAttrs.h.inc
// (PTrainPlanAttrs.h.inc, included only by PTrainPlanAttrs.h), so that only the plan's readers and writers see
// them; the dialect's parser, printer and registration cover them through PTrainAllAttrs.td.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINPLANATTRS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINPLANATTRS_TD

// The dialect without its enum attributes (their declarations are PTrainAttrs.h.inc's).
#define PTRAIN_PLAN_ATTRS_ONLY
include "ptrain/Dialect/PTrain/IR/PTrainBase.td"

class PTrain_PlanAttr<string name, string attrMnemonic> : AttrDef<PTrain_Dialect, name> {
  let mnemonic = attrMnemonic;
}

/// A list of function symbols printed and parsed in brackets: `[@forward_stage0, @forward_stage1]`.
class PTrain_SymbolListParameter<string desc> : ArrayRefParameter<"::mlir::FlatSymbolRefAttr", desc> {
  let parser = "parseSymbolList($_parser)";
  let printer = "printSymbolList($_printer, $_self)";
}

/// An integer that may be absent (std::nullopt), printed only when present.
class PTrain_OptionalIntParameter<string desc> : OptionalParameter<"std::optional<int64_t>", desc> {
  let printer = "$_printer << *$_self";
}

/// A flag printed and parsed as `true` or `false`, false when absent.
class PTrain_FlagParameter<string desc> : DefaultValuedParameter<"bool", "false", desc> {
  let parser = "parseFlag($_parser)";
  let printer = "$_printer << ($_self ? \"true\" : \"false\")";
}

def PTrain_PipelineAttr : PTrain_PlanAttr<"Pipeline", "pipeline"> {
  let summary = "The pipeline split of a module: its stage functions and, once built, its training step.";
  let description = [{
    The value of the discardable attribute `ptrain.pipeline` on the `builtin.module` that
    `--ptrain-split-stages` cut into pipeline stages: `pp` pipeline ranks, each running `virtual_stages`
    model chunks (1 unless the interleaved schedule's chunks were asked for; Narayanan et al., SC 2021,
    section 2.2), and `stages`, the pp x virtual_stages forward stage functions in model order (function k
    runs on pipeline rank k mod pp). `--ptrain-build-training-step` adds `micro_batches`, the micro-batches
    of one training step (its loss gradient is seeded with 1 / micro_batches), `labels = true` when the
    last stage takes each micro-batch's labels instead of its tokens, and `deterministic_dp = true` when the
    step sums its gradients and losses as one pairwise tree over the global micro-batches (docs/Runtime.md,
    "Deterministic data parallelism"; --ptrain-lower-to-runtime builds the tree). Readers: the schedule, compression,
    lowering and cost passes, the code generators, the multi-rank executor and plan.json (docs/Plan.md),
    through `getPipeline` (PTrainPlanAttrs.h).

    Constraints of the attribute:
    * (C1) `pp` >= 1;
    * (C2) `virtual_stages` >= 1, and 1 when `pp` is 1;
    * (C3) `stages` lists pp x virtual_stages functions;
    * (C4) `micro_batches`, when given, is >= 1;
    * (C5) `labels` and `deterministic_dp` only with `micro_batches` (a training step).

    Constraints where it sits (the dialect's `verifyOperationAttribute`):
    * (C6) `ptrain.pipeline` is a `#ptrain.pipeline`;
    * (C7) on a `builtin.module`;
    * (C8) every stage names a `func.func` of that module.

    ```mlir
    module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1]>}
    module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 2, virtual_stages = 2,
        stages = [@forward_stage0, @forward_stage1, @forward_stage2, @forward_stage3], micro_batches = 4,
        labels = true>}
    module attributes {ptrain.pipeline = #ptrain.pipeline<pp = 1, stages = [@forward_stage0], micro_batches = 2,
        deterministic_dp = true>}
    ```
  }];
  let parameters = (ins "int64_t":$pp,
                        DefaultValuedParameter<"int64_t", "1">:$virtual_stages,
                        PTrain_SymbolListParameter<"the forward stage functions, in model order">:$stages,
                        PTrain_OptionalIntParameter<"micro-batches per training step">:$micro_batches,
                        PTrain_FlagParameter<"the last stage takes labels">:$labels,
                        PTrain_FlagParameter<"sums in a dp-invariant pairwise tree">:$deterministic_dp);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of forward stage functions: pp x virtual_stages.
    int64_t getNumStageFunctions() const { return static_cast<int64_t>(getStages().size()); }
    /// The pipeline with `microBatches` micro-batches per step and the `labels` and `deterministic_dp` flags
    /// (the training step's).
    PipelineAttr withTrainingStep(int64_t microBatches, bool labels, bool deterministicDp) const {
      return get(getContext(), getPp(), getVirtualStages(), getStages(), microBatches, labels, deterministicDp);
    }
  }];
}

def PTrain_StageAttr : PTrain_PlanAttr<"Stage", "stage"> {
  let summary = "The pipeline rank a function runs on.";
  let description = [{
    The value of the discardable attribute `ptrain.stage` on a function of a pipelined module: the forward
    stage functions of `--ptrain-split-stages` (function k of `ptrain.pipeline`'s `stages` runs on rank
    k mod pp), the backward and optimizer functions of `--ptrain-build-training-step` and the per-rank step
    functions of `--ptrain-lower-to-runtime`. The code generators emit a function only into its rank's step;
    the multi-rank executor runs it on that rank. Read through `getStage` (PTrainPlanAttrs.h).

    Constraints of the attribute:
    * (C1) `index` >= 0.

    Constraints where it sits (the dialect's `verifyOperationAttribute`):
    * (C2) `ptrain.stage` is a `#ptrain.stage`;
    * (C3) on a `func.func`;
    * (C4) when the enclosing module has a `ptrain.pipeline`, `index` < its `pp`.

    ```mlir
    func.func @forward_stage1(%h: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {ptrain.stage = #ptrain.stage<1>}
    ```
  }];
  let parameters = (ins "int64_t":$index);
  let assemblyFormat = "`<` $index `>`";
  let genVerifyDecl = 1;
}

def PTrain_ScheduleAttr : PTrain_PlanAttr<"Schedule", "schedule"> {
  let summary = "The pipeline schedule's table of steps per rank and, once analysed, its critical path.";
  let description = [{
    The value of the discardable attribute `ptrain.schedule` that `--ptrain-schedule` puts on a pipelined
    module: the schedule `kind` (`gpipe`, `1f1b` or `interleaved`; Huang et al. 2019, Narayanan et al.
    SC 2021), its `micro_batches` and `virtual_stages` (the pipeline's), and `table`, one row per pipeline
    rank of the steps it runs in order (`F3` forward micro-batch 3, `B3` its backward, `FB3` both on the last
    stage, `F3.1` chunk 1's forward under the interleaved schedule, `O` the optimizer step;
    lib/Plan/ScheduleTable.cpp). `--ptrain-critical-path` adds per step of the table its `slack` (seconds)
    and whether it is `critical`, the same for the step's send (`send_slack`, -1 where the step sends
    nothing; `send_critical`), with data parallelism the slack and criticality of each rank's gradient
    all-reduce (`dp_all_reduce_slack`, `dp_all_reduce_critical`), and the modelled `iteration_time` and
    `bubble` (seconds). Readers: the compression, lowering and cost passes, `--ptrain-print-schedule`, the
    code generators and plan.json, through `getSchedule` (PTrainPlanAttrs.h).

    Constraints of the attribute:
    * (C1) `kind` is `gpipe`, `1f1b` or `interleaved`;
    * (C2) `micro_batches` >= 1 and `virtual_stages` >= 1;
    * (C3) `table` is a non-empty list of rows, each a list of step strings;
    * (C4) `slack` and `send_slack` (floats), `critical` and `send_critical` (bools), when given, have the
      shape of `table`;
    * (C5) `dp_all_reduce_slack` (floats) and `dp_all_reduce_critical` (bools), when given, have one entry
      per row of `table`.

    Constraints where it sits (the dialect's `verifyOperationAttribute`):
    * (C6) `ptrain.schedule` is a `#ptrain.schedule`;
    * (C7) on a `builtin.module` with a `#ptrain.pipeline`;
    * (C8) with one row per pipeline rank (`pp`), the pipeline's `virtual_stages` and, once the training
      step is built, its `micro_batches`.

    ```mlir
    module attributes {
        ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>,
        ptrain.schedule = #ptrain.schedule<kind = "1f1b", micro_batches = 2,
                                           table = [["F0", "F1", "B0", "B1", "O"], ["FB0", "FB1", "O"]]>}
    ```
  }];
  let parameters = (ins StringRefParameter<"gpipe, 1f1b or interleaved">:$kind,
                        "int64_t":$micro_batches,
                        DefaultValuedParameter<"int64_t", "1">:$virtual_stages,
                        "::mlir::ArrayAttr":$table,
                        OptionalParameter<"::mlir::ArrayAttr">:$slack,
                        OptionalParameter<"::mlir::ArrayAttr">:$critical,
                        OptionalParameter<"::mlir::ArrayAttr">:$send_slack,
                        OptionalParameter<"::mlir::ArrayAttr">:$send_critical,
                        OptionalParameter<"::mlir::ArrayAttr">:$dp_all_reduce_slack,
                        OptionalParameter<"::mlir::ArrayAttr">:$dp_all_reduce_critical,
                        OptionalParameter<"::mlir::FloatAttr">:$iteration_time,
                        OptionalParameter<"::mlir::FloatAttr">:$bubble);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether --ptrain-critical-path has analysed the schedule (slack and criticality are present).
    bool hasCriticalPath() const { return static_cast<bool>(getSendCritical()); }
    /// The steps of pipeline rank `rank`'s row (verified: C3).
    ::mlir::ArrayAttr getRow(int64_t rank) const { return ::llvm::cast<::mlir::ArrayAttr>(getTable()[rank]); }
    /// The schedule without its critical-path results (what --ptrain-schedule writes).
    ScheduleAttr withoutCriticalPath() const {
      return get(getContext(), getKind(), getMicroBatches(), getVirtualStages(), getTable(), {}, {}, {}, {}, {},
                 {}, {}, {});
    }
  }];
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINPLANATTRS_TD
