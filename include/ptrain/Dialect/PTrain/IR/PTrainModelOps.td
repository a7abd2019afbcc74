//===- PTrainModelOps.td - tensor-level model ops ----------*- tablegen -*-===//
//
// The small documented set of model ops an imported graph is legalized into (DESIGN decision 2). Every op
// infers its result type from its operands and attributes; shape errors name the op and the offending
// shapes. Static shapes only: symbolic dimensions are bound at import.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINMODELOPS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINMODELOPS_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

/// A model op: pure, with a gradient rule, and its result type inferred (InferTypeOpAdaptor, or
/// SameOperandsAndResultType).
class PTrain_ModelOp<string mnemonic, list<Trait> traits = [InferTypeOpAdaptor]>
    : PTrain_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<PTrain_GradientOpInterface>])>;

def PTrain_FloatTensor : RankedTensorOf<[AnyFloat]>;

def PTrain_EmbeddingOp : PTrain_ModelOp<"embedding", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<PTrain_CostOpInterface, ["getFlops", "getBytesAccessed"]>]> {
  let summary = "Looks up rows of an embedding table: out[i..., :] = table[ids[i...], :].";
  let description = [{
    ONNX `Gather` with axis 0 on a 2-D table (token and position embeddings). Ids out of [0, V) are a runtime
    error of the interpreter and the kernels.

    Constraints:
    * (C1) the table is 2-D, V x H;
    * (C2) the ids are integers;
    * (C3) the result is ids.shape x H with the table's element type (inferred).

    ```mlir
    %x = ptrain.embedding %wte, %ids : tensor<256x128xf32>, tensor<4x64xi64>
    // %x : tensor<4x64x128xf32>
    ```
  }];
  let arguments = (ins PTrain_FloatTensor:$table, RankedTensorOf<[AnySignlessInteger]>:$ids);
  let results = (outs PTrain_FloatTensor:$result);
  let assemblyFormat = "$table `,` $ids attr-dict `:` type($table) `,` type($ids)";
}

def PTrain_BinaryOp : PTrain_ModelOp<"binary"> {
  let summary = "Elementwise binary operation with numpy broadcasting.";
  let description = [{
    `add`, `sub`, `mul`, `div`, `pow`, `max`, `min` of two tensors broadcast against each other (numpy rules,
    trailing dimensions aligned; ONNX multidirectional broadcasting).

    Constraints:
    * (C1) both operands have the same element type;
    * (C2) the shapes broadcast: aligned from the last dimension, each pair is equal or one of them is 1;
    * (C3) the result has the broadcast shape (inferred).

    ```mlir
    %y = ptrain.binary add %x, %bias : tensor<4x64x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins PTrain_BinaryKindAttr:$kind, AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "`` $kind $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def PTrain_UnaryOp : PTrain_ModelOp<"unary", [SameOperandsAndResultType]> {
  let summary = "Elementwise unary operation on a float tensor.";
  let description = [{
    `neg`, `exp`, `log`, `sqrt`, `rsqrt`, `reciprocal`, `erf`, `tanh`, `relu`; the result has the operand's
    type.

    ```mlir
    %y = ptrain.unary erf %x : tensor<4x64x512xf32>
    ```
  }];
  let arguments = (ins PTrain_UnaryKindAttr:$kind, PTrain_FloatTensor:$input);
  let results = (outs PTrain_FloatTensor:$result);
  let assemblyFormat = "`` $kind $input attr-dict `:` type($input)";
}

def PTrain_MatmulOp : PTrain_ModelOp<"matmul", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "Batched matrix product with broadcast batch dimensions (ONNX MatMul, rank >= 2).";
  let description = [{
    lhs [..., n, k] x rhs [..., k, m] -> [..., n, m]; the batch dimensions broadcast (numpy rules). FLOPs:
    2 * n * k * m per batch element.

    Mixed precision (docs/MixedPrecision.md): with `accumulate = f32` the operands are 16-bit (bf16 or f16),
    every product is accumulated in fp32 and the result is fp32. On bf16 operands its value is the runtime's
    `ptrain_gemm_bf16` (AVX512-BF16's `VDPBF16PS` definition: pairs of products summed in fp32, docs/Runtime.md
    "bf16 GEMM"); on f16 operands the runtime's `ptrain_gemm_f16` (one fp32 accumulator per element taking the
    exact products in order of k, docs/MixedPrecision.md "fp16"); bit for bit on every path.
    `--ptrain-build-training-step="precision=bf16"` (or `fp16`) places these GEMMs.

    Constraints:
    * (C1) both operands have rank >= 2 and the same element type;
    * (C2) the contracted dimensions are equal (k);
    * (C3) the batch dimensions broadcast;
    * (C4) the result is [broadcast batch..., n, m] (inferred), with the operands' element type, or `accumulate`
      when given;
    * (C5) `accumulate`, when given, is f32 and the operands are bf16 or f16.

    ```mlir
    %y = ptrain.matmul %x, %w : tensor<4x64x128xf32>, tensor<128x384xf32>
    // %y : tensor<4x64x384xf32>
    %z = ptrain.matmul %xb, %wb {accumulate = f32} : tensor<4x64x128xbf16>, tensor<128x384xbf16>
    // %z : tensor<4x64x384xf32>
    ```
  }];
  let arguments = (ins PTrain_FloatTensor:$lhs, PTrain_FloatTensor:$rhs, OptionalAttr<TypeAttr>:$accumulate);
  let results = (outs PTrain_FloatTensor:$result);
  let builders = [
    // The plain product (no `accumulate`): the result has the operands' element type.
    OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs),
              [{ build($_builder, $_state, lhs, rhs, ::mlir::TypeAttr()); }]>,
    OpBuilder<(ins "::mlir::TypeRange":$resultTypes, "::mlir::Value":$lhs, "::mlir::Value":$rhs),
              [{ build($_builder, $_state, resultTypes, lhs, rhs, ::mlir::TypeAttr()); }]>,
  ];
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def PTrain_LayerNormOp : PTrain_ModelOp<"layer_norm", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "Layer normalization over the trailing dimensions from `axis`, with scale and bias.";
  let description = [{
    y = (x - mean) / sqrt(var + epsilon) * scale + bias, mean and (biased) variance over dimensions
    [axis, rank) (Ba et al., 2016; ONNX LayerNormalization-17).

    Constraints:
    * (C1) -rank <= axis < rank;
    * (C2) scale (and bias, when given) have the shape x.shape[axis:] and x's element type;
    * (C3) epsilon > 0;
    * (C4) the result has x's type (inferred).

    ```mlir
    %y = ptrain.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64}
        : tensor<4x64x128xf32>, tensor<128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins PTrain_FloatTensor:$input, PTrain_FloatTensor:$scale, Optional<PTrain_FloatTensor>:$bias,
                       I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs PTrain_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:` type($input) `,` type($scale) (`,` type($bias)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// `axis` as a non-negative dimension.
    int64_t getNormalizedAxis() {
      int64_t axis = getAxisAttr().getInt();
      return axis < 0 ? axis + getInput().getType().getRank() : axis;
    }
  }];
}

def PTrain_SoftmaxOp : PTrain_ModelOp<"softmax", [SameOperandsAndResultType, DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "Softmax along one dimension.";
  let description = [{
    y = exp(x - max(x)) / sum(exp(x - max(x))) along `axis` (ONNX Softmax-13 semantics; the importer rewrites
    the 2-D coercion of opsets < 13 into this form).

    Constraints:
    * (C1) -rank <= axis < rank.

    ```mlir
    %p = ptrain.softmax %scores {axis = -1 : i64} : tensor<4x4x64x64xf32>
    ```
  }];
  let arguments = (ins PTrain_FloatTensor:$input, I64Attr:$axis);
  let results = (outs PTrain_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def PTrain_GeluOp : PTrain_ModelOp<"gelu", [SameOperandsAndResultType, DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "Gaussian error linear unit, exact (erf) or tanh-approximated.";
  let description = [{
    none: y = x * 0.5 * (1 + erf(x / sqrt(2))); tanh: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    (Hendrycks & Gimpel, 2016). The importer recognizes both expansions exporters emit.

    ```mlir
    %y = ptrain.gelu %x {approximate = #ptrain<gelu_approximation none>} : tensor<4x64x512xf32>
    ```
  }];
  let arguments = (ins PTrain_FloatTensor:$input,
                       DefaultValuedAttr<PTrain_GeluApproximationAttr, "GeluApproximation::None">:$approximate);
  let results = (outs PTrain_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def PTrain_ReshapeOp : PTrain_Op<"reshape", [Pure,
    DeclareOpInterfaceMethods<PTrain_GradientOpInterface>, DeclareOpInterfaceMethods<PTrain_CostOpInterface, ["getFlops", "getBytesAccessed"]>]> {
  let summary = "Reinterprets a tensor with another static shape of the same element count.";
  let description = [{
    Row-major: the elements keep their order.

    Constraints:
    * (C1) both shapes are static with the same number of elements and the same element type.

    ```mlir
    %h = ptrain.reshape %q : tensor<4x64x128xf32> -> tensor<4x64x4x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def PTrain_TransposeOp : PTrain_ModelOp<"transpose", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "Permutes dimensions: result dimension i is input dimension perm[i].";
  let description = [{
    Constraints:
    * (C1) `perm` is a permutation of [0, rank);
    * (C2) the result shape is the permuted input shape (inferred).

    ```mlir
    %t = ptrain.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<4x64x4x32xf32> -> tensor<4x4x64x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs AnyRankedTensor:$result);
  // Result types are printed: a custom parser cannot infer from properties before they are set.
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def PTrain_SplitOp : PTrain_ModelOp<"split"> {
  let summary = "Splits a tensor along `axis` into consecutive pieces of the given sizes.";
  let description = [{
    The fused QKV projection's output is split into Q, K and V this way.

    Constraints:
    * (C1) -rank <= axis < rank;
    * (C2) every size is >= 0 and the sizes add up to the dimension;
    * (C3) one result per size, of the input shape with `axis` set to that size (inferred).

    ```mlir
    %q, %k, %v = ptrain.split %qkv {axis = 2 : i64, sizes = array<i64: 128, 128, 128>} : tensor<4x64x384xf32>
        -> tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
}

def PTrain_CrossEntropyOp : PTrain_ModelOp<"cross_entropy", [InferTypeOpAdaptor, DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "Softmax cross-entropy of logits against integer labels (next-token loss), mean or sum.";
  let description = [{
    Per position p, nll[p] = logsumexp(logits[p, :]) - logits[p, label[p]] in nats (the class dimension is
    the last one), weighted by w[p] = `weight`[label[p]] (1 without `weight`) and w[p] = 0 where
    label[p] == `ignore_index`. `reduction = "mean"` (the default when absent) is sum(w nll) / sum(w), and
    `"sum"` is sum(w nll): PyTorch's `torch.nn.functional.cross_entropy(weight, ignore_index, reduction)` and
    ONNX SoftmaxCrossEntropyLoss. Without `weight` and `ignore_index` the mean is over every position. A mean
    over no counted position is NaN (0 / 0, as PyTorch). A label that is neither `ignore_index` nor in [0, C)
    is a run-time error. The training step's pipeline form uses `"sum"` and divides by the global weight sum
    of the step (docs/TrainingStep.md, "Padding and class weights").

    Constraints:
    * (C1) logits are [..., C] and labels [...] with the same leading shape;
    * (C2) labels are integers;
    * (C3) the result is a scalar of the logits' element type (inferred);
    * (C4) `weight`, when given, is [C] of the logits' element type;
    * (C5) `reduction`, when given, is "mean" or "sum";
    * (C6) `ignore_index`, when given, is representable in the labels' element type.

    ```mlir
    %loss = ptrain.cross_entropy %logits, %labels : tensor<4x63x256xf32>, tensor<4x63xi64>
    %padded = ptrain.cross_entropy %logits, %labels weight %w {ignore_index = -100 : i64, reduction = "sum"}
        : tensor<4x63x256xf32>, tensor<4x63xi64>, tensor<256xf32>
    ```
  }];
  let arguments = (ins PTrain_FloatTensor:$logits, RankedTensorOf<[AnySignlessInteger]>:$labels,
                       Optional<PTrain_FloatTensor>:$weight, OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<StrAttr>:$reduction);
  let results = (outs PTrain_FloatTensor:$loss);
  let assemblyFormat = [{
    $logits `,` $labels (`weight` $weight^)? attr-dict `:` type($logits) `,` type($labels) (`,` type($weight)^)?
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$logits, "::mlir::Value":$labels), [{
      build($_builder, $_state, logits, labels, ::mlir::Value(), ::mlir::IntegerAttr(), ::mlir::StringAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// True for reduction "sum"; false for "mean" or no reduction attribute.
    bool isSumReduction() { return getReduction() && *getReduction() == "sum"; }
    /// True with a weight operand or an ignore_index (the plain mean over every position otherwise).
    bool isWeighted() { return getWeight() || getIgnoreIndex(); }
  }];
  let hasVerifier = 1;
}

def PTrain_SliceOp : PTrain_ModelOp<"slice"> {
  let summary = "A static, unit-stride slice: result[i] = input[offsets + i] for i < sizes.";
  let description = [{
    Constraints:
    * (C1) `offsets` and `sizes` have one entry per input dimension;
    * (C2) 0 <= offset and offset + size <= dimension, for every dimension;
    * (C3) the result shape is `sizes` (inferred).

    ```mlir
    %h = ptrain.slice %logits {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 4, 63, 256>}
        : tensor<4x64x256xf32> -> tensor<4x63x256xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$offsets, DenseI64ArrayAttr:$sizes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def PTrain_ConcatOp : PTrain_ModelOp<"concat"> {
  let summary = "Concatenates tensors along `axis`.";
  let description = [{
    Constraints:
    * (C1) at least one input; all have the same rank and element type;
    * (C2) -rank <= axis < rank;
    * (C3) all dimensions but `axis` are equal; the result's `axis` is their sum (inferred).

    ```mlir
    %qkv = ptrain.concat %q, %k, %v {axis = 2 : i64}
        : tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32> -> tensor<4x64x384xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
}

def PTrain_CompareOp : PTrain_ModelOp<"compare"> {
  let summary = "Elementwise comparison or logical operation with numpy broadcasting, giving an i1 mask.";
  let description = [{
    `eq`, `lt`, `le`, `gt`, `ge` compare two tensors of one element type (ONNX Equal, Less, LessOrEqual,
    Greater, GreaterOrEqual); `and`, `or`, `xor` combine two i1 masks (ONNX And, Or, Xor; Not is `xor` with a
    true splat). Masks are `i1` tensors (ONNX BOOL); attention masks select with `ptrain.select`. Not
    differentiable: the gradient rule gives no operand gradient (the result is piecewise constant).

    Constraints:
    * (C1) both operands have the same element type; `and`, `or`, `xor` need i1;
    * (C2) the shapes broadcast (numpy rules);
    * (C3) the result is i1 with the broadcast shape (inferred).

    ```mlir
    %m = ptrain.compare lt %pos, %len : tensor<64xi64>, tensor<1xi64>
    // %m : tensor<64xi1>
    ```
  }];
  let arguments = (ins PTrain_CompareKindAttr:$kind, AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs RankedTensorOf<[I1]>:$result);
  let assemblyFormat = "`` $kind $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasVerifier = 1;
}

def PTrain_SelectOp : PTrain_ModelOp<"select"> {
  let summary = "Elementwise choice between two tensors by an i1 mask, with numpy broadcasting (ONNX Where).";
  let description = [{
    result = condition ? lhs : rhs, the three operands broadcast against each other (numpy rules). Attention
    masks: `select(mask, scores, -inf)`. Gradient: dy where the condition holds to `lhs`, elsewhere to `rhs`,
    each summed back to its operand's shape; none to the condition.

    Constraints:
    * (C1) the condition is i1; lhs and rhs have the same element type;
    * (C2) the three shapes broadcast;
    * (C3) the result has the broadcast shape and lhs's element type (inferred).

    ```mlir
    %s = ptrain.select %causal, %scores, %neg_inf : tensor<64x64xi1>, tensor<4x4x64x64xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I1]>:$condition, AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,` type($rhs)";
}

def PTrain_ReduceOp : PTrain_ModelOp<"reduce"> {
  let summary = "Sum, mean or maximum over a set of dimensions (ONNX ReduceSum, ReduceMean, ReduceMax).";
  let description = [{
    Reduces `input` over `axes` (negative counts from the end; empty: no dimension, the identity, as ONNX
    `noop_with_empty_axes`); `keepdims` keeps the reduced dimensions with size 1. Sums and means accumulate
    in double in the interpreter. Gradient: `sum` broadcasts dy back, `mean` also divides by the number of
    reduced elements; `max` splits dy evenly among the elements equal to the maximum (ties share it, as
    PyTorch's amax; unittests/Interpreter/ReductionGradientTest.cpp checks it against finite differences).

    Constraints:
    * (C1) every axis is in [-rank, rank) and none repeats;
    * (C2) `max` of a zero-size reduction is rejected (no identity);
    * (C3) the result has the input's shape without (or, with keepdims, with size 1 at) the axes (inferred).

    ```mlir
    %mean = ptrain.reduce mean %x {axes = array<i64: -1>, keepdims = true} : tensor<4x64x128xf32>
        -> tensor<4x64x1xf32>
    ```
  }];
  let arguments = (ins PTrain_ReduceKindAttr:$kind, AnyRankedTensor:$input, DenseI64ArrayAttr:$axes,
                       BoolAttr:$keepdims);
  let results = (outs AnyRankedTensor:$result);
  // Result types are printed: a custom parser cannot infer from properties before they are set.
  let assemblyFormat = "`` $kind $input attr-dict `:` type($input) `->` type($result)";
  let extraClassDeclaration = [{
    /// The axes normalized into [0, rank), in the given order.
    ::llvm::SmallVector<int64_t> getNormalizedAxes();
  }];
}

def PTrain_CastOp : PTrain_Op<"cast", [Pure, DeclareOpInterfaceMethods<PTrain_GradientOpInterface>]> {
  let summary = "Converts each element to another element type (ONNX Cast): f32, f64, f16, bf16, integers, i1.";
  let description = [{
    Float to float rounds to nearest even; float to integer truncates toward zero (NaN and out-of-range
    values are an interpreter error); integer to float rounds; anything to i1 is `!= 0`; i1 to a number is 0
    or 1. Gradient: float to float casts dy back to the input type; no gradient flows through an integer or
    i1 side.

    Constraints:
    * (C1) the result has the input's shape (the element type is the result's).

    ```mlir
    %h = ptrain.cast %x : tensor<4x64xf32> -> tensor<4x64xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def PTrain_BroadcastToOp : PTrain_Op<"broadcast_to", [Pure,
    DeclareOpInterfaceMethods<PTrain_GradientOpInterface>]> {
  let summary = "Broadcasts a tensor to a larger static shape (numpy rules; ONNX Expand).";
  let description = [{
    Gradient: `ptrain.sum_to` back to the input shape.

    Constraints:
    * (C1) the input's shape broadcasts to the result's (aligned from the last dimension, each input
      dimension equal or 1), with the same element type.

    ```mlir
    %p = ptrain.broadcast_to %pos : tensor<1x64xi64> -> tensor<4x64xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def PTrain_GatherOp : PTrain_ModelOp<"gather"> {
  let summary = "Gathers slices along `axis` by integer indices (ONNX Gather; embeddings use ptrain.embedding).";
  let description = [{
    result[i..., j..., k...] = data[i..., indices[j...], k...] with i over data.shape[:axis] and k over
    data.shape[axis+1:]; a negative index counts from the end of the axis; an index out of [-n, n) is an
    interpreter error naming it. No gradient rule yet (only the embedding form, `ptrain.embedding`, has one);
    building one is an error.

    Constraints:
    * (C1) -rank <= axis < rank of data; indices are integers;
    * (C2) the result is data.shape[:axis] + indices.shape + data.shape[axis+1:] (inferred).

    ```mlir
    %cls = ptrain.gather %h, %zero {axis = 1 : i64} : tensor<4x64x32xf32>, tensor<i64> -> tensor<4x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, RankedTensorOf<[AnySignlessInteger]>:$indices, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  // Result types are printed: a custom parser cannot infer from properties before they are set.
  let assemblyFormat = "$data `,` $indices attr-dict `:` type($data) `,` type($indices) `->` type($result)";
}

def PTrain_LogSoftmaxOp : PTrain_ModelOp<"log_softmax", [SameOperandsAndResultType]> {
  let summary = "Log of softmax along one dimension: x - max - log(sum(exp(x - max))).";
  let description = [{
    ONNX LogSoftmax-13 semantics (the importer rewrites the 2-D coercion of opsets < 13 into this form).
    Gradient: dx = dy - exp(y) * sum(dy, axis).

    Constraints:
    * (C1) -rank <= axis < rank.

    ```mlir
    %lp = ptrain.log_softmax %logits {axis = -1 : i64} : tensor<4x64x256xf32>
    ```
  }];
  let arguments = (ins PTrain_FloatTensor:$input, I64Attr:$axis);
  let results = (outs PTrain_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def PTrain_DropoutOp : PTrain_ModelOp<"dropout", [InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "Training-mode dropout with a counter-based random mask: y = keep ? x / (1 - ratio) : 0.";
  let description = [{
    Inverted dropout (Srivastava et al., JMLR 2014; ONNX Dropout-12 with `training_mode` true). The mask is a
    pure function of the site's `seed`, the step and the element's global row-major index g(i), so a
    step, its recomputation and its gradient see the same mask, and a run is reproducible:

        mix(z)  = SplitMix64's finalizer: z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27;
                  z *= 0x94D049BB133111EB; z ^= z >> 31            (Steele et al., OOPSLA 2014)
        key     = mix(seed ^ mix(step + G)),      G = 0x9E3779B97F4A7C15
        u_i     = (mix(key + (g(i) + 1) G) >> 11) * 2^-53    (uniform in [0, 1), 53 bits)
        keep_i  = u_i >= ratio

    (unsigned 64-bit arithmetic, wrapping). The importer gives every Dropout node its own `seed` (ONNX's
    `seed` attribute, else a hash of the node name) and passes the training step counter (the `step`
    state, kind `step_counter`, that the optimizer increments), so masks differ per site and per step.
    Without a layout, step = the counter and g(i) = i.

    The optional attribute `ptrain.dropout_layout` (a `#ptrain.dropout_layout`, PTrainPlanAttrs.td) places
    the local tensor (shape L) in the tensor of the whole step's batch, so that a partitioned plan draws the one-rank step's mask on every
    global element: local coordinates c become c_0 + R on dimension 0 (batch rows) and c_k + p L_k on the
    sharded dimension k, and g(i) is the row-major index in the global shape G (G_k = P L_k, G_0 unused):
    * `batch_rows` = b: the counter packs step + 2^32 r (step = its low 32 bits), r the global batch row
      of the tensor's first row within its replica; the tensor holds b rows, i.e. a global row is
      numel P / b elements, and R = r (+ the replica's rows). --ptrain-build-training-step sets it on the
      pipeline's stage functions (they run once per micro-batch; the schedule writes 2^32 i b to the
      `micro_batch_row` state before the call for micro-batch i), so micro-batches draw different masks;
    * `replica_axis`, `replica_rows`: R adds replica_rows x the rank's coordinate on that grid axis (the
      rows of the data-parallel replicas before this one);
    * `shard_axis`, `shard_dim` = k: the tensor is part p (the rank's coordinate on that grid axis, of
      P = its size) of dimension k; --ptrain-shard-tp sets it on a dropout inside a tensor-parallel
      region (attention probabilities [B, heads / tp, S, S]: k = 1).
    Megatron-LM's model-parallel RNG tracker (megatron/core/tensor_parallel/random.py) draws the same mask
    on every tp rank for replicated activations and a per-rank stream for sharded ones; keying by the
    global index gives the first and makes the second equal tp = 1's mask. The layout needs the rank's
    coordinates: the multi-rank executor and generated code have them, the one-rank interpreter only
    evaluates layouts without axes.
    Gradient: dx = dropout(dy) with the same counter, ratio, seed and layout, i.e. dy through the same
    mask and scale; none to the counter.

    Constraints:
    * (C1) 0 <= ratio < 1;
    * (C2) the counter is a rank-0 i64 tensor;
    * (C3) the result has the input's type (inferred);
    * (C4) the layout is a `#ptrain.dropout_layout` (which checks its entries: C1-C3 there);
    * (C5) shard_dim < rank;
    * (C6) batch_rows divides the number of elements (rank >= 1).

    ```mlir
    %t = ptrain.state_read @step : tensor<i64>
    %y = ptrain.dropout %x, %t {ratio = 1.000000e-01 : f64, seed = 7 : i64} : tensor<4x64x128xf32>, tensor<i64>
    // A pipeline stage, dp = 2, tp = 2: micro-batches of 4 rows, 2 per replica, 2 of 4 heads per rank.
    %r = ptrain.state_read @micro_batch_row : tensor<i64>
    %c = ptrain.binary add %t, %r : tensor<i64>, tensor<i64>
    %p = ptrain.dropout %probs, %c {ptrain.dropout_layout = #ptrain.dropout_layout<batch_rows = 4,
        replica_axis = "dp", replica_rows = 8, shard_axis = "tp", shard_dim = 1>, ratio = 1.000000e-01 : f64,
        seed = 9 : i64} : tensor<4x2x64x64xf32>, tensor<i64>
    ```
  }];
  let arguments = (ins PTrain_FloatTensor:$input, AnyRankedTensor:$counter, F64Attr:$ratio, I64Attr:$seed);
  let results = (outs PTrain_FloatTensor:$result);
  let assemblyFormat = "$input `,` $counter attr-dict `:` type($input) `,` type($counter)";
  let hasVerifier = 1;
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINMODELOPS_TD
