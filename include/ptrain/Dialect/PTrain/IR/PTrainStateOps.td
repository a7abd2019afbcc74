//===- PTrainStateOps.td - module-level keyed state --------*- tablegen -*-===//
//
// Parameters, optimizer moments and codec state live in module-level symbols with stable keys, read and
// written as SSA values inside a training step (DESIGN decision 5). Checkpoints follow the keys.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINSTATEOPS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINSTATEOPS_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"

def PTrain_StateOp : PTrain_Op<"state", [Symbol]> {
  let summary = "A module-level state tensor with a stable key.";
  let description = [{
    Declares a tensor that lives across training steps: a parameter, an optimizer moment, or a codec's state
    (error-feedback residual, warm-start factor, seed, step counter). The `key` names it in checkpoints and
    stays stable across recompilation and resharding: a parameter's key is its name in the model
    (`transformer.h.0.attn.c_attn.weight`), a codec state's key names its site (`cb/link1->0/residual`).
    Initial values are never in the IR (DESIGN decision 10); the runtime loads them by key.

    A parameter that no model file holds (the linear autoencoder's weights, `--ptrain-insert-linear-ae`)
    may name a deterministic default in the attribute `ptrain.init = {kind = K, seed = S}`,
    used only when the state source (the ONNX model, a map of values) does not hold the key; without it a
    missing key stays an error. The runtime (`ptrain_state_init_onnx`), the reference interpreter and the
    multi-rank executor call one generator (include/ptrain/Runtime/StateInit.h), so every rank holding the
    state, and every data-parallel replica, starts from the same bits. `orthogonal` (Saxe, McClelland,
    Ganguli, "Exact solutions to the nonlinear dynamics of learning in deep linear neural networks", ICLR
    2014; `torch.nn.init.orthogonal_` with gain 1): for a rows x cols matrix with n = max(rows, cols) and
    k = min(rows, cols), a Gaussian n x k matrix drawn from `S` is orthonormalized column by column
    (Gram-Schmidt twice, in double; the signs of a QR with a positive diagonal of R) into Q; the value is Q
    when rows >= cols and Q^T otherwise; `orthogonal_transposed` is the transpose of the `orthogonal` value
    of the transposed shape. The autoencoder's encoder W_e (H x D, orthogonal) and decoder W_d (D x H,
    orthogonal_transposed) of a boundary share a seed, so W_d = W_e^T (also when D = H) with orthonormal
    columns and decode(encode(x)) = x W_e W_e^T starts as an orthogonal
    projection onto a D-dimensional subspace (the identity when D = H), the form a trained linear
    autoencoder takes (Baldi and Hornik, "Neural networks and principal component analysis", 1989).

    Constraints:
    * (C1) the type has a static shape;
    * (C2) the key is not empty;
    * (C3) no two state symbols in a symbol table have the same key;
    * (C4) a `ptrain.init` is given only for a `parameter`;
    * (C5) a `ptrain.init` is a dictionary of exactly `kind`, a known generator (`"orthogonal"`,
      `"orthogonal_transposed"`), and `seed`, an integer >= 0;
    * (C6) an `orthogonal` init needs a rank-2 f32 tensor.

    ```mlir
    ptrain.state @wte key "transformer.wte.weight" kind parameter : tensor<256x128xf32>
    ptrain.state @wte_m key "transformer.wte.weight/adam_m" kind optimizer_moment : tensor<256x128xf32>
    ptrain.state @ae_decoder_0 key "ae/0->1/decoder" kind parameter
        {ptrain.init = {kind = "orthogonal_transposed", seed = 0 : i64}} : tensor<64x128xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$key, PTrain_StateKindAttr:$kind,
                       TypeAttrOf<AnyRankedTensor>:$type);
  let assemblyFormat = "$sym_name `key` $key `kind` `` $kind attr-dict `:` $type";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() { return ::llvm::cast<::mlir::RankedTensorType>(getType()); }
  }];
}

def PTrain_StateReadOp : PTrain_Op<"state_read", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>, MemoryEffects<[MemRead<PTrain_StateResource>]>]> {
  let summary = "Reads the current value of a state symbol.";
  let description = [{
    Constraints:
    * (C1) `state` names a `ptrain.state`;
    * (C2) the result type is the state's type.

    ```mlir
    %w = ptrain.state_read @wte : tensor<256x128xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$state);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$state attr-dict `:` type($result)";
}

def PTrain_StateWriteOp : PTrain_Op<"state_write", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>, MemoryEffects<[MemWrite<PTrain_StateResource>]>]> {
  let summary = "Replaces the value of a state symbol; later reads see it.";
  let description = [{
    Constraints:
    * (C1) `state` names a `ptrain.state`;
    * (C2) the value's type is the state's type.

    ```mlir
    ptrain.state_write %w_next to @wte : tensor<256x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value, FlatSymbolRefAttr:$state);
  let assemblyFormat = "$value `to` $state attr-dict `:` type($value)";
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINSTATEOPS_TD
