//===- ClassifyInitializers.cpp - which initializers are parameters -*- C++ -*-===//
//
// The rule of ClassifyInitializers.h (DESIGN decision 12), on the ONNX graph before any op has semantics.
//
//===----------------------------------------------------------------------===//

#include "ClassifyInitializers.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"

#include <cmath>
#include <deque>
#include <optional>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

/// Whole-name matching: the user's expression anchored at both ends.
static llvm::Regex wholeName(const std::string &pattern) { return llvm::Regex("^(" + pattern + ")$"); }

FailureOr<llvm::StringSet<>> mlir::ptrain::onnx_import::readOrtRequiresGrad(llvm::StringRef path,
                                                                             std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = llvm::MemoryBuffer::getFile(path);
  if (!file) {
    error = "--ort-training-model '" + path.str() + "': " + file.getError().message();
    return failure();
  }
  // Only the graph's inputs are read: the artifact's gradient ops (com.microsoft) are never imported.
  onnx::ModelProto model;
  if (!model.ParseFromArray((*file)->getBufferStart(), static_cast<int>((*file)->getBufferSize()))) {
    error = "--ort-training-model '" + path.str() + "': not an ONNX model (the protobuf does not parse)";
    return failure();
  }
  llvm::StringSet<> names;
  for (const onnx::ValueInfoProto &input : model.graph().input())
    if (llvm::StringRef name = input.name(); name.ends_with(kOrtGradBufferSuffix))
      names.insert(name.drop_back(kOrtGradBufferSuffix.size()));
  if (names.empty()) {
    error = "--ort-training-model '" + path.str() + "': no graph input is named '<parameter>" +
            kOrtGradBufferSuffix.str() +
            "', so it is not onnxruntime's training artifact (onnxruntime.training.artifacts' training_model.onnx)";
    return failure();
  }
  return names;
}

std::string mlir::ptrain::onnx_import::checkParameterOverrides(const ParameterOverrides &overrides) {
  for (auto [flag, pattern] : {std::pair<const char *, const std::string *>{"--trainable", &overrides.trainable},
                               {"--frozen", &overrides.frozen}}) {
    if (pattern->empty())
      continue;
    std::string why;
    if (!wholeName(*pattern).isValid(why))
      return std::string(flag) + " '" + *pattern + "' is not a valid regular expression (POSIX extended): " + why;
  }
  return "";
}

static bool isFloatType(int32_t dataType) {
  return dataType == onnx::TensorProto::FLOAT || dataType == onnx::TensorProto::DOUBLE ||
         dataType == onnx::TensorProto::FLOAT16 || dataType == onnx::TensorProto::BFLOAT16;
}

/// A name the exporters give module parameters (a state_dict key): dotted, ending in `weight` or `bias`.
static bool isParameterName(llvm::StringRef name) {
  auto [prefix, last] = name.rsplit('.');
  return !prefix.empty() && prefix != name && (last == "weight" || last == "bias");
}

/// Every dimension but the last is 1 and the last is above 1: a per-feature scale or bias.
static bool isPerFeature(llvm::ArrayRef<int64_t> shape) {
  if (shape.empty() || shape.back() <= 1)
    return false;
  return llvm::all_of(shape.drop_back(), [](int64_t d) { return d == 1; });
}

/// Every value 0 or at most -1e4 (or -inf), with at least one of the latter: an additive attention mask.
static bool isAdditiveMask(DenseElementsAttr attr) {
  auto floats = dyn_cast<DenseFPElementsAttr>(attr);
  if (!floats)
    return false;
  bool masked = false;
  for (APFloat v : floats.getValues<APFloat>()) {
    double d = v.convertToDouble();
    if (d == 0.0)
      continue;
    if (!(d <= -1e4))
      return false;
    masked = true;
  }
  return masked;
}

namespace {

/// The graph's values: who reads them, their shapes, which depend on graph inputs.
class GraphFacts {
public:
  explicit GraphFacts(const onnx::GraphProto &graph) : graph(graph) {
    for (const onnx::TensorProto &init : graph.initializer()) {
      initializers.insert(init.name());
      shapes[init.name()] = llvm::SmallVector<int64_t>(init.dims().begin(), init.dims().end());
    }
    auto addShape = [&](const onnx::ValueInfoProto &info) {
      if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape())
        return;
      llvm::SmallVector<int64_t> dims;
      for (const onnx::TensorShapeProto::Dimension &d : info.type().tensor_type().shape().dim())
        dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
      shapes.try_emplace(info.name(), dims);
    };
    for (const onnx::ValueInfoProto &info : graph.value_info())
      addShape(info);
    for (const onnx::ValueInfoProto &info : graph.output())
      addShape(info);
    for (const onnx::ValueInfoProto &info : graph.input()) {
      addShape(info);
      if (!initializers.contains(info.name()))
        dataDependent.insert(info.name());
      else
        overridable.insert(info.name());
    }
    for (auto [index, node] : llvm::enumerate(graph.node()))
      for (auto [k, input] : llvm::enumerate(node.input()))
        if (!input.empty())
          consumers[input].push_back({static_cast<int>(index), static_cast<int>(k)});
    // Forward reachability from the graph inputs, to a fixed point (the file's order need not be sorted).
    for (bool changed = true; changed;) {
      changed = false;
      for (const onnx::NodeProto &node : graph.node()) {
        if (node.op_type() == "Shape" || node.op_type() == "Size")
          continue;
        if (!llvm::any_of(node.input(), [&](const std::string &in) { return dataDependent.contains(in); }))
          continue;
        for (const std::string &out : node.output())
          if (!out.empty())
            changed |= dataDependent.insert(out).second;
      }
    }
  }

  /// Whether an input of `node` other than #k depends on a graph input.
  bool othersDataDependent(const onnx::NodeProto &node, int k) const {
    for (auto [j, input] : llvm::enumerate(node.input()))
      if (static_cast<int>(j) != k && dataDependent.contains(input))
        return true;
    return false;
  }

  const onnx::GraphProto &graph;
  /// Initializers that are also graph inputs (defaults a caller may override).
  llvm::StringSet<> initializers, dataDependent, overridable;
  llvm::StringMap<llvm::SmallVector<int64_t>> shapes;
  llvm::StringMap<llvm::SmallVector<std::pair<int, int>>> consumers;
};

} // namespace

/// Whether `value` reaches a Softmax within a few elementwise or layout steps: a table added to it is an
/// attention mask (added to the scores), whatever its values (an all-ones attention mask exports as zeros).
static bool feedsSoftmax(const std::string &value, const GraphFacts &facts, int depth = 4) {
  if (depth == 0)
    return false;
  for (auto [index, k] : facts.consumers.lookup(value)) {
    const onnx::NodeProto &node = facts.graph.node(index);
    llvm::StringRef op = node.op_type();
    if (op == "Softmax" || op == "LogSoftmax")
      return true;
    bool passes = op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Cast" || op == "Reshape" ||
                  op == "Where";
    if (passes && llvm::any_of(node.output(), [&](const std::string &out) {
          return !out.empty() && feedsSoftmax(out, facts, depth - 1);
        }))
      return true;
  }
  return false;
}

/// Whether every use of `value`, followed through ops that only reshape or convert it, is a Mul or Div: the
/// rows of a rotary cos/sin table gathered by position ids, never a token embedding (which also feeds
/// normalizations, residual additions or squares).
static bool onlyMultiplies(const std::string &value, const GraphFacts &facts, int depth = 6) {
  auto uses = facts.consumers.lookup(value);
  if (uses.empty() || depth == 0)
    return false;
  for (auto [index, k] : uses) {
    const onnx::NodeProto &node = facts.graph.node(index);
    llvm::StringRef op = node.op_type();
    if (op == "Mul" || op == "Div")
      continue;
    bool view = op == "Unsqueeze" || op == "Reshape" || op == "Cast" || op == "Expand" || op == "Transpose" ||
                op == "Squeeze" || op == "Identity" || op == "CastLike" || op == "Slice";
    // Concat joins the table with itself or other tables (the rotate-half form's concat(c, c)).
    if (!(op == "Concat" || (view && k == 0)) || !onlyMultiplies(node.output(0), facts, depth - 1))
      return false;
  }
  return true;
}

/// Ops that only move, select or convert their input #0 (or, for Transpose and Identity, their one input):
/// a use of their output is a use of the initializer.
static bool movesValues(const onnx::NodeProto &node, int k, const GraphFacts &facts) {
  llvm::StringRef op = node.op_type();
  if (op == "Identity" || op == "Transpose" || op == "Cast" || op == "Flatten" || op == "Concat")
    return !facts.othersDataDependent(node, k);
  if (k != 0)
    return false;
  if (op == "Reshape" || op == "Unsqueeze" || op == "Squeeze" || op == "Expand" || op == "Slice" || op == "Split" ||
      op == "CastLike" || op == "Tile")
    return !facts.othersDataDependent(node, k);
  // A Gather by constant indices selects rows (a folded exporter's position-embedding slice).
  if (op == "Gather")
    return !facts.othersDataDependent(node, k);
  return false;
}

/// The weight role of input #k of `node` holding (a view of) the initializer, given the shape of that view.
static std::optional<std::string> weightRole(const onnx::NodeProto &node, int k, llvm::ArrayRef<int64_t> shape,
                                             const GraphFacts &facts) {
  llvm::StringRef op = node.op_type();
  bool beside = facts.othersDataDependent(node, k);
  if ((op == "MatMul" || op == "Gemm" || op == "Conv" || op == "ConvTranspose" || op == "Einsum") && beside)
    return (k == 2 && op != "Einsum" ? "the bias of a " : "an operand of a ") + op.str() + " beside an activation";
  if (op == "Gather" && k == 0 && beside && !onlyMultiplies(node.output(0), facts))
    return std::string("the table of a Gather by data-dependent indices (an embedding)");
  bool normalization = op == "LayerNormalization" || op == "BatchNormalization" ||
                       op == "InstanceNormalization" || op == "GroupNormalization";
  if ((normalization && (k == 1 || k == 2)) || (op == "RMSNormalization" && k == 1))
    return "the " + std::string(k == 1 ? "scale" : "bias") + " of a " + op.str();
  if (op == "PRelu" && k == 1)
    return std::string("the slope of a PRelu");
  bool elementwise = op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
  if (elementwise && beside && isPerFeature(shape))
    return "a per-feature vector in a " + op.str() + " with an activation (a normalization scale or bias, a bias)";
  return std::nullopt;
}

FailureOr<llvm::StringMap<InitializerClass>> mlir::ptrain::onnx_import::classifyInitializers(
    const onnx::GraphProto &graph, const ParameterOverrides &overrides,
    llvm::function_ref<FailureOr<DenseElementsAttr>(const onnx::TensorProto &)> valueOf, std::string &error) {
  GraphFacts facts(graph);
  std::optional<llvm::Regex> trainable, frozen;
  if (!overrides.trainable.empty())
    trainable.emplace(wholeName(overrides.trainable));
  if (!overrides.frozen.empty())
    frozen.emplace(wholeName(overrides.frozen));
  bool trainableMatched = false, frozenMatched = false;

  llvm::StringMap<InitializerClass> result;
  for (const onnx::TensorProto &init : graph.initializer()) {
    InitializerClass &c = result[init.name()];
    bool isFloat = isFloatType(init.data_type());
    int64_t count = 1;
    for (int64_t d : init.dims())
      count *= d;
    if (frozen && frozen->match(init.name())) {
      frozenMatched = true;
      c = {false, "it matches --frozen '" + overrides.frozen + "'"};
      continue;
    }
    if (trainable && trainable->match(init.name())) {
      trainableMatched = true;
      if (!isFloat) {
        error = "--trainable '" + overrides.trainable + "' matches initializer '" + init.name() +
                "', which is not floating-point and cannot be trained";
        return failure();
      }
      c = {true, "it matches --trainable '" + overrides.trainable + "'"};
      continue;
    }
    if (overrides.ortRequiresGrad) {
      bool listed = overrides.ortRequiresGrad->contains(init.name());
      if (listed && !isFloat) {
        error = "--ort-training-model '" + overrides.ortTrainingModel + "' lists initializer '" + init.name() +
                "' as requiring a gradient, but it is not floating-point";
        return failure();
      }
      c = {listed, (listed ? "onnxruntime's training artifact '" : "not in the requires_grad list of onnxruntime's "
                                                                    "training artifact '") +
                       overrides.ortTrainingModel +
                       (listed ? "' computes its gradient (input '" + init.name() + kOrtGradBufferSuffix.str() + "')"
                               : "' (no input '" + init.name() + kOrtGradBufferSuffix.str() + "')")};
      continue;
    }
    if (!isFloat) {
      c = {false, init.data_type() == onnx::TensorProto::BOOL ? "a boolean tensor (a mask)"
                                                               : "an integer tensor (shapes, indices, axes)"};
      continue;
    }
    if (count == 1) {
      c = {false, "a one-element float (a scalar such as an epsilon, a scale or an exponent)"};
      continue;
    }
    if (count == 0) {
      c = {false, "an empty tensor"};
      continue;
    }
    if (facts.overridable.contains(init.name())) {
      c = {true, "a graph input with a default value (ONNX: overridable, so never folded)"};
      continue;
    }
    if (isParameterName(init.name())) {
      c = {true, "named like a module parameter"};
      continue;
    }

    // Follow the initializer's views to its uses; the first weight role makes it trainable.
    std::optional<std::string> constantWhy;
    std::deque<std::string> worklist{init.name()};
    llvm::StringSet<> visited;
    while (!worklist.empty() && !c.trainable) {
      std::string value = worklist.front();
      worklist.pop_front();
      if (!visited.insert(value).second)
        continue;
      llvm::SmallVector<int64_t> shape = facts.shapes.lookup(value);
      for (auto [index, k] : facts.consumers.lookup(value)) {
        const onnx::NodeProto &node = graph.node(index);
        if (std::optional<std::string> role = weightRole(node, k, shape, facts)) {
          c = {true, *role};
          break;
        }
        if (movesValues(node, k, facts)) {
          for (const std::string &out : node.output())
            if (!out.empty())
              worklist.push_back(out);
          continue;
        }
        llvm::StringRef op = node.op_type();
        bool beside = facts.othersDataDependent(node, k);
        if (beside && op == "Gather" && k == 0) {
          constantWhy = "a table gathered by data-dependent indices and only multiplied into the activations "
                        "(such as rotary cos/sin gathered by position ids)";
          continue;
        }
        if (beside && (op == "Add" || op == "Sub")) {
          if (feedsSoftmax(node.output(0), facts)) {
            constantWhy = "an additive attention mask (added by a " + op.str() + " to scores before a Softmax)";
            continue;
          }
          FailureOr<DenseElementsAttr> values = valueOf(init);
          if (succeeded(values) && isAdditiveMask(*values)) {
            constantWhy = "an additive mask (every value 0 or at most -1e4) in a " + op.str();
            continue;
          }
          c = {true, "a table added to an activation by a " + op.str() +
                         " (such as a folded learned position embedding; --frozen holds it constant)"};
          break;
        }
        if (!constantWhy)
          constantWhy = beside ? (op == "Mul" || op == "Div"
                                      ? "a table multiplied into the activations by a " + op.str() +
                                            " (such as rotary cos/sin), not a per-feature vector"
                                      : "used by a " + op.str() + " in no weight role")
                               : "it feeds only shape or constant arithmetic (a " + op.str() +
                                     " of constants, folded by the importer)";
      }
    }
    if (!c.trainable)
      c.why = constantWhy ? *constantWhy : "no node reads it";
  }
  if (trainable && !trainableMatched) {
    error = "--trainable '" + overrides.trainable + "' matches no initializer";
    return failure();
  }
  if (frozen && !frozenMatched) {
    error = "--frozen '" + overrides.frozen + "' matches no initializer";
    return failure();
  }
  if (overrides.ortRequiresGrad)
    for (const auto &name : *overrides.ortRequiresGrad)
      if (!result.count(name.getKey())) {
        error = "--ort-training-model '" + overrides.ortTrainingModel + "' lists parameter '" + name.getKey().str() +
                "', which is no initializer of this model (the artifact was made from another model)";
        return failure();
      }
  return result;
}
