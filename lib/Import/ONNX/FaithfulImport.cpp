//===- FaithfulImport.cpp - ONNX protobuf to ptrain.onnx_node ops -*- C++ -*-===//

#include "FaithfulImport.h"

#include "ClassifyInitializers.h"
#include "GraphOrder.h"
#include "ModelProtoLoader.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Import/ONNX/Initializers.h"
#include "ptrain/Interpreter/Tensor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <queue>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::onnx_import;

/// The MLIR element type of an ONNX data type, or null when ptrain does not handle it (strings, complex).
static Type convertElementType(int32_t dataType, MLIRContext *ctx) {
  Builder b(ctx);
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
    return b.getIntegerType(8);
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    return b.getIntegerType(16);
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return b.getIntegerType(32);
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
    return b.getIntegerType(64);
  default:
    return nullptr;
  }
}

/// Fails with `why` naming the first negative dimension of a TensorProto's dims (ONNX sizes are >= 0; a
/// negative one would make an invalid MLIR type, printed as tensor<-3x4xf32>, that nothing can parse back).
static LogicalResult checkDims(llvm::ArrayRef<int64_t> dims, std::string &why) {
  for (auto [index, dim] : llvm::enumerate(dims))
    if (dim < 0) {
      why = "dimension " + std::to_string(index) + " is " + std::to_string(dim) + ", not a size (ONNX sizes are >= 0)";
      return failure();
    }
  return success();
}

FailureOr<DenseElementsAttr> mlir::ptrain::onnx_import::convertTensor(const onnx::TensorProto &tensor, MLIRContext *ctx,
                                                                      std::string &error) {
  Type elt = convertElementType(tensor.data_type(), ctx);
  if (!elt) {
    error = "element type " + std::to_string(tensor.data_type()) + " is not supported";
    return failure();
  }
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    error = "its data is external; only parameters may live in external data";
    return failure();
  }
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  if (failed(checkDims(shape, error)))
    return failure();
  auto type = RankedTensorType::get(shape, elt);
  int64_t count = type.getNumElements();
  unsigned bytesPerElement = elt.isInteger(1) ? 1 : llvm::divideCeil(elt.getIntOrFloatBitWidth(), 8);

  // Collect little-endian bytes from raw_data or the typed field.
  std::string bytes;
  if (tensor.has_raw_data()) {
    bytes = tensor.raw_data();
  } else if (tensor.float_data_size()) {
    bytes.assign(reinterpret_cast<const char *>(tensor.float_data().data()), tensor.float_data_size() * 4);
  } else if (tensor.int64_data_size()) {
    bytes.assign(reinterpret_cast<const char *>(tensor.int64_data().data()), tensor.int64_data_size() * 8);
  } else if (tensor.double_data_size()) {
    bytes.assign(reinterpret_cast<const char *>(tensor.double_data().data()), tensor.double_data_size() * 8);
  } else if (tensor.int32_data_size()) {
    // int32_data holds int32 values, and the bits of narrower types (int8/16, bool, f16, bf16).
    for (int32_t v : tensor.int32_data())
      bytes.append(reinterpret_cast<const char *>(&v), bytesPerElement);
  }
  if (static_cast<int64_t>(bytes.size()) != count * bytesPerElement) {
    error = "it holds " + std::to_string(bytes.size()) + " bytes of data, but its shape needs " +
            std::to_string(count * bytesPerElement);
    return failure();
  }
  if (elt.isInteger(1)) {
    SmallVector<bool> values;
    for (char c : bytes)
      values.push_back(c != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  return DenseElementsAttr::getFromRawBuffer(type, ArrayRef<char>(bytes.data(), bytes.size()));
}

namespace {

/// Builds the faithful module; one instance per import.
class FaithfulImporter {
public:
  FaithfulImporter(const onnx::ModelProto &model, StringRef path, MLIRContext *ctx,
                   const ParameterOverrides &overrides)
      : model(model), path(path), ctx(ctx), builder(ctx), overrides(overrides) {}

  OwningOpRef<ModuleOp> run(StringRef entry);

private:
  Location fileLoc() { return FileLineColLoc::get(ctx, path, 0, 0); }
  /// The location of node `index`: its name (or op type and index) inside the file; the line is the node's
  /// 1-based position in the graph.
  Location nodeLoc(const onnx::NodeProto &node, int index) {
    std::string name = node.name().empty() ? node.op_type() + "#" + std::to_string(index) : node.name();
    return NameLoc::get(StringAttr::get(ctx, name), FileLineColLoc::get(ctx, path, index + 1, 0));
  }
  /// The type of value `name`, from inputs, outputs and value_info: a static tensor type when ONNX shape
  /// inference made it so, else unranked with the element type, else `none` when ONNX inferred nothing
  /// (the legalization then infers the type); fails with `why` set on types ptrain cannot represent.
  FailureOr<Type> valueType(const std::string &name, std::string &why);
  FailureOr<RankedTensorType> convertType(const onnx::TypeProto &type, std::string &why);
  FailureOr<NamedAttribute> convertAttribute(const onnx::AttributeProto &attr, std::string &why);
  /// The value of an initializer held constant: inline data, or external data (the model's embedded
  /// weights are external data in the model file itself, EmbeddedWeights.h) read through ONNXInitializers.
  /// At most kMaxConstantElements elements: constants are inlined into the IR.
  FailureOr<DenseElementsAttr> constantValue(const onnx::TensorProto &init, std::string *why = nullptr);
  /// The opset the model imports for `domain` ("" and "ai.onnx" are the default domain); 0 when none.
  int64_t opsetFor(const std::string &domain);

  const onnx::ModelProto &model;
  std::string path;
  MLIRContext *ctx;
  OpBuilder builder;
  const ParameterOverrides &overrides;
  llvm::StringMap<const onnx::TypeProto *> types;
  llvm::StringMap<Value> values;
  /// The model's initializers, opened on the first constant with external data.
  std::optional<onnx_data::ONNXInitializers> externalData;
};

} // namespace

FailureOr<DenseElementsAttr> FaithfulImporter::constantValue(const onnx::TensorProto &init, std::string *why) {
  constexpr int64_t kMaxConstantElements = int64_t(1) << 22;
  std::string error;
  auto fail = [&](std::string message) -> FailureOr<DenseElementsAttr> {
    if (why)
      *why = std::move(message);
    return failure();
  };
  int64_t count = 1;
  for (int64_t d : init.dims())
    count *= d;
  if (count > kMaxConstantElements)
    return fail("it has " + std::to_string(count) + " elements and constants are inlined into the IR (at most " +
                std::to_string(kMaxConstantElements) + "); frozen weights of that size are not supported yet");
  if (init.data_location() != onnx::TensorProto::EXTERNAL) {
    FailureOr<DenseElementsAttr> value = convertTensor(init, ctx, error);
    if (failed(value))
      return fail(error);
    return value;
  }
  if (!externalData) {
    llvm::Expected<onnx_data::ONNXInitializers> opened = onnx_data::ONNXInitializers::open(path);
    if (!opened)
      return fail(llvm::toString(opened.takeError()));
    externalData.emplace(std::move(*opened));
  }
  llvm::Expected<interp::Tensor> tensor = externalData->read(init.name());
  if (!tensor)
    return fail(llvm::toString(tensor.takeError()));
  return interp::denseElementsFromTensor(*tensor, ctx);
}

int64_t FaithfulImporter::opsetFor(const std::string &domain) { return opsetOf(model, domain); }

FailureOr<RankedTensorType> FaithfulImporter::convertType(const onnx::TypeProto &type, std::string &why) {
  if (!type.has_tensor_type()) {
    why = "it is not a tensor (sequences, maps and optionals are not supported)";
    return failure();
  }
  const onnx::TypeProto::Tensor &tensor = type.tensor_type();
  Type elt = convertElementType(tensor.elem_type(), ctx);
  if (!elt) {
    why = "its element type " + std::to_string(tensor.elem_type()) + " is not supported";
    return failure();
  }
  if (!tensor.has_shape()) {
    why = "it has no shape (ONNX shape inference could not infer its rank)";
    return failure();
  }
  SmallVector<int64_t> shape;
  for (const onnx::TensorShapeProto::Dimension &dim : tensor.shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() < 0) {
      why = "its dimension " + std::to_string(shape.size()) + " is " + std::to_string(dim.dim_value()) +
            ", not a size (ONNX sizes are >= 0)";
      return failure();
    }
    if (dim.has_dim_value()) {
      shape.push_back(dim.dim_value());
      continue;
    }
    why = dim.has_dim_param() ? "its dimension '" + dim.dim_param() + "' is symbolic; export with static shapes"
                              : "one of its dimensions is unknown";
    return failure();
  }
  return RankedTensorType::get(shape, elt);
}

FailureOr<Type> FaithfulImporter::valueType(const std::string &name, std::string &why) {
  auto it = types.find(name);
  // Not inferred at all (an op Debian's ONNX 1.12 does not know, e.g. RMSNormalization-23, Split-18 with
  // num_outputs): the legalization infers the whole type from the already static operands.
  if (it == types.end())
    return Type(NoneType::get(ctx));
  // A sequence (SplitToSequence's result): typed `tuple<>` here; its elements' types are known only once
  // the legalization has built them (LegalizeSequenceOps.cpp).
  if (it->second->has_sequence_type())
    return Type(TupleType::get(ctx));
  FailureOr<RankedTensorType> ranked = convertType(*it->second, why);
  if (succeeded(ranked))
    return Type(*ranked);
  // ONNX shape inference could not make the shape static (e.g. a Reshape whose target shape is computed):
  // the element type suffices, the legalization infers the shape from its already static operands.
  const onnx::TypeProto &type = *it->second;
  if (type.value_case() == onnx::TypeProto::VALUE_NOT_SET ||
      (type.has_tensor_type() && type.tensor_type().elem_type() == onnx::TensorProto::UNDEFINED))
    return Type(NoneType::get(ctx)); // Not inferred at all: the legalization infers the whole type.
  Type elt = type.has_tensor_type() ? convertElementType(type.tensor_type().elem_type(), ctx) : Type();
  if (!elt)
    return failure();
  return Type(UnrankedTensorType::get(elt));
}

FailureOr<NamedAttribute> FaithfulImporter::convertAttribute(const onnx::AttributeProto &attr, std::string &why) {
  Builder b(ctx);
  Attribute value;
  switch (attr.type()) {
  case onnx::AttributeProto::INT:
    value = b.getI64IntegerAttr(attr.i());
    break;
  case onnx::AttributeProto::FLOAT:
    value = b.getF32FloatAttr(attr.f());
    break;
  case onnx::AttributeProto::STRING:
    value = b.getStringAttr(attr.s());
    break;
  case onnx::AttributeProto::INTS:
    value = b.getDenseI64ArrayAttr(SmallVector<int64_t>(attr.ints().begin(), attr.ints().end()));
    break;
  case onnx::AttributeProto::FLOATS:
    value = b.getDenseF32ArrayAttr(SmallVector<float>(attr.floats().begin(), attr.floats().end()));
    break;
  case onnx::AttributeProto::STRINGS: {
    SmallVector<Attribute> strings;
    for (const std::string &s : attr.strings())
      strings.push_back(b.getStringAttr(s));
    value = b.getArrayAttr(strings);
    break;
  }
  case onnx::AttributeProto::TENSOR: {
    FailureOr<DenseElementsAttr> tensor = convertTensor(attr.t(), ctx, why);
    if (failed(tensor))
      return failure();
    value = *tensor;
    break;
  }
  default:
    why = "attribute '" + attr.name() + "' has a type ptrain does not import (graphs, sparse tensors, type protos)";
    return failure();
  }
  return NamedAttribute(b.getStringAttr(attr.name()), value);
}

OwningOpRef<ModuleOp> FaithfulImporter::run(StringRef entry) {
  const onnx::GraphProto &graph = model.graph();
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc());
  (*module)->setAttr("ptrain.onnx_file", builder.getStringAttr(path));
  builder.setInsertionPointToEnd(module->getBody());
  // An opset newer than the newest known: every op is looked up at its newest known semantics (the pattern
  // with the greatest since-opset <= the model's), which a newer opset may have changed. Said, not refused.
  for (const onnx::OperatorSetIdProto &opset : model.opset_import())
    if ((opset.domain().empty() || opset.domain() == "ai.onnx") && opset.version() > kNewestKnownOpset)
      emitWarning(fileLoc()) << "the model imports opset " << opset.version() << " of domain 'ai.onnx', newer than "
                             << "the newest ptrain knows (" << kNewestKnownOpset << "): its ops are imported "
                             << "with their opset-" << kNewestKnownOpset
                             << " semantics; check the results (ptrain-interpret against onnxruntime)";

  // Inferred value_info wins over a declared output type (which --bind may have dropped).
  for (const onnx::ValueInfoProto &info : graph.input())
    types[info.name()] = &info.type();
  for (const onnx::ValueInfoProto &info : graph.output())
    if (info.has_type())
      types[info.name()] = &info.type();
  for (const onnx::ValueInfoProto &info : graph.value_info())
    if (info.has_type())
      types[info.name()] = &info.type();

  // Trainable initializers are parameters: state symbols keyed by their name. The others are constants
  // (ClassifyInitializers.h), each with a remark saying why.
  llvm::StringMap<const onnx::TensorProto *> initializers;
  for (const onnx::TensorProto &init : graph.initializer())
    initializers[init.name()] = &init;
  std::string classifyError;
  FailureOr<llvm::StringMap<InitializerClass>> classes = classifyInitializers(
      graph, overrides, [&](const onnx::TensorProto &init) { return constantValue(init); }, classifyError);
  if (failed(classes)) {
    emitError(fileLoc()) << classifyError;
    return nullptr;
  }
  SmallVector<std::pair<StateOp, const onnx::TensorProto *>> parameters;
  for (const onnx::TensorProto &init : graph.initializer()) {
    const InitializerClass &c = classes->find(init.name())->second;
    Location loc = NameLoc::get(builder.getStringAttr(init.name()), fileLoc());
    if (!c.trainable) {
      emitRemark(loc) << "initializer '" << init.name() << "' is held constant: " << c.why;
      continue;
    }
    Type elt = convertElementType(init.data_type(), ctx);
    SmallVector<int64_t> dims(init.dims().begin(), init.dims().end());
    std::string why;
    if (failed(checkDims(dims, why))) {
      emitError(fileLoc()) << "initializer '" << init.name() << "': " << why;
      return nullptr;
    }
    auto type = RankedTensorType::get(dims, elt);
    auto state = StateOp::create(builder, loc, init.name(), init.name(), StateKind::Parameter, type);
    parameters.push_back({state, &init});
  }

  // Graph inputs that are not initializers are the function's arguments.
  SmallVector<Type> argTypes;
  SmallVector<const onnx::ValueInfoProto *> args;
  for (const onnx::ValueInfoProto &info : graph.input()) {
    if (initializers.count(info.name()))
      continue;
    std::string why;
    FailureOr<RankedTensorType> type = convertType(info.type(), why);
    if (failed(type)) {
      emitError(fileLoc()) << "graph input '" << info.name() << "': " << why;
      return nullptr;
    }
    argTypes.push_back(*type);
    args.push_back(&info);
  }
  SmallVector<Type> resultTypes;
  for (const onnx::ValueInfoProto &info : graph.output()) {
    std::string why;
    FailureOr<Type> type = valueType(info.name(), why);
    if (failed(type)) {
      emitError(fileLoc()) << "graph output '" << info.name() << "': " << why;
      return nullptr;
    }
    resultTypes.push_back(*type);
  }

  auto fn = func::FuncOp::create(builder, fileLoc(), entry, builder.getFunctionType(argTypes, resultTypes));
  for (auto [i, info] : llvm::enumerate(args))
    fn.setArgAttr(i, "ptrain.onnx_name", builder.getStringAttr(info->name()));
  for (auto [i, info] : llvm::enumerate(graph.output()))
    fn.setResultAttr(i, "ptrain.onnx_name", builder.getStringAttr(info.name()));
  Block *body = fn.addEntryBlock();
  builder.setInsertionPointToStart(body);
  for (auto [i, info] : llvm::enumerate(args))
    values[info->name()] = body->getArgument(i);
  for (auto [state, init] : parameters)
    values[init->name()] = StateReadOp::create(builder, state.getLoc(), state.getType(), state.getSymName());
  for (auto &[name, init] : initializers) {
    if (values.count(name))
      continue;
    std::string why;
    FailureOr<DenseElementsAttr> value = constantValue(*init, &why);
    if (failed(value)) {
      emitError(fileLoc()) << "initializer '" << name.str() << "': " << why;
      return nullptr;
    }
    values[name] = arith::ConstantOp::create(builder, NameLoc::get(builder.getStringAttr(name), fileLoc()), *value);
  }

  for (int index : topologicalOrder(graph)) {
    const onnx::NodeProto &node = graph.node(index);
    Location loc = nodeLoc(node, index);
    int64_t opset = opsetFor(node.domain());
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      emitError(loc) << "ONNX " << node.op_type() << " node '" << cast<NameLoc>(loc).getName().getValue()
                     << "' (domain '" << node.domain() << "', opset " << opset << "): op '" << node.op_type()
                     << "' of domain '" << node.domain()
                     << "' is not supported: ptrain imports the default ONNX domain only; re-export without "
                        "runtime-specific fusions (e.g. onnxruntime's com.microsoft ops)";
      return nullptr;
    }
    // Control flow was refused by the loader (ModelProtoLoader.h), before shape inference.
    SmallVector<Value> inputs;
    for (auto [i, name] : llvm::enumerate(node.input())) {
      if (name.empty()) {
        bool trailing =
            llvm::all_of(llvm::drop_begin(node.input(), i + 1), [](const std::string &n) { return n.empty(); });
        if (trailing)
          break;
        emitError(loc) << node.op_type() << " input #" << i
                       << " is omitted while later inputs are given; not supported";
        return nullptr;
      }
      auto it = values.find(name);
      if (it == values.end()) {
        emitError(loc) << node.op_type() << " input '" << name
                       << "' is defined by no graph input, initializer or earlier node (the graph is not "
                          "topologically sorted, or it uses an outer scope)";
        return nullptr;
      }
      inputs.push_back(it->second);
    }
    SmallVector<Type> outputTypes;
    for (const std::string &name : node.output()) {
      if (name.empty()) {
        outputTypes.push_back(builder.getNoneType());
        continue;
      }
      std::string why;
      FailureOr<Type> type = valueType(name, why);
      if (failed(type)) {
        emitError(loc) << node.op_type() << " output '" << name << "': " << why;
        return nullptr;
      }
      outputTypes.push_back(*type);
    }
    SmallVector<NamedAttribute> attrs;
    for (const onnx::AttributeProto &attr : node.attribute()) {
      std::string why;
      FailureOr<NamedAttribute> converted = convertAttribute(attr, why);
      if (failed(converted)) {
        emitError(loc) << node.op_type() << " attribute '" << attr.name() << "': " << why;
        return nullptr;
      }
      attrs.push_back(*converted);
    }
    auto op = OnnxNodeOp::create(builder, loc, outputTypes, inputs, node.op_type(), node.domain(),
                                 static_cast<uint64_t>(opset), builder.getDictionaryAttr(attrs));
    for (auto [name, result] : llvm::zip(node.output(), op.getOutputs())) {
      if (name.empty())
        continue;
      // ONNX graphs are in SSA form: a second definition of a name would silently replace the first
      // (a graph output then read the last writer's value).
      if (!values.insert({name, result}).second) {
        emitError(loc) << "ONNX " << node.op_type() << " node '" << cast<NameLoc>(loc).getName().getValue()
                       << "': output '" << name
                       << "' is already defined (by a graph input, an initializer or an earlier node); ONNX "
                          "names each value once";
        return nullptr;
      }
    }
  }

  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &info : graph.output()) {
    auto it = values.find(info.name());
    if (it == values.end()) {
      emitError(fileLoc()) << "graph output '" << info.name() << "' is produced by no node";
      return nullptr;
    }
    results.push_back(it->second);
  }
  func::ReturnOp::create(builder, fileLoc(), results);
  return module;
}

OwningOpRef<ModuleOp> mlir::ptrain::onnx_import::importFaithful(const onnx::ModelProto &model, StringRef path,
                                                                MLIRContext *context, StringRef entry,
                                                                const ParameterOverrides &overrides) {
  context->loadDialect<PTrainDialect, func::FuncDialect, arith::ArithDialect>();
  return FaithfulImporter(model, path, context, overrides).run(entry);
}
