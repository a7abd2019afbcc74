//===- PTrainParallelOps.td - grid and communication ops ---*- tablegen -*-===//
//
// The process grid with named axes and the asynchronous communication over it: pipeline send/recv and
// collectives. Why ptrain has its own grid and collectives instead of upstream `shard`: see
// docs/RationalePTrain.md, "Grid and collectives".
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINPARALLELOPS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINPARALLELOPS_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"
include "ptrain/Dialect/PTrain/IR/PTrainTypes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def PTrain_GridOp : PTrain_Op<"grid", [Symbol]> {
  let summary = "A process grid with named axes, e.g. data x pipeline x tensor parallelism.";
  let description = [{
    Declares the ranks of a run as a grid whose axes have names and sizes; the number of ranks is the product
    of the sizes. Collectives and pipeline transfers name the axes they run over, so `dp`, `pp` and `tp` stay
    readable through every pass. Rank order is row-major over the axes as listed (the last axis varies
    fastest), which places the last axis (`tp` below) on neighbouring ranks of a node.

    Constraints:
    * (C1) at least one axis;
    * (C2) every axis size is >= 1;
    * (C3) no axis name appears twice.

    ```mlir
    ptrain.grid @grid(dp = 2, pp = 4, tp = 8)
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axis_names, DenseI64ArrayAttr:$shape);
  let assemblyFormat = "$sym_name `` custom<GridShape>($axis_names, $shape) attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Index of axis `name`, or std::nullopt when the grid has no such axis.
    std::optional<unsigned> getAxisIndex(::llvm::StringRef name);
    /// Size of axis `name`; the axis must exist.
    int64_t getAxisSize(::llvm::StringRef name);
    /// Product of the sizes of `axes` (the group size of a collective over them); every axis must exist.
    int64_t getGroupSize(::mlir::ArrayAttr axes);
    /// Total number of ranks.
    int64_t getNumRanks();
  }];
}

def PTrain_DistributeOp : PTrain_Op<"distribute", [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "This rank's slice of a replicated tensor split along grid axes.";
  let description = [{
    `split` gives, per tensor dimension, the grid axes that dimension is split over (outer axis first); the
    result is the local block. With `pad`, a dimension that the group size does not divide is padded with
    zeros to the next multiple (e.g. a vocabulary padded to a multiple of tp); the local size is then
    ceil(dim / group). No communication: every rank already holds the full value.

    Constraints:
    * (C1) `split` has at most as many entries as the input has dimensions;
    * (C2) `grid` names a `ptrain.grid` and every split axis is one of its axes;
    * (C3) no axis appears twice in `split`;
    * (C4) without `pad`, the product of the axis sizes divides the dimension;
    * (C5) the result has the local shape and the input's element type.

    ```mlir
    %w = ptrain.distribute %x on @grid split [[], [tp]] : tensor<128x512xf32> -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$grid, ArrayAttr:$split, UnitAttr:$pad);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $grid `split` custom<SplitAxes>($split) (`pad` $pad^)? attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def PTrain_SendStartOp : PTrain_Op<"send_start", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>, PTrain_AsyncStartOpInterface,
    MemoryEffects<[MemRead<PTrain_CommResource>, MemWrite<PTrain_CommResource>]>]> {
  let summary = "Starts sending a tensor to the rank `offset` steps away along a grid axis.";
  let description = [{
    Pipeline point-to-point transfer. The peer is this rank with its coordinate on `axis` moved by `offset`
    (+1: the next stage); all other coordinates are kept. The tensor must not be changed until the returned
    request is waited on. The peer posts the matching `recv_start` with the opposite offset.

    Constraints:
    * (C1) `grid` names a `ptrain.grid` and `axis` is one of its axes;
    * (C2) `offset` is not 0 and |offset| < size of `axis`.

    ```mlir
    %s = ptrain.send_start %act to @grid axis pp offset 1 : tensor<4x64x128xf32>
    ptrain.wait %s : !ptrain.request
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$grid, StrAttr:$axis, I64Prop:$offset);
  let results = (outs PTrain_EmptyRequestType:$request);
  let assemblyFormat = "$input `to` $grid `axis` custom<AxisName>($axis) `offset` $offset attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def PTrain_RecvStartOp : PTrain_Op<"recv_start", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>, PTrain_AsyncStartOpInterface,
    MemoryEffects<[MemRead<PTrain_CommResource>, MemWrite<PTrain_CommResource>]>]> {
  let summary = "Starts receiving a tensor from the rank `offset` steps away along a grid axis.";
  let description = [{
    The peer is this rank with its coordinate on `axis` moved by `offset` (-1: the previous stage). The wait
    on the request yields the received tensor.

    Constraints:
    * (C1) `grid` names a `ptrain.grid` and `axis` is one of its axes;
    * (C2) `offset` is not 0 and |offset| < size of `axis`;
    * (C3) the request yields a ranked tensor.

    ```mlir
    %r = ptrain.recv_start from @grid axis pp offset -1 : !ptrain.request<tensor<4x64x128xf32>>
    %act = ptrain.wait %r : !ptrain.request<tensor<4x64x128xf32>>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$grid, StrAttr:$axis, I64Prop:$offset);
  let results = (outs PTrain_ValueRequestType:$request);
  let assemblyFormat = "`from` $grid `axis` custom<AxisName>($axis) `offset` $offset attr-dict `:` qualified(type($request))";
  let hasVerifier = 1;
}

def PTrain_AllReduceStartOp : PTrain_CollectiveStartOp<"all_reduce_start", [
    TypesMatchWith<"the request yields the input type", "input", "request",
                   "::mlir::ptrain::RequestType::get($_self.getContext(), $_self)">]> {
  let summary = "Starts an all-reduce of a tensor over named grid axes.";
  let description = [{
    Every rank of the group (the ranks that differ only in `grid_axes`) contributes its tensor; the wait
    yields the elementwise reduction (`avg` divides the sum by the group size). NCCL moves 2(n-1)/n of the
    data per rank (bus bandwidth).

    A sub-group collective carries `ptrain.subgroup = {<axis> = array<i64: ...>}`: only the ranks of the
    group whose coordinate on that axis is listed take part (Optimus-CC's fused embedding sync over
    {first, last} x dp; the middle stages post nothing). Group ranks stay row-major over `grid_axes`, the
    subgroup axis counting its members only (include/ptrain/Dialect/PTrain/IR/PTrainSubgroup.h).

    Constraints: (C1)-(C3) of every collective (grid, axes, no axis twice), and with `ptrain.subgroup`:
    * (C4) it is a dictionary with one entry, a grid axis name -> array<i64> of coordinates;
    * (C5) that axis is one of `grid_axes`;
    * (C6) the members are not empty, non-negative and strictly increasing;
    * (C7) every member is below the axis' size in the grid;
    * (C8) in a function of stage s (`ptrain.stage = s`) with a subgroup of `pp`, s is a member.

    ```mlir
    %r = ptrain.all_reduce_start %g on @grid axes [dp] reduction = avg : tensor<512x128xf32>
    %sum = ptrain.wait %r : !ptrain.request<tensor<512x128xf32>>
    %e = ptrain.all_reduce_start %wte on @grid axes [dp, pp] reduction = sum
        {ptrain.subgroup = {pp = array<i64: 0, 3>}} : tensor<256x128xf32>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input), gridArgs, (ins PTrain_ReductionKindAttr:$reduction));
  let results = (outs PTrain_ValueRequestType:$request);
  let assemblyFormat = [{
    $input `on` $grid `axes` custom<GridAxes>($grid_axes) `reduction` `=` `` $reduction attr-dict `:` type($input)
  }];
}

def PTrain_AllGatherStartOp : PTrain_CollectiveStartOp<"all_gather_start"> {
  let summary = "Starts an all-gather that concatenates the group's tensors along `gather_dim`.";
  let description = [{
    The wait yields the group's tensors concatenated along `gather_dim` in group-rank order.

    Constraints: (C1)-(C3) of every collective, and
    * (C4) `gather_dim` < rank of the input;
    * (C5) the request yields the input type with `gather_dim` multiplied by the group size.

    ```mlir
    %r = ptrain.all_gather_start %x on @grid axes [tp] gather_dim = 1
        : tensor<64x32xf32> -> !ptrain.request<tensor<64x256xf32>>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input), gridArgs, (ins I64Prop:$gather_dim));
  let results = (outs PTrain_ValueRequestType:$request);
  let assemblyFormat = [{
    $input `on` $grid `axes` custom<GridAxes>($grid_axes) `gather_dim` `=` $gather_dim attr-dict
    `:` type($input) `->` qualified(type($request))
  }];
}

def PTrain_ReduceScatterStartOp : PTrain_CollectiveStartOp<"reduce_scatter_start"> {
  let summary = "Starts a reduce-scatter: reduce over the group, each rank keeps one block of `scatter_dim`.";
  let description = [{
    Constraints: (C1)-(C3) of every collective, and
    * (C4) `scatter_dim` < rank of the input;
    * (C5) the group size divides the `scatter_dim` dimension;
    * (C6) the request yields the input type with `scatter_dim` divided by the group size.

    ```mlir
    %r = ptrain.reduce_scatter_start %g on @grid axes [dp] scatter_dim = 0 reduction = sum
        : tensor<512x128xf32> -> !ptrain.request<tensor<256x128xf32>>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input), gridArgs,
                       (ins I64Prop:$scatter_dim, PTrain_ReductionKindAttr:$reduction));
  let results = (outs PTrain_ValueRequestType:$request);
  let assemblyFormat = [{
    $input `on` $grid `axes` custom<GridAxes>($grid_axes) `scatter_dim` `=` $scatter_dim
    `reduction` `=` `` $reduction attr-dict `:` type($input) `->` qualified(type($request))
  }];
}

def PTrain_BroadcastStartOp : PTrain_CollectiveStartOp<"broadcast_start", [
    TypesMatchWith<"the request yields the input type", "input", "request",
                   "::mlir::ptrain::RequestType::get($_self.getContext(), $_self)">]> {
  let summary = "Starts a broadcast of the root's tensor to every rank of the group.";
  let description = [{
    `root` is the group rank (row-major over `grid_axes`) whose tensor every member receives.

    Constraints: (C1)-(C3) of every collective, and
    * (C4) 0 <= `root` < group size.

    ```mlir
    %r = ptrain.broadcast_start %w on @grid axes [dp] root = 0 : tensor<256x128xf32>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input), gridArgs, (ins I64Prop:$root));
  let results = (outs PTrain_ValueRequestType:$request);
  let assemblyFormat = [{
    $input `on` $grid `axes` custom<GridAxes>($grid_axes) `root` `=` $root attr-dict `:` type($input)
  }];
}

def PTrain_WaitOp : PTrain_Op<"wait", [
    MemoryEffects<[MemRead<PTrain_CommResource>, MemWrite<PTrain_CommResource>]>]> {
  let summary = "Completes a communication and yields its value.";
  let description = [{
    Blocks until the communication that returned `request` has completed on this rank, and yields the
    received or reduced tensor when the request carries one.

    Constraints:
    * (C1) `request` is returned by a `*_start` op (a request that was never started cannot be waited on);
    * (C2) `request` is waited on exactly once;
    * (C3) there is a result exactly when the request carries a value, and its type is that value's type.

    ```mlir
    %sum = ptrain.wait %r : !ptrain.request<tensor<512x128xf32>>
    ptrain.wait %s : !ptrain.request
    ```
  }];
  let arguments = (ins PTrain_RequestType:$request);
  let results = (outs Optional<AnyRankedTensor>:$result);
  let assemblyFormat = "$request attr-dict `:` custom<WaitTypes>(type($request), type($result))";
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$request), [{
      auto type = ::llvm::cast<::mlir::ptrain::RequestType>(request.getType());
      build($_builder, $_state, type.getValueType(), request);
    }]>
  ];
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINPARALLELOPS_TD
