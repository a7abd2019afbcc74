//===- PTrainVocabParallelOps.td - vocabulary-parallel embedding and loss -*- tablegen -*-===//
//
// The ops of Megatron-LM's vocabulary-parallel embedding, LM head and cross-entropy (Shoeybi et al. 2019,
// section 3; megatron/core/tensor_parallel/layers.py VocabParallelEmbedding, cross_entropy.py
// _VocabParallelCrossEntropy), made by `--ptrain-shard-tp="tp=N vocab-parallel=true"`.
//
// Rank r of the `axis` group holds rows [r Vl, (r + 1) Vl) of the (padded) vocabulary: the ops below that
// depend on r read it from the executing rank's coordinate on `axis` (SPMD: every rank runs the same op).
// The collectives of the loss are explicit ops (`ptrain.tp_all_gather` of the per-rank maxima and
// `ptrain.tp_all_reduce` of the partial sums), so `--ptrain-verify-plan` sees them with the rest of the plan.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINVOCABPARALLELOPS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINVOCABPARALLELOPS_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"
include "ptrain/Dialect/PTrain/IR/PTrainInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def PTrain_TPAllGatherOp : PTrain_Op<"tp_all_gather", [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead<PTrain_CommResource>, MemWrite<PTrain_CommResource>]>]> {
  let summary = "Concatenates the ranks' tensors along one dimension over the tensor-parallel axis.";
  let description = [{
    Every rank of the `axis` group contributes `input`; every rank receives the concatenation of the
    contributions along dimension `dim`, in group-rank order. Completes in place, like `ptrain.tp_all_reduce`.
    `--ptrain-shard-tp` gathers the vocabulary-parallel logits with it at the end of the forward (so the
    forward's result keeps its global meaning), and the vocabulary-parallel loss gathers the per-rank
    maxima. It has no gradient rule: the training step's loss reads the local logits, not the gathered
    ones, and the maxima are a constant shift of the log-sum-exp.

    Constraints:
    * (C1) `grid` names a `ptrain.grid`;
    * (C2) `axis` is one of its axes;
    * (C3) `dim` is in [0, rank) of the input;
    * (C4) the result has the input's shape with dimension `dim` multiplied by the axis' size.

    ```mlir
    %full = ptrain.tp_all_gather %local on @grid axis tp dim 2 : tensor<4x64x128xf32> -> tensor<4x64x256xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$grid, StrAttr:$axis, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `on` $grid `axis` custom<AxisName>($axis) `dim` $dim attr-dict `:` type($input) "
                       "`->` type($result)";
  let hasVerifier = 1;
}

def PTrain_VocabParallelEmbeddingOp : PTrain_Op<"vocab_parallel_embedding", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>, DeclareOpInterfaceMethods<PTrain_GradientOpInterface>]> {
  let summary = "The rank's part of an embedding lookup over its rows of a vocabulary-parallel table.";
  let description = [{
    `table` is rank r's rows [r Vl, (r + 1) Vl) of the V x H table (Vl = its first dimension, r the rank's
    coordinate on `axis`). out[i..., :] = table[ids[i...] - r Vl, :] where the id is in the rank's range, 0
    elsewhere: the sum of the ranks' results over `axis` (a `ptrain.tp_all_reduce`, Megatron's g) is the
    whole lookup. Ids outside [0, Vl tp) are a runtime error, as for `ptrain.embedding`. Gradient:
    `ptrain.vocab_parallel_embedding_grad` (the rank's rows only).

    Constraints:
    * (C1) `grid` names a `ptrain.grid`;
    * (C2) `axis` is one of its axes;
    * (C3) the table is 2-D and float, the ids are integers;
    * (C4) the result is ids.shape x H with the table's element type.

    ```mlir
    %part = ptrain.vocab_parallel_embedding %wte_local, %ids on @grid axis tp
        : tensor<128x128xf32>, tensor<4x64xi64> -> tensor<4x64x128xf32>
    %x = ptrain.tp_all_reduce %part on @grid axis tp : tensor<4x64x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$table, AnyRankedTensor:$ids, FlatSymbolRefAttr:$grid, StrAttr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$table `,` $ids `on` $grid `axis` custom<AxisName>($axis) attr-dict `:` type($table) `,` "
                       "type($ids) `->` type($result)";
  let hasVerifier = 1;
}

def PTrain_VocabParallelEmbeddingGradOp : PTrain_Op<"vocab_parallel_embedding_grad", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Vocabulary-parallel embedding backward: scatter-adds the rows of the rank's ids.";
  let description = [{
    The gradient of the rank's table rows: a zero Vl x H table into which row grad[i..., :] is added at
    ids[i...] - r Vl for the ids in the rank's range [r Vl, (r + 1) Vl) (r: the rank's coordinate on
    `axis`); the other ids add nothing (their rows are on other ranks).

    Constraints:
    * (C1) `grid` names a `ptrain.grid`;
    * (C2) `axis` is one of its axes;
    * (C3) the result is a 2-D float Vl x H table, `grad` is ids.shape x H of its element type, ids are
      integers.

    ```mlir
    %dwte = ptrain.vocab_parallel_embedding_grad %dy, %ids on @grid axis tp
        : tensor<4x64x128xf32>, tensor<4x64xi64> -> tensor<128x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$grad, AnyRankedTensor:$ids, FlatSymbolRefAttr:$grid, StrAttr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$grad `,` $ids `on` $grid `axis` custom<AxisName>($axis) attr-dict `:` type($grad) `,` "
                       "type($ids) `->` type($result)";
  let hasVerifier = 1;
}

def PTrain_VocabParallelCrossEntropyPartsOp : PTrain_Op<"vocab_parallel_cross_entropy_parts", [Pure,
    AllTypesMatch<["max", "sum_exp", "target"]>, DeclareOpInterfaceMethods<SymbolUserOpInterface>, DeclareOpInterfaceMethods<PTrain_GradientOpInterface>]> {
  let summary = "The rank's partial sums of a vocabulary-parallel cross-entropy: exp-sum and target logit.";
  let description = [{
    `logits` [..., Vl] are rank r's columns [r Vl, (r + 1) Vl) of the logits (r: the rank's coordinate on
    `axis`), `max` [...] the maximum logit of each position over all ranks. Per position:

    * `sum_exp` = sum over the rank's columns c with global index r Vl + c < `vocab` of
      exp(logits[..., c] - max): the padded columns (global index >= `vocab`) are masked out (-inf);
    * `target` = logits[..., label - r Vl] - max where the label is in the rank's range, 0 elsewhere.

    Summed over `axis` (two `ptrain.tp_all_reduce`), the loss of a position is log(sum_exp) - target
    (Megatron's _VocabParallelCrossEntropy). Gradient: `ptrain.vocab_parallel_cross_entropy_parts_grad`,
    d logits = d sum_exp exp(logits - max) (0 on padded columns) + d target onehot(label - r Vl); `max` is a
    shift the loss does not depend on and gets no gradient, nor do the labels.

    Constraints:
    * (C1) `grid` names a `ptrain.grid`;
    * (C2) `axis` is one of its axes;
    * (C3) the logits are float of rank >= 1; the labels are integers of the logits' shape without the
      last dimension; `max` and both results have the labels' shape and the logits' element type;
    * (C4) `vocab` >= 1.

    ```mlir
    %sum, %target = ptrain.vocab_parallel_cross_entropy_parts %logits, %labels, %max on @grid axis tp
        {vocab = 10 : i64} : tensor<2x7x3xf32>, tensor<2x7xi64>, tensor<2x7xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$logits, AnyRankedTensor:$labels, AnyRankedTensor:$max,
                       FlatSymbolRefAttr:$grid, StrAttr:$axis, I64Attr:$vocab);
  let results = (outs AnyRankedTensor:$sum_exp, AnyRankedTensor:$target);
  let assemblyFormat = "$logits `,` $labels `,` $max `on` $grid `axis` custom<AxisName>($axis) attr-dict `:` "
                       "type($logits) `,` type($labels) `,` type($max)";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$logits, "::mlir::Value":$labels, "::mlir::Value":$max,
      "::llvm::StringRef":$grid, "::llvm::StringRef":$axis, "int64_t":$vocab)>];
}

def PTrain_VocabParallelCrossEntropyPartsGradOp : PTrain_Op<"vocab_parallel_cross_entropy_parts_grad", [Pure,
    AllTypesMatch<["d_sum_exp", "d_target", "max"]>, AllTypesMatch<["logits", "result"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Backward of ptrain.vocab_parallel_cross_entropy_parts: the rank's slice of d logits.";
  let description = [{
    d logits[..., c] = d_sum_exp[...] exp(logits[..., c] - max[...]) for the columns with global index
    r Vl + c < `vocab` (0 on the padded ones), plus d_target[...] at c = label - r Vl when the label is in
    the rank's range (r: the rank's coordinate on `axis`). With the loss's d_sum_exp = 1 / (N sum) and
    d_target = -1 / N this is (softmax - onehot) / N on the rank's columns.

    Constraints:
    * (C1) `grid` names a `ptrain.grid`;
    * (C2) `axis` is one of its axes;
    * (C3) as for `ptrain.vocab_parallel_cross_entropy_parts`: `d_sum_exp`, `d_target` and `max` have the
      labels' shape and the logits' element type; the result has the logits' type;
    * (C4) `vocab` >= 1.

    ```mlir
    %dl = ptrain.vocab_parallel_cross_entropy_parts_grad %ds, %dt, %logits, %labels, %max on @grid axis tp
        {vocab = 10 : i64} : tensor<2x7xf32>, tensor<2x7x3xf32>, tensor<2x7xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$d_sum_exp, AnyRankedTensor:$d_target, AnyRankedTensor:$logits,
                       AnyRankedTensor:$labels, AnyRankedTensor:$max, FlatSymbolRefAttr:$grid, StrAttr:$axis,
                       I64Attr:$vocab);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$d_sum_exp `,` $d_target `,` $logits `,` $labels `,` $max `on` $grid `axis` "
                       "custom<AxisName>($axis) attr-dict `:` type($d_sum_exp) `,` type($logits) `,` type($labels)";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$d_sum_exp, "::mlir::Value":$d_target, "::mlir::Value":$logits,
      "::mlir::Value":$labels, "::mlir::Value":$max, "::llvm::StringRef":$grid, "::llvm::StringRef":$axis,
      "int64_t":$vocab)>];
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINVOCABPARALLELOPS_TD
