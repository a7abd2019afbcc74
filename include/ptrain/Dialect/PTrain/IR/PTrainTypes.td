//===- PTrainTypes.td - ptrain types -----------------------*- tablegen -*-===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINTYPES_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINTYPES_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"

def PTrain_RequestType : TypeDef<PTrain_Dialect, "Request"> {
  let mnemonic = "request";
  let summary = "Handle of an asynchronous communication in flight.";
  let description = [{
    A `*_start` op returns a request; exactly one `ptrain.wait` completes it (DESIGN decision 3). The optional
    parameter is the tensor the wait yields: the received or reduced value. A request without a value is
    returned by `send_start`.

    ```mlir
    %r = ptrain.all_reduce_start %g on @grid axes [dp] reduction = sum : tensor<128x128xf32>
    // %r : !ptrain.request<tensor<128x128xf32>>
    %s = ptrain.send_start %a to @grid axis pp offset 1 : tensor<4x64x128xf32>
    // %s : !ptrain.request
    ```
  }];
  let parameters = (ins OptionalParameter<"::mlir::Type">:$valueType);
  let assemblyFormat = "(`<` $valueType^ `>`)?";
  let builders = [
    TypeBuilder<(ins), [{ return $_get($_ctxt, ::mlir::Type()); }]>
  ];
  let extraClassDeclaration = [{
    /// True when the wait on this request yields a value.
    bool hasValue() const { return static_cast<bool>(getValueType()); }
  }];
}

/// A request that carries no value (returned by `send_start`).
def PTrain_EmptyRequestType : Type<
    And<[CPred<"::llvm::isa<::mlir::ptrain::RequestType>($_self)">,
         CPred<"!::llvm::cast<::mlir::ptrain::RequestType>($_self).hasValue()">]>,
    "request without a value", "::mlir::ptrain::RequestType">,
  BuildableType<"::mlir::ptrain::RequestType::get($_builder.getContext())">;

/// A request whose wait yields a ranked tensor.
def PTrain_ValueRequestType : Type<
    And<[CPred<"::llvm::isa<::mlir::ptrain::RequestType>($_self)">,
         CPred<"::llvm::isa_and_nonnull<::mlir::RankedTensorType>("
               "::llvm::cast<::mlir::ptrain::RequestType>($_self).getValueType())">]>,
    "request yielding a ranked tensor", "::mlir::ptrain::RequestType">;

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINTYPES_TD
