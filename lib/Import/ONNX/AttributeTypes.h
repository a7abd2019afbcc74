//===- AttributeTypes.h - a node's attributes against its ONNX schema --*- C++ -*-===//
//
// The legalization reads attributes by name and type (intAttr, floatAttr, getAs<...>): an attribute of the
// wrong type (Softmax axis = 0.5, Gemm alpha = "2") would read as absent and silently take its default, and a
// missing required one (Cast without `to`) as a default too: a model onnx.checker and onnxruntime refuse would
// import as another model. So the loader checks each node's attributes against its schema first.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_LIB_IMPORT_ONNX_ATTRIBUTETYPES_H
#define PTRAIN_LIB_IMPORT_ONNX_ATTRIBUTETYPES_H

#include "ModelProtoLoader.h"

namespace mlir::ptrain::onnx_import {

/// For every node of the default domain that libonnx has a schema for at the model's opset
/// (onnx::OpSchemaRegistry::Schema, the newest version <= the opset): each attribute the schema declares has the
/// schema's type (the AttributeProto's `type` field; an attribute without one is taken as written), and every
/// attribute the schema requires is present; an element-type attribute (Cast's `to`, the random ops' and EyeLike's
/// `dtype`) names a TensorProto.DataType. An attribute the schema does not declare is left to the
/// legalization (a schema of an older version than the model's opset lacks the newer attributes). Returns the
/// first violation, naming the node, its opset, the attribute and both types, else an empty message. Source:
/// onnx/checker.cc (check_node -> OpSchema::Verify), whose attribute checks these are.
LoadError checkAttributeTypes(const onnx::ModelProto &model);

} // namespace mlir::ptrain::onnx_import

#endif // PTRAIN_LIB_IMPORT_ONNX_ATTRIBUTETYPES_H
