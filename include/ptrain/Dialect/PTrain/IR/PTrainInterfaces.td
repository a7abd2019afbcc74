//===- PTrainInterfaces.td - ptrain interfaces -------------*- tablegen -*-===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAININTERFACES_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAININTERFACES_TD

include "mlir/IR/OpBase.td"

def PTrain_CodecAttrInterface : AttrInterface<"CodecAttrInterface"> {
  let cppNamespace = "::mlir::ptrain";
  let description = [{
    A codec: how a tensor is encoded into smaller "code" tensors and decoded back (DESIGN decision 4). The
    interface gives everything the verifier, the compression passes and the lowering need to know without
    knowing the algorithm: the code tensors and their types, the state each side keeps besides an optional
    error-feedback residual, trainable parameters, and whether codes from several ranks may be summed before
    decoding (a linear code: decode(sum c_i) = sum decode(c_i)).
  }];
  let methods = [
    InterfaceMethod<[{
        Checks that the codec can encode a tensor of type `type` (ranks and counts against the tensor's matrix
        view and element count). Reports through `emitError` and fails otherwise.
      }], "::llvm::LogicalResult", "verifyForType", (ins
        "::llvm::function_ref<::mlir::InFlightDiagnostic()>":$emitError,
        "::mlir::RankedTensorType":$type)>,
    InterfaceMethod<[{
        Types of the code tensors that encode a tensor of type `type`, in the order `compress` returns them
        and `decompress` takes them. Requires `verifyForType` to succeed.
      }], "::llvm::SmallVector<::mlir::Type>", "getCodeTypes", (ins "::mlir::RankedTensorType":$type)>,
    InterfaceMethod<[{
        Types of the codec's own state on the encoding side (e.g. PowerSGD's warm-start Q), not counting the
        error-feedback residual.
      }], "::llvm::SmallVector<::mlir::Type>", "getEncoderStateTypes",
        (ins "::mlir::RankedTensorType":$type), [{}], [{ return {}; }]>,
    InterfaceMethod<[{ Types of the codec's own state on the decoding side. }],
      "::llvm::SmallVector<::mlir::Type>", "getDecoderStateTypes", (ins "::mlir::RankedTensorType":$type), [{}], [{ return {}; }]>,
    InterfaceMethod<[{ Types of trainable parameters the encoder reads (the linear autoencoder's W_e). }],
      "::llvm::SmallVector<::mlir::Type>", "getEncoderParamTypes", (ins "::mlir::RankedTensorType":$type), [{}], [{ return {}; }]>,
    InterfaceMethod<[{ Types of trainable parameters the decoder reads (the linear autoencoder's W_d). }],
      "::llvm::SmallVector<::mlir::Type>", "getDecoderParamTypes", (ins "::mlir::RankedTensorType":$type), [{}], [{ return {}; }]>,
    InterfaceMethod<[{
        True when codes from several ranks may be summed in compressed form (PowerSGD factors, linear
        autoencoder, rand-k with a shared seed, casts); false when they must be gathered, decoded and summed
        (top-k, quantization). Source: Bian et al., MLSys 2024, section "Where they apply".
      }], "bool", "isSummable", (ins)>,
  ];
}

def PTrain_AsyncStartOpInterface : OpInterface<"AsyncStartOpInterface"> {
  let cppNamespace = "::mlir::ptrain";
  let description = [{
    An op that starts an asynchronous communication and returns its `!ptrain.request`; exactly one
    `ptrain.wait` completes the request (DESIGN decision 3).
  }];
  let methods = [
    InterfaceMethod<"The request this op returns.", "::mlir::TypedValue<::mlir::ptrain::RequestType>",
      "getRequest", (ins), [{}], [{
        return ::llvm::cast<::mlir::TypedValue<::mlir::ptrain::RequestType>>($_op->getResult(0));
      }]>,
  ];
}

def PTrain_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::ptrain";
  let description = [{
    The op's gradient rule for reverse-mode automatic differentiation (DESIGN "L1 training step"): given the
    gradients of the loss with respect to the op's results, build ops that compute the gradients with respect
    to its operands. Rules only build model ops and gradient ops, so the backward pass is ordinary IR that
    every later pass (stage split, TP sharding, lowering) handles like the forward.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the operand gradients at the builder's insertion point. `resultGrads[i]` is the gradient of the
        loss with respect to result i, or null when no gradient flows into it. Fills `operandGrads` with one
        entry per operand: the gradient (with the operand's type), or null for operands that have no gradient
        (integer ids, labels). Fails, with a diagnostic at the op, when the op has no rule (e.g. `pow`).
      }], "::llvm::LogicalResult", "buildGradients", (ins "::mlir::OpBuilder &":$builder,
        "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
        "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}


def PTrain_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::ptrain";
  let description = [{
    The work of one execution of the op on one device, for the timing model (docs/TimingModel.md): floating
    point operations (FLOPs; a multiply-add counts 2) and bytes read plus written in device memory, for the
    op's full (unsharded) static shapes. The model turns them into seconds with
    max(FLOPs / peak FLOP/s, bytes / memory bandwidth) / efficiency.

    Ops that do not implement it get the fallback of `getOpCost` (`PTrainCost.h`): one FLOP per result
    element and the bytes of all tensor operands and results; structural ops (function calls and returns,
    constants, state reads and writes) and communication ops (modelled as transfers, not kernels) cost zero.

    Counts per op (elements n of the result unless said; sources: the reference kernels in lib/Runtime):
    matmul 2 n k (k contracted); layer_norm 8 n; softmax 5 n; gelu 8 n; cross_entropy 5 n of the logits;
    embedding 0 (a gather; bytes: ids + 2 x result); dropout 2 n (the compare and the scale; the
    integer hash is not counted); reshape 0 FLOPs and 0 bytes (a view); transpose 0
    FLOPs; layer_norm_grad 12 n; softmax_grad 4 n; gelu_grad 12 n; embedding_grad n of the incoming
    gradient (a scatter-add); cross_entropy_grad 6 n of the logits; adamw 14 n of the parameter.
  }];
  let methods = [
    InterfaceMethod<"FLOPs of one execution of the op.", "double", "getFlops", (ins)>,
    InterfaceMethod<"Bytes read and written in device memory by one execution of the op.", "double",
      "getBytesAccessed", (ins), [{}], [{ return ::mlir::ptrain::getOperandAndResultBytes($_op); }]>,
  ];
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAININTERFACES_TD
