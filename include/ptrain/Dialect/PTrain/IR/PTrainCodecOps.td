//===- PTrainCodecOps.td - compress, decompress, compressed collectives -*- tablegen -*-===//
//
// Codecs as ops with explicit semantics (DESIGN decision 4). State (error-feedback residual, warm-start
// factors, counters) and trainable codec parameters are SSA operands; updated state is returned.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINCODECOPS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINCODECOPS_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"
include "ptrain/Dialect/PTrain/IR/PTrainTypes.td"
include "ptrain/Dialect/PTrain/IR/PTrainAttrs.td"

def PTrain_CodecAttr : Attr<CPred<"::llvm::isa<::mlir::ptrain::CodecAttrInterface>($_self)">,
                            "codec attribute"> {
  let storageType = "::mlir::ptrain::CodecAttrInterface";
  let returnType = "::mlir::ptrain::CodecAttrInterface";
  let convertFromStorage = "$_self";
}

def PTrain_CompressOp : PTrain_Op<"compress", [Pure, AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "Encodes a tensor with a codec, optionally with error feedback.";
  let description = [{
    Encodes `input` into the code tensors of `codec`. With `error_feedback`, the first `state` operand is the
    residual e (the input's shape, f32 for a bf16 or f16 input, else the input type) and the op encodes g + e
    and returns e' = g + e - decode(code) as the first new state (Karimireddy et al., "Error Feedback Fixes SignSGD", ICML 2019; Optimus-CC's lazy error
    propagation, section 4.2, keys e by link). The remaining `state` operands are the codec's own encoder
    state (e.g. PowerSGD's warm-start Q), updated in `new_state`; `params` are trainable codec parameters
    (the linear autoencoder's W_e). Pure: all state is SSA.

    A bf16 or f16 input (a 16-bit plan's pipeline message, docs/MixedPrecision.md) is widened exactly to f32
    and g + e is formed in fp32; the codec attribute says which codes keep 16 bits (top-k's and rand-k's
    values) and which are f32 (PowerSGD's factors, quantization scales). `--ptrain-widen-half-codecs` rewrites
    such an op into the f32 codec behind the widen for the runtime kernels.

    Constraints:
    * (C1) the codec accepts the input type (the codec attribute's own constraints, e.g. PowerSGD rank
      <= min(n, m), k <= number of elements, no cast codec on a 16-bit input);
    * (C2) with `error_feedback`, the residual type is the input type, with f32 elements for a bf16 or f16
      input (residuals stay fp32);
    * (C3) the state operands are the residual (with `error_feedback`) followed by the codec's encoder state,
      with those types;
    * (C4) `new_state` has the types of `state`;
    * (C5) `params` have the types of the codec's encoder parameters;
    * (C6) the codes have the types the codec gives for the input type.

    ```mlir
    %p, %q, %e1, %q1 = ptrain.compress %g state(%e, %q0) {codec = #ptrain.powersgd<rank = 4>, error_feedback}
        : tensor<256x128xf32> state(tensor<256x128xf32>, tensor<128x4xf32>)
        -> (tensor<256x4xf32>, tensor<128x4xf32>) state(tensor<256x128xf32>, tensor<128x4xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Variadic<AnyRankedTensor>:$state,
                       Variadic<AnyRankedTensor>:$params, PTrain_CodecAttr:$codec, UnitAttr:$error_feedback);
  let results = (outs Variadic<AnyRankedTensor>:$codes, Variadic<AnyRankedTensor>:$new_state);
  let assemblyFormat = [{
    $input (`state` `(` $state^ `)`)? (`params` `(` $params^ `)`)? attr-dict
    `:` type($input) (`state` `(` type($state)^ `)`)? (`params` `(` type($params)^ `)`)?
    `->` `(` type($codes) `)` (`state` `(` type($new_state)^ `)`)?
  }];
  let hasVerifier = 1;
}

def PTrain_DecompressOp : PTrain_Op<"decompress", [Pure, AttrSizedOperandSegments]> {
  let summary = "Decodes code tensors produced by `compress` with the same codec.";
  let description = [{
    The receiving side of a compressed transfer: rebuilds a tensor of the result type from `codes`. A bf16 or
    f16 result is decoded in fp32 and rounded once to nearest even.
    `state` is the codec's decoder state (rand-k's call counter), updated in `new_state`; `params` are the
    codec's decoder parameters (the linear autoencoder's W_d).

    Constraints:
    * (C1) the codec accepts the result type;
    * (C2) the codes have the types the codec gives for the result type;
    * (C3) when the codes come straight from a `ptrain.compress`, its codec is this op's codec and its input
      type is this op's result type;
    * (C4) `state` and `new_state` have the types of the codec's decoder state;
    * (C5) `params` have the types of the codec's decoder parameters.

    ```mlir
    %g2 = ptrain.decompress %p, %q {codec = #ptrain.powersgd<rank = 4>}
        : (tensor<256x4xf32>, tensor<128x4xf32>) -> tensor<256x128xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$codes, Variadic<AnyRankedTensor>:$state,
                       Variadic<AnyRankedTensor>:$params, PTrain_CodecAttr:$codec);
  let results = (outs AnyRankedTensor:$result, Variadic<AnyRankedTensor>:$new_state);
  let assemblyFormat = [{
    $codes (`state` `(` $state^ `)`)? (`params` `(` $params^ `)`)? attr-dict
    `:` `(` type($codes) `)` (`state` `(` type($state)^ `)`)? (`params` `(` type($params)^ `)`)?
    `->` type($result) (`state` `(` type($new_state)^ `)`)?
  }];
  let hasVerifier = 1;
}

def PTrain_CompressedAllReduceStartOp : PTrain_CollectiveStartOp<"compressed_all_reduce_start", [
    AttrSizedOperandSegments,
    TypesMatchWith<"the request yields the input type", "input", "request",
                   "::mlir::ptrain::RequestType::get($_self.getContext(), $_self)">]> {
  let summary = "Starts an all-reduce whose traffic is compressed by a codec, with error feedback.";
  let description = [{
    High-level compressed collective for data- and tensor-parallel traffic; the runtime and the multi-rank
    executor run it as its phases. For a summable codec the codes are all-reduced in compressed form
    (PowerSGD: all-reduce P, orthogonalize, Q = M^T P, all-reduce Q; Optimus-CC section 4.4); otherwise they
    are all-gathered, decoded and summed. The wait yields the decoded reduction. `state` and `params` are as for `ptrain.compress`.
    A bf16 or f16 input (a 16-bit plan's TP site) is widened exactly and coded as its f32 widening, reduced
    in fp32 and rounded once to the input type; the residual is f32. Top-k and rand-k send their kept values
    as the input's 16-bit type (rounded to nearest even after the selection on the fp32 g + e; int32
    indices), as on a 16-bit pipeline link, and the residual keeps what the rounding lost; the other codes
    are those of the f32 type. `--ptrain-widen-half-codecs` rewrites such an op into the f32 op with
    `value_type` set to the 16-bit type: the form the runtimes take (the codec descriptor's `value_dtype`,
    docs/Compression.md "Codecs on 16-bit traffic").

    Constraints: (C1)-(C3) of every collective, and
    * (C4) the reduction is `sum` or `avg`;
    * (C5) the codec accepts the input type;
    * (C6) state, new state and params have the types `ptrain.compress` requires;
    * (C7) the request yields the input type;
    * (C8) `value_type`, when present, is bf16 or f16, the codec is top-k or rand-k, and the input is f32
      (on a 16-bit input the values already take the input's type).

    ```mlir
    %r, %e1, %q1 = ptrain.compressed_all_reduce_start %g state(%e, %q) on @grid axes [dp] reduction = avg
        {codec = #ptrain.powersgd<rank = 8>, error_feedback}
        : tensor<512x128xf32> state(tensor<512x128xf32>, tensor<128x8xf32>)
        -> state(tensor<512x128xf32>, tensor<128x8xf32>)
    // A widened bf16 TP site: top-k's kept values are sent as bf16.
    %t, %e2 = ptrain.compressed_all_reduce_start %x state(%e) on @grid axes [tp] reduction = sum
        {codec = #ptrain.topk<ratio = 0.25>, error_feedback, value_type = bf16}
        : tensor<4x64x128xf32> state(tensor<4x64x128xf32>) -> state(tensor<4x64x128xf32>)
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input, Variadic<AnyRankedTensor>:$state,
                            Variadic<AnyRankedTensor>:$params),
                       gridArgs,
                       (ins PTrain_ReductionKindAttr:$reduction, PTrain_CodecAttr:$codec,
                            UnitAttr:$error_feedback, OptionalAttr<TypeAttr>:$value_type));
  let results = (outs PTrain_ValueRequestType:$request, Variadic<AnyRankedTensor>:$new_state);
  let assemblyFormat = [{
    $input (`state` `(` $state^ `)`)? (`params` `(` $params^ `)`)? `on` $grid `axes` custom<GridAxes>($grid_axes)
    `reduction` `=` `` $reduction attr-dict
    `:` type($input) (`state` `(` type($state)^ `)`)? (`params` `(` type($params)^ `)`)?
    (`->` `state` `(` type($new_state)^ `)`)?
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::ValueRange":$state, "::mlir::ValueRange":$params,
                   "::llvm::StringRef":$grid, "::llvm::ArrayRef<::llvm::StringRef>":$gridAxes,
                   "::mlir::ptrain::ReductionKind":$reduction, "::mlir::ptrain::CodecAttrInterface":$codec,
                   "bool":$errorFeedback)>
  ];
}

def PTrain_CompressedReduceScatterStartOp : PTrain_CollectiveStartOp<"compressed_reduce_scatter_start"> {
  let summary = "Starts a reduce-scatter of a flat bucket whose chunks are quantized, with error feedback.";
  let description = [{
    ZeRO-1's compressed gradient reduce-scatter (docs/DistributedOptimizer.md, "Compression"; the sharded
    data parallelism that PyTorch's communication hooks cannot compress, pytorch#64665). The input is a
    flattened, padded bucket of N elements and the group has D ranks; member j keeps chunk j (elements
    [j N / D, (j + 1) N / D)). Every member encodes each chunk of input + residual alone with `codec`
    (quantization: one scale and zero point per chunk at tensor granularity, or per block), keeps what its codes lost in
    the residual (`error_feedback`: one fp32 residual of the whole bucket per member, Karimireddy et al.,
    ICML 2019), and hands chunk j's code to member j (one all-to-all: (D - 1) / D of the codes cross the
    wire per rank, as a ring reduce-scatter moves (D - 1) / D of the data); member j decodes the D codes of
    its chunk and adds them in member order (`avg`: times 1 / D). The wait yields the chunk.

    Constraints: (C1)-(C3) of every collective, and
    * (C4) the reduction is `sum` or `avg`;
    * (C5) the input is 1-D (a flattened bucket);
    * (C6) the codec is `#ptrain.quant` with granularity `tensor` or `block` (the chunk is 1-D: `channel`
      would keep a scale per element);
    * (C7) the codec accepts the chunk type, the request's value type;
    * (C8) with `error_feedback` the state and new state are one residual of the input type, without it none;
    * (C9) the group size divides the input and the request yields `tensor<N / D x f32>`.

    ```mlir
    %r, %e1 = ptrain.compressed_reduce_scatter_start %flat state(%e) on @grid axes [dp] reduction = avg
        {codec = #ptrain.quant<bits = 8, granularity = tensor>, error_feedback}
        : tensor<258xf32> state(tensor<258xf32>) -> !ptrain.request<tensor<86xf32>> state(tensor<258xf32>)
    %g = ptrain.wait %r : !ptrain.request<tensor<86xf32>>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input, Variadic<AnyRankedTensor>:$state),
                       gridArgs,
                       (ins PTrain_ReductionKindAttr:$reduction, PTrain_CodecAttr:$codec,
                            UnitAttr:$error_feedback));
  let results = (outs PTrain_ValueRequestType:$request, Variadic<AnyRankedTensor>:$new_state);
  let assemblyFormat = [{
    $input (`state` `(` $state^ `)`)? `on` $grid `axes` custom<GridAxes>($grid_axes)
    `reduction` `=` `` $reduction attr-dict
    `:` type($input) (`state` `(` type($state)^ `)`)? `->` qualified(type($request))
    (`state` `(` type($new_state)^ `)`)?
  }];
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINCODECOPS_TD
