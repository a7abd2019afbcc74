//===- AttributeTypes.cpp - a node's attributes against its ONNX schema ---===//

#include "AttributeTypes.h"

#include "GraphOrder.h"

#include "onnx/defs/schema.h"

using mlir::ptrain::onnx_import::LoadError;

/// "INT", "FLOAT", "STRING", ...: the names onnx.proto gives AttributeProto.AttributeType.
static std::string typeName(onnx::AttributeProto_AttributeType type) {
  return onnx::AttributeProto_AttributeType_Name(type);
}

/// The INT attributes that name an element type (TensorProto.DataType) in the default domain's schemas.
static bool isDataTypeAttribute(const std::string &op, const std::string &attr) {
  if (op == "Cast")
    return attr == "to";
  return attr == "dtype" && (op == "RandomNormal" || op == "RandomUniform" || op == "RandomNormalLike" ||
                             op == "RandomUniformLike" || op == "EyeLike" || op == "Multinomial" ||
                             op == "Bernoulli");
}

LoadError mlir::ptrain::onnx_import::checkAttributeTypes(const onnx::ModelProto &model) {
  const onnx::GraphProto &graph = model.graph();
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      continue;
    const int64_t opset = opsetOf(model, node.domain());
    const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), "");
    if (!schema)
      continue; // an op libonnx lacks (opset 23's RMSNormalization, ...): the legalization checks it
    auto where = [&] {
      return "ONNX " + node.op_type() + " node '" + displayNodeName(node, i) + "' (opset " + std::to_string(opset) +
             "): attribute '";
    };
    const std::string version = node.op_type() + "-" + std::to_string(schema->SinceVersion());
    const auto &declared = schema->attributes();
    for (const onnx::AttributeProto &attr : node.attribute()) {
      auto it = declared.find(attr.name());
      if (it == declared.end() || attr.type() == onnx::AttributeProto::UNDEFINED)
        continue;
      if (attr.type() != it->second.type)
        return {where() + attr.name() + "' is " + typeName(attr.type()) + ", but " + version + " declares it " +
                    typeName(it->second.type) + " (onnx.checker refuses the model too)",
                i};
      if (isDataTypeAttribute(node.op_type(), attr.name()) &&
          (!onnx::TensorProto_DataType_IsValid(static_cast<int>(attr.i())) || attr.i() == onnx::TensorProto::UNDEFINED))
        return {where() + attr.name() + "' is " + std::to_string(attr.i()) +
                    ", not an ONNX element type (TensorProto.DataType: 1 FLOAT, 7 INT64, 10 FLOAT16, 16 BFLOAT16, ...)",
                i};
    }
    for (const auto &[name, attribute] : declared) {
      if (!attribute.required)
        continue;
      bool present = false;
      for (const onnx::AttributeProto &attr : node.attribute())
        present |= attr.name() == name;
      if (!present)
        return {where() + name + "' (" + typeName(attribute.type) + ") is required by " + version +
                    " and missing",
                i};
    }
  }
  return {};
}
