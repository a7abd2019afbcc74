//===- PTrainBase.td - ptrain dialect, op base class, enums -*- tablegen -*-===//
//
// The ptrain dialect: communication-compressed 3D-parallel training.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINBASE_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "ptrain/Dialect/PTrain/IR/PTrainInterfaces.td"

def PTrain_Dialect : Dialect {
  let name = "ptrain";
  let cppNamespace = "::mlir::ptrain";
  let summary = "Communication-compressed 3D-parallel training of transformers.";
  let description = [{
    The `ptrain` dialect describes one training step of a transformer split over data (DP), tensor (TP) and
    pipeline (PP) parallelism, with the communication made explicit and asynchronous, codecs that compress
    that communication as ops with explicit semantics, and module-level keyed state (parameters, optimizer
    moments, codec residuals) used as SSA values inside the step.

    Ops are split by topic:

    * grid and communication: `grid`, `distribute`, `send_start`, `recv_start`, `all_reduce_start`,
      `all_gather_start`, `reduce_scatter_start`, `broadcast_start`, `wait`;
    * codecs: `compress`, `decompress`, `compressed_all_reduce_start`, with the codec attributes
      `#ptrain.powersgd`, `#ptrain.topk`, `#ptrain.randk`, `#ptrain.quant`, `#ptrain.cast`,
      `#ptrain.linear_ae`;
    * state: `state`, `state_read`, `state_write`.

    The rationale for each choice is in `docs/RationalePTrain.md`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let usePropertiesForAttributes = 1;
  // The plan attributes (ptrain.pipeline, ptrain.stage, ptrain.schedule, ptrain.tp_slice; PTrainPlanAttrs.h) are
  // checked where they sit.
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();
  }];
}

class PTrain_Op<string mnemonic, list<Trait> traits = []>
    : Op<PTrain_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Side-effect resources
//===----------------------------------------------------------------------===//

/// The network: every communication op reads and writes it, so DCE never deletes a send and CSE never merges
/// two all-reduces (DESIGN decision 3).
def PTrain_CommResource : Resource<"::mlir::ptrain::CommResource">;

/// Module-level state symbols (parameters, optimizer moments, codec state).
def PTrain_StateResource : Resource<"::mlir::ptrain::StateResource">;

/// Base of the ops that start a collective over named axes of a `ptrain.grid`.
///
/// Constraints every collective shares (checked by `verifyGridAxes`):
/// * (C1) `grid` names a `ptrain.grid`;
/// * (C2) every axis in `grid_axes` is an axis of that grid;
/// * (C3) no axis appears twice; at least one axis is given.
class PTrain_CollectiveStartOp<string mnemonic, list<Trait> traits = []>
    : PTrain_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        PTrain_AsyncStartOpInterface,
        MemoryEffects<[MemRead<PTrain_CommResource>, MemWrite<PTrain_CommResource>]>])> {
  dag gridArgs = (ins FlatSymbolRefAttr:$grid, StrArrayAttr:$grid_axes);
  let hasVerifier = 1;
}

// The enums are attribute definitions: PTrainPlanAttrs.td, generated alone, leaves them out.
#ifndef PTRAIN_PLAN_ATTRS_ONLY
//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def PTrain_ReductionKind : I32EnumAttr<"ReductionKind",
    "reduction applied by a collective", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Avg", 1, "avg">,
      I32EnumAttrCase<"Max", 2, "max">,
      I32EnumAttrCase<"Min", 3, "min">,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ptrain";
}
def PTrain_ReductionKindAttr : EnumAttr<PTrain_Dialect, PTrain_ReductionKind, "reduction">;

def PTrain_Precision : I32EnumAttr<"Precision",
    "the floating-point format of a training step's GEMM operands and messages", [
      I32EnumAttrCase<"F32", 0, "fp32">,
      I32EnumAttrCase<"BF16", 1, "bf16">,
      I32EnumAttrCase<"F16", 2, "fp16">,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ptrain";
}
def PTrain_PrecisionAttr : EnumAttr<PTrain_Dialect, PTrain_Precision, "precision"> {
  let assemblyFormat = "`<` $value `>`";
  let summary = "The precision a training step was built in (module attribute `ptrain.precision`).";
  let description = [{
    The value of the discardable module attribute `ptrain.precision` that `--ptrain-build-training-step`
    (`precision=bf16` or `precision=fp16`, docs/MixedPrecision.md) sets on a pipeline module:
    `--ptrain-lower-to-runtime` then sends the activations and their gradients between stages in that 16-bit
    format (bf16 or IEEE binary16: a `ptrain.cast` before the send, a cast back to fp32 after the receive), half
    the bytes of fp32, and the timing model prices them at 2 bytes an element. `fp32` (the default when the
    attribute is absent) sends fp32. Read and written through `getPrecision` and `setPrecision` (PTrainPlanAttrs.h).

    Constraints where it sits (the dialect's `verifyOperationAttribute`):
    * (C1) `ptrain.precision` is a `#ptrain.precision`;
    * (C2) on a `builtin.module`.

    ```mlir
    module attributes {ptrain.precision = #ptrain.precision<bf16>} { ... }
    ```
  }];
}

def PTrain_StateKind : I32EnumAttr<"StateKind",
    "what a module-level state symbol holds", [
      I32EnumAttrCase<"Parameter", 0, "parameter">,
      I32EnumAttrCase<"OptimizerMoment", 1, "optimizer_moment">,
      I32EnumAttrCase<"CodecResidual", 2, "codec_residual">,
      I32EnumAttrCase<"CodecWarmStart", 3, "codec_warm_start">,
      I32EnumAttrCase<"CodecSeed", 4, "codec_seed">,
      I32EnumAttrCase<"StepCounter", 5, "step_counter">,
      I32EnumAttrCase<"Gradient", 6, "gradient">,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ptrain";
}
def PTrain_StateKindAttr : EnumAttr<PTrain_Dialect, PTrain_StateKind, "state_kind">;

def PTrain_BinaryKind : I32EnumAttr<"BinaryKind",
    "elementwise binary operation with numpy broadcasting", [
      I32EnumAttrCase<"Add", 0, "add">,
      I32EnumAttrCase<"Sub", 1, "sub">,
      I32EnumAttrCase<"Mul", 2, "mul">,
      I32EnumAttrCase<"Div", 3, "div">,
      I32EnumAttrCase<"Pow", 4, "pow">,
      I32EnumAttrCase<"Max", 5, "max">,
      I32EnumAttrCase<"Min", 6, "min">,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ptrain";
}
def PTrain_BinaryKindAttr : EnumAttr<PTrain_Dialect, PTrain_BinaryKind, "binary_kind">;

def PTrain_UnaryKind : I32EnumAttr<"UnaryKind", "elementwise unary operation", [
      I32EnumAttrCase<"Neg", 0, "neg">,
      I32EnumAttrCase<"Exp", 1, "exp">,
      I32EnumAttrCase<"Log", 2, "log">,
      I32EnumAttrCase<"Sqrt", 3, "sqrt">,
      I32EnumAttrCase<"Rsqrt", 4, "rsqrt">,
      I32EnumAttrCase<"Reciprocal", 5, "reciprocal">,
      I32EnumAttrCase<"Erf", 6, "erf">,
      I32EnumAttrCase<"Tanh", 7, "tanh">,
      I32EnumAttrCase<"Relu", 8, "relu">,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ptrain";
}
def PTrain_UnaryKindAttr : EnumAttr<PTrain_Dialect, PTrain_UnaryKind, "unary_kind">;

def PTrain_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how GELU evaluates the Gaussian CDF", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Tanh", 1, "tanh">,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ptrain";
}
def PTrain_GeluApproximationAttr
    : EnumAttr<PTrain_Dialect, PTrain_GeluApproximation, "gelu_approximation">;

def PTrain_CompareKind : I32EnumAttr<"CompareKind", "elementwise comparison with numpy broadcasting", [
      I32EnumAttrCase<"Eq", 0, "eq">,
      I32EnumAttrCase<"Lt", 1, "lt">,
      I32EnumAttrCase<"Le", 2, "le">,
      I32EnumAttrCase<"Gt", 3, "gt">,
      I32EnumAttrCase<"Ge", 4, "ge">,
      I32EnumAttrCase<"And", 5, "and">,
      I32EnumAttrCase<"Or", 6, "or">,
      I32EnumAttrCase<"Xor", 7, "xor">,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ptrain";
}
def PTrain_CompareKindAttr : EnumAttr<PTrain_Dialect, PTrain_CompareKind, "compare_kind">;

def PTrain_ReduceKind : I32EnumAttr<"ReduceKind", "reduction over a set of dimensions", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Mean", 1, "mean">,
      I32EnumAttrCase<"Max", 2, "max">,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ptrain";
}
def PTrain_ReduceKindAttr : EnumAttr<PTrain_Dialect, PTrain_ReduceKind, "reduce_kind">;

def PTrain_QuantGranularity : I32EnumAttr<"QuantGranularity",
    "how many values share one quantization scale", [
      I32EnumAttrCase<"Tensor", 0, "tensor">,
      I32EnumAttrCase<"Channel", 1, "channel">,
      I32EnumAttrCase<"Block", 2, "block">,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ptrain";
}
def PTrain_QuantGranularityAttr
    : EnumAttr<PTrain_Dialect, PTrain_QuantGranularity, "granularity">;

#endif // PTRAIN_PLAN_ATTRS_ONLY

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINBASE_TD
