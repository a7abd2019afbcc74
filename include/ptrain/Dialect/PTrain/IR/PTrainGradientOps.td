//===- PTrainGradientOps.td - ops of the backward pass -----*- tablegen -*-===//
//
// Gradient ops that the model ops' gradient rules build (GradientOpInterface). Each is one kernel of the
// runtime (lib/Runtime: layer_norm_bwd, softmax_bwd, gelu_bwd, embedding_bwd, cross_entropy_bwd) or a shape
// adjoint (sum_to undoes broadcasting, pad undoes slicing). None has a gradient rule itself: ptrain
// differentiates once.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINGRADIENTOPS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINGRADIENTOPS_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

class PTrain_GradOp<string mnemonic, list<Trait> traits = []>
    : PTrain_Op<mnemonic, !listconcat(traits, [Pure])>;

def PTrain_GradFloatTensor : RankedTensorOf<[AnyFloat]>;

def PTrain_SumToOp : PTrain_GradOp<"sum_to"> {
  let summary = "Sums a tensor down to a shape it was broadcast from (the adjoint of broadcasting).";
  let description = [{
    The result shape broadcasts to the input shape (numpy rules); every input dimension that broadcasting
    added or stretched from 1 is summed away.

    Constraints:
    * (C1) the result shape broadcasts to the input shape, with the same element type.

    ```mlir
    %db = ptrain.sum_to %dy : tensor<4x64x128xf32> -> tensor<128xf32>
    ```
  }];
  let arguments = (ins PTrain_GradFloatTensor:$input);
  let results = (outs PTrain_GradFloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def PTrain_PadOp : PTrain_GradOp<"pad"> {
  let summary = "Pads a tensor with zeros: `low` before and `high` after each dimension.";
  let description = [{
    The adjoint of `ptrain.slice`.

    Constraints:
    * (C1) `low` and `high` have one non-negative entry per dimension;
    * (C2) the result shape is low + input + high per dimension.

    ```mlir
    %dl = ptrain.pad %d {low = array<i64: 0, 0, 0>, high = array<i64: 0, 1, 0>}
        : tensor<4x63x256xf32> -> tensor<4x64x256xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$low, DenseI64ArrayAttr:$high);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def PTrain_LayerNormGradOp : PTrain_GradOp<"layer_norm_grad", [DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "Gradients of layer normalization with respect to input, scale and bias.";
  let description = [{
    Recomputes mean and 1/std of `input` over [axis, rank) and returns dx, dscale = sum(dy * xhat) and,
    when the forward had a bias, dbias = sum(dy) (sums over the leading dimensions).

    Constraints:
    * (C1) `grad` has the input's type; `scale` has the shape input.shape[axis:];
    * (C2) dx has the input's type; dscale (and dbias) have the scale's type.

    ```mlir
    %dx, %dg, %db = ptrain.layer_norm_grad %dy, %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64}
        : tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<128xf32> -> tensor<4x64x128xf32>, tensor<128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins PTrain_GradFloatTensor:$grad, PTrain_GradFloatTensor:$input,
                       PTrain_GradFloatTensor:$scale, I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs PTrain_GradFloatTensor:$input_grad, PTrain_GradFloatTensor:$scale_grad,
                      Optional<PTrain_GradFloatTensor>:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $scale attr-dict `:` type($grad) `,` type($input) `,` type($scale) `->`
    type($input_grad) `,` type($scale_grad) (`,` type($bias_grad)^)?
  }];
  let hasVerifier = 1;
}

def PTrain_SoftmaxGradOp : PTrain_GradOp<"softmax_grad", [SameOperandsAndResultType, DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "Softmax backward from its output: dx = y * (dy - sum(dy * y, axis)).";
  let description = [{
    ```mlir
    %dx = ptrain.softmax_grad %dy, %y {axis = -1 : i64} : tensor<4x4x64x64xf32>
    ```
  }];
  let arguments = (ins PTrain_GradFloatTensor:$grad, PTrain_GradFloatTensor:$output, I64Attr:$axis);
  let results = (outs PTrain_GradFloatTensor:$result);
  let assemblyFormat = "$grad `,` $output attr-dict `:` type($grad)";
}

def PTrain_GeluGradOp : PTrain_GradOp<"gelu_grad", [SameOperandsAndResultType, DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "GELU backward: dx = dy * gelu'(x), exact or tanh form.";
  let description = [{
    ```mlir
    %dx = ptrain.gelu_grad %dy, %x : tensor<4x64x512xf32>
    ```
  }];
  let arguments = (ins PTrain_GradFloatTensor:$grad, PTrain_GradFloatTensor:$input,
                       DefaultValuedAttr<PTrain_GeluApproximationAttr, "GeluApproximation::None">:$approximate);
  let results = (outs PTrain_GradFloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($grad)";
}

def PTrain_EmbeddingGradOp : PTrain_GradOp<"embedding_grad", [DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "Embedding backward: scatter-adds rows of the output gradient into a zero table.";
  let description = [{
    Constraints:
    * (C1) the result is a V x H table, `grad` is ids.shape x H, ids are integers.

    ```mlir
    %dwte = ptrain.embedding_grad %dy, %ids : tensor<4x64x128xf32>, tensor<4x64xi64> -> tensor<256x128xf32>
    ```
  }];
  let arguments = (ins PTrain_GradFloatTensor:$grad, RankedTensorOf<[AnySignlessInteger]>:$ids);
  let results = (outs PTrain_GradFloatTensor:$result);
  let assemblyFormat = "$grad `,` $ids attr-dict `:` type($grad) `,` type($ids) `->` type($result)";
  let hasVerifier = 1;
}

def PTrain_CrossEntropyGradOp : PTrain_GradOp<"cross_entropy_grad", [AllTypesMatch<["logits", "result"]>, DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "Cross-entropy backward: dlogits = dloss * w * (softmax(logits) - onehot(labels)) / norm.";
  let description = [{
    The gradient of `ptrain.cross_entropy` with the same `weight`, `ignore_index` and `reduction`: per
    position, w[p] (the label's class weight, 1 without `weight`, 0 at `ignore_index`) times
    (softmax(logits[p]) - onehot(label[p])), times dloss / sum(w) for "mean" (dloss / positions without weight
    and ignore_index) or dloss for "sum". Ignored positions get exact zeros.

    Constraints:
    * (C1) `grad` is a scalar; logits and labels as for `ptrain.cross_entropy`; the result has the logits' type;
    * (C2) `weight`, `ignore_index` and `reduction` as for `ptrain.cross_entropy` (C4-C6).

    ```mlir
    %dl = ptrain.cross_entropy_grad %dloss, %logits, %labels
        : tensor<f32>, tensor<4x63x256xf32>, tensor<4x63xi64>
    %dp = ptrain.cross_entropy_grad %dloss, %logits, %labels weight %w {ignore_index = -100 : i64}
        : tensor<f32>, tensor<4x63x256xf32>, tensor<4x63xi64>, tensor<256xf32>
    ```
  }];
  let arguments = (ins PTrain_GradFloatTensor:$grad, PTrain_GradFloatTensor:$logits,
                       RankedTensorOf<[AnySignlessInteger]>:$labels, Optional<PTrain_GradFloatTensor>:$weight,
                       OptionalAttr<I64Attr>:$ignore_index, OptionalAttr<StrAttr>:$reduction);
  let results = (outs PTrain_GradFloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $labels (`weight` $weight^)? attr-dict `:` type($grad) `,` type($logits) `,`
    type($labels) (`,` type($weight)^)?
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$grad, "::mlir::Value":$logits, "::mlir::Value":$labels), [{
      build($_builder, $_state, logits.getType(), grad, logits, labels, ::mlir::Value(), ::mlir::IntegerAttr(),
            ::mlir::StringAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// True for reduction "sum"; false for "mean" or no reduction attribute.
    bool isSumReduction() { return getReduction() && *getReduction() == "sum"; }
    /// True with a weight operand or an ignore_index.
    bool isWeighted() { return getWeight() || getIgnoreIndex(); }
  }];
  let hasVerifier = 1;
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINGRADIENTOPS_TD
