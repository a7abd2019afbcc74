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

    Constraints:
    * (C1) the type has a static shape;
    * (C2) the key is not empty;
    * (C3) no two state symbols in a symbol table have the same key.

    ```mlir
    ptrain.state @wte key "transformer.wte.weight" kind parameter : tensor<256x128xf32>
    ptrain.state @wte_m key "transformer.wte.weight/adam_m" kind optimizer_moment : tensor<256x128xf32>
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
