//===- PTrainTransformerOps.td - LLaMA-style model ops ------*- tablegen -*-===//
//
// Model ops of LLaMA-style transformers that ONNX opset 23 names as single operators: RMS normalization
// (RMSNormalization-23) and rotary position embeddings (RotaryEmbedding-23). Like the other model ops they
// are pure, infer their result type and have a gradient rule (PTrainTransformerOps.cpp), an interpreter
// kernel (lib/Interpreter/Transformer.cpp) and a cost.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINTRANSFORMEROPS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINTRANSFORMEROPS_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

/// A model op of this family (as PTrain_ModelOp in PTrainModelOps.td, which is generated on its own): pure,
/// with a gradient rule, a cost and its result type inferred.
class PTrain_TransformerOp<string mnemonic>
    : PTrain_Op<mnemonic, [InferTypeOpAdaptor, Pure, DeclareOpInterfaceMethods<PTrain_GradientOpInterface>,
                           DeclareOpInterfaceMethods<PTrain_CostOpInterface>]>;

def PTrain_RmsNormOp : PTrain_TransformerOp<"rms_norm"> {
  let summary = "Root-mean-square normalization over the trailing dimensions from `axis`, with a scale.";
  let description = [{
    y = x / sqrt(mean(x^2) + epsilon) * scale, the mean over dimensions [axis, rank) (Zhang & Sennrich,
    NeurIPS 2019, eq. 4; ONNX RMSNormalization-23 with stash_type float; LLaMA's RMSNorm). No centering and
    no bias, unlike `ptrain.layer_norm`. The interpreter accumulates in double.

    Gradient (r = 1 / sqrt(mean(x^2) + epsilon), n = x r, g = dy * scale): dx = r (g - n mean(g n)),
    dscale = sum(dy n) over the leading dimensions; built from `binary`, `unary` and `reduce`.

    Constraints:
    * (C1) -rank <= axis < rank;
    * (C2) scale has the shape x.shape[axis:] and x's element type;
    * (C3) epsilon >= 0;
    * (C4) the result has x's type (inferred).

    ```mlir
    %y = ptrain.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f64} : tensor<2x16x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, RankedTensorOf<[AnyFloat]>:$scale, I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs RankedTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = "$input `,` $scale attr-dict `:` type($input) `,` type($scale)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// `axis` as a non-negative dimension (valid after verification).
    int64_t getNormalizedAxis() {
      int64_t axis = getAxisAttr().getInt();
      return axis < 0 ? axis + getInput().getType().getRank() : axis;
    }
  }];
}

def PTrain_RotaryEmbeddingOp : PTrain_TransformerOp<"rotary_embedding"> {
  let summary = "Rotary position embedding (RoPE) of [batch, heads, seq, head_size] by per-position cos/sin.";
  let description = [{
    Rotates pairs of the first R = `rotary_dim` (0: all head_size) channels of every head by the angle of the
    token's position (Su et al., RoFormer, 2021, eq. 34; ONNX RotaryEmbedding-23): with c = cos[b, s, i] and
    s_ = sin[b, s, i] for i < R/2, the pair (x1, x2) = (x[i], x[i + R/2]) (or (x[2i], x[2i + 1]) when
    `interleaved`) becomes (x1 c - x2 s_, x2 c + x1 s_); channels from R on pass through. cos and sin are the
    caches already gathered per position (the importer gathers them by position_ids with `ptrain.embedding`).

    Gradient: the rotation is orthogonal, so dx = rotary_embedding(dy, cos, -sin); cos and sin get no
    gradient (they are position tables, constants in every exporter's graph).

    Constraints:
    * (C1) x is [B, N, S, D]; cos and sin are both [B, S, R/2], of x's element type;
    * (C2) R = rotary_dim (D when 0) is even and 0 < R <= D;
    * (C3) the result has x's type (inferred).

    ```mlir
    %qr = ptrain.rotary_embedding %q, %cos, %sin {interleaved = false, rotary_dim = 0 : i64}
        : tensor<2x4x16x16xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, RankedTensorOf<[AnyFloat]>:$cos, RankedTensorOf<[AnyFloat]>:$sin,
                       DefaultValuedAttr<BoolAttr, "false">:$interleaved,
                       DefaultValuedAttr<I64Attr, "0">:$rotary_dim);
  let results = (outs RankedTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = "$input `,` $cos `,` $sin attr-dict `:` type($input) `,` type($cos) `,` type($sin)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// R: the number of rotated channels per head (rotary_dim, or head_size when 0).
    int64_t getRotatedChannels() {
      int64_t r = getRotaryDim();
      return r == 0 ? getInput().getType().getShape().back() : r;
    }
  }];
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINTRANSFORMEROPS_TD
