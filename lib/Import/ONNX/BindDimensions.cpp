//===- BindDimensions.cpp - bind symbolic ONNX dimensions ---------*- C++ -*-===//

#include "BindDimensions.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir::ptrain::onnx_import;

std::string mlir::ptrain::onnx_import::parseBindings(const std::string &text,
                                                     std::map<std::string, int64_t> &bindings) {
  llvm::SmallVector<llvm::StringRef> entries;
  llvm::StringRef(text).split(entries, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (llvm::StringRef entry : entries) {
    entry = entry.trim();
    auto [name, size] = entry.split('=');
    name = name.trim();
    size = size.trim();
    if (name.empty() || !entry.contains('='))
      return "--bind entry '" + entry.str() + "' is not of the form name=size";
    int64_t value;
    if (size.getAsInteger(10, value))
      return "--bind entry '" + entry.str() + "': the size '" + size.str() + "' is not an integer >= 0";
    if (value < 0)
      return "--bind " + entry.str() + ": dimension '" + name.str() + "' cannot have a negative size";
    if (!bindings.emplace(name.str(), value).second)
      return "--bind names dimension '" + name.str() + "' twice";
  }
  return "";
}

/// Drops the type of `info` when its shape has a symbolic dimension: ONNX shape inference (1.12) then records
/// the inferred static type in value_info (it never refines a declared graph output's type).
static void forgetSymbolicType(onnx::ValueInfoProto &info) {
  const onnx::TypeProto &type = info.type();
  if (!type.has_tensor_type() || !type.tensor_type().has_shape())
    return;
  for (const onnx::TensorShapeProto::Dimension &dim : type.tensor_type().shape().dim())
    if (!dim.has_dim_value()) {
      info.clear_type();
      return;
    }
}

std::string mlir::ptrain::onnx_import::bindSymbolicDimensions(onnx::ModelProto &model,
                                                              const std::map<std::string, int64_t> &bindings) {
  onnx::GraphProto &graph = *model.mutable_graph();
  llvm::StringSet<> initializers, used;
  for (const onnx::TensorProto &init : graph.initializer())
    initializers.insert(init.name());
  for (onnx::ValueInfoProto &input : *graph.mutable_input()) {
    if (initializers.contains(input.name()) || !input.type().has_tensor_type() ||
        !input.type().tensor_type().has_shape())
      continue;
    auto &dims = *input.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
    for (auto [index, dim] : llvm::enumerate(dims)) {
      if (dim.has_dim_value())
        continue;
      if (!dim.has_dim_param() || dim.dim_param().empty())
        return "graph input '" + input.name() + "': dimension " + std::to_string(index) +
               " is unknown (neither a size nor a name); re-export it with a named or static dimension";
      std::string name = dim.dim_param();
      auto it = bindings.find(name);
      if (it == bindings.end())
        return "graph input '" + input.name() + "': dimension " + std::to_string(index) + " '" + name +
               "' is symbolic; bind it with --bind " + name + "=<size>";
      // Zero empties the input: meant for a past key/value cache (floating point, the graph concatenates
      // it with the new keys). Token ids, positions and integer or boolean masks cannot be empty.
      if (it->second == 0 && input.type().tensor_type().elem_type() != onnx::TensorProto::FLOAT &&
          input.type().tensor_type().elem_type() != onnx::TensorProto::FLOAT16 &&
          input.type().tensor_type().elem_type() != onnx::TensorProto::BFLOAT16 &&
          input.type().tensor_type().elem_type() != onnx::TensorProto::DOUBLE)
        return "--bind " + name + "=0: dimension " + std::to_string(index) + " of graph input '" + input.name() +
               "' would be empty; a size of 0 is only for the length of a past key/value cache (e.g. --bind "
               "past_seq_len=0), give '" +
               name + "' a size >= 1";
      used.insert(name);
      dim.set_dim_value(it->second);
    }
  }
  for (const auto &[name, size] : bindings)
    if (!used.contains(name))
      return "--bind " + name + "=" + std::to_string(size) + ": no graph input has a dimension named '" + name + "'";
  if (bindings.empty())
    return "";
  for (onnx::ValueInfoProto &output : *graph.mutable_output())
    forgetSymbolicType(output);
  for (onnx::ValueInfoProto &info : *graph.mutable_value_info())
    forgetSymbolicType(info);
  return "";
}
