//===- BuildTrainingStep.cpp - loss, gradients, optimizer ---------*- C++ -*-===//
//
// --ptrain-build-training-step: see the pass description in Passes.td. One function for a single stage
// (@train_step), or per pipeline stage after --ptrain-split-stages.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Transforms/Passes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.h"
#include "ptrain/Transforms/Autodiff.h"
#include "ptrain/Transforms/DeterministicSum.h"
#include "ptrain/Transforms/DistributedOptimizer.h"
#include "ptrain/Transforms/DropoutRows.h"
#include "ptrain/Transforms/GradientClipping.h"
#include "ptrain/Transforms/MixedPrecision.h"
#include "ptrain/Transforms/StepLoss.h"
#include "ptrain/Transforms/TensorParallel.h"
#include "ptrain/Transforms/LossScaling.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

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
  /// Builds the step in fp32 (runOnOperation places the casts of `precision` afterwards).
  void build();

private:
  /// The forward ops that cloneBody cloned into the functions this pass builds (the recomputed forward of each
  /// backward, the single-stage step's forward): where placeHalfActivationCasts rounds activations, never in the
  /// gradient ops that follow.
  llvm::SmallPtrSet<Operation *, 32> forwardOps;
  /// Checks `@entry(%tokens: B x S x int [, %labels: B x S x int]) -> B x S x V x float`, the labels marked
  /// `ptrain.role = "labels"` (the importer's --signature).
  LogicalResult checkForward(func::FuncOp forward);
  /// Clones `from`'s body (without its return) into `b`'s block, with `args` for its arguments; returns the
  /// clones of the returned values. The clones are recorded in `forwardOps`.
  SmallVector<Value> cloneBody(OpBuilder &b, func::FuncOp from, ValueRange args);
  /// The next-token cross-entropy of `logits` [B, S, V] against `tokens` [B, S] (reduction "sum" with `sum`).
  Value buildNextTokenLoss(OpBuilder &b, Location loc, Value logits, Value tokens, bool sum = false);
  /// The step's loss of `logits` [B, S, V]: against `labels` [B, S] position by position (explicit labels)
  /// or the next-token loss of the token ids `labels`; with the loss options (ignore-index, class-weights).
  /// Null after an error.
  Value buildLoss(OpBuilder &b, Location loc, Value logits, Value labels, bool explicitLabels, bool sum = false);
  /// The labels the loss scores for the token ids or labels `labels` [B, S]: as they are (explicit labels) or
  /// the shifted tokens 1..S-1.
  Value lossLabels(OpBuilder &b, Location loc, Value labels, bool explicitLabels);
  /// The reads of parameter states in `block`.
  SmallVector<StateReadOp> parameterReads(Block *block);
  /// Differentiates `target` (seeded with `seed`) with respect to the parameter reads and `extraWrt`;
  /// returns the gradients in that order.
  FailureOr<SmallVector<Value>> differentiate(OpBuilder &b, Value target, Value seed, ArrayRef<StateReadOp> reads,
                                              ArrayRef<Value> extraWrt);
  /// A state symbol `name` (inserted before `anchor` and into the symbol table) unless it exists.
  StateOp getOrAddState(OpBuilder &b, Operation *anchor, StringRef name, StringRef key, StateKind kind,
                        RankedTensorType type);
  /// step = step + 1 on the `step` counter; returns the new value.
  Value incrementStep(OpBuilder &b, Location loc, Operation *anchor);
  /// The step count the optimizer reads (the learning-rate schedule, AdamW's bias correction): `t`, the
  /// iteration's, without loss scaling; under fp16 (`skipStep` set) the optimizer-only counter
  /// `@optimizer_step` + 1, written back unless the step is skipped (Megatron-LM's optimizer.step() returns
  /// early on an overflow, and its scheduler steps only on a successful update).
  Value optimizerStepCount(OpBuilder &b, Location loc, Operation *anchor, Value t);
  /// Rejects optimizer options that make no optimizer: the schedule (lr, warm-up, total, min ratio) and weight
  /// decay; AdamW's betas and epsilon; SGD's momentum. The error names the option.
  LogicalResult checkOptimizerOptions(ModuleOp module);
  /// Rejects fp16 loss-scaler options (initial-loss-scale, min-loss-scale, loss-scale-window, hysteresis) that
  /// make no scaler, or that are set with a precision other than fp16 (bf16 and fp32 have no scaler). The error
  /// names the options.
  LogicalResult checkLossScaleOptions(ModuleOp module, Precision parsed);
  /// Rejects a ZeRO stage this pass does not build: zero must be 0 or 1, and zero=1 needs optimizer=adamw and
  /// dp > 1 (nothing to shard otherwise).
  LogicalResult checkZeroOptions(ModuleOp module);
  /// The clip scale of the gradients `grads` of `params`, the parameters this rank counts (global-norm
  /// clipping, clip-norm > 0), over the grid axes `axes`: a tp-sliced parameter (or any, when tp = 1) counts
  /// in full, a replicated one 1 / tp.
  Value buildClipScale(OpBuilder &b, Location loc, ArrayRef<StateOp> params, ArrayRef<Value> grads, int64_t tp,
                       GridOp grid, ArrayRef<StringRef> axes);
  /// AdamW on parameter `param` with gradient `grad` at step `t`; writes parameter and moments back.
  void buildAdamW(OpBuilder &b, Location loc, Operation *anchor, StateOp param, Value value, Value grad, Value t);
  /// SGD (momentum > 0: with a momentum buffer state `<param>/sgd_momentum`) on `param`; writes them back.
  void buildSGD(OpBuilder &b, Location loc, Operation *anchor, StateOp param, Value value, Value grad, Value t);
  /// The optimizer's update (adamw or sgd) of `param` with gradient `grad` at step `t`.
  void buildUpdate(OpBuilder &b, Location loc, Operation *anchor, StateOp param, Value value, Value grad, Value t) {
    if (optimizer == "sgd")
      return buildSGD(b, loc, anchor, param, value, grad, t);
    buildAdamW(b, loc, anchor, param, value, grad, t);
  }
  /// The learning-rate schedule of the options.
  LRScheduleAttr schedule(OpBuilder &b) {
    return LRScheduleAttr::get(b.getContext(), b.getF64FloatAttr(lr), warmupSteps, totalSteps,
                               b.getF64FloatAttr(minLrRatio));
  }

  /// Averages the gradient accumulators of `params` over the grid axis dp in buckets of at most bucket-bytes
  /// (in the order given), all started before the first wait, and writes the averages back.
  void buildDataParallelAllReduce(OpBuilder &b, Location loc, GridOp grid, ArrayRef<StateOp> params,
                                  llvm::function_ref<StateOp(StateOp)> gradState);

  /// The transfers of the tied-parameter sync among holders that one stage has posted (buildHolderSync).
  struct HolderSync {
    struct Param {
      StateOp param;
      SmallVector<int64_t> holders; ///< the stages that hold it, in increasing order
      SmallVector<Value> received;  ///< per holder: the receive's request, or the local gradient (this stage)
      SmallVector<Value> sends;     ///< the send requests
    };
    SmallVector<Param> params;
  };
  /// Stage `stage`'s part of summing each tied parameter's gradient among the stages that hold it (`syncs`,
  /// the same list in the same order on every stage): point-to-point along pp, each holder sends its
  /// gradient to every other holder and receives theirs (tag kHolderSyncTag + the parameter's index in
  /// `syncs`), all posted before any wait, so the stages may sync several groups in any order.
  HolderSync buildHolderSync(OpBuilder &b, Location loc, GridOp grid, int64_t stage,
                             ArrayRef<std::pair<StateOp, SmallVector<int64_t>>> syncs,
                             llvm::function_ref<StateOp(StateOp)> gradState);
  /// Waits on `posted`'s transfers and writes each gradient as the sum over its holders in holder order
  /// (the same additions on every holder: the copies stay bit-equal).
  void finishHolderSync(OpBuilder &b, Location loc, const HolderSync &posted,
                        llvm::function_ref<StateOp(StateOp)> gradState);

  void buildSingleStage(func::FuncOp forward);
  /// With `explicitLabels`, the last stage scores the labels it is given (the forward's `ptrain.role =
  /// "labels"` argument) instead of the shifted token ids.
  void buildPipeline(PipelineAttr pipeline, bool explicitLabels);

  /// Writes an optimizer result `updated` to `state`; on a step that fp16's loss scaler skips (`skipStep`
  /// set), the state's value before the update, `old`, where the skip condition holds.
  void writeUpdate(OpBuilder &b, Location loc, Value updated, Value old, StringRef state) {
    StateWriteOp::create(b, loc, skipStep ? keepOnSkip(b, loc, skipStep, old, updated) : updated, state);
  }
  /// fp16's loss scaling (docs/MixedPrecision.md, "The loss scaler in the step"), before the optimizer of one
  /// optimizer step: unscales `grads` in place, sums the overflow flags over `axes` of `grid`, sets `skipStep`
  /// and updates the scaler state. Nothing without loss scaling.
  void buildUnscale(OpBuilder &b, Location loc, MutableArrayRef<Value> grads, GridOp grid, ArrayRef<StringRef> axes);
  /// The loss gradient's seed `seed` times the loss scale (fp16), or `seed`.
  Value scaleSeed(OpBuilder &b, Location loc, Value seed) {
    if (!lossScaling)
      return seed;
    return BinaryOp::create(b, loc, BinaryKind::Mul, seed, buildLossScale(b, loc, lossScale));
  }
  /// Declares the scaler's state (fp16).
  void addLossScalerState(OpBuilder &b, Operation *anchor) {
    if (lossScaling)
      getOrAddState(b, anchor, kLossScalerState, kLossScalerState, StateKind::StepCounter,
                    getLossScalerType(b.getContext()));
  }

  SymbolTable *symbols = nullptr;
  StepLossOptions lossOptions;
  /// precision=fp16 with an optimizer: the step scales the loss and skips on overflow.
  bool lossScaling = false;
  LossScaleOptions lossScale;
  /// The skip condition of the optimizer step being built (rank-0 i1), null without loss scaling.
  Value skipStep;
};

} // namespace

LogicalResult BuildTrainingStepPass::checkForward(func::FuncOp forward) {
  FunctionType type = forward.getFunctionType();
  auto fail = [&]() {
    InFlightDiagnostic diag = emitError(forward.getLoc())
                              << "the training step needs @" << forward.getSymName()
                              << " to take token ids [batch, seq] and return logits [batch, seq, vocab], got " << type;
    // An export with an attention mask, positions or past state: the importer's --signature fixes them.
    if (type.getNumInputs() > 1 || type.getNumResults() > 1)
      diag << "; import an export with more inputs or outputs with --signature (e.g. --signature auto; "
              "docs/ImportONNX.md)";
    return diag;
  };
  if (type.getNumInputs() == 2) {
    auto role = forward.getArgAttrOfType<StringAttr>(1, "ptrain.role");
    auto labels = dyn_cast<RankedTensorType>(type.getInput(1));
    if (!role || role.getValue() != "labels")
      return fail();
    if (!labels || !labels.getElementType().isSignlessInteger() || labels.getElementType().isInteger(1) ||
        labels.getShape() != cast<RankedTensorType>(type.getInput(0)).getShape())
      return emitError(forward.getLoc()) << "the training step needs @" << forward.getSymName()
                                         << "'s labels to be integer class ids of the token ids' shape "
                                         << type.getInput(0) << ", got " << type.getInput(1);
  } else if (type.getNumInputs() != 1) {
    return fail();
  }
  if (type.getNumResults() != 1)
    return fail();
  auto tokens = dyn_cast<RankedTensorType>(type.getInput(0));
  auto logits = dyn_cast<RankedTensorType>(type.getResult(0));
  if (!tokens || !logits || tokens.getRank() != 2 || !tokens.getElementType().isSignlessInteger() ||
      logits.getRank() != 3 || !isa<FloatType>(logits.getElementType()) ||
      logits.getShape().drop_back() != tokens.getShape())
    return fail();
  // (Zero-size and length-1 inputs: a step with nothing to train on, or a next-token loss with nothing to
  // predict.)
  if (tokens.getDimSize(0) == 0)
    return emitError(forward.getLoc()) << "the training step needs @" << forward.getSymName()
                                       << "'s token ids to have a batch of at least 1, got " << tokens;
  if (tokens.getDimSize(1) < 2)
    return emitError(forward.getLoc()) << "the training step needs @" << forward.getSymName() << "'s token ids "
                                       << tokens
                                       << " to have a sequence of at least 2 tokens (a next-token loss over a "
                                          "shorter one has nothing to predict)";
  return success();
}

SmallVector<Value> BuildTrainingStepPass::cloneBody(OpBuilder &b, func::FuncOp from, ValueRange args) {
  IRMapping mapping;
  mapping.map(from.getArguments(), args);
  for (Operation &op : from.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      return llvm::to_vector(llvm::map_range(ret.getOperands(), [&](Value v) { return mapping.lookup(v); }));
    forwardOps.insert(b.clone(op, mapping));
  }
  return {};
}

Value BuildTrainingStepPass::buildNextTokenLoss(OpBuilder &b, Location loc, Value logits, Value tokens, bool sum) {
  auto logitsType = cast<RankedTensorType>(logits.getType());
  int64_t batch = logitsType.getDimSize(0), seq = logitsType.getDimSize(1), vocab = logitsType.getDimSize(2);
  // Positions 0..S-2 predict tokens 1..S-1.
  Value predicted = SliceOp::create(b, loc, logits, b.getDenseI64ArrayAttr({0, 0, 0}),
                                    b.getDenseI64ArrayAttr({batch, seq - 1, vocab}));
  Value labels = lossLabels(b, loc, tokens, /*explicitLabels=*/false);
  if (lossOptions.weighted() || sum)
    return buildStepCrossEntropy(b, loc, predicted, labels, lossOptions, sum);
  return createCrossEntropy(b, loc, predicted, labels);
}

Value BuildTrainingStepPass::lossLabels(OpBuilder &b, Location loc, Value labels, bool explicitLabels) {
  if (explicitLabels)
    return labels;
  auto type = cast<RankedTensorType>(labels.getType());
  return SliceOp::create(b, loc, labels, b.getDenseI64ArrayAttr({0, 1}),
                         b.getDenseI64ArrayAttr({type.getDimSize(0), type.getDimSize(1) - 1}));
}

Value BuildTrainingStepPass::buildLoss(OpBuilder &b, Location loc, Value logits, Value labels, bool explicitLabels,
                                       bool sum) {
  if (!explicitLabels)
    return buildNextTokenLoss(b, loc, logits, labels, sum);
  if (lossOptions.weighted() || sum)
    return buildStepCrossEntropy(b, loc, logits, labels, lossOptions, sum);
  return createCrossEntropy(b, loc, logits, labels);
}

SmallVector<StateReadOp> BuildTrainingStepPass::parameterReads(Block *block) {
  SmallVector<StateReadOp> reads;
  block->walk([&](StateReadOp read) {
    auto state = symbols->lookup<StateOp>(read.getState());
    if (state && state.getKind() == StateKind::Parameter)
      reads.push_back(read);
  });
  return reads;
}

FailureOr<SmallVector<Value>> BuildTrainingStepPass::differentiate(OpBuilder &b, Value target, Value seed,
                                                                   ArrayRef<StateReadOp> reads,
                                                                   ArrayRef<Value> extraWrt) {
  SmallVector<Value> wrt = llvm::to_vector(llvm::map_range(reads, [](StateReadOp r) -> Value { return r; }));
  llvm::append_range(wrt, extraWrt);
  int64_t built = 0;
  FailureOr<SmallVector<Value>> grads = buildGradients(b, target, seed, wrt, &built);
  numBackwardOps += built;
  return grads;
}

StateOp BuildTrainingStepPass::getOrAddState(OpBuilder &b, Operation *anchor, StringRef name, StringRef key,
                                             StateKind kind, RankedTensorType type) {
  if (auto existing = symbols->lookup<StateOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(anchor);
  auto state = StateOp::create(b, anchor->getLoc(), name, key, kind, type);
  symbols->insert(state);
  return state;
}

Value BuildTrainingStepPass::incrementStep(OpBuilder &b, Location loc, Operation *anchor) {
  auto counterType = RankedTensorType::get({}, b.getI64Type());
  StateOp counter = getOrAddState(b, anchor, "step", "step", StateKind::StepCounter, counterType);
  Value t = StateReadOp::create(b, loc, counterType, counter.getSymName());
  Value one = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(counterType, b.getI64IntegerAttr(1)));
  Value next = BinaryOp::create(b, loc, BinaryKind::Add, t, one);
  // The count is the iteration's (the checkpoint's step, dropout's masks; the learning-rate schedule and AdamW
  // without fp16's loss scaler): it advances on a step that the scaler skips too, whose optimizer reads
  // optimizerStepCount (docs/MixedPrecision.md, "The optimizer-only step counter").
  StateWriteOp::create(b, loc, next, counter.getSymName());
  return next;
}

Value BuildTrainingStepPass::optimizerStepCount(OpBuilder &b, Location loc, Operation *anchor, Value t) {
  if (!skipStep)
    return t;
  auto counterType = RankedTensorType::get({}, b.getI64Type());
  StateOp counter =
      getOrAddState(b, anchor, kOptimizerStepState, kOptimizerStepState, StateKind::StepCounter, counterType);
  Value old = StateReadOp::create(b, loc, counterType, counter.getSymName());
  Value one = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(counterType, b.getI64IntegerAttr(1)));
  Value next = BinaryOp::create(b, loc, BinaryKind::Add, old, one);
  StateWriteOp::create(b, loc, keepOnSkip(b, loc, skipStep, old, next), counter.getSymName());
  return next;
}

void BuildTrainingStepPass::buildAdamW(OpBuilder &b, Location loc, Operation *anchor, StateOp param, Value value,
                                       Value grad, Value t) {
  auto type = param.getTensorType();
  StateOp m = getOrAddState(b, anchor, (param.getSymName() + ".adam_m").str(), (param.getKey() + "/adam_m").str(),
                            StateKind::OptimizerMoment, type);
  StateOp v = getOrAddState(b, anchor, (param.getSymName() + ".adam_v").str(), (param.getKey() + "/adam_v").str(),
                            StateKind::OptimizerMoment, type);
  Value mv = StateReadOp::create(b, loc, type, m.getSymName());
  Value vv = StateReadOp::create(b, loc, type, v.getSymName());
  // Weight decay on matrices only: biases and layer-norm scales are not decayed (GPT-2, Megatron).
  double decay = type.getRank() >= 2 ? static_cast<double>(weightDecay) : 0.0;
  auto update = AdamWOp::create(b, param.getLoc(), type, type, type, value, grad, mv, vv, t, schedule(b),
                                b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2), b.getF64FloatAttr(epsilon),
                                b.getF64FloatAttr(decay));
  writeUpdate(b, loc, update.getNewParam(), value, param.getSymName());
  writeUpdate(b, loc, update.getNewM(), mv, m.getSymName());
  writeUpdate(b, loc, update.getNewV(), vv, v.getSymName());
}

void BuildTrainingStepPass::buildSGD(OpBuilder &b, Location loc, Operation *anchor, StateOp param, Value value,
                                     Value grad, Value t) {
  auto type = param.getTensorType();
  SmallVector<Value> operands = {value, grad, t};
  SmallVector<Type> results = {type};
  StateOp buf;
  if (momentum > 0.0) {
    buf = getOrAddState(b, anchor, (param.getSymName() + ".sgd_momentum").str(),
                        (param.getKey() + "/sgd_momentum").str(), StateKind::OptimizerMoment, type);
    operands.push_back(StateReadOp::create(b, loc, type, buf.getSymName()));
    results.push_back(type);
  }
  // Weight decay (L2) on matrices only, as for AdamW.
  double decay = type.getRank() >= 2 ? static_cast<double>(weightDecay) : 0.0;
  SmallVector<NamedAttribute> attrs = {b.getNamedAttr("schedule", schedule(b)),
                                       b.getNamedAttr("momentum", b.getF64FloatAttr(momentum)),
                                       b.getNamedAttr("weight_decay", b.getF64FloatAttr(decay))};
  auto update = SGDOp::create(b, param.getLoc(), TypeRange(results), ValueRange(operands), attrs);
  writeUpdate(b, loc, update.getNewParam(), value, param.getSymName());
  if (buf)
    writeUpdate(b, loc, update.getNewMomentumBuf(), operands.back(), buf.getSymName());
}

void BuildTrainingStepPass::buildDataParallelAllReduce(OpBuilder &b, Location loc, GridOp grid,
                                                       ArrayRef<StateOp> params,
                                                       llvm::function_ref<StateOp(StateOp)> gradState) {
  // Buckets of consecutive parameters, at most bucketBytes each (a larger parameter alone).
  SmallVector<SmallVector<StateOp>> buckets;
  int64_t filled = 0;
  for (StateOp param : params) {
    RankedTensorType type = param.getTensorType();
    int64_t bytes = type.getNumElements() * static_cast<int64_t>(type.getElementTypeBitWidth() / 8);
    if (buckets.empty() || filled + bytes > bucketBytes) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(param);
    filled += bytes;
  }
  numBuckets += buckets.size();
  SmallVector<Value> requests;
  for (SmallVector<StateOp> &bucket : buckets) {
    Value flat;
    if (deterministicDp && bucket.size() == 1) {
      // deterministic-dp: gathered along dimension 0 of a 1-D view (the replicas' sums back to back).
      RankedTensorType type = bucket[0].getTensorType();
      flat = StateReadOp::create(b, loc, type, gradState(bucket[0]).getSymName());
      if (type.getRank() != 1)
        flat = ReshapeOp::create(b, loc, RankedTensorType::get({type.getNumElements()}, type.getElementType()), flat);
    } else if (bucket.size() == 1) {
      flat = StateReadOp::create(b, loc, bucket[0].getTensorType(), gradState(bucket[0]).getSymName());
    } else {
      SmallVector<Value> pieces;
      int64_t total = 0;
      for (StateOp param : bucket) {
        RankedTensorType type = param.getTensorType();
        Value grad = StateReadOp::create(b, loc, type, gradState(param).getSymName());
        auto flatType = RankedTensorType::get({type.getNumElements()}, type.getElementType());
        pieces.push_back(type.getRank() == 1 ? grad : Value(ReshapeOp::create(b, loc, flatType, grad)));
        total += type.getNumElements();
      }
      auto bucketType = RankedTensorType::get({total}, bucket[0].getTensorType().getElementType());
      flat = ConcatOp::create(b, loc, bucketType, pieces, b.getI64IntegerAttr(0));
    }
    if (deterministicDp) {
      // The replicas' partial sums in replica order, added by pairwiseSum after the wait (DeterministicSum.h).
      auto flatType = cast<RankedTensorType>(flat.getType());
      auto gathered = RankedTensorType::get({flatType.getDimSize(0) * dp}, flatType.getElementType());
      auto start = AllGatherStartOp::create(b, bucket[0].getLoc(), RequestType::get(b.getContext(), gathered), flat,
                                            grid.getSymName(), b.getStrArrayAttr({"dp"}), 0);
      requests.push_back(start.getRequest());
      continue;
    }
    auto start = AllReduceStartOp::create(b, bucket[0].getLoc(), flat, grid.getSymName(), b.getStrArrayAttr({"dp"}),
                                          ReductionKind::Avg);
    requests.push_back(start.getRequest());
  }
  for (auto [bucket, request] : llvm::zip(buckets, requests)) {
    Value averaged = WaitOp::create(b, loc, request).getResult();
    if (deterministicDp) {
      int64_t n = cast<RankedTensorType>(averaged.getType()).getDimSize(0) / dp;
      SmallVector<Value> partials;
      for (int64_t d = 0; d < dp; ++d)
        partials.push_back(SliceOp::create(b, loc, averaged, b.getDenseI64ArrayAttr({d * n}),
                                           b.getDenseI64ArrayAttr({n})));
      averaged = pairwiseSum(b, loc, partials);
    }
    if (bucket.size() == 1) {
      if (deterministicDp && bucket[0].getTensorType().getRank() != 1)
        averaged = ReshapeOp::create(b, loc, bucket[0].getTensorType(), averaged);
      StateWriteOp::create(b, loc, averaged, gradState(bucket[0]).getSymName());
      continue;
    }
    SmallVector<Type> flatTypes;
    SmallVector<int64_t> sizes;
    for (StateOp param : bucket) {
      RankedTensorType type = param.getTensorType();
      flatTypes.push_back(RankedTensorType::get({type.getNumElements()}, type.getElementType()));
      sizes.push_back(type.getNumElements());
    }
    auto split = SplitOp::create(b, loc, flatTypes, averaged, b.getI64IntegerAttr(0), b.getDenseI64ArrayAttr(sizes));
    for (auto [param, piece] : llvm::zip(bucket, split.getResults())) {
      Value shaped = param.getTensorType().getRank() == 1
                         ? Value(piece)
                         : Value(ReshapeOp::create(b, loc, param.getTensorType(), piece));
      StateWriteOp::create(b, loc, shaped, gradState(param).getSymName());
    }
  }
}

/// Tags of the tied-parameter transfers among holders: above the pipeline's activation and gradient tags
/// (2 (i V + c / P) + 1 for micro-batch i, chunk c) and below MPI's smallest guaranteed MPI_TAG_UB (32767).
static constexpr int64_t kHolderSyncTag = 16384;

BuildTrainingStepPass::HolderSync
BuildTrainingStepPass::buildHolderSync(OpBuilder &b, Location loc, GridOp grid, int64_t stage,
                                       ArrayRef<std::pair<StateOp, SmallVector<int64_t>>> syncs,
                                       llvm::function_ref<StateOp(StateOp)> gradState) {
  HolderSync posted;
  for (auto [index, sync] : llvm::enumerate(syncs)) {
    StateOp param = sync.first;
    const SmallVector<int64_t> &holders = sync.second;
    if (!llvm::is_contained(holders, stage))
      continue;
    HolderSync::Param p{param, llvm::to_vector(holders), {}, {}};
    llvm::sort(p.holders);
    auto type = param.getTensorType();
    Value local = StateReadOp::create(b, loc, type, gradState(param).getSymName());
    auto tag = b.getI64IntegerAttr(kHolderSyncTag + static_cast<int64_t>(index));
    for (int64_t h : p.holders) {
      if (h == stage) {
        p.received.push_back(local);
        continue;
      }
      auto send = SendStartOp::create(b, param.getLoc(), RequestType::get(b.getContext()), local, grid.getSymName(),
                                      "pp", h - stage);
      send->setAttr("ptrain.tag", tag);
      p.sends.push_back(send.getRequest());
      auto recv = RecvStartOp::create(b, param.getLoc(), RequestType::get(b.getContext(), type), grid.getSymName(),
                                      "pp", h - stage);
      recv->setAttr("ptrain.tag", tag);
      p.received.push_back(recv.getRequest());
    }
    posted.params.push_back(std::move(p));
  }
  return posted;
}

void BuildTrainingStepPass::finishHolderSync(OpBuilder &b, Location loc, const HolderSync &posted,
                                             llvm::function_ref<StateOp(StateOp)> gradState) {
  for (const HolderSync::Param &p : posted.params) {
    StateOp param = p.param;
    Value sum;
    for (Value part : p.received) {
      if (isa<RequestType>(part.getType()))
        part = WaitOp::create(b, param.getLoc(), part).getResult();
      sum = sum ? Value(BinaryOp::create(b, loc, BinaryKind::Add, sum, part)) : part;
    }
    for (Value send : p.sends)
      WaitOp::create(b, param.getLoc(), send);
    StateWriteOp::create(b, loc, sum, gradState(param).getSymName());
  }
}

void BuildTrainingStepPass::buildSingleStage(func::FuncOp forward) {
  Location loc = forward.getLoc();
  OpBuilder b(forward.getContext());
  TypeRange inputTypes = forward.getArgumentTypes();
  Type f32 = cast<RankedTensorType>(forward.getResultTypes()[0]).getElementType();

  b.setInsertionPointAfter(forward);
  auto step = func::FuncOp::create(b, loc, "train_step", b.getFunctionType(inputTypes, {}));
  for (unsigned i = 0; i < inputTypes.size(); ++i)
    if (Attribute name = forward.getArgAttr(i, "ptrain.onnx_name"))
      step.setArgAttr(i, "ptrain.onnx_name", name);
  Block *body = step.addEntryBlock();
  b.setInsertionPointToStart(body);
  Value logits = cloneBody(b, forward, body->getArguments()).front();
  // With labels, every position is scored against its label; otherwise position i predicts token i + 1.
  const bool explicitLabels = body->getNumArguments() == 2;
  Value loss = buildLoss(b, loc, logits, body->getArgument(explicitLabels ? 1 : 0), explicitLabels);
  if (!loss)
    return signalPassFailure();

  SmallVector<StateReadOp> reads = parameterReads(body);
  auto seedType = RankedTensorType::get({}, f32);
  Value seed = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(seedType, b.getFloatAttr(f32, 1.0)));
  if (optimizer != "none") {
    addLossScalerState(b, forward);
    seed = scaleSeed(b, loc, seed);
  }
  FailureOr<SmallVector<Value>> grads = differentiate(b, loss, seed, reads, {});
  if (failed(grads))
    return signalPassFailure();
  numParameters = reads.size();

  if (optimizer == "none") {
    SmallVector<Value> results = {loss};
    llvm::append_range(results, *grads);
    func::ReturnOp::create(b, loc, results);
    step.setType(b.getFunctionType(inputTypes, ValueRange(results).getTypes()));
    for (auto [i, read] : llvm::enumerate(reads))
      step.setResultAttr(i + 1, "ptrain.grad_of", symbols->lookup<StateOp>(read.getState()).getKeyAttr());
    return;
  }
  SmallVector<StateOp> params = llvm::to_vector(
      llvm::map_range(reads, [&](StateReadOp read) { return symbols->lookup<StateOp>(read.getState()); }));
  // One stage: only tp (after --ptrain-shard-tp) partitions the model.
  GridOp tpGrid;
  for (auto g : getOperation().getOps<GridOp>())
    if (g.getAxisIndex("tp"))
      tpGrid = g;
  int64_t tp = tpGrid ? tpGrid.getAxisSize("tp") : 1;
  SmallVector<StringRef> axes;
  if (tp > 1)
    axes.push_back("tp");
  buildUnscale(b, loc, *grads, tpGrid, axes);
  if (clipNorm > 0.0) {
    Value scale = buildClipScale(b, loc, params, *grads, tp, tpGrid, axes);
    for (Value &grad : *grads)
      grad = scaleGradient(b, loc, grad, scale);
  }
  Value t = optimizerStepCount(b, loc, forward, incrementStep(b, loc, forward));
  for (auto [read, param, grad] : llvm::zip(reads, params, *grads))
    buildUpdate(b, loc, forward, param, read, grad, t);
  skipStep = nullptr;
  func::ReturnOp::create(b, loc, loss);
  step.setType(b.getFunctionType(inputTypes, {loss.getType()}));
}

void BuildTrainingStepPass::buildPipeline(PipelineAttr pipeline, bool explicitLabels) {
  ModuleOp module = getOperation();
  ArrayRef<FlatSymbolRefAttr> stages = pipeline.getStages();
  if (optimizer != "adamw" && optimizer != "sgd") {
    emitError(module.getLoc()) << "--ptrain-build-training-step: a pipeline needs optimizer=adamw or sgd";
    return signalPassFailure();
  }
  if (microBatches < 1) {
    emitError(module.getLoc()) << "--ptrain-build-training-step: micro-batches must be >= 1, got "
                               << microBatches.getValue();
    return signalPassFailure();
  }
  // Virtual stages (chunks) of the interleaved schedule: chunk c runs on rank c mod pp (pp x virtual_stages
  // stage functions, #ptrain.pipeline's C3).
  const int64_t numChunks = pipeline.getNumStageFunctions();
  const int64_t numStages = pipeline.getPp();
  const bool interleaved = numChunks > numStages;
  // A second run would add a second @stage0_backward (the verifier's "redefinition of symbol" and a dump of
  // the whole function): the step of a split module is built once.
  for (StringRef built : {"stage0_backward", "stage0_forward_backward", "stage0_optimizer_step"})
    if (symbols->lookup(built)) {
      emitError(module.getLoc()) << "--ptrain-build-training-step: the pipeline's training step is already built "
                                    "(the module has @"
                                 << built << ")";
      return signalPassFailure();
    }
  SmallVector<func::FuncOp> forwards;
  for (FlatSymbolRefAttr stage : stages) {
    auto fn = symbols->lookup<func::FuncOp>(stage.getValue());
    if (!fn || fn.getNumArguments() != 1 || fn.getNumResults() != 1) {
      emitError(module.getLoc()) << "--ptrain-build-training-step: pipeline stage " << stage
                                 << " is not a one-input, one-output function";
      return signalPassFailure();
    }
    forwards.push_back(fn);
  }
  OpBuilder b(module.getContext());
  Operation *anchor = &module.getBody()->front();
  Location loc = forwards.front().getLoc();
  auto tokensType = cast<RankedTensorType>(forwards.front().getArgumentTypes()[0]);
  auto logitsType = dyn_cast<RankedTensorType>(forwards.back().getResultTypes()[0]);
  if (!logitsType || logitsType.getRank() != 3) {
    emitError(module.getLoc()) << "--ptrain-build-training-step: the last stage must return logits";
    return signalPassFailure();
  }
  Type f32 = logitsType.getElementType();

  if (dp < 1 || bucketBytes < 0) {
    emitError(module.getLoc()) << "--ptrain-build-training-step: dp must be >= 1 and bucket-bytes >= 0, got dp = "
                               << dp.getValue() << ", bucket-bytes = " << bucketBytes.getValue();
    return signalPassFailure();
  }
  // deterministic-dp (DeterministicSum.h): a complete pairwise tree over the D M micro-batches, each replica's M
  // a subtree; one gradient per micro-batch and rank (a chunk of its own).
  if (deterministicDp) {
    std::string why;
    if (dp < 1 || microBatches < 1 || !llvm::isPowerOf2_64(dp) || !llvm::isPowerOf2_64(microBatches))
      why = "dp = " + std::to_string(dp) + " and micro-batches = " + std::to_string(microBatches) +
            " must be powers of two (the pairwise tree over the global micro-batches)";
    else if (interleaved)
      why = "the interleaved schedule (a rank adds the gradients of several model chunks) is not supported";
    if (!why.empty()) {
      emitError(module.getLoc()) << "--ptrain-build-training-step: deterministic-dp: " << why;
      return signalPassFailure();
    }
  }
  // The grid: an existing one with a `pp` axis (and a `dp` axis when dp > 1) of the right sizes, or a new one.
  // After --ptrain-shard-tp the module has @grid(tp = T): it becomes @grid(dp = D, pp = P, tp = T), tp varying
  // fastest, and the tp collectives of the forward keep naming @grid.
  GridOp tpGrid;
  int64_t tp = 1;
  for (auto g : module.getOps<GridOp>())
    if (g.getAxisIndex("tp")) {
      tpGrid = g;
      tp = g.getAxisSize("tp");
    }
  GridOp grid;
  for (auto g : module.getOps<GridOp>())
    if (g.getAxisIndex("pp") && g.getAxisSize("pp") == numStages &&
        (dp == 1 || (g.getAxisIndex("dp") && g.getAxisSize("dp") == dp)) &&
        (tp == 1 || (g.getAxisIndex("tp") && g.getAxisSize("tp") == tp)))
      grid = g;
  if (!grid) {
    if (tpGrid) {
      if (tpGrid.getAxisNames().size() != 1 || tpGrid.getSymName() != "grid") {
        tpGrid.emitError("--ptrain-build-training-step: expected the @grid(tp = N) of --ptrain-shard-tp");
        return signalPassFailure();
      }
      symbols->erase(tpGrid);
      anchor = &module.getBody()->front();
    }
    SmallVector<StringRef> names;
    SmallVector<int64_t> shape;
    if (dp > 1) {
      names.push_back("dp");
      shape.push_back(dp);
    }
    names.push_back("pp");
    shape.push_back(numStages);
    if (tp > 1) {
      names.push_back("tp");
      shape.push_back(tp);
    }
    b.setInsertionPoint(anchor);
    grid = GridOp::create(b, loc, "grid", b.getStrArrayAttr(names), b.getDenseI64ArrayAttr(shape));
    symbols->insert(grid);
  }

  // Which stages (ranks) read each parameter: a parameter read by several stages (the tied embedding) is
  // synced; the parameters of each stage in order of first use over its chunks.
  llvm::StringMap<SmallVector<int64_t>> readers;
  SmallVector<SmallVector<StateOp>> held(numStages);
  for (auto [c, fn] : llvm::enumerate(forwards)) {
    int64_t s = static_cast<int64_t>(c) % numStages;
    for (StateReadOp read : parameterReads(&fn.getBody().front())) {
      if (!llvm::is_contained(readers[read.getState()], s))
        readers[read.getState()].push_back(s);
      auto param = symbols->lookup<StateOp>(read.getState());
      if (!llvm::is_contained(held[s], param))
        held[s].push_back(param);
    }
  }

  auto gradState = [&](StateOp param) {
    return getOrAddState(b, anchor, (param.getSymName() + ".grad").str(), (param.getKey() + "/grad").str(),
                         StateKind::Gradient, param.getTensorType());
  };

  // Each stage function runs once per micro-batch: its dropout masks are keyed by the global batch row
  // (micro-batch and replica), so they are the one-rank step's (DropoutRows.h).
  keyDropoutByBatchRow(module, anchor, forwards, tokensType.getDimSize(0), microBatches, dp);

  addLossScalerState(b, anchor);
  SmallVector<func::FuncOp> backwards;
  for (auto [s, forward] : llvm::enumerate(forwards)) {
    bool last = static_cast<int64_t>(s) == numChunks - 1;
    Type inType = forward.getArgumentTypes()[0], outType = forward.getResultTypes()[0];
    b.setInsertionPointAfter(forward);
    std::string prefix = "stage" + std::to_string(s);

    // Backward (or, on the last stage, forward + loss + backward) with recomputation.
    SmallVector<Type> args = {inType};
    args.push_back(last ? Type(tokensType) : outType);
    // The step's normalizer (weighted loss): the weight sum of every micro-batch and replica of the step.
    if (last && lossOptions.weighted())
      args.push_back(RankedTensorType::get({}, f32));
    SmallVector<Type> results;
    if (last)
      results.push_back(RankedTensorType::get({}, f32));
    if (s > 0)
      results.push_back(inType);
    auto bwd = func::FuncOp::create(b, loc, prefix + (last ? "_forward_backward" : "_backward"),
                                    b.getFunctionType(args, results));
    setStage(bwd, static_cast<int64_t>(s) % numStages);
    if (interleaved)
      bwd->setAttr("ptrain.virtual_stage", b.getI64IntegerAttr(s));
    backwards.push_back(bwd);
    Block *body = bwd.addEntryBlock();
    OpBuilder fb = OpBuilder::atBlockEnd(body);
    Value out = cloneBody(fb, forward, body->getArgument(0)).front();
    Value target = out, seed = body->getArgument(1);
    SmallVector<Value> returned;
    if (last) {
      auto seedType = RankedTensorType::get({}, f32);
      // The plain loss is each micro-batch's mean, seeded with 1 / M; the weighted one the micro-batch's
      // weighted sum over the step's weight sum, seeded with dp (the dp average divides by it again), or with 1
      // under deterministic-dp (the dp reduction sums).
      // deterministic-dp: every micro-batch's mean seeded with 1 / G, the global micro-batches (summed over dp).
      double seedValue = 1.0 / static_cast<double>(deterministicDp ? microBatches * dp : microBatches);
      if (lossOptions.weighted()) {
        target = buildLoss(fb, loc, out, body->getArgument(1), explicitLabels, /*sum=*/true);
        if (!target)
          return signalPassFailure();
        target = BinaryOp::create(fb, loc, BinaryKind::Div, target, body->getArgument(2));
        seedValue = deterministicDp ? 1.0 : static_cast<double>(dp);
      } else {
        target = buildLoss(fb, loc, out, body->getArgument(1), explicitLabels);
      }
      seed = arith::ConstantOp::create(fb, loc, DenseElementsAttr::get(seedType, fb.getFloatAttr(f32, seedValue)));
      seed = scaleSeed(fb, loc, seed);
      returned.push_back(target);
    }
    SmallVector<StateReadOp> reads = parameterReads(body);
    SmallVector<Value> extra;
    if (s > 0)
      extra.push_back(body->getArgument(0));
    FailureOr<SmallVector<Value>> grads = differentiate(fb, target, seed, reads, extra);
    if (failed(grads))
      return signalPassFailure();
    numParameters += reads.size();
    for (auto [read, grad] : llvm::zip(reads, *grads)) {
      StateOp acc = gradState(symbols->lookup<StateOp>(read.getState()));
      if (deterministicDp) { // The micro-batch's own gradient; --ptrain-lower-to-runtime adds them up as a tree.
        StateWriteOp::create(fb, loc, grad, acc.getSymName());
        continue;
      }
      Value old = StateReadOp::create(fb, loc, acc.getTensorType(), acc.getSymName());
      StateWriteOp::create(fb, loc, BinaryOp::create(fb, loc, BinaryKind::Add, old, grad), acc.getSymName());
    }
    if (s > 0)
      returned.push_back(grads->back());
    func::ReturnOp::create(fb, loc, returned);
    if (explicitLabels && last)
      bwd.setArgAttr(1, "ptrain.role", b.getStringAttr("labels"));
    // The micro-batch's weight sum sum(w[y]) (the lowering adds them up into the normalizer).
    if (last && lossOptions.weighted()) {
      b.setInsertionPointAfter(bwd);
      auto weightFn = func::FuncOp::create(b, loc, lossWeightFunctionName(static_cast<int64_t>(s)),
                                           b.getFunctionType({tokensType}, {RankedTensorType::get({}, f32)}));
      setStage(weightFn, static_cast<int64_t>(s) % numStages);
      OpBuilder wb = OpBuilder::atBlockEnd(weightFn.addEntryBlock());
      Value labels = lossLabels(wb, loc, weightFn.getArgument(0), explicitLabels);
      func::ReturnOp::create(wb, loc, buildLabelWeightSum(wb, loc, labels, lossOptions, cast<FloatType>(f32)));
    }
  }

  // Per stage (rank), after its last chunk: the optimizer step (dp gradient average, tied-parameter sync,
  // AdamW, zeroed accumulators).
  for (int64_t s = 0; s < numStages; ++s) {
    std::string prefix = "stage" + std::to_string(s);
    b.setInsertionPointAfter(backwards[numChunks - numStages + s]);
    auto opt = func::FuncOp::create(b, loc, prefix + "_optimizer_step", b.getFunctionType({}, {}));
    setStage(opt, s);
    OpBuilder ob = OpBuilder::atBlockEnd(opt.addEntryBlock());
    Value t = incrementStep(ob, loc, anchor);
    // ZeRO-1 shards the dp-averaged gradients, so the tied sync below runs first, on the replicas' own
    // gradients (a sum over pp, then the average over dp: the same value as the other order up to rounding).
    if (dp > 1 && zero == 0)
      buildDataParallelAllReduce(ob, loc, grid, llvm::to_vector(llvm::reverse(held[s])), gradState);
    // Tied parameters whose holders are neither all stages nor just the first and the last: summed among
    // the holders only (buildHolderSync); their transfers are posted before the all-reduces below.
    auto amongHolders = [&](ArrayRef<int64_t> stagesReading) {
      return static_cast<int64_t>(stagesReading.size()) < numStages &&
             !(stagesReading.size() == 2 && llvm::is_contained(stagesReading, 0) &&
               llvm::is_contained(stagesReading, numStages - 1));
    };
    SmallVector<std::pair<StateOp, SmallVector<int64_t>>> holderSyncs;
    for (auto &[name, stagesReading] : readers)
      if (stagesReading.size() >= 2 && amongHolders(stagesReading))
        holderSyncs.push_back({symbols->lookup<StateOp>(name), llvm::to_vector(stagesReading)});
    HolderSync posted = buildHolderSync(ob, loc, grid, s, holderSyncs, gradState);
    for (auto &[name, stagesReading] : readers) {
      if (stagesReading.size() < 2 || amongHolders(stagesReading))
        continue;
      auto param = symbols->lookup<StateOp>(name);
      auto type = param.getTensorType();
      bool holds = llvm::is_contained(stagesReading, s);
      Value local = holds ? Value(StateReadOp::create(ob, loc, type, gradState(param).getSymName()))
                          : Value(arith::ConstantOp::create(
                                ob, loc, DenseElementsAttr::get(type, ob.getFloatAttr(type.getElementType(), 0.0))));
      auto request = AllReduceStartOp::create(ob, param.getLoc(), local, grid.getSymName(), ob.getStrArrayAttr({"pp"}),
                                              ReductionKind::Sum);
      Value summed = WaitOp::create(ob, param.getLoc(), request.getRequest()).getResult();
      if (holds)
        StateWriteOp::create(ob, loc, summed, gradState(param).getSymName());
    }
    finishHolderSync(ob, loc, posted, gradState);
    // fp16: every gradient of the stage unscaled after the dp reduction and the tied sync (with ZeRO-1 each rank's
    // reduce-scattered shards, in buildShardedAdamW), the overflow flags summed over the whole grid (every dp, pp
    // and tp rank), so that all ranks skip or step alike.
    SmallVector<StringRef> scalerAxes;
    for (StringRef axis : grid.getAxisNames().getAsValueRange<StringAttr>())
      if (grid.getAxisSize(axis) > 1)
        scalerAxes.push_back(axis);
    // The optimizer step's end: under fp16 it returns the skip flag (1 skipped, 0 stepped), so that the training
    // step keeps its codec states on a skipped step (keepCodecStatesOnSkip, --ptrain-lower-to-runtime).
    auto finishOptimizerStep = [&]() {
      if (skipStep) {
        Value flag = buildSkipFlag(ob, loc, skipStep);
        func::ReturnOp::create(ob, loc, flag);
        opt.setType(ob.getFunctionType({}, {flag.getType()}));
      } else {
        func::ReturnOp::create(ob, loc);
      }
      skipStep = nullptr;
    };
    if (lossScaling && zero == 0) {
      SmallVector<Value> grads;
      for (StateOp param : held[s])
        grads.push_back(StateReadOp::create(ob, loc, param.getTensorType(), gradState(param).getSymName()));
      buildUnscale(ob, loc, grads, grid, scalerAxes);
      for (auto [param, grad] : llvm::zip(held[s], grads))
        StateWriteOp::create(ob, loc, grad, gradState(param).getSymName());
      t = optimizerStepCount(ob, loc, anchor, t);
    }
    if (zero == 1) {
      ShardedAdamWOptions options;
      options.dp = dp;
      options.bucketBytes = bucketBytes;
      options.schedule = schedule(ob);
      options.beta1 = beta1;
      options.beta2 = beta2;
      options.epsilon = epsilon;
      options.weightDecay = weightDecay;
      options.clipNorm = clipNorm;
      options.tp = tp;
      // The norm's axes: dp (the shards) and those that partition the model, in grid order.
      options.normAxes.push_back("dp");
      if (numStages > 1)
        options.normAxes.push_back("pp");
      if (tp > 1)
        options.normAxes.push_back("tp");
      auto addMoment = [&](StringRef name, StringRef key, RankedTensorType type) {
        return getOrAddState(ob, anchor, name, key, StateKind::OptimizerMoment, type);
      };
      // As buildClipScale: a tied parameter counts on the first stage holding it; a tp slice (or any parameter
      // at tp = 1) in full, a replicated one 1 / tp.
      auto normTerm = [&](StateOp param) {
        if (readers[param.getSymName()].front() != s)
          return NormTerm::Uncounted;
        return tp > 1 && !param->hasAttr(kTPSliceAttr) ? NormTerm::Replicated : NormTerm::Owned;
      };
      auto unscaleShards = [&](MutableArrayRef<Value> shards, Value &count) -> Value {
        buildUnscale(ob, loc, shards, grid, scalerAxes);
        count = optimizerStepCount(ob, loc, anchor, count);
        return skipStep;
      };
      if (lossScaling)
        options.unscale = unscaleShards;
      numBuckets += buildShardedAdamW(ob, loc, grid, s, llvm::to_vector(llvm::reverse(held[s])), gradState, addMoment,
                                      options, t, normTerm);
      for (StateOp param : held[s]) {
        auto type = param.getTensorType();
        Value zeroGrad = arith::ConstantOp::create(
            ob, loc, DenseElementsAttr::get(type, ob.getFloatAttr(type.getElementType(), 0.0)));
        StateWriteOp::create(ob, loc, zeroGrad, gradState(param).getSymName());
      }
      finishOptimizerStep();
      continue;
    }
    // Global-norm clipping of the synced gradients: every parameter of the stage, a tied one on the first
    // stage holding it only, summed over pp (and tp) and the same scale on every rank.
    Value scale;
    if (clipNorm > 0.0) {
      SmallVector<StateOp> counted;
      SmallVector<Value> grads;
      for (StateOp param : held[s])
        if (readers[param.getSymName()].front() == s) {
          counted.push_back(param);
          grads.push_back(StateReadOp::create(ob, loc, param.getTensorType(), gradState(param).getSymName()));
        }
      SmallVector<StringRef> axes;
      if (numStages > 1)
        axes.push_back("pp");
      if (tp > 1)
        axes.push_back("tp");
      scale = buildClipScale(ob, loc, counted, grads, tp, grid, axes);
    }
    // The stage's parameters in order of first use (held[s], not the hash order of `readers`): their moments
    // and updates then follow the layers, so that the generated state and optimizer tables are runs of one
    // layer's rows (include/ptrain/Target/Common/StateTable.h).
    for (StateOp param : held[s]) {
      auto type = param.getTensorType();
      StateOp acc = gradState(param);
      Value value = StateReadOp::create(ob, loc, type, param.getSymName());
      Value grad = StateReadOp::create(ob, loc, type, acc.getSymName());
      if (scale)
        grad = scaleGradient(ob, loc, grad, scale);
      buildUpdate(ob, loc, anchor, param, value, grad, t);
      Value zero =
          arith::ConstantOp::create(ob, loc, DenseElementsAttr::get(type, ob.getFloatAttr(type.getElementType(), 0.0)));
      StateWriteOp::create(ob, loc, zero, acc.getSymName());
    }
    finishOptimizerStep();
  }
  setPipeline(module, pipeline.withTrainingStep(microBatches, explicitLabels, deterministicDp));
}

void BuildTrainingStepPass::buildUnscale(OpBuilder &b, Location loc, MutableArrayRef<Value> grads, GridOp grid,
                                         ArrayRef<StringRef> axes) {
  if (!lossScaling)
    return;
  Value scale = buildLossScale(b, loc, lossScale);
  skipStep = buildUnscaleAndCheck(b, loc, grads, scale, grid, axes);
  buildScalerUpdate(b, loc, skipStep, lossScale);
}

Value BuildTrainingStepPass::buildClipScale(OpBuilder &b, Location loc, ArrayRef<StateOp> params, ArrayRef<Value> grads,
                                            int64_t tp, GridOp grid, ArrayRef<StringRef> axes) {
  GlobalNormTerms terms;
  for (auto [param, grad] : llvm::zip(params, grads)) {
    if (tp > 1 && !param->hasAttr(kTPSliceAttr))
      terms.replicated.push_back(grad);
    else
      terms.owned.push_back(grad);
  }
  return buildGlobalNormClipScale(b, loc, terms, tp, grid, axes, clipNorm);
}

LogicalResult BuildTrainingStepPass::checkOptimizerOptions(ModuleOp module) {
  auto error = [&]() { return emitError(module.getLoc()) << "--ptrain-build-training-step: "; };
  // The schedule attribute's own verifier (lr, warmup-steps, total-steps, min-lr-ratio): LRScheduleAttr::get
  // does not run it, and an unchecked attribute prints IR that no parser accepts.
  auto f64 = Float64Type::get(&getContext());
  auto scheduleError = [&]() { return error() << "lr, warmup-steps, total-steps, min-lr-ratio: "; };
  if (!LRScheduleAttr::getChecked(scheduleError, &getContext(), FloatAttr::get(f64, lr), warmupSteps.getValue(),
                                  totalSteps.getValue(), FloatAttr::get(f64, minLrRatio)))
    return failure();
  if (optimizer == "sgd") {
    // Heavy-ball momentum (torch.optim.SGD): a buffer that would not decay (momentum >= 1) diverges.
    if (!(momentum >= 0.0 && momentum < 1.0) || !std::isfinite(static_cast<double>(weightDecay)) ||
        !(weightDecay >= 0.0))
      return error() << "optimizer=sgd needs momentum in [0, 1) and weight-decay >= 0, got momentum = "
                     << momentum.getValue() << ", weight-decay = " << weightDecay.getValue();
    return success();
  }
  if (momentum != 0.0)
    return error() << "momentum is an option of optimizer=sgd (AdamW has beta1), got momentum = " << momentum.getValue()
                   << " with optimizer=" << optimizer;
  // Loshchilov & Hutter (ICLR 2019), Algorithm 2: beta1, beta2 in [0, 1) (1 - beta^t is a divisor), eps > 0.
  if (!(beta1 >= 0.0 && beta1 < 1.0) || !(beta2 >= 0.0 && beta2 < 1.0))
    return error() << "beta1 and beta2 must be in [0, 1), got beta1 = " << beta1.getValue()
                   << ", beta2 = " << beta2.getValue();
  if (!(epsilon > 0.0) || !std::isfinite(static_cast<double>(epsilon)) || !(weightDecay >= 0.0) ||
      !std::isfinite(static_cast<double>(weightDecay)))
    return error() << "epsilon must be > 0 and weight-decay >= 0, both finite, got epsilon = " << epsilon.getValue()
                   << ", weight-decay = " << weightDecay.getValue();
  return success();
}

LogicalResult BuildTrainingStepPass::checkZeroOptions(ModuleOp module) {
  auto error = [&]() { return emitError(module.getLoc()) << "--ptrain-build-training-step: "; };
  if (zero != 0 && zero != 1)
    return error() << "zero must be 0 (plain data parallelism) or 1 (ZeRO-1, the distributed optimizer), got zero = "
                   << zero.getValue() << " (ZeRO-2 and -3 are not implemented)";
  if (zero == 0)
    return success();
  if (optimizer != "adamw")
    return error() << "zero=1 shards AdamW's moments and needs optimizer=adamw, got optimizer=" << optimizer;
  if (dp < 2)
    return error() << "zero=1 shards the optimizer state over dp and needs dp > 1, got dp = " << dp.getValue();
  if (deterministicDp)
    return error() << "zero=1 and deterministic-dp=true: the reduce-scatter sums the replicas in the "
                      "communicator's order, not as deterministic-dp's pairwise tree; choose one";
  return success();
}

void BuildTrainingStepPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<Precision> parsedPrecision = symbolizePrecision(precision);
  if (!parsedPrecision) {
    emitError(module.getLoc()) << "--ptrain-build-training-step: precision must be fp32, bf16 or fp16, got '"
                               << precision << "'";
    return signalPassFailure();
  }
  if (failed(checkLossScaleOptions(module, *parsedPrecision)))
    return signalPassFailure();
  lossScaling = *parsedPrecision == Precision::F16 && optimizer != "none";
  lossScale.initialScale = initialLossScale;
  lossScale.minScale = minLossScale;
  lossScale.window = lossScaleWindow;
  lossScale.hysteresis = hysteresis;
  llvm::SmallPtrSet<Operation *, 8> before;
  for (auto f : module.getOps<func::FuncOp>())
    before.insert(f);
  build();
  // bf16 and fp16: the GEMMs of the functions this pass built (docs/MixedPrecision.md) and, in a pipeline, of the
  // stage forwards, which the schedule's F<i> steps and the eval step run (so the forward that produces a stage's
  // output and the one its backward recomputes round alike); a single-stage module's @forward stays fp32.
  if (FloatType half = getHalfType(&getContext(), *parsedPrecision)) {
    llvm::SmallPtrSet<Operation *, 8> stageForwards;
    if (PipelineAttr pipeline = getPipeline(module))
      for (FlatSymbolRefAttr stage : pipeline.getStages())
        if (auto f = module.lookupSymbol<func::FuncOp>(stage.getAttr()))
          stageForwards.insert(f);
    // The 16-bit activations (slice 2 of docs/MixedPrecision.md, "16-bit activations") first, in the stage
    // forwards and in the forwards this pass cloned, so that the GEMMs then read the 16-bit values themselves.
    for (auto f : module.getOps<func::FuncOp>()) {
      if (!halfActivations)
        break;
      if (stageForwards.contains(f))
        numHalfActivations += placeHalfActivationCasts(f, half, [](Operation *) { return true; });
      else if (!before.contains(f))
        numHalfActivations +=
            placeHalfActivationCasts(f, half, [&](Operation *op) { return forwardOps.contains(op); });
    }
    for (auto f : module.getOps<func::FuncOp>())
      if (!before.contains(f) || stageForwards.contains(f))
        numHalfGemms += placeHalfGemmCasts(f, half);
    if (getPipeline(module))
      setPrecision(module, *parsedPrecision);
  }
}

LogicalResult BuildTrainingStepPass::checkLossScaleOptions(ModuleOp module, Precision parsed) {
  auto error = [&]() -> InFlightDiagnostic { return emitError(module.getLoc()) << "--ptrain-build-training-step: "; };
  const BuildTrainingStepPassOptions defaults;
  const bool changed = initialLossScale != defaults.initialLossScale || minLossScale != defaults.minLossScale ||
                       lossScaleWindow != defaults.lossScaleWindow || hysteresis != defaults.hysteresis;
  if (parsed == Precision::F32 && !halfActivations)
    return error() << "half-activations=false keeps a 16-bit step's activations fp32 and needs precision=bf16 or "
                      "fp16, got precision="
                   << precision;
  if (parsed != Precision::F16) {
    if (changed)
      return error() << "initial-loss-scale, min-loss-scale, loss-scale-window and hysteresis configure fp16's loss "
                        "scaler and need precision=fp16, got precision="
                     << precision;
    return success();
  }
  // Megatron-LM's DynamicGradScaler (megatron/core/optimizer/grad_scaler.py) asserts scale > 0, min_scale > 0,
  // growth_interval > 0 and hysteresis > 0; the scale lives in an fp32 state (ptrain_grad_scaler_init).
  auto isScale = [](double s) { return std::isfinite(s) && s > 0.0 && std::isfinite(static_cast<float>(s)); };
  if (!isScale(initialLossScale) || !isScale(minLossScale))
    return error() << "initial-loss-scale and min-loss-scale must be finite fp32 values > 0, got initial-loss-scale = "
                   << initialLossScale.getValue() << ", min-loss-scale = " << minLossScale.getValue();
  if (minLossScale > initialLossScale)
    return error() << "min-loss-scale must not exceed initial-loss-scale, got min-loss-scale = "
                   << minLossScale.getValue() << " > initial-loss-scale = " << initialLossScale.getValue();
  if (lossScaleWindow < 1 || hysteresis < 1)
    return error() << "loss-scale-window and hysteresis must be >= 1, got loss-scale-window = "
                   << lossScaleWindow.getValue() << ", hysteresis = " << hysteresis.getValue();
  // deterministic-dp: --ptrain-lower-to-runtime writes each accumulator's micro-batch tree root before the
  // optimizer step, whose dp all-gather and pairwise sum come before the unscale, as the plain all-reduce does
  // (docs/MixedPrecision.md, "The scaler with deterministic-dp").
  return success();
}

void BuildTrainingStepPass::build() {
  ModuleOp module = getOperation();
  SymbolTable symbolTable(module);
  symbols = &symbolTable;
  if (optimizer != "adamw" && optimizer != "sgd" && optimizer != "none") {
    emitError(module.getLoc()) << "--ptrain-build-training-step: optimizer must be adamw, sgd or none, got '"
                               << optimizer << "'";
    return signalPassFailure();
  }
  if (optimizer != "none" && failed(checkOptimizerOptions(module)))
    return signalPassFailure();
  // 0 is off; anything else must be a norm (Megatron's --clip-grad, torch's max_norm).
  if (!std::isfinite(static_cast<double>(clipNorm)) || clipNorm < 0.0) {
    emitError(module.getLoc()) << "--ptrain-build-training-step: clip-norm must be a finite norm > 0 (or 0 for no "
                                  "clipping), got "
                               << clipNorm.getValue();
    return signalPassFailure();
  }
  if (clipNorm > 0.0 && optimizer == "none") {
    emitError(module.getLoc()) << "--ptrain-build-training-step: clip-norm needs an optimizer (optimizer=none returns "
                                  "the raw gradients)";
    return signalPassFailure();
  }
  if (failed(checkZeroOptions(module)))
    return signalPassFailure();
  FailureOr<StepLossOptions> parsedLoss = parseStepLossOptions(module.getLoc(), ignoreIndex, classWeights);
  if (failed(parsedLoss))
    return signalPassFailure();
  lossOptions = *parsedLoss;
  // The export's own loss had an ignore_index (--signature recorded it when it dropped that loss): the step's
  // loss keeps it unless the option says otherwise.
  if (auto signature = module->getAttrOfType<DictionaryAttr>("ptrain.signature"))
    if (auto exported = signature.getAs<IntegerAttr>("loss_ignore_index"); exported && ignoreIndex.empty())
      lossOptions.ignoreIndex = exported.getInt();
  // The vocabulary-parallel loss (--ptrain-shard-tp vocab-parallel=true) has no weights or ignore_index.
  if (lossOptions.weighted()) {
    WalkResult vocabParallel = module.walk([](TPAllGatherOp op) { return WalkResult::interrupt(); });
    if (vocabParallel.wasInterrupted()) {
      emitError(module.getLoc()) << "--ptrain-build-training-step: ignore-index and class-weights are not supported "
                                    "with the vocabulary-parallel loss (--ptrain-shard-tp vocab-parallel=true) yet";
      return signalPassFailure();
    }
  }
  if (PipelineAttr pipeline = getPipeline(module)) {
    // Labels (--signature ...=labels): the last stage takes each micro-batch's labels instead of its tokens.
    auto signature = module->getAttrOfType<DictionaryAttr>("ptrain.signature");
    return buildPipeline(pipeline, signature && signature.get("labels"));
  }

  auto forward = symbols->lookup<func::FuncOp>(entry);
  if (!forward) {
    emitError(module.getLoc()) << "--ptrain-build-training-step: no function @" << entry;
    return signalPassFailure();
  }
  if (failed(checkForward(forward)))
    return signalPassFailure();
  // A count below 1 is wrong whatever the module; only counts above 1 need pipeline stages.
  if (dp < 1 || microBatches < 1) {
    emitError(module.getLoc()) << "--ptrain-build-training-step: dp and micro-batches must be >= 1, got dp = "
                               << dp.getValue() << ", micro-batches = " << microBatches.getValue();
    return signalPassFailure();
  }
  if (dp != 1 || microBatches != 1) {
    emitError(module.getLoc()) << "--ptrain-build-training-step: " << (dp != 1 ? "dp = " : "micro-batches = ")
                               << (dp != 1 ? dp.getValue() : microBatches.getValue())
                               << " needs a pipeline module (run --ptrain-split-stages, with pp=1 for data "
                                  "parallelism or micro-batches alone)";
    return signalPassFailure();
  }
  if (deterministicDp) {
    emitError(module.getLoc()) << "--ptrain-build-training-step: deterministic-dp needs a pipeline module (run "
                                  "--ptrain-split-stages; a single-stage step has one micro-batch and no dp)";
    return signalPassFailure();
  }
  if (symbols->lookup("train_step")) {
    emitError(module.getLoc()) << "--ptrain-build-training-step: the module already has a @train_step";
    return signalPassFailure();
  }
  buildSingleStage(forward);
}
