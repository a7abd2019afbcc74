//===- PTrainTensorParallelOps.td - Megatron's f/g pair ----*- tablegen -*-===//
//
// The tensor-parallel collectives of the forward graph (DESIGN "IR levels", --ptrain-shard-tp): Megatron-LM's
// conjugate pair f and g (Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter Language Models Using
// Model Parallelism", 2019, section 3, figure 3), and the split that takes a rank's part of a replicated value. They are model-level ops with gradient rules, so the
// backward all-reduces of tensor parallelism come out of reverse-mode autodiff instead of being placed by hand.
// Unlike the asynchronous collectives of PTrainParallelOps.td they complete in place: a tensor-parallel
// all-reduce sits on the critical path of every layer and has nothing to overlap with.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINTENSORPARALLELOPS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINTENSORPARALLELOPS_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"
include "ptrain/Dialect/PTrain/IR/PTrainInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

/// A tensor-parallel collective over one axis of a grid: same operand and result type, a gradient rule, and
/// side effects on the network (never deleted, moved or merged; DESIGN decision 3).
///
/// Constraints both ops share (checked in `verifySymbolUses`):
/// * (C1) `grid` names a `ptrain.grid`;
/// * (C2) `axis` is an axis of that grid.
class PTrain_TensorParallelOp<string mnemonic>
    : PTrain_Op<mnemonic, [SameOperandsAndResultType, DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        DeclareOpInterfaceMethods<PTrain_GradientOpInterface>,
        MemoryEffects<[MemRead<PTrain_CommResource>, MemWrite<PTrain_CommResource>]>]> {
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$grid, StrAttr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `on` $grid `axis` custom<AxisName>($axis) attr-dict `:` type($input)";
}

def PTrain_TPCopyOp : PTrain_TensorParallelOp<"tp_copy"> {
  let summary = "Megatron's f: identity forward, all-reduce (sum) over the tensor-parallel axis backward.";
  let description = [{
    Marks where a replicated activation enters a column-parallel linear: every rank of the `axis` group holds
    the same `input` and the op returns it unchanged. Each rank's backward produces only its part of the
    input's gradient (from its columns), so the gradient rule sums the parts: the gradient of `input` is
    `ptrain.tp_all_reduce` of the result's gradient over the same axis.

    Constraints: (C1) `grid` names a `ptrain.grid`; (C2) `axis` is one of its axes; the result has the
    input's type.

    ```mlir
    %x = ptrain.tp_copy %ln on @grid axis tp : tensor<4x64x128xf32>
    %qkv = ptrain.matmul %x, %w_local : tensor<4x64x128xf32>, tensor<128x192xf32>
    ```
  }];
}

def PTrain_TPAllReduceOp : PTrain_TensorParallelOp<"tp_all_reduce"> {
  let summary = "Megatron's g: all-reduce (sum) over the tensor-parallel axis forward, identity backward.";
  let description = [{
    Sums the partial outputs of a row-parallel linear over the ranks of the `axis` group (group-rank order;
    every member gets the same sum). The sum is replicated, so its gradient reaches every rank whole and
    the gradient rule is the identity. NCCL moves 2(n-1)/n of the tensor per rank.

    Mixed precision (docs/MixedPrecision.md, "16-bit TP collectives"): on a 16-bit input (bf16 or f16) the op
    declares its accumulation type, `accumulate = f32`: every member's values travel in 16 bits (half the bytes
    of fp32), are widened exactly to fp32, summed in fp32 in group-rank order (r = 0, 1, ..., n - 1) and rounded
    once to the input's type (nearest even), so every rank gets the same bits on every implementation (the
    executor, the runtime's `ptrain_all_reduce_half_start`). Micikevicius et al., "Mixed Precision Training"
    (ICLR 2018), sec. 3.3: 16-bit values, fp32 sums. `--ptrain-lower-to-runtime` places these all-reduces (with
    a `ptrain.cast` before and after) on the uncompressed fp32 sites of a module built with precision=bf16 or
    fp16.

    Constraints:
    * (C1) `grid` names a `ptrain.grid`;
    * (C2) `axis` is one of its axes;
    * (C3) a 16-bit input (bf16 or f16) declares `accumulate`: the IR states how the 16-bit values are summed;
    * (C4) `accumulate`, when given, is f32 and the input is bf16 or f16.
    The result has the input's type.

    ```mlir
    %part = ptrain.matmul %ctx, %wo_local : tensor<4x64x64xf32>, tensor<64x128xf32>
    %out = ptrain.tp_all_reduce %part on @grid axis tp : tensor<4x64x128xf32>
    %h = ptrain.cast %part : tensor<4x64x128xf32> -> tensor<4x64x128xbf16>
    %sum = ptrain.tp_all_reduce %h on @grid axis tp {accumulate = f32} : tensor<4x64x128xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$grid, StrAttr:$axis,
                       OptionalAttr<TypeAttr>:$accumulate);
  let builders = [
    // The plain sum (no `accumulate`): fp32 (or f64) values summed in their own type.
    OpBuilder<(ins "::mlir::Value":$input, "::llvm::StringRef":$grid, "::llvm::StringRef":$axis),
              [{ build($_builder, $_state, input.getType(), input, grid, axis, ::mlir::TypeAttr()); }]>,
  ];
  let hasVerifier = 1;
}

def PTrain_TPSplitOp : PTrain_Op<"tp_split", [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<PTrain_GradientOpInterface>]> {
  let summary = "This rank's contiguous part of a replicated tensor along one dimension; all-gather backward.";
  let description = [{
    Every rank of the `axis` group holds the same `input`; rank r (its coordinate on `axis`) keeps block r of
    dimension `dim`, of size input_dim / axis_size. No communication forward. The input is replicated, so its
    gradient is the concatenation of the ranks' blocks: the gradient rule is `ptrain.tp_all_gather` along
    `dim` (Megatron-LM's `_ScatterToModelParallelRegion`, megatron/core/tensor_parallel/mappings.py: split
    forward, all-gather backward).

    `--ptrain-shard-tp` takes a parameter's rank part with it where one reader of the parameter is inside a
    tensor-parallel region (a column-parallel bias) and another reads it whole (a LayerNorm's bias that the
    exporter merged with it for equal values): the state stays replicated and its gradient whole, the same
    on every rank.

    Constraints:
    * (C1) `grid` names a `ptrain.grid`;
    * (C2) `axis` is one of its axes;
    * (C3) `dim` is in [0, rank) of the input;
    * (C4) the result has the input's element type and shape, except dimension `dim`, which is the input's
      divided by the size of `axis` (which divides it).

    ```mlir
    %b = ptrain.state_read @ln_bias : tensor<128xf32>
    %local = ptrain.tp_split %b on @grid axis tp dim 0 : tensor<128xf32> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$grid, StrAttr:$axis, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `on` $grid `axis` custom<AxisName>($axis) `dim` $dim attr-dict `:` type($input) "
                       "`->` type($result)";
  let hasVerifier = 1;
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINTENSORPARALLELOPS_TD
