//===- PTrainAttrs.td - ptrain attributes: codecs, matrix views, plan -*- tablegen -*-===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINATTRS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINATTRS_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"
include "ptrain/Dialect/PTrain/IR/PTrainInterfaces.td"

class PTrain_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<PTrain_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def PTrain_MatrixViewAttr : PTrain_Attr<"MatrixView", "matrix_view"> {
  let summary = "Which tensor dimensions form the rows (n) and the columns (m) of a matrix.";
  let description = [{
    Low-rank and per-channel codecs see a tensor as an n x m matrix: n is the product of the `rows`
    dimensions, m the product of the `cols` dimensions. Without a view a codec uses the default: every
    dimension but the last forms the rows, the last forms the columns (for an activation of shape
    micro-batch x sequence x hidden, n = micro-batch * sequence and m = hidden, as in Optimus-CC).

    Constraints:
    * (C1) `rows` and `cols` are not empty;
    * (C2) no dimension is listed twice;
    * (C3) with a tensor: `rows` and `cols` together list every dimension of the tensor, each in range
      (checked by the codec that uses the view).

    ```mlir
    #ptrain.matrix_view<rows = [0, 1], cols = [2]>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$rows, ArrayRefParameter<"int64_t">:$cols);
  let assemblyFormat = "`<` `rows` `=` `[` $rows `]` `,` `cols` `=` `[` $cols `]` `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// (n, m) of `type` seen through `view`, or through the default view when `view` is null. Fails, through
    /// `emitError`, when the view does not cover the tensor's dimensions exactly (C3).
    static ::mlir::FailureOr<std::pair<int64_t, int64_t>>
    getMatrixShape(MatrixViewAttr view, ::mlir::RankedTensorType type,
                   ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError);
  }];
}

def PTrain_TPSliceAttr : PTrain_Attr<"TPSlice", "tp_slice"> {
  let summary = "How --ptrain-shard-tp sliced a parameter over a grid axis (Megatron-LM).";
  let description = [{
    The value of the discardable attribute `ptrain.tp_slice` on a `ptrain.state` that `--ptrain-shard-tp`
    (or `vocab-parallel=true`) sliced: dimension `dim` of the model's tensor of shape `shape` (the ONNX
    initializer's) is viewed as `groups` x parts x chunk, and the rank with coordinate c on grid axis `axis`
    (parts ranks) holds [:, c, :]; the state's type is that local part. `padded`, when given, is the size
    `shape[dim]` is padded to with zero rows, a multiple of the parts (a vocabulary padded for
    vocabulary parallelism; then `groups` is 1). Readers: the code generators, the multi-rank executor and
    plan.json (docs/Plan.md, "Tensor parallelism"), through `getTPSlice` (PTrainPlanAttrs.h).

    Constraints of the attribute:
    * (C1) `axis` is not empty;
    * (C2) `shape` is not empty and every size is >= 1;
    * (C3) `dim` is a dimension of `shape`;
    * (C4) `groups` >= 1 and divides `shape[dim]`;
    * (C5) `padded`, when given, is >= `shape[dim]` and `groups` is 1.

    Constraints where it sits (the dialect's `verifyOperationAttribute`):
    * (C6) `ptrain.tp_slice` is a `#ptrain.tp_slice`;
    * (C7) on a `ptrain.state`;
    * (C8) whose type has the rank of `shape` and equals it in every dimension but `dim`;
    * (C9) whose size in `dim` is a multiple of `groups` and divides `padded` (or `shape[dim]`).

    ```mlir
    ptrain.state @qkv key "h.0.attn.c_attn.weight" kind parameter
        {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 3, shape = [128, 384]>}
        : tensor<128x192xf32>
    ptrain.state @wte key "transformer.wte.weight" kind parameter
        {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [257, 128], padded = 258>}
        : tensor<129x128xf32>
    ```
  }];
  let parameters = (ins StringRefParameter<"the grid axis">:$axis, "int64_t":$dim, "int64_t":$groups,
                        ArrayRefParameter<"int64_t">:$shape, DefaultValuedParameter<"int64_t", "0">:$padded);
  let assemblyFormat = [{
    `<` `axis` `=` $axis `,` `dim` `=` $dim `,` `groups` `=` $groups `,` `shape` `=` `[` $shape `]`
    (`,` `padded` `=` $padded^)? `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// shape[dim] padded to a multiple of the parts: `padded` when given, else shape[dim].
    int64_t getPaddedSize() const { return getPadded() ? getPadded() : getShape()[getDim()]; }
  }];
}

/// A codec attribute; `overrides` lists the interface methods with defaults (no state, no parameters) that
/// the codec implements itself.
class PTrain_CodecAttr<string name, string attrMnemonic, list<string> overrides = []>
    : PTrain_Attr<name, attrMnemonic, [DeclareAttrInterfaceMethods<PTrain_CodecAttrInterface, overrides>]> {
  let genVerifyDecl = 1;
}

def PTrain_PowerSGDAttr : PTrain_CodecAttr<"PowerSGD", "powersgd", ["getEncoderStateTypes"]> {
  let summary = "PowerSGD low-rank compression: one power-iteration step, codes P (n x r) and Q (m x r).";
  let description = [{
    Vogels et al., "PowerSGD", NeurIPS 2019, Algorithm 1; as used by Optimus-CC (ASPLOS 2023, section 4.1)
    on pipeline backward sends and data-parallel gradients. On the n x m matrix view M of the tensor:
    P = M Q (Q warm-started from the previous call when `warm_start`, else random), orthogonalize P,
    Q = M^T P; the receiver rebuilds M' = P Q^T. The factors are summable: data-parallel PowerSGD all-reduces
    P and then Q.

    Codes: P `tensor<n x r x T>`, Q `tensor<m x r x T>`. Encoder state when `warm_start`: the previous Q,
    `tensor<m x r x T>`. For a bf16 or f16 input T is f32: the factors and the warm start are computed in fp32
    from the input widened exactly (issue 24 item 2; docs/Compression.md, "Codecs on 16-bit traffic").

    Constraints:
    * (C1) `rank` >= 1;
    * (C2) with a tensor: `rank` <= min(n, m) of the matrix view (the compression pass clamps, DESIGN 4);
    * (C3) with a tensor: the element type is a float type (f32, or bf16 / f16 with f32 codes and state).

    ```mlir
    #ptrain.powersgd<rank = 16>
    #ptrain.powersgd<rank = 4, warm_start = false, view = #ptrain.matrix_view<rows = [0], cols = [1, 2]>>
    ```
  }];
  let parameters = (ins "int64_t":$rank,
                        OptionalParameter<"::mlir::BoolAttr">:$warm_start,
                        OptionalParameter<"::mlir::ptrain::MatrixViewAttr">:$view);
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    /// Warm start is on unless `warm_start = false` is given.
    bool isWarmStart() const { return !getWarmStart() || getWarmStart().getValue(); }
  }];
}

def PTrain_TopKAttr : PTrain_CodecAttr<"TopK", "topk"> {
  let summary = "Top-k sparsification: the k largest-magnitude values and their int32 indices.";
  let description = [{
    Global top-k by magnitude over the whole tensor (Bian et al., MLSys 2024, "The compressors"); the
    receiver scatters the values into a zero tensor. Give either `k` or `ratio` (k = ceil(ratio * numel)).
    Not summable: on a collective, codes are gathered, decoded and summed.

    Codes: values `tensor<k x T>`, indices `tensor<k x i32>`. The values keep the input's element type: a bf16
    or f16 input sends 2-byte values (6 bytes per kept element instead of 8); with error feedback the selection
    runs on g + e in fp32 and the residual keeps what rounding the kept values to 16 bits lost.

    Constraints:
    * (C1) exactly one of `k` >= 1 and `ratio` in (0, 1] is given;
    * (C2) with a tensor: k <= number of elements, and the element count fits an int32 index.

    ```mlir
    #ptrain.topk<k = 1024>
    #ptrain.topk<ratio = 0.01>
    ```
  }];
  let parameters = (ins DefaultValuedParameter<"int64_t", "0">:$k,
                        OptionalParameter<"::mlir::FloatAttr">:$ratio);
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    /// Number of kept values for `numElements` elements.
    int64_t getKFor(int64_t numElements) const;
    /// The ratio as a number, 0 when `k` is given instead.
    double getRatioValue() const { return getRatio() ? getRatio().getValueAsDouble() : 0.0; }
  }];
}

def PTrain_RandKAttr : PTrain_CodecAttr<"RandK", "randk",
    ["getEncoderStateTypes", "getDecoderStateTypes"]> {
  let summary = "Random-k sparsification with a seed shared by sender and receiver: only values are sent.";
  let description = [{
    k positions drawn from a generator seeded by `seed` and the call count (Bian et al., MLSys 2024; with a
    shared seed no indices are sent). Because every rank keeps the same positions, the code is summable and
    rides an all-reduce of k values. Give either `k` or `ratio`.

    Codes: values `tensor<k x T>` (2-byte values for a bf16 or f16 input, as top-k's). State on both sides: the
    call counter `tensor<i64>`.

    Constraints:
    * (C1) exactly one of `k` >= 1 and `ratio` in (0, 1] is given;
    * (C2) with a tensor: k <= number of elements.

    ```mlir
    #ptrain.randk<k = 1024, seed = 7>
    ```
  }];
  let parameters = (ins DefaultValuedParameter<"int64_t", "0">:$k,
                        OptionalParameter<"::mlir::FloatAttr">:$ratio,
                        "int64_t":$seed);
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    /// Number of kept values for `numElements` elements.
    int64_t getKFor(int64_t numElements) const;
    /// The ratio as a number, 0 when `k` is given instead.
    double getRatioValue() const { return getRatio() ? getRatio().getValueAsDouble() : 0.0; }
  }];
}

def PTrain_QuantAttr : PTrain_CodecAttr<"Quant", "quant"> {
  let summary = "Uniform quantization to 2, 4 or 8 bits with one scale per tensor, channel or block.";
  let description = [{
    Round-to-nearest uniform quantization, packed 8 / `bits` values per byte (Bian et al., MLSys 2024, "The
    compressors": symmetric, one scale per hidden channel). Granularity: `tensor` (one scale), `channel`
    (one scale per column m of the matrix view) or `block` (one scale per `block_size` consecutive elements,
    the last block may be short). `symmetric = false` adds one zero point per scale. Not summable.

    Codes: packed `tensor<ceil(numel * bits / 8) x i8>`, scales `tensor<S x f32>`, and when asymmetric zero
    points `tensor<S x f32>`.

    Constraints:
    * (C1) `bits` is 2, 4 or 8;
    * (C2) `block_size` >= 1 is given exactly when the granularity is `block`;
    * (C3) with a tensor: the element type is a float type and the view (for `channel`) covers it. A bf16 or
      f16 input is widened exactly first: the same codes and f32 scales as its f32 widening.

    ```mlir
    #ptrain.quant<bits = 4>
    #ptrain.quant<bits = 8, granularity = block, block_size = 64, symmetric = false>
    ```
  }];
  let parameters = (ins "int64_t":$bits,
      DefaultValuedParameter<"::mlir::ptrain::QuantGranularity",
                             "::mlir::ptrain::QuantGranularity::Channel">:$granularity,
      DefaultValuedParameter<"int64_t", "0">:$block_size,
      OptionalParameter<"::mlir::BoolAttr">:$symmetric,
      OptionalParameter<"::mlir::ptrain::MatrixViewAttr">:$view);
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    /// Symmetric unless `symmetric = false` is given.
    bool isSymmetric() const { return !getSymmetric() || getSymmetric().getValue(); }
    /// Number of scales for a tensor of type `type` (requires verifyForType).
    int64_t getNumScales(::mlir::RankedTensorType type) const;
  }];
}

def PTrain_TahQuantAttr : PTrain_CodecAttr<"TahQuant", "tahquant"> {
  let summary = "TAH-Quant: tile-wise asymmetric quantization at two bit widths, entropy-guided, with a "
                "pivot-swapped Hadamard rotation of outlier tiles.";
  let description = [{
    He et al., "TAH-Quant: Effective Activation Quantization in Pipeline Parallelism over Slow Network",
    arXiv 2506.01352 (section 3: tile-wise quantization, section 3.2 entropy-guided adaptive bit allocation,
    section 3.3 the Hadamard transform with pivot swapping), for pipeline activations and their gradients
    without an activation cache. The tensor is cut into tiles of `tile_size` consecutive elements along its
    last dimension (a token's channel window). Per tile t, with |x| normalized to p = |x| / sum |x|:
    1. entropy H_t = -sum p ln p (0 for an all-zero tile);
    2. the `round(high_ratio * T)` tiles of largest entropy (of T; ties to the smaller tile index) get
       `high_bits`, the others `low_bits` (the paper's allocator: low-entropy tiles, whose mass sits on a few
       channels, take the fewer bits; the released code's defaults 4 / 3 bits and ratio 0.8);
    3. a tile whose largest magnitude is at least twice its second largest (an outlier tile) is rotated:
       the largest-magnitude element (first such index, the pivot) is swapped to position 0 and the tile is
       multiplied by the orthonormal Walsh-Hadamard matrix H_G / sqrt(G), spreading the outlier over the tile;
    4. asymmetric round-to-nearest-even quantization of the (rotated) tile: zero point z = min, scale
       s = (max - min) / (2^b - 1), u = rn(clamp((y - z) / s, 0, 2^b - 1)).
    Decode reverses 4, 3 (the transform is its own inverse) and the swap. Round to nearest, not stochastic:
    the released code rounds to nearest, and a deterministic code keeps the executor and the generated code
    bit-equal. Scales and zero points are f32 (the paper's fp16 underflows at activation-gradient scales).
    Not summable.

    Codes: packed `tensor<P x i8>` (tile t's codes, b_t bits each, LSB first, at the byte offset of the tiles
    before it; P = G (H high_bits + (T - H) low_bits) / 8 with H the high tiles), scales `tensor<T x f32>`,
    zero points `tensor<T x f32>`, tile flags `tensor<T x i8>` (bits 0-5 the pivot index, bit 6 rotated,
    bit 7 high precision).

    Constraints:
    * (C1) `tile_size` is 8, 16, 32 or 64;
    * (C2) 1 <= `low_bits` <= `high_bits` <= 8;
    * (C3) `high_ratio` is in [0, 1];
    * (C4) with a tensor: the element type is a float type and the last dimension is a multiple of
      `tile_size`. A bf16 or f16 input is widened exactly first: the same codes and f32 scales, zero points and
      entropies as its f32 widening.

    ```mlir
    #ptrain.tahquant<tile_size = 64>
    #ptrain.tahquant<tile_size = 32, low_bits = 2, high_bits = 4, high_ratio = 0.5>
    ```
  }];
  let parameters = (ins DefaultValuedParameter<"int64_t", "64">:$tile_size,
                        DefaultValuedParameter<"int64_t", "3">:$low_bits,
                        DefaultValuedParameter<"int64_t", "4">:$high_bits,
                        OptionalParameter<"::mlir::FloatAttr">:$high_ratio);
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    /// The high-precision share of the tiles: `high_ratio`, 0.8 when not given.
    double getHighRatioValue() const { return getHighRatio() ? getHighRatio().getValueAsDouble() : 0.8; }
    /// Number of tiles of a tensor of type `type` (requires verifyForType).
    int64_t getNumTiles(::mlir::RankedTensorType type) const;
    /// Number of high-precision tiles among `numTiles`: round(high_ratio * numTiles), halves away from zero.
    int64_t getHighTilesFor(int64_t numTiles) const;
    /// Bytes of the packed codes for a tensor of type `type`.
    int64_t getPackedBytes(::mlir::RankedTensorType type) const;
  }];
}

def PTrain_CastAttr : PTrain_CodecAttr<"Cast", "cast"> {
  let summary = "Cast to a 16-bit float type; sums accumulate in fp32.";
  let description = [{
    Codes: the tensor cast to `f16` or `bf16`, same shape. Summable: reductions of cast codes accumulate in
    fp32 (DESIGN decision 9).

    Constraints:
    * (C1) the target type is `f16` or `bf16`;
    * (C2) with a tensor: the element type is a float type;
    * (C3) with a tensor: the element type is not bf16 or f16 (the codes would be the input's size: a 16-bit
      plan's link or TP site with a cast codec travels uncompressed in 16 bits instead).

    ```mlir
    #ptrain.cast<bf16>
    ```
  }];
  let parameters = (ins "::mlir::Type":$type);
  let assemblyFormat = "`<` $type `>`";
}

def PTrain_LinearAEAttr : PTrain_CodecAttr<"LinearAE", "linear_ae",
    ["getEncoderParamTypes", "getDecoderParamTypes"]> {
  let summary = "Linear autoencoder: a trainable encoder W_e (m x dim) and decoder W_d (dim x m).";
  let description = [{
    Bian et al., MLSys 2024, "The compressors": code = X W_e on the n x m matrix view, X' = code W_d, no bias,
    trained by the task loss (the weights are model parameters passed as `params`). Linear, hence summable:
    sum(X_i W_e) = (sum X_i) W_e.

    Codes: `tensor<n x dim x T>`. Encoder params: W_e `tensor<m x dim x T>`; decoder params: W_d
    `tensor<dim x m x T>`.

    Constraints:
    * (C1) `dim` >= 1;
    * (C2) with a tensor: `dim` <= m of the matrix view, and the element type is a float type;
    * (C3) with a tensor: the element type is not bf16 or f16 (W_e and W_d are fp32 model parameters).

    ```mlir
    #ptrain.linear_ae<dim = 50>
    ```
  }];
  let parameters = (ins "int64_t":$dim, OptionalParameter<"::mlir::ptrain::MatrixViewAttr">:$view);
  let assemblyFormat = "`<` struct(params) `>`";
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINATTRS_TD
