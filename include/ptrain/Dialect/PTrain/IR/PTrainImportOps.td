//===- PTrainImportOps.td - faithful ONNX import -----------*- tablegen -*-===//
//
// The first layer of the ONNX importer (STYLE habit 11): one op per ONNX node, with no semantics, so that
// legalization into model ops is one pattern per (op type, opset) and can be tested on its own.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINIMPORTOPS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINIMPORTOPS_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"

def PTrain_OnnxNodeOp : PTrain_Op<"onnx_node"> {
  let summary = "An ONNX node imported as is, before legalization.";
  let description = [{
    Carries an ONNX node's op type, domain, the model's opset for that domain and the node's attributes
    (ints as i64, floats as f32, strings, lists as arrays, tensors as dense elements). Result types come
    from ONNX shape inference. It has no semantics of its own: `ptrain-translate --import-onnx` legalizes
    every such op into model ops, or fails naming the node, op type and opset. The location is the node's
    name inside the file's location.

    Constraints:
    * (C1) `op_type` is not empty;
    * (C2) `opset` >= 1.

    ```mlir
    %y = ptrain.onnx_node "Softmax"(%x) {domain = "", opset = 17 : i64, onnx_attrs = {axis = -1 : i64}}
        : (tensor<4x4x64x64xf32>) -> tensor<4x4x64x64xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, StrAttr:$op_type, StrAttr:$domain, I64Attr:$opset,
                       DictionaryAttr:$onnx_attrs);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat = "$op_type `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)";
  let hasVerifier = 1;
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINIMPORTOPS_TD
