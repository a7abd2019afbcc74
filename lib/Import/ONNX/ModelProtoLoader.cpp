//===- ModelProtoLoader.cpp - parse an ONNX model and infer shapes -*- C++ -*-===//
//
// Built with -fexceptions (see CMakeLists.txt): ONNX shape inference throws on malformed graphs.
//
//===----------------------------------------------------------------------===//

#include "ModelProtoLoader.h"

#include "AttributeTypes.h"
#include "BindDimensions.h"
#include "GraphOrder.h"
#include "ptrain/Import/ONNX/EmbeddedWeights.h"

#include "onnx/shape_inference/implementation.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"

#include <exception>
#include <vector>

using mlir::ptrain::onnx_import::LoadError;

/// Puts the nodes of `graph` in the order `order` (indices into the current order), moving the messages.
static void permuteNodes(onnx::GraphProto &graph, llvm::ArrayRef<int> order) {
  int n = graph.node_size();
  std::vector<onnx::NodeProto *> nodes(static_cast<size_t>(n));
  graph.mutable_node()->ExtractSubrange(0, n, nodes.data());
  for (int index : order)
    graph.mutable_node()->AddAllocated(nodes[static_cast<size_t>(index)]);
}

int64_t mlir::ptrain::onnx_import::opsetOf(const onnx::ModelProto &model, const std::string &domain) {
  bool isDefault = domain.empty() || domain == "ai.onnx";
  for (const onnx::OperatorSetIdProto &opset : model.opset_import()) {
    bool opsetDefault = opset.domain().empty() || opset.domain() == "ai.onnx";
    if ((isDefault && opsetDefault) || (!isDefault && opset.domain() == domain))
      return opset.version();
  }
  return 0;
}

/// Control flow carries subgraphs (graph attributes): refused at the node, before shape inference runs its
/// inference function (libonnx 1.12's Scan-8 inference crashed on a mutated body: fuzz finding 10).
static LoadError refuseControlFlow(const onnx::ModelProto &model) {
  const onnx::GraphProto &graph = model.graph();
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    bool isDefault = node.domain().empty() || node.domain() == "ai.onnx";
    if (!isDefault || !llvm::is_contained({"If", "Loop", "Scan", "SequenceMap"}, node.op_type()))
      continue;
    return {"ONNX " + node.op_type() + " node '" + mlir::ptrain::onnx_import::displayNodeName(node, i) +
                "' (opset " + std::to_string(mlir::ptrain::onnx_import::opsetOf(model, node.domain())) +
                "): control flow (If, Loop, Scan, SequenceMap) is not supported for training: ptrain trains one "
                "static dataflow graph; re-export with the branch or the trip count fixed (e.g. torch.onnx.export "
                "of a traced model with static shapes)",
            i};
  }
  return {};
}

/// Whether ONNX has a schema for every node of the default domain at the model's opset. ptrain imports some ops
/// libonnx 1.12 lacks (opset 23's RMSNormalization, RotaryEmbedding, Attention): their outputs have no type after
/// inference, and Shape's data propagation then dereferences that missing type (fuzz finding 12, a SEGV on
/// Shape of an unknown op's output), so such models are inferred without data propagation.
static bool everyOpHasSchema(const onnx::ModelProto &model) {
  for (const onnx::NodeProto &node : model.graph().node()) {
    const int64_t opset = mlir::ptrain::onnx_import::opsetOf(model, node.domain());
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      return false;
    if (!onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), ""))
      return false;
  }
  return true;
}

/// A tensor's dims, if one is negative or their product overflows 2^62 (so that any element size times it
/// stays in int64): what is wrong, else "". The importer multiplies initializers' and Constant values' dims in
/// many places (classification, size checks, decoding); checking them once here keeps each product in range
/// (fuzz finding 11: `5172592470770188800 * 105` in ClassifyInitializers).
static std::string checkDims(const onnx::TensorProto &tensor) {
  int64_t count = 1;
  for (int i = 0; i < tensor.dims_size(); ++i) {
    int64_t d = tensor.dims(i);
    if (d < 0)
      return ": dimension " + std::to_string(i) + " is " + std::to_string(d) + ", not a size (ONNX sizes are >= 0)";
    if (llvm::MulOverflow(count, d, count) || count > (int64_t(1) << 62))
      return ": its element count overflows 64 bits (above 2^62 at dimension " + std::to_string(i) + ")";
  }
  return "";
}

/// checkDims over the graph's initializers (file-level) and its nodes' tensor attributes (at the node).
static LoadError checkTensorSizes(const onnx::GraphProto &graph) {
  for (const onnx::TensorProto &init : graph.initializer())
    if (std::string why = checkDims(init); !why.empty())
      return {"initializer '" + init.name() + "'" + why};
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    for (const onnx::AttributeProto &attr : node.attribute()) {
      std::string why = attr.has_t() ? checkDims(attr.t()) : "";
      for (int k = 0; why.empty() && k < attr.tensors_size(); ++k)
        why = checkDims(attr.tensors(k));
      if (!why.empty())
        return {"ONNX " + node.op_type() + " node '" + mlir::ptrain::onnx_import::displayNodeName(node, i) +
                    "': attribute '" + attr.name() + "'" + why,
                i};
    }
  }
  return {};
}

LoadError mlir::ptrain::onnx_import::loadModelProto(llvm::StringRef bytes, llvm::StringRef path,
                                                    onnx::ModelProto &model,
                                                    const std::map<std::string, int64_t> &bindings) {
  // When `bytes` is the file at `path`, its embedded float weights stay there (EmbeddedWeights.h): only the
  // rest of the model is copied and parsed. Otherwise (e.g. standard input) the whole message is parsed.
  uint64_t fileSize = 0;
  std::string stripped;
  // The file is read again with pread rather than scanned through `bytes` (a mapping of it): the mapping's
  // pages are then never touched and never resident.
  if (!llvm::sys::fs::file_size(path, fileSize) && fileSize == bytes.size()) {
    llvm::Expected<onnx_data::ExternalizedWeights> result = onnx_data::externalizeEmbeddedWeightsFromFile(path);
    if (!result)
      return {llvm::toString(result.takeError())};
    stripped = std::move(result->model);
    bytes = stripped;
  }
  if (bytes.empty()) // An empty message parses: say what the file is instead of "no graph".
    return {"the file is empty (0 bytes), not an ONNX model"};
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    return {"the model is too large for protobuf (" + std::to_string(bytes.size()) +
            " bytes beside its embedded float weights; store the weights as external data)"};
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return {"not a valid ONNX model (the protobuf does not parse)"};
  if (!model.has_graph())
    return {"the ONNX model has no graph"};
  if (std::string error = bindSymbolicDimensions(model, bindings); !error.empty())
    return {error};
  if (LoadError error = refuseControlFlow(model); !error.message.empty())
    return error;
  if (LoadError error = checkTensorSizes(model.graph()); !error.message.empty())
    return error;
  if (LoadError error = checkAttributeTypes(model); !error.message.empty())
    return error;
  // ONNX's inference functions dereference the type of an input that no earlier node defines.
  GraphReferenceError references = checkGraphReferences(model.graph());
  if (!references.message.empty())
    return {references.message, references.node};
  llvm::SmallVector<int> order = topologicalOrder(model.graph());
  bool sorted = llvm::is_sorted(order);
  if (!sorted)
    permuteNodes(*model.mutable_graph(), order);
  try {
    // Node-level inference errors are reported by the legalization, which knows the node; data propagation
    // folds the exporters' Shape -> Gather -> Concat chains when shapes are static (not with an op ONNX lacks).
    onnx::ShapeInferenceOptions options(/*check_type_val=*/false, /*strict_mode_val=*/0,
                                        /*data_prop_val=*/everyOpHasSchema(model));
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &e) {
    return {std::string("ONNX shape inference failed: ") + e.what()};
  }
  if (!sorted) { // Back to the file's order, which node locations (line = position in the file) refer to.
    llvm::SmallVector<int> inverse(order.size());
    for (auto [position, index] : llvm::enumerate(order))
      inverse[static_cast<size_t>(index)] = static_cast<int>(position);
    permuteNodes(*model.mutable_graph(), inverse);
  }
  return {};
}
