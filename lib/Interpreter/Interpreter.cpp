//===- Interpreter.cpp - reference interpreter driver --------------------===//
//
// Walks the entry function's single block in order, keeps one Tensor per SSA value, and dispatches each op to
// its kernel (Kernels.h): model ops and the backward ops their gradient rules build. Errors are prefixed with
// the op's location and name.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/Interpreter.h"

#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"
#include "ptrain/Interpreter/CodecPhases.h"
#include "ptrain/Interpreter/DropoutLayout.h"
#include "ptrain/Interpreter/Kernels.h"
#include "ptrain/Interpreter/MixedPrecisionKernels.h"
#include "ptrain/Interpreter/StateDefaults.h"
#include "ptrain/Interpreter/StepKernels.h"
#include "ptrain/Interpreter/TransformerKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::interp;

StateProvider mlir::ptrain::interp::makeMapStateProvider(llvm::StringMap<Tensor> values) {
  return [values = std::move(values)](llvm::StringRef key, RankedTensorType) -> llvm::Expected<Tensor> {
    auto it = values.find(key);
    if (it == values.end())
      return llvm::make_error<MissingStateError>("no value for state key '" + key.str() + "'");
    return it->second;
  };
}

std::string mlir::ptrain::interp::formatLocation(Location loc) {
  if (auto file = llvm::dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().getValue() + ":" + llvm::Twine(file.getLine()) + ":" + llvm::Twine(file.getColumn()))
        .str();
  if (auto name = llvm::dyn_cast<NameLoc>(loc)) {
    std::string inner = llvm::isa<UnknownLoc>(name.getChildLoc()) ? "" : formatLocation(name.getChildLoc());
    return inner.empty() ? "\"" + name.getName().str() + "\"" : inner + " (\"" + name.getName().str() + "\")";
  }
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc)) {
    for (Location child : fused.getLocations())
      if (!llvm::isa<UnknownLoc>(child))
        return formatLocation(child);
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
}

llvm::Error mlir::ptrain::interp::opError(Operation *op, llvm::Error error) {
  std::string message = llvm::toString(std::move(error));
  return makeError(formatLocation(op->getLoc()) + ": '" + op->getName().getStringRef() + "': " + message);
}

std::string mlir::ptrain::interp::typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

namespace {
/// The state of one run: SSA values, loaded states, statistics.
class Evaluation {
public:
  Evaluation(const StateProvider &states, RunStatistics &statistics) : states(states), statistics(statistics) {}

  void bind(Value value, Tensor tensor) { values[value] = std::move(tensor); }
  const Tensor &get(Value value) { return values.find(value)->second; }

  /// Evaluates `op`, binding its results; `func.return` fills `returned`.
  llvm::Error eval(Operation *op, std::vector<Tensor> &returned);

private:
  llvm::Expected<Tensor> readState(StateReadOp op);

  const StateProvider &states;
  RunStatistics &statistics;
  llvm::DenseMap<Value, Tensor> values;
  llvm::StringMap<Tensor> loaded;
};
} // namespace

/// Wraps a single-result kernel's value into a result list.
static llvm::Expected<std::vector<Tensor>> one(llvm::Expected<Tensor> result) {
  if (!result)
    return result.takeError();
  std::vector<Tensor> results;
  results.push_back(std::move(*result));
  return results;
}

llvm::Expected<Tensor> Evaluation::readState(StateReadOp op) {
  auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(op, op.getStateAttr());
  if (!state)
    return makeError("'" + op.getState() + "' does not name a ptrain.state");
  llvm::StringRef key = state.getKey();
  auto cached = loaded.find(key);
  if (cached != loaded.end())
    return cached->second;
  RankedTensorType type = state.getTensorType();
  if (state.getKind() == StateKind::StepCounter) {
    llvm::Expected<DType> dtype = dtypeFromMLIR(type.getElementType());
    if (!dtype)
      return makeError("state @" + op.getState() + " (key '" + key + "'): " + llvm::toString(dtype.takeError()));
    statistics.statesRead.emplace_back(key.str(), typeString(type));
    return loaded[key] = Tensor(*dtype, type.getShape());
  }
  llvm::Expected<Tensor> value = loadParameter(states, state, type);
  if (!value)
    return makeError("state @" + op.getState() + " (key '" + key + "'): " + llvm::toString(value.takeError()));
  if (!value->hasType(type))
    return makeError("state @" + op.getState() + " (key '" + key + "') is declared " + typeString(type) +
                     " but its value is " + value->getTypeString());
  statistics.statesRead.emplace_back(key.str(), typeString(type));
  loaded[key] = *value;
  return std::move(*value);
}

/// The learning-rate schedule of an optimizer op (AdamW's other hyperparameters zero).
static AdamWHyperparameters scheduleOf(LRScheduleAttr schedule) {
  return AdamWHyperparameters{schedule.getPeak().getValueAsDouble(),
                              schedule.getWarmup(),
                              schedule.getTotal(),
                              schedule.getMinRatio().getValueAsDouble(),
                              0.0,
                              0.0,
                              0.0,
                              0.0};
}

std::optional<llvm::Expected<std::vector<Tensor>>>
mlir::ptrain::interp::evaluateOp(Operation *op, llvm::function_ref<const Tensor &(Value)> get) {
  using Result = std::optional<llvm::Expected<std::vector<Tensor>>>;
  return llvm::TypeSwitch<Operation *, Result>(op)
      .Case([&](arith::ConstantOp c) -> Result {
        auto dense = llvm::dyn_cast<DenseElementsAttr>(c.getValue());
        if (!dense)
          return makeError("only dense tensor constants are supported");
        return one(tensorFromDenseElements(dense));
      })
      .Case([&](EmbeddingOp e) -> Result { return one(evalEmbedding(get(e.getTable()), get(e.getIds()))); })
      .Case([&](BinaryOp b) -> Result { return one(evalBinary(b.getKind(), get(b.getLhs()), get(b.getRhs()))); })
      .Case([&](UnaryOp u) -> Result { return one(evalUnary(u.getKind(), get(u.getInput()))); })
      .Case([&](MatmulOp m) -> Result {
        // bf16 or f16 operands with fp32 accumulation: the runtime's ptrain_gemm_bf16 / _f16 bits
        // (docs/MixedPrecision.md).
        if (m.getAccumulate())
          return one(evalMatmulHalf(get(m.getLhs()), get(m.getRhs())));
        return one(evalMatmul(get(m.getLhs()), get(m.getRhs())));
      })
      .Case([&](LayerNormOp l) -> Result {
        const Tensor *bias = l.getBias() ? &get(l.getBias()) : nullptr;
        return one(evalLayerNorm(get(l.getInput()), get(l.getScale()), bias, l.getAxisAttr().getInt(),
                                 l.getEpsilonAttr().getValueAsDouble()));
      })
      .Case([&](SoftmaxOp s) -> Result { return one(evalSoftmax(get(s.getInput()), s.getAxisAttr().getInt())); })
      .Case([&](RmsNormOp r) -> Result {
        return one(evalRmsNorm(get(r.getInput()), get(r.getScale()), r.getAxisAttr().getInt(),
                               r.getEpsilon().convertToDouble()));
      })
      .Case([&](RotaryEmbeddingOp r) -> Result {
        return one(evalRotaryEmbedding(get(r.getInput()), get(r.getCos()), get(r.getSin()), r.getInterleaved(),
                                       r.getRotaryDim()));
      })
      .Case([&](GeluOp g) -> Result { return one(evalGelu(g.getApproximate(), get(g.getInput()))); })
      .Case([&](DropoutOp d) -> Result {
        // One rank: a layout axis (tp, dp) is an error (the multi-rank executor gives the coordinates).
        return evaluateDropout(d, get, [](StringRef) -> std::optional<std::pair<int64_t, int64_t>> { return {}; });
      })
      .Case([&](ReshapeOp r) -> Result {
        return one(evalReshape(get(r.getInput()), r.getResult().getType().getShape()));
      })
      .Case([&](TransposeOp t) -> Result { return one(evalTranspose(get(t.getInput()), t.getPerm())); })
      .Case([&](SplitOp s) -> Result { return evalSplit(get(s.getInput()), s.getAxisAttr().getInt(), s.getSizes()); })
      .Case([&](CrossEntropyOp c) -> Result {
        CrossEntropyOptions options{c.getWeight() ? &get(c.getWeight()) : nullptr, c.getIgnoreIndex(),
                                    c.isSumReduction()};
        return one(evalCrossEntropy(get(c.getLogits()), get(c.getLabels()), options));
      })
      .Case([&](SliceOp s) -> Result { return one(evalSlice(get(s.getInput()), s.getOffsets(), s.getSizes())); })
      .Case([&](ConcatOp c) -> Result {
        std::vector<const Tensor *> inputs;
        for (Value v : c.getInputs())
          inputs.push_back(&get(v));
        return one(evalConcat(inputs, c.getAxisAttr().getInt()));
      })
      // Backward ops (PTrainGradientOps.td).
      .Case([&](SumToOp s) -> Result { return one(evalSumTo(get(s.getInput()), s.getResult().getType().getShape())); })
      .Case([&](PadOp p) -> Result { return one(evalPad(get(p.getInput()), p.getLow(), p.getHigh())); })
      .Case([&](LayerNormGradOp l) -> Result {
        bool withBias = static_cast<bool>(l.getBiasGrad());
        return evalLayerNormGrad(get(l.getGrad()), get(l.getInput()), get(l.getScale()), l.getAxisAttr().getInt(),
                                 l.getEpsilonAttr().getValueAsDouble(), withBias);
      })
      .Case([&](SoftmaxGradOp s) -> Result {
        return one(evalSoftmaxGrad(get(s.getGrad()), get(s.getOutput()), s.getAxisAttr().getInt()));
      })
      .Case([&](GeluGradOp g) -> Result {
        return one(evalGeluGrad(g.getApproximate(), get(g.getGrad()), get(g.getInput())));
      })
      .Case([&](EmbeddingGradOp e) -> Result {
        RankedTensorType table = e.getResult().getType();
        if (table.getRank() != 2 || table.isDynamicDim(0))
          return makeError("embedding_grad needs a static V x H result type");
        return one(evalEmbeddingGrad(get(e.getGrad()), get(e.getIds()), table.getDimSize(0)));
      })
      .Case([&](CrossEntropyGradOp c) -> Result {
        CrossEntropyOptions options{c.getWeight() ? &get(c.getWeight()) : nullptr, c.getIgnoreIndex(),
                                    c.isSumReduction()};
        return one(evalCrossEntropyGrad(get(c.getGrad()), get(c.getLogits()), get(c.getLabels()), options));
      })
      // Model ops of the importer's breadth (Selection.cpp, Reduction.cpp).
      .Case([&](CompareOp c) -> Result { return one(evalCompare(c.getKind(), get(c.getLhs()), get(c.getRhs()))); })
      .Case([&](SelectOp s) -> Result {
        return one(evalSelect(get(s.getCondition()), get(s.getLhs()), get(s.getRhs())));
      })
      .Case([&](ReduceOp r) -> Result {
        return one(evalReduce(r.getKind(), get(r.getInput()), r.getAxes(), r.getKeepdims()));
      })
      .Case([&](CastOp c) -> Result {
        llvm::Expected<DType> to = dtypeFromMLIR(c.getResult().getType().getElementType());
        if (!to)
          return to.takeError();
        return one(evalCast(get(c.getInput()), *to));
      })
      .Case([&](BroadcastToOp b) -> Result {
        return one(evalBroadcastTo(get(b.getInput()), b.getResult().getType().getShape()));
      })
      .Case([&](GatherOp g) -> Result {
        return one(evalGather(get(g.getData()), get(g.getIndices()), g.getAxisAttr().getInt()));
      })
      .Case([&](LogSoftmaxOp l) -> Result { return one(evalLogSoftmax(get(l.getInput()), l.getAxisAttr().getInt())); })
      .Case([&](AdamWOp a) -> Result {
        AdamWHyperparameters h = scheduleOf(a.getSchedule());
        h.beta1 = a.getBeta1().convertToDouble();
        h.beta2 = a.getBeta2().convertToDouble();
        h.epsilon = a.getEpsilon().convertToDouble();
        h.weightDecay = a.getWeightDecay().convertToDouble();
        return evalAdamW(get(a.getParam()), get(a.getGrad()), get(a.getM()), get(a.getV()), get(a.getStep()), h);
      })
      .Case([&](SumSquaresOp s) -> Result { return one(evalSumSquares(get(s.getInput()))); })
      .Case([&](ClipScaleOp c) -> Result {
        return one(evalClipScale(get(c.getSumSquares()), c.getMaxNorm().convertToDouble()));
      })
      .Case([&](LossScaleOp l) -> Result {
        return one(evalLossScale(get(l.getScaler()), l.getInitialScale().convertToDouble()));
      })
      .Case([&](GradUnscaleOp u) -> Result { return evalGradUnscale(get(u.getGrad()), get(u.getScale())); })
      .Case([&](GradScalerUpdateOp u) -> Result {
        GradScalerOptions options{u.getInitialScale().convertToDouble(), u.getGrowthFactor().convertToDouble(),
                                  u.getBackoffFactor().convertToDouble(), u.getMinScale().convertToDouble(),
                                  static_cast<int64_t>(u.getGrowthInterval()), static_cast<int64_t>(u.getHysteresis())};
        return one(evalGradScalerUpdate(get(u.getScaler()), get(u.getFoundInf()), options));
      })
      .Case([&](SGDOp o) -> Result {
        const Tensor *buf = o.getMomentumBuf() ? &get(o.getMomentumBuf()) : nullptr;
        return evalSGD(get(o.getParam()), get(o.getGrad()), get(o.getStep()), buf, scheduleOf(o.getSchedule()),
                       o.getMomentum().convertToDouble(), o.getWeightDecay().convertToDouble());
      })
      .Case([&](CompressOp c) -> Result { return evalCompress(c, get); })
      .Case([&](DecompressOp d) -> Result { return evalDecompress(d, get); })
      .Case([&](PowerSGDPhasePOp o) -> Result { return evalPowerSGDPhaseP(o, get); })
      .Case([&](PowerSGDPhaseQOp o) -> Result { return evalPowerSGDPhaseQ(o, get); })
      .Case([&](PowerSGDFinishOp o) -> Result { return evalPowerSGDFinish(o, get); })
      .Default([&](Operation *) -> Result { return std::nullopt; });
}

llvm::Expected<std::vector<Tensor>> mlir::ptrain::interp::evaluateOp(Operation *op,
                                                                     llvm::ArrayRef<const Tensor *> operands) {
  if (operands.size() != op->getNumOperands())
    return makeError("got " + llvm::Twine(operands.size()) + " operand values for " +
                     llvm::Twine(op->getNumOperands()) + " operands");
  std::optional<llvm::Expected<std::vector<Tensor>>> evaluated = evaluateOp(op, [&](Value v) -> const Tensor & {
    for (auto [operand, tensor] : llvm::zip(op->getOperands(), operands))
      if (operand == v)
        return *tensor;
    llvm_unreachable("not an operand of the op");
  });
  if (!evaluated)
    return makeError("the reference interpreter has no rule for this op");
  return std::move(*evaluated);
}

llvm::Error Evaluation::eval(Operation *op, std::vector<Tensor> &returned) {
  if (op->getNumRegions() != 0 && !isa<func::ReturnOp>(op))
    return opError(op, makeError("ops with regions are not supported"));
  for (Value operand : op->getOperands())
    if (!values.count(operand))
      return opError(op, makeError("an operand has no value (defined outside the function?)"));
  statistics.opCounts[op->getName().getStringRef().str()]++;
  std::optional<llvm::Expected<std::vector<Tensor>>> evaluated;
  if (auto read = dyn_cast<StateReadOp>(op)) {
    evaluated.emplace(one(readState(read)));
  } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    for (Value v : ret.getOperands())
      returned.push_back(get(v));
    evaluated.emplace(std::vector<Tensor>());
  } else {
    evaluated = evaluateOp(op, [&](Value v) -> const Tensor & { return get(v); });
    if (!evaluated && isa<StateWriteOp>(op))
      return opError(op, makeError("a training step writes its states (the optimizer's updates): run it with "
                                   "ptrain-interpret --multi-rank, the executor that keeps states across steps"));
    if (!evaluated)
      return opError(op, makeError("the reference interpreter has no rule for this op"));
  }
  llvm::Expected<std::vector<Tensor>> results = std::move(*evaluated);
  if (!results)
    return opError(op, results.takeError());
  if (results->size() != op->getNumResults())
    return opError(op, makeError("produced " + llvm::Twine(results->size()) + " values for " +
                                 llvm::Twine(op->getNumResults()) + " results"));
  for (auto [value, tensor] : llvm::zip(op->getResults(), *results)) {
    // Guards the kernels against disagreeing with the op's (verified) result type.
    auto type = llvm::dyn_cast<RankedTensorType>(value.getType());
    if (!type || !tensor.hasType(type))
      return opError(op, makeError("computed " + tensor.getTypeString() + " but the result type is " +
                                   typeString(value.getType())));
    bind(value, std::move(tensor));
  }
  return llvm::Error::success();
}

Interpreter::Interpreter(ModuleOp module, StateProvider states) : module(module), states(std::move(states)) {}

llvm::Expected<std::vector<Tensor>> Interpreter::run(llvm::StringRef entry, llvm::ArrayRef<Tensor> arguments) {
  statistics = RunStatistics();
  auto func = module.lookupSymbol<func::FuncOp>(entry);
  if (!func)
    return makeError("no func.func @" + entry + " in the module");
  if (func.isExternal())
    return makeError("@" + entry + " has no body");
  if (!func.getBody().hasOneBlock())
    return makeError("@" + entry + " has more than one block; control flow is not supported");
  if (arguments.size() != func.getNumArguments())
    return makeError("@" + entry + " takes " + llvm::Twine(func.getNumArguments()) + " arguments, got " +
                     llvm::Twine(arguments.size()));

  Evaluation evaluation(states, statistics);
  Block &block = func.getBody().front();
  for (auto [i, argument] : llvm::enumerate(block.getArguments())) {
    auto type = llvm::dyn_cast<RankedTensorType>(argument.getType());
    if (!type || !arguments[i].hasType(type))
      return makeError("argument " + llvm::Twine(i) + " of @" + entry + " is " + typeString(argument.getType()) +
                       ", got " + arguments[i].getTypeString());
    evaluation.bind(argument, arguments[i]);
  }
  std::vector<Tensor> returned;
  for (Operation &op : block)
    if (llvm::Error error = evaluation.eval(&op, returned))
      return std::move(error);
  return returned;
}
