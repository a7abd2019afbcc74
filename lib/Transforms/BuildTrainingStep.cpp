//===- BuildTrainingStep.cpp - loss, gradients, optimizer ---------*- C++ -*-===//
//
// --ptrain-build-training-step: see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Transforms/Autodiff.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "ptrain-build-training-step"

namespace mlir::ptrain {
#define GEN_PASS_DEF_BUILDTRAININGSTEPPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {

struct BuildTrainingStepPass : public ptrain::impl::BuildTrainingStepPassBase<BuildTrainingStepPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  /// Checks `@entry(%tokens: B x S x int) -> B x S x V x float`.
  LogicalResult checkForward(func::FuncOp forward);
  /// Adds `ptrain.state` @name key `key` kind `kind` of `type` after `anchor`.
  StateOp addState(OpBuilder &b, Location loc, StringRef name, StringRef key, StateKind kind, RankedTensorType type);
};

} // namespace

LogicalResult BuildTrainingStepPass::checkForward(func::FuncOp forward) {
  FunctionType type = forward.getFunctionType();
  auto fail = [&]() {
    return emitError(forward.getLoc()) << "the training step needs @" << forward.getSymName()
                               << " to take token ids [batch, seq] and return logits [batch, seq, vocab], got "
                               << type;
  };
  if (type.getNumInputs() != 1 || type.getNumResults() != 1)
    return fail();
  auto tokens = dyn_cast<RankedTensorType>(type.getInput(0));
  auto logits = dyn_cast<RankedTensorType>(type.getResult(0));
  if (!tokens || !logits || tokens.getRank() != 2 || !tokens.getElementType().isSignlessInteger() ||
      logits.getRank() != 3 || !isa<FloatType>(logits.getElementType()) ||
      logits.getShape().drop_back() != tokens.getShape() || tokens.getDimSize(1) < 2)
    return fail();
  return success();
}

StateOp BuildTrainingStepPass::addState(OpBuilder &b, Location loc, StringRef name, StringRef key,
                                        StateKind kind, RankedTensorType type) {
  return StateOp::create(b, loc, name, key, kind, type);
}

void BuildTrainingStepPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  auto forward = symbols.lookup<func::FuncOp>(entry);
  if (!forward) {
    emitError(module.getLoc()) << "--ptrain-build-training-step: no function @" << entry;
    return signalPassFailure();
  }
  if (failed(checkForward(forward)))
    return signalPassFailure();
  if (optimizer != "adamw" && optimizer != "none") {
    emitError(module.getLoc()) << "--ptrain-build-training-step: optimizer must be adamw or none, got '" << optimizer
                       << "'";
    return signalPassFailure();
  }
  if (symbols.lookup("train_step")) {
    emitError(module.getLoc()) << "--ptrain-build-training-step: the module already has a @train_step";
    return signalPassFailure();
  }

  Location loc = forward.getLoc();
  OpBuilder b(module.getContext());
  auto tokensType = cast<RankedTensorType>(forward.getArgumentTypes()[0]);
  auto logitsType = cast<RankedTensorType>(forward.getResultTypes()[0]);
  Type f32 = logitsType.getElementType();

  // @train_step(%tokens) with the forward cloned into it.
  b.setInsertionPointAfter(forward);
  auto step = func::FuncOp::create(b, loc, "train_step", b.getFunctionType({tokensType}, {}));
  step.setArgAttr(0, "ptrain.onnx_name", forward.getArgAttr(0, "ptrain.onnx_name"));
  Block *body = step.addEntryBlock();
  IRMapping mapping;
  mapping.map(forward.getArgument(0), body->getArgument(0));
  b.setInsertionPointToStart(body);
  Value logits;
  for (Operation &op : forward.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      logits = mapping.lookup(ret.getOperand(0));
      break;
    }
    b.clone(op, mapping);
  }

  // Next-token loss: positions 0..S-2 predict tokens 1..S-1.
  int64_t batch = tokensType.getDimSize(0), seq = tokensType.getDimSize(1), vocab = logitsType.getDimSize(2);
  Value predicted = SliceOp::create(b, loc, logits, b.getDenseI64ArrayAttr({0, 0, 0}),
                                    b.getDenseI64ArrayAttr({batch, seq - 1, vocab}));
  Value labels = SliceOp::create(b, loc, body->getArgument(0), b.getDenseI64ArrayAttr({0, 1}),
                                 b.getDenseI64ArrayAttr({batch, seq - 1}));
  Value loss = CrossEntropyOp::create(b, loc, predicted, labels);

  // Parameters: every read of a parameter state (the tied embedding is one symbol, read once per step).
  SmallVector<StateReadOp> reads;
  body->walk([&](StateReadOp read) {
    auto state = symbols.lookup<StateOp>(read.getState());
    if (state && state.getKind() == StateKind::Parameter)
      reads.push_back(read);
  });
  SmallVector<Value> params = llvm::to_vector(llvm::map_range(reads, [](StateReadOp r) -> Value { return r; }));
  auto seedType = RankedTensorType::get({}, f32);
  Value seed = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(seedType, b.getFloatAttr(f32, 1.0)));
  int64_t built = 0;
  FailureOr<SmallVector<Value>> grads = buildGradients(b, loss, seed, params, &built);
  if (failed(grads))
    return signalPassFailure();
  numParameters = params.size();
  numBackwardOps = built;

  if (optimizer == "none") {
    SmallVector<Value> results = {loss};
    llvm::append_range(results, *grads);
    func::ReturnOp::create(b, loc, results);
    step.setType(b.getFunctionType({tokensType}, ValueRange(results).getTypes()));
    for (auto [i, read] : llvm::enumerate(reads)) {
      auto state = symbols.lookup<StateOp>(read.getState());
      step.setResultAttr(i + 1, "ptrain.grad_of", state.getKeyAttr());
    }
    return;
  }

  // AdamW: moments per parameter and one step counter, new state symbols beside the parameters.
  OpBuilder stateBuilder(module.getContext());
  stateBuilder.setInsertionPoint(forward);
  auto counterType = RankedTensorType::get({}, b.getI64Type());
  StateOp counter = addState(stateBuilder, loc, "step", "step", StateKind::StepCounter, counterType);
  symbols.insert(counter);
  Value t = StateReadOp::create(b, loc, counterType, counter.getSymName());
  Value one = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(counterType, b.getI64IntegerAttr(1)));
  Value next = BinaryOp::create(b, loc, BinaryKind::Add, t, one);
  StateWriteOp::create(b, loc, next, counter.getSymName());
  auto schedule = LRScheduleAttr::get(module.getContext(), b.getF64FloatAttr(lr), warmupSteps, totalSteps,
                                      b.getF64FloatAttr(minLrRatio));
  for (auto [read, grad] : llvm::zip(reads, *grads)) {
    auto param = symbols.lookup<StateOp>(read.getState());
    auto type = param.getTensorType();
    StateOp m = addState(stateBuilder, param.getLoc(), (param.getSymName() + ".adam_m").str(),
                         (param.getKey() + "/adam_m").str(), StateKind::OptimizerMoment, type);
    symbols.insert(m);
    StateOp v = addState(stateBuilder, param.getLoc(), (param.getSymName() + ".adam_v").str(),
                         (param.getKey() + "/adam_v").str(), StateKind::OptimizerMoment, type);
    symbols.insert(v);
    Value mv = StateReadOp::create(b, loc, type, m.getSymName());
    Value vv = StateReadOp::create(b, loc, type, v.getSymName());
    double decay = type.getRank() >= 2 ? static_cast<double>(weightDecay) : 0.0;
    auto update = AdamWOp::create(b, read.getLoc(), type, type, type, read, grad, mv, vv, next, schedule,
                                  b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2), b.getF64FloatAttr(epsilon),
                                  b.getF64FloatAttr(decay));
    StateWriteOp::create(b, loc, update.getNewParam(), param.getSymName());
    StateWriteOp::create(b, loc, update.getNewM(), m.getSymName());
    StateWriteOp::create(b, loc, update.getNewV(), v.getSymName());
  }
  func::ReturnOp::create(b, loc, loss);
  step.setType(b.getFunctionType({tokensType}, {loss.getType()}));
}
