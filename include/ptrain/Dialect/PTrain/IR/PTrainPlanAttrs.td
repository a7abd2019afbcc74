//===- PTrainPlanAttrs.td - the typed plan attributes -------*- tablegen -*-===//
//
// The discardable attributes through which the passes hand the parallel plan to the code generators, the
// executor and plan.json (issue 28, item 2): #ptrain.pipeline, #ptrain.stage, #ptrain.schedule,
// #ptrain.compression with its #ptrain.tp_site entries, ZeRO-1's #ptrain.zero_bucket and the dropout masks'
// #ptrain.dropout_layout. Typed
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

/// A flag printed and parsed as `true` or `false`, true when absent.
class PTrain_TrueFlagParameter<string desc> : DefaultValuedParameter<"bool", "true", desc> {
  let parser = "parseFlag($_parser)";
  let printer = "$_printer << ($_self ? \"true\" : \"false\")";
}

/// A codec attribute (`#ptrain.powersgd<rank = 2>`) that may be absent (null), printed only when present.
class PTrain_OptionalCodecParameter<string desc> : OptionalParameter<"::mlir::ptrain::CodecAttrInterface", desc> {
  let parser = "::mlir::FieldParser<::mlir::ptrain::CodecAttrInterface>::parse($_parser)";
  let printer = "$_printer.printAttribute($_self)";
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

def PTrain_CompressionAttr : PTrain_PlanAttr<"Compression", "compression"> {
  let summary = "The decisions of a compression policy: the codec of every pipeline send and all-reduce.";
  let description = [{
    The value of the discardable attribute `ptrain.compression` that `--ptrain-compress` puts on a scheduled
    module (docs/Compression.md) and `--ptrain-lower-to-runtime` materializes: the `policy` that decided
    (`optimus-cc`, Song et al., ASPLOS 2023; `mcbench`; `auto`, the greedy search; `none`), and per pipeline
    rank s a row of `backward_sends` (`forward_sends`): per model chunk k and micro-batch i (entry k M + i) the
    codec of the gradient (activation) virtual stage k P + s sends to the previous (next) virtual stage,
    `false` for a send as is, `true` for the direction's `backward_codec` (`forward_codec`) or a codec
    attribute of its own. `backward_error_feedback` (default true, Optimus-CC's lazy error propagation) and
    `forward_error_feedback` (default false) keep one residual per link and direction. Data parallelism:
    `dp_all_reduce`, per rank whether its gradient all-reduce is compressed by PowerSGD of rank `sc_rank`
    (default 128, clamped to min(n, m)) with `sc_error_feedback` (default true); `dp_codecs`, per gradient key
    ("<parameter>/grad") a codec, or `false` for an exact all-reduce, overriding `dp_all_reduce`;
    `fused_embedding` (Optimus-CC section 4.3). `skip_stages` records mcbench's uncompressed first stages.
    Tensor parallelism: `tp_all_reduces`, one `#ptrain.tp_site` per compressed tp all-reduce site, and
    mcbench's `tp_skip_layers`. Readers: the lowering, cost and report passes, through `getCompression`
    and readCompressionPlan (PTrainPlanAttrs.h, CompressionPlan.h).

    Constraints of the attribute:
    * (C1) `policy` is `optimus-cc`, `mcbench`, `none` or `auto`;
    * (C2) `backward_sends` is a non-empty list of rows of one length, each entry `true`, `false` or a codec;
      `forward_sends`, when given, has its shape;
    * (C3) a send marked `true` needs the direction's codec (`backward_codec`, `forward_codec`);
    * (C4) `dp_all_reduce` has one bool per row of `backward_sends`;
    * (C5) `sc_rank` >= 1, `skip_stages` >= 0 and `tp_skip_layers` >= 0;
    * (C6) each `dp_codecs` entry is a codec or `false`;
    * (C7) `tp_all_reduces`, when given, is a list of `#ptrain.tp_site`.

    Constraints where it sits (the dialect's `verifyOperationAttribute`):
    * (C8) `ptrain.compression` is a `#ptrain.compression`;
    * (C9) on a `builtin.module` with a `#ptrain.pipeline`;
    * (C10) with one row of sends per pipeline rank (`pp`), each of virtual_stages x micro_batches entries
      (the pipeline's; a multiple of virtual_stages before the training step is built);
    * (C11) no compressed gradient leaves (virtual) stage 0 and no compressed activation the last one.

    ```mlir
    module attributes {
        ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1], micro_batches = 2>,
        ptrain.compression = #ptrain.compression<policy = "optimus-cc",
            backward_sends = [[false, false], [true, true]], backward_codec = #ptrain.powersgd<rank = 2>,
            forward_sends = [[false, false], [false, false]], dp_all_reduce = [false, false],
            tp_all_reduces = [#ptrain.tp_site<layer = 0, role = "attn_out", direction = "forward",
                                              codec = #ptrain.cast<f16>>]>}
    ```
  }];
  let parameters = (ins StringRefParameter<"optimus-cc, mcbench, none or auto">:$policy,
                        "::mlir::ArrayAttr":$backward_sends,
                        PTrain_OptionalCodecParameter<"the codec of a backward send marked true">:$backward_codec,
                        PTrain_TrueFlagParameter<"error feedback on the backward sends">:$backward_error_feedback,
                        OptionalParameter<"::mlir::ArrayAttr">:$forward_sends,
                        PTrain_OptionalCodecParameter<"the codec of a forward send marked true">:$forward_codec,
                        PTrain_FlagParameter<"error feedback on the forward sends">:$forward_error_feedback,
                        "::mlir::ArrayAttr":$dp_all_reduce,
                        DefaultValuedParameter<"int64_t", "128">:$sc_rank,
                        PTrain_TrueFlagParameter<"error feedback on the dp PowerSGD">:$sc_error_feedback,
                        OptionalParameter<"::mlir::DictionaryAttr">:$dp_codecs,
                        PTrain_FlagParameter<"fused embedding synchronization">:$fused_embedding,
                        DefaultValuedParameter<"int64_t", "0">:$skip_stages,
                        OptionalParameter<"::mlir::ArrayAttr">:$tp_all_reduces,
                        DefaultValuedParameter<"int64_t", "0">:$tp_skip_layers);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The record with the tensor-parallel sites `tpAllReduces` (null: none) and mcbench's `tpSkipLayers`.
    CompressionAttr withTensorParallel(::mlir::ArrayAttr tpAllReduces, int64_t tpSkipLayers) const {
      return get(getContext(), getPolicy(), getBackwardSends(), getBackwardCodec(), getBackwardErrorFeedback(),
                 getForwardSends(), getForwardCodec(), getForwardErrorFeedback(), getDpAllReduce(), getScRank(),
                 getScErrorFeedback(), getDpCodecs(), getFusedEmbedding(), getSkipStages(), tpAllReduces,
                 tpSkipLayers);
    }
  }];
}

/// A codec attribute (`#ptrain.quant<bits = 8>`), required.
class PTrain_CodecParameter<string desc> : AttrParameter<"::mlir::ptrain::CodecAttrInterface", desc> {
  let parser = "::mlir::FieldParser<::mlir::ptrain::CodecAttrInterface>::parse($_parser)";
  let printer = "$_printer.printAttribute($_self)";
}

def PTrain_TPSiteAttr : PTrain_PlanAttr<"TPSite", "tp_site"> {
  let summary = "One compressed tensor-parallel all-reduce site of a layer and its codec (mcbench's TP site).";
  let description = [{
    An entry of `#ptrain.compression`'s `tp_all_reduces` (docs/Compression.md, "The TP site"): the codec
    `--ptrain-compress` (policy mcbench or auto) puts on one tensor-parallel all-reduce site of layer `layer`,
    and that `--ptrain-lower-to-runtime` turns into a `ptrain.compressed_all_reduce_start` over the tp axis.
    A site is named by its `role` and `direction` (Megatron-LM's g and f; Shoeybi et al. 2019, section 3):
    the forward all-reduces after the row-parallel linears (`attn_out`, `mlp_down`) and the backward
    all-reduces of f's gradient before the column-parallel ones (`attn_in` before Q|K|V, `mlp_in` before the
    MLP up projection). `error_feedback` keeps a residual per site and rank
    (`tp/layer<l>/<role>/residual`). Readers: readTensorParallelRecord (CompressTensorParallel.h), the
    lowering and the timing model.

    Constraints of the attribute:
    * (C1) `layer` >= 0;
    * (C2) `direction` is `forward` or `backward`;
    * (C3) `role` is a site of that direction: `attn_out` or `mlp_down` forward, `attn_in` or `mlp_in`
      backward;
    * (C4) `error_feedback` only on a backward site (the stage's backward recomputes the forward, which must
      decode the same value: forward sites are stateless).

    Where it sits: `#ptrain.compression` C7.

    ```mlir
    #ptrain.tp_site<layer = 1, role = "attn_out", direction = "forward", codec = #ptrain.quant<bits = 8>>
    #ptrain.tp_site<layer = 1, role = "attn_in", direction = "backward", codec = #ptrain.cast<bf16>,
                    error_feedback = true>
    ```
  }];
  let parameters = (ins "int64_t":$layer,
                        StringRefParameter<"attn_out, mlp_down, attn_in or mlp_in">:$role,
                        StringRefParameter<"forward or backward">:$direction,
                        PTrain_CodecParameter<"the site's codec">:$codec,
                        PTrain_FlagParameter<"a residual per site and rank (backward sites)">:$error_feedback);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether the site is a forward all-reduce (verified: C2).
    bool isForward() const { return getDirection() == "forward"; }
  }];
}

def PTrain_ZeroBucketAttr : PTrain_PlanAttr<"ZeroBucket", "zero_bucket"> {
  let summary = "The layout of a ZeRO-1 bucket whose AdamW moment shard a state holds.";
  let description = [{
    The value of the discardable attribute `ptrain.zero_bucket` that `--ptrain-build-training-step`
    (`zero=true`, docs/DistributedOptimizer.md; Rajbhandari et al., SC 2020, ZeRO stage 1) puts on each
    AdamW moment state of a bucket: `params`, the keys of the bucket's parameters in bucket order; `elements`,
    their total element count N; `padded`, N rounded up to a multiple of the dp degree (the bucket is
    zero-padded so that every rank's shard has padded / dp elements); `axis`, the grid axis the bucket is
    sharded over. The state's own type is the shard, `tensor<padded / dp x f32>`. Written through
    `setZeroBucket` and read through `getZeroBucket` (PTrainPlanAttrs.h); no pass reads it yet (the
    checkpoint's resharding, python/ptrain/reshard.py, works from the state keys and manifest).

    Constraints of the attribute:
    * (C1) `axis` is not empty;
    * (C2) `elements` >= 1 and `padded` >= `elements`;
    * (C3) `params` is a non-empty list of strings.

    Constraints where it sits (the dialect's `verifyOperationAttribute`):
    * (C4) `ptrain.zero_bucket` is a `#ptrain.zero_bucket`;
    * (C5) on a `ptrain.state` of kind `optimizer_moment`;
    * (C6) whose type is rank 1 with a size that divides `padded`.

    ```mlir
    ptrain.state @stage0_zero_bucket0_adam_m key "stage0.zero_bucket0/adam_m" kind optimizer_moment
        {ptrain.zero_bucket = #ptrain.zero_bucket<params = ["head", "wte"], elements = 256, padded = 258,
                                                  axis = "dp">} : tensor<86xf32>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$params,
                        "int64_t":$elements,
                        "int64_t":$padded,
                        StringRefParameter<"the grid axis">:$axis);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

/// A grid axis that may be absent (empty), printed only when present.
class PTrain_OptionalAxisParameter<string desc> : StringRefParameter<desc, [{""}]>;

def PTrain_DropoutLayoutAttr : PTrain_PlanAttr<"DropoutLayout", "dropout_layout"> {
  let summary = "Where a ptrain.dropout's local tensor lies in the whole step's batch.";
  let description = [{
    The value of the discardable attribute `ptrain.dropout_layout` on a `ptrain.dropout` of a partitioned
    plan, so that every rank draws the one-rank step's mask on its elements (the mask is keyed by the
    element's global row-major index; PTrainModelOps.td, `ptrain.dropout`, has the formula):
    * `batch_rows` = b: the counter packs step + 2^32 r, r the global batch row of the tensor's first row
      within its replica, and the tensor holds b rows (--ptrain-build-training-step, on the pipeline's stage
      functions);
    * `replica_axis`, `replica_rows`: the row adds replica_rows x the rank's coordinate on that grid axis (the
      rows of the data-parallel replicas before this one);
    * `shard_axis`, `shard_dim` = k: the tensor is the rank's part of dimension k over that grid axis
      (--ptrain-shard-tp, inside a tensor-parallel region).
    Readers: the reference interpreter and the multi-rank executor (lib/Interpreter/Elementwise.cpp), both
    code generators (`dropoutLayoutArgs`, lib/Target/Cpp/EmitTransformer.cpp), through `getDropoutLayout`
    (PTrainPlanAttrs.h).

    Constraints of the attribute:
    * (C1) `batch_rows`, `replica_rows` and `shard_dim`, when given, are >= 1 (dimension 0 holds the batch
      rows, so it is never the sharded one);
    * (C2) `shard_axis` and `shard_dim` come together;
    * (C3) `replica_axis` and `replica_rows` come together, and with `batch_rows`.

    Where it sits: `ptrain.dropout` C4-C6 (PTrainModelOps.td).

    ```mlir
    %p = ptrain.dropout %probs, %c {ptrain.dropout_layout = #ptrain.dropout_layout<batch_rows = 4,
        replica_axis = "dp", replica_rows = 8, shard_axis = "tp", shard_dim = 1>, ratio = 1.000000e-01 : f64,
        seed = 9 : i64} : tensor<4x2x64x64xf32>, tensor<i64>
    ```
  }];
  let parameters = (ins PTrain_OptionalIntParameter<"rows of the batch the tensor holds">:$batch_rows,
                        PTrain_OptionalAxisParameter<"the data-parallel grid axis">:$replica_axis,
                        PTrain_OptionalIntParameter<"batch rows per replica">:$replica_rows,
                        PTrain_OptionalAxisParameter<"the tensor-parallel grid axis">:$shard_axis,
                        PTrain_OptionalIntParameter<"the sharded dimension">:$shard_dim);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The layout with the batch rows `rows` and, when `replicaAxis` is not empty, the replicas' rows.
    DropoutLayoutAttr withBatchRows(int64_t rows, ::llvm::StringRef replicaAxis,
                                    std::optional<int64_t> replicaRows) const {
      return get(getContext(), rows, replicaAxis, replicaRows, getShardAxis(), getShardDim());
    }
  }];
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINPLANATTRS_TD
