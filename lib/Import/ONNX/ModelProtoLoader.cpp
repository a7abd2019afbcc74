//===- ModelProtoLoader.cpp - parse an ONNX model and infer shapes -*- C++ -*-===//
//
// Built with -fexceptions (see CMakeLists.txt): ONNX shape inference throws on malformed graphs.
//
//===----------------------------------------------------------------------===//

#include "ModelProtoLoader.h"

#include "BindDimensions.h"

#include "onnx/shape_inference/implementation.h"

#include <exception>

std::string mlir::ptrain::onnx_import::loadModelProto(const std::string &bytes, onnx::ModelProto &model,
                                                      const std::map<std::string, int64_t> &bindings) {
  if (!model.ParseFromString(bytes))
    return "not a valid ONNX model (the protobuf does not parse)";
  if (!model.has_graph())
    return "the ONNX model has no graph";
  if (std::string error = bindSymbolicDimensions(model, bindings); !error.empty())
    return error;
  try {
    // Node-level inference errors are reported by the legalization, which knows the node; data propagation
    // folds the exporters' Shape -> Gather -> Concat chains when shapes are static.
    onnx::ShapeInferenceOptions options(/*check_type_val=*/false, /*strict_mode_val=*/0,
                                        /*data_prop_val=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &e) {
    return std::string("ONNX shape inference failed: ") + e.what();
  }
  return "";
}
