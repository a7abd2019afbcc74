//===- LowerToRuntime.cpp - the schedule table as step functions ---*- C++ -*-===//
//
// --ptrain-lower-to-runtime: see the pass description in Passes.td. Each stage's
// row of `ptrain.schedule` becomes straight-line IR: token slices, calls of
// the stage functions, point-to-point transfers on the pipeline axis with
// their waits, the loss all-reduce and the optimizer call.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "ptrain/Plan/CompressTensorParallel.h"
#include "ptrain/Plan/CompressionPlan.h"
#include "ptrain/Plan/ParameterCasts.h"
#include "ptrain/Plan/ScheduleTable.h"
#include "ptrain/Transforms/CompressDataParallel.h"
#include "ptrain/Transforms/DeterministicSum.h"
#include "ptrain/Transforms/DropoutRows.h"
#include "ptrain/Transforms/LossScaling.h"
#include "ptrain/Transforms/MixedPrecision.h"
#include "ptrain/Transforms/StepLoss.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

#include <string>

#define DEBUG_TYPE "ptrain-lower-to-runtime"

namespace mlir::ptrain {
#define GEN_PASS_DEF_LOWERTORUNTIMEPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {

using Step = ScheduleStep;

/// The pipeline stash in 16 bits (docs/MixedPrecision.md, "Slice 1: the pipeline stash in 16 bits"): a received
/// 16-bit message that the step casts back to fp32 once and reads in several calls (F<i>'s input, stashed until
/// B<i>) is cast back right before each reader instead, so the 16-bit buffer is what stays live between them. The
/// same fp32 values reach every call (the widening is exact). Returns the number of receives rewritten.
int64_t keepStashHalf(ModuleOp module) {
  int64_t rewritten = 0;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn->hasAttr("ptrain.entry") || fn.isExternal())
      continue;
    SmallVector<CastOp> casts;
    for (auto op : fn.getBody().getOps<CastOp>()) {
      Type in = cast<RankedTensorType>(op.getInput().getType()).getElementType();
      Type out = cast<RankedTensorType>(op.getType()).getElementType();
      if (op.getInput().getDefiningOp<WaitOp>() && isa<BFloat16Type, Float16Type>(in) && out.isF32() &&
          !op->hasOneUse() && !op->use_empty())
        casts.push_back(op);
    }
    for (CastOp cast : casts) {
      for (OpOperand &use : llvm::make_early_inc_range(cast->getUses())) {
        OpBuilder b(use.getOwner());
        use.set(CastOp::create(b, cast.getLoc(), cast.getType(), cast.getInput()));
      }
      cast.erase();
      ++rewritten;
    }
  }
  return rewritten;
}

/// The schedule rows, checked: every micro-batch forward and backward exactly once per stage (F before B), or
/// FB once on the last stage, and "O" last.
FailureOr<SmallVector<SmallVector<Step>>> readSchedule(ModuleOp module, int64_t pp, int64_t v, int64_t m) {
  ScheduleAttr schedule = getSchedule(module);
  if (!schedule)
    return emitError(module.getLoc(),
                     "--ptrain-lower-to-runtime: no ptrain.schedule attribute; run --ptrain-schedule first");
  // One row per rank, the pipeline's micro-batches (#ptrain.schedule C8).
  ArrayAttr table = schedule.getTable();
  SmallVector<SmallVector<Step>> rows;
  for (auto [s, rowAttr] : llvm::enumerate(table)) {
    auto row = dyn_cast<ArrayAttr>(rowAttr);
    if (!row)
      return emitError(module.getLoc(), "--ptrain-lower-to-runtime: ptrain.schedule: row ") << s << " is not an array";
    // Per model chunk k of this stage (virtual stage k pp + s): which micro-batches ran forward and backward.
    SmallVector<SmallVector<int>> forwards(v, SmallVector<int>(m)), backwards(v, SmallVector<int>(m));
    SmallVector<Step> steps;
    for (auto [k, stepAttr] : llvm::enumerate(row)) {
      auto str = dyn_cast<StringAttr>(stepAttr);
      auto bad = [&](const Twine &why) {
        return emitError(module.getLoc(), "--ptrain-lower-to-runtime: ptrain.schedule: stage ")
               << s << " step " << k << " '" << (str ? str.getValue() : StringRef("?")) << "': " << why;
      };
      if (!str)
        return bad("not a string");
      std::optional<Step> parsed = Step::parse(str.getValue());
      if (!parsed)
        return bad("expected F<i>, B<i>, FB<i> or O");
      Step step = *parsed;
      if (step.kind != Step::Optimizer) {
        if (step.microBatch < 0 || step.microBatch >= m)
          return bad("the micro-batch must be in [0, " + Twine(m) + ")");
        if (step.chunk < 0 || step.chunk >= v)
          return bad("the model chunk must be in [0, " + Twine(v) + ")");
        bool last = step.chunk * pp + static_cast<int64_t>(s) == pp * v - 1;
        if ((step.kind == Step::ForwardBackward) != last)
          return bad(last ? "the last stage runs FB<i> steps only" : "FB<i> belongs to the last stage");
        int &seen = step.kind == Step::Backward ? backwards[step.chunk][step.microBatch]
                                                : forwards[step.chunk][step.microBatch];
        if (seen++)
          return bad("micro-batch scheduled twice");
        if (step.kind == Step::Backward && !forwards[step.chunk][step.microBatch])
          return bad("backward before the forward of its micro-batch");
      } else if (k + 1 != row.size()) {
        return bad("the optimizer step must be the last step");
      }
      steps.push_back(step);
    }
    if (steps.empty() || steps.back().kind != Step::Optimizer)
      return emitError(module.getLoc(), "--ptrain-lower-to-runtime: ptrain.schedule: stage ")
             << s << " does not end with \"O\"";
    for (int64_t k = 0; k < v; ++k) {
      bool last = k * pp + static_cast<int64_t>(s) == pp * v - 1;
      for (int64_t i = 0; i < m; ++i)
        if (!forwards[k][i] || (!last && !backwards[k][i])) {
          auto diag = emitError(module.getLoc(), "--ptrain-lower-to-runtime: ptrain.schedule: stage ")
                      << s << " never runs the " << (!forwards[k][i] ? "forward" : "backward") << " of micro-batch "
                      << i;
          if (v > 1)
            diag << " on its model chunk " << k;
          return diag;
        }
    }
    rows.push_back(std::move(steps));
  }
  return rows;
}

/// Builds the step functions of one module.
class Lowering {
public:
  Lowering(ModuleOp module, GridOp grid, int64_t pp, int64_t v, int64_t m, std::optional<CompressionPlan> plan)
      : module(module), grid(grid), pp(pp), v(v), m(m), plan(std::move(plan)), b(module.getContext()),
        halfMessages(getMessageHalfType(module)) {}

  FailureOr<func::FuncOp> lookup(const std::string &name, unsigned numArgs, unsigned numResults) {
    auto func = module.lookupSymbol<func::FuncOp>(name);
    if (!func)
      return emitError(module.getLoc(), "--ptrain-lower-to-runtime: the pipeline module has no function @") << name;
    if (func.getNumArguments() != numArgs || func.getNumResults() != numResults)
      return mlir::emitError(func.getLoc(), "--ptrain-lower-to-runtime: @")
             << name << " must take " << numArgs << " argument(s) and return " << numResults << " result(s)";
    return func;
  }

  /// Checks the stage functions and reads the token and logits shapes.
  LogicalResult init() {
    const int64_t chunks = pp * v;
    FailureOr<func::FuncOp> first = lookup("forward_stage0", 1, 1);
    FailureOr<func::FuncOp> lastFwd = lookup("forward_stage" + std::to_string(chunks - 1), 1, 1);
    if (failed(first) || failed(lastFwd))
      return failure();
    tokens = dyn_cast<RankedTensorType>(first->getArgumentTypes()[0]);
    logits = dyn_cast<RankedTensorType>(lastFwd->getResultTypes()[0]);
    if (!tokens || tokens.getRank() != 2 || !tokens.hasStaticShape() || !tokens.getElementType().isInteger(64) ||
        !logits || logits.getRank() != 3 || !logits.getElementType().isF32())
      return first->emitError("--ptrain-lower-to-runtime: needs @forward_stage0(tensor<BxSxi64>) and a last stage "
                              "returning logits tensor<BxSxVxf32>");
    // fp16's loss scaler: the optimizer step returns the skip condition (--ptrain-build-training-step).
    const unsigned optimizerResults = module.lookupSymbol(kLossScalerState) ? 1 : 0;
    for (int64_t s = 0; s < pp; ++s)
      if (failed(lookup("stage" + std::to_string(s) + "_optimizer_step", 0, optimizerResults)))
        return failure();
    // Explicit labels (ptrain.pipeline's `labels`) and the weighted loss (a label-weight function).
    if (PipelineAttr pipeline = getPipeline(module)) {
      withLabels = pipeline.getLabels();
      deterministicDp = pipeline.getDeterministicDp();
    }
    const std::string weightName = lossWeightFunctionName(chunks - 1);
    if (module.lookupSymbol(weightName)) {
      FailureOr<func::FuncOp> weightFn = lookup(weightName, 1, 1);
      if (failed(weightFn))
        return failure();
      lossWeight = *weightFn;
    }
    for (int64_t s = 0; s < chunks; ++s) {
      const std::string ss = std::to_string(s);
      bool isFirst = s == 0, isLast = s == chunks - 1;
      if (failed(lookup("forward_stage" + ss, 1, 1)))
        return failure();
      if (isLast ? failed(lookup("stage" + ss + "_forward_backward", lossWeight ? 3 : 2, isFirst ? 1 : 2))
                 : failed(lookup("stage" + ss + "_backward", 2, isFirst ? 0 : 1)))
        return failure();
    }
    return success();
  }

  func::FuncOp build(int64_t s, ArrayRef<Step> row, bool train);
  int64_t numTransfers = 0;
  /// The steps take (%tokens, %labels): the last stage scores the labels (--signature ...=labels).
  bool withLabels = false;
  /// `@stage<c>_loss_weight` of the weighted loss (ignore-index, class-weights), or null.
  func::FuncOp lossWeight;
  /// ptrain.pipeline's `deterministic_dp`: each backward writes its micro-batch's gradients, which the step
  /// adds up as a pairwise tree (DeterministicSum.h), and the loss is summed the same way.
  bool deterministicDp = false;

private:
  func::FuncOp func(const std::string &name) { return module.lookupSymbol<func::FuncOp>(name); }
  /// deterministic-dp: the scalar `local` of every replica, all-gathered over dp (replica order) and added
  /// pairwise (DeterministicSum.h); `local` itself at dp 1.
  Value sumOverReplicas(Location loc, Value local) {
    int64_t dp = grid.getAxisIndex("dp") ? grid.getAxisSize("dp") : 1;
    if (dp == 1)
      return local;
    auto scalarType = RankedTensorType::get({}, b.getF32Type());
    auto gatheredType = RankedTensorType::get({dp}, b.getF32Type());
    Value one = ReshapeOp::create(b, loc, RankedTensorType::get({1}, b.getF32Type()), local);
    auto gather = AllGatherStartOp::create(b, loc, RequestType::get(b.getContext(), gatheredType), one,
                                           grid.getSymName(), b.getStrArrayAttr({"dp"}), 0);
    Value gathered = WaitOp::create(b, loc, gather.getRequest()).getResult();
    SmallVector<Value> partials;
    for (int64_t d = 0; d < dp; ++d)
      partials.push_back(ReshapeOp::create(
          b, loc, scalarType,
          SliceOp::create(b, loc, gathered, b.getDenseI64ArrayAttr({d}), b.getDenseI64ArrayAttr({1}))));
    return pairwiseSum(b, loc, partials);
  }
  /// deterministic-dp: after the backward `callee` of micro-batch i, reads each gradient state it wrote (its
  /// micro-batch's gradient) into that state's tree (`trees`); the root, after the last micro-batch, is written
  /// back for the optimizer step.
  void accumulateTree(Location loc, const std::string &callee, int64_t i,
                      llvm::MapVector<StringAttr, TreeAccumulator> &trees) {
    SmallVector<StateWriteOp> writes;
    func(callee).walk([&](StateWriteOp write) {
      auto state = module.lookupSymbol<StateOp>(write.getStateAttr().getAttr());
      if (state && state.getKind() == StateKind::Gradient)
        writes.push_back(write);
    });
    for (StateWriteOp write : writes) {
      StringAttr symbol = write.getStateAttr().getAttr();
      Value grad = StateReadOp::create(b, loc, write.getValue().getType(), symbol);
      auto tree = trees.try_emplace(symbol, TreeAccumulator(m)).first;
      if (Value root = tree->second.add(b, loc, i, grad))
        StateWriteOp::create(b, loc, root, symbol);
    }
  }
  Value tokensOf(Location loc, int64_t i) { return microBatchOf(loc, allTokens, i); }
  /// Micro-batch i's rows of `all` ([M B, S] token ids or labels).
  Value microBatchOf(Location loc, Value all, int64_t i) {
    int64_t batch = tokens.getDimSize(0), seq = tokens.getDimSize(1);
    return SliceOp::create(b, loc, all, b.getDenseI64ArrayAttr({i * batch, 0}), b.getDenseI64ArrayAttr({batch, seq}));
  }
  /// What the last stage scores for micro-batch i: its labels, or its token ids (the shifted tokens).
  Value labelsOf(Location loc, int64_t i) { return withLabels ? microBatchOf(loc, allLabels, i) : tokensOf(loc, i); }
  /// The weighted loss's normalizer: the weight sum over the step's micro-batches, summed over dp (with
  /// deterministic-dp as the pairwise tree over the global micro-batches, sumOverReplicas).
  Value buildNormalizer(Location loc) {
    Value total;
    SmallVector<Value> parts;
    for (int64_t i = 0; i < m; ++i) {
      Value part = call(loc, lossWeight.getSymName().str(), {labelsOf(loc, i)});
      if (deterministicDp)
        parts.push_back(part);
      else
        total = total ? Value(BinaryOp::create(b, loc, BinaryKind::Add, total, part)) : part;
    }
    if (deterministicDp)
      return sumOverReplicas(loc, pairwiseSum(b, loc, parts));
    if (grid.getAxisIndex("dp") && grid.getAxisSize("dp") > 1) {
      auto reduce =
          AllReduceStartOp::create(b, loc, total, grid.getSymName(), b.getStrArrayAttr({"dp"}), ReductionKind::Sum);
      total = WaitOp::create(b, loc, reduce.getRequest()).getResult();
    }
    return total;
  }
  /// The evaluation loss of micro-batch i with the last stage's logits `out` (the training step's loss:
  /// the shifted tokens or the labels; the weighted cross-entropy of the forward-backward, summed, over
  /// `normalizer`).
  Value evalLoss(Location loc, Value out, int64_t i, Value normalizer) {
    int64_t batch = tokens.getDimSize(0), seq = tokens.getDimSize(1), vocab = logits.getDimSize(2);
    Value predicted = out, labels = labelsOf(loc, i);
    if (!withLabels) {
      // The next-token loss: logits at positions 0..S-2 against tokens 1..S-1 (as the training step).
      predicted = SliceOp::create(b, loc, out, b.getDenseI64ArrayAttr({0, 0, 0}),
                                  b.getDenseI64ArrayAttr({batch, seq - 1, vocab}));
      labels =
          SliceOp::create(b, loc, labels, b.getDenseI64ArrayAttr({0, 1}), b.getDenseI64ArrayAttr({batch, seq - 1}));
    }
    if (!lossWeight)
      return CrossEntropyOp::create(b, loc, predicted, labels);
    // The forward-backward's own (weighted, summed) cross-entropy, with its weight constant.
    CrossEntropyOp proto;
    func("stage" + std::to_string(pp * v - 1) + "_forward_backward").walk([&](CrossEntropyOp ce) { proto = ce; });
    IRMapping mapping;
    mapping.map(proto.getLogits(), predicted);
    mapping.map(proto.getLabels(), labels);
    if (Value weight = proto.getWeight())
      mapping.map(weight, b.clone(*weight.getDefiningOp())->getResult(0));
    Value sum = b.clone(*proto, mapping)->getResult(0);
    return BinaryOp::create(b, loc, BinaryKind::Div, sum, normalizer);
  }
  /// The pp offset from rank `s` to the rank of virtual stage `c` +- 1 (wrapping around between chunks).
  int64_t nextOffset(int64_t s) const { return s == pp - 1 ? -(pp - 1) : 1; }
  int64_t previousOffset(int64_t s) const { return s == 0 ? pp - 1 : -1; }
  /// The tag of the transfer between virtual stages c and c + 1 of micro-batch i: 2 (i v + c / pp) for the
  /// activation, + 1 for the gradient (2i, 2i + 1 without virtual stages). Unique per (source, destination).
  int64_t tagOf(int64_t i, int64_t c, bool gradient) const { return 2 * (i * v + c / pp) + (gradient ? 1 : 0); }
  Value receive(Location loc, Type type, int64_t offset, int64_t tag) {
    auto recv = RecvStartOp::create(b, loc, RequestType::get(b.getContext(), type), grid.getSymName(), "pp", offset);
    recv->setAttr("ptrain.tag", b.getI64IntegerAttr(tag));
    ++numTransfers;
    return WaitOp::create(b, loc, recv.getRequest()).getResult();
  }
  /// Receives an activation or its gradient (uncompressed) of fp32 `type`: in bf16 or f16, cast back to fp32
  /// after the wait, when the step was built with precision=bf16 or fp16 (the module's kPrecisionAttr;
  /// docs/MixedPrecision.md).
  Value receiveMessage(Location loc, Type type, int64_t offset, int64_t tag) {
    auto tensor = cast<RankedTensorType>(type);
    if (!halfMessages || !tensor.getElementType().isF32())
      return receive(loc, type, offset, tag);
    Value half = receive(loc, tensor.clone(halfMessages), offset, tag);
    return CastOp::create(b, loc, type, half);
  }
  /// Sends an activation or its gradient (uncompressed): cast to bf16 or f16 first with precision=bf16 or fp16.
  Value sendMessage(Location loc, Value value, int64_t offset, int64_t tag) {
    auto tensor = cast<RankedTensorType>(value.getType());
    if (halfMessages && tensor.getElementType().isF32())
      value = CastOp::create(b, loc, tensor.clone(halfMessages), value);
    return send(loc, value, offset, tag);
  }
  /// The type a compressed message of fp32 `type` is coded in: `type` in the 16-bit type of a bf16 or fp16
  /// step, else `type` (getMessageHalfType).
  RankedTensorType halfWireType(RankedTensorType type) const {
    return halfMessages && type.getElementType().isF32() ? type.clone(halfMessages) : type;
  }
  /// Whether a message of `type` with `codec` travels uncompressed in 16 bits: a cast codec in a bf16 or fp16
  /// step, whose codes would be the 16-bit message itself (the cast codec's C3 refuses a 16-bit input).
  bool isHalfCastCodec(CodecAttrInterface codec, Type type) const {
    return isa<CastAttr>(codec) && halfWireType(cast<RankedTensorType>(type)) != type;
  }
  Value send(Location loc, Value value, int64_t offset, int64_t tag) {
    auto send = SendStartOp::create(b, loc, RequestType::get(b.getContext()), value, grid.getSymName(), "pp", offset);
    send->setAttr("ptrain.tag", b.getI64IntegerAttr(tag));
    ++numTransfers;
    return send.getRequest();
  }
  /// Sends `value` from rank `from` (from its model chunk `chunk` to the receiver's `toChunk`) to rank `to`
  /// (pp offset `offset`, tag `tag`): as is, or, with `codec` (the `ptrain.compression` decision of this
  /// send), its codes (tags `tag`, `tag` + 2 M V, ...) after a compress with the link's keyed states: the
  /// residual (with `errorFeedback`) and the codec's own state (linkStateKey(from, to, ..., {chunk, toChunk}),
  /// one set per chunk boundary and direction with virtual stages). Appends the requests to `requests`.
  /// `gradient`: `value` is a gradient (a backward send), whose residual is loss-scaled under fp16
  /// (markGradientResidual).
  void sendCompressible(Location loc, int64_t from, int64_t to, int64_t chunk, int64_t toChunk, int64_t offset,
                        int64_t tag, Value value, CodecAttrInterface codec, bool errorFeedback, bool gradient,
                        SmallVectorImpl<Value> &requests) {
    if (!codec || isHalfCastCodec(codec, value.getType())) {
      requests.push_back(sendMessage(loc, value, offset, tag));
      return;
    }
    auto type = cast<RankedTensorType>(value.getType());
    // A 16-bit plan codes the 16-bit message (docs/Compression.md, "Codecs on 16-bit traffic"): the codec reads
    // the bf16 / f16 value; its residual (keyed by `type`, f32) and PowerSGD's factors stay f32.
    const RankedTensorType wire = halfWireType(type);
    SmallVector<StateOp> states;
    if (errorFeedback) {
      states.push_back(linkState(from, to, chunk, toChunk, "residual", StateKind::CodecResidual, type));
      if (states.back() && gradient)
        markGradientResidual(module, states.back());
    }
    auto [stateName, stateKind] = codecStateNameAndKind(codec);
    for (Type t : codec.getEncoderStateTypes(wire))
      states.push_back(linkState(from, to, chunk, toChunk, stateName, stateKind, cast<RankedTensorType>(t)));
    if (llvm::is_contained(states, StateOp())) {
      requests.push_back(sendMessage(loc, value, offset, tag));
      return;
    }
    SmallVector<Value> stateValues;
    SmallVector<Type> stateTypes;
    for (StateOp state : states) {
      stateValues.push_back(StateReadOp::create(b, loc, state.getTensorType(), state.getSymName()));
      stateTypes.push_back(state.getTensorType());
    }
    if (wire != type)
      value = CastOp::create(b, loc, wire, value);
    auto compress = CompressOp::create(b, loc, codec.getCodeTypes(wire), stateTypes, value, stateValues, ValueRange(),
                                       codec, errorFeedback);
    for (auto [state, newValue] : llvm::zip(states, compress.getNewState()))
      StateWriteOp::create(b, loc, newValue, state.getSymName());
    for (auto [j, code] : llvm::enumerate(compress.getCodes()))
      requests.push_back(send(loc, code, offset, tag + static_cast<int64_t>(j) * 2 * m * v));
  }
  /// Receives a tensor of `type` sent by sendCompressible from rank `from` (its model chunk `chunk`) to rank
  /// `to` (its chunk `toChunk`): as is, or its codes and a decompress (with the codec's decoder state on this
  /// side of the link, e.g. rand-k's counter).
  Value receiveCompressible(Location loc, int64_t from, int64_t to, int64_t chunk, int64_t toChunk, int64_t offset,
                            int64_t tag, Type type, CodecAttrInterface codec) {
    if (!codec || isHalfCastCodec(codec, type))
      return receiveMessage(loc, type, offset, tag);
    auto tensorType = cast<RankedTensorType>(type);
    const RankedTensorType wire = halfWireType(tensorType);
    SmallVector<Value> codes;
    for (auto [j, codeType] : llvm::enumerate(codec.getCodeTypes(wire)))
      codes.push_back(receive(loc, codeType, offset, tag + static_cast<int64_t>(j) * 2 * m * v));
    SmallVector<StateOp> states;
    auto [stateName, stateKind] = codecStateNameAndKind(codec);
    for (Type t : codec.getDecoderStateTypes(wire))
      states.push_back(linkState(from, to, chunk, toChunk, stateName, stateKind, cast<RankedTensorType>(t)));
    SmallVector<Value> stateValues;
    for (StateOp state : states)
      stateValues.push_back(state ? Value(StateReadOp::create(b, loc, state.getTensorType(), state.getSymName()))
                                  : Value());
    if (llvm::is_contained(stateValues, Value()))
      return receiveMessage(loc, type, offset, tag);
    auto decompress =
        DecompressOp::create(b, loc, wire, ValueRange(stateValues).getTypes(), codes, stateValues, ValueRange(), codec);
    for (auto [state, newValue] : llvm::zip(states, decompress.getNewState()))
      StateWriteOp::create(b, loc, newValue, state.getSymName());
    if (wire != tensorType)
      return CastOp::create(b, loc, type, decompress.getResult());
    return decompress.getResult();
  }
  /// Sends the gradient of virtual stage c's input (micro-batch i, on rank s) to offset -1 (the rank of
  /// virtual stage c - 1), compressed when `ptrain.compression` says so.
  void sendGradient(Location loc, int64_t s, int64_t c, int64_t i, Value grad, SmallVectorImpl<Value> &requests) {
    CodecAttrInterface codec = plan ? plan->backwardCodecOf(c, i) : CodecAttrInterface();
    sendCompressible(loc, s, s == 0 ? pp - 1 : s - 1, c / pp, (c - 1) / pp, previousOffset(s),
                     tagOf(i, c - 1, /*gradient=*/true), grad, codec, plan && plan->backwardErrorFeedback,
                     /*gradient=*/true, requests);
  }
  /// Receives the gradient of virtual stage c's output (micro-batch i) from offset +1 (the rank of virtual
  /// stage c + 1).
  Value receiveGradient(Location loc, int64_t s, int64_t c, int64_t i, Type type) {
    int64_t sender = s == pp - 1 ? 0 : s + 1;
    CodecAttrInterface codec = plan ? plan->backwardCodecOf(c + 1, i) : CodecAttrInterface();
    return receiveCompressible(loc, sender, s, (c + 1) / pp, c / pp, nextOffset(s), tagOf(i, c, /*gradient=*/true),
                               type, codec);
  }
  /// The keyed state `what` of the pipeline link `from` -> `to` (with virtual stages, of the boundary from the
  /// sender's model chunk `chunk` to the receiver's `toChunk`), created on first use; null (with an error,
  /// recorded in `stateError`) when it exists with another type.
  StateOp linkState(int64_t from, int64_t to, int64_t chunk, int64_t toChunk, StringRef what, StateKind kind,
                    RankedTensorType type) {
    auto keyChunks = v > 1 ? std::optional(std::make_pair(chunk, toChunk)) : std::nullopt;
    std::string name = "pp" + std::to_string(from) + "to" + std::to_string(to) +
                       (keyChunks ? "_c" + std::to_string(chunk) + "to" + std::to_string(toChunk) : std::string()) +
                       "_" + what.str();
    FailureOr<StateOp> state =
        getOrAddCodecState(module, grid->getNextNode(), name, linkStateKey(from, to, what, keyChunks), kind, type);
    if (failed(state)) {
      stateError = true;
      return StateOp();
    }
    return *state;
  }

public:
  /// Set when a link's codec state could not be created (reported).
  bool stateError = false;
  /// Codec states kept on a step that fp16's loss scaler skips (keepCodecStatesOnSkip), over every stage.
  unsigned codecStatesKept = 0;

private:
  /// Calls `callee`; `microBatch` >= 0: a stage function on that micro-batch, whose dropout masks read its
  /// first row from @micro_batch_row (DropoutRows.h).
  Value call(Location loc, const std::string &callee, ValueRange args, SmallVectorImpl<Value> *results = nullptr,
             int64_t microBatch = -1) {
    if (microBatch >= 0)
      setMicroBatchRow(b, loc, module, microBatch * tokens.getDimSize(0));
    auto op = func::CallOp::create(b, loc, func(callee), args);
    if (results)
      results->assign(op.getResults().begin(), op.getResults().end());
    return op.getNumResults() ? op.getResult(0) : Value();
  }
  Value scalar(Location loc, double v) {
    auto type = RankedTensorType::get({}, b.getF32Type());
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(v)));
  }

  ModuleOp module;
  GridOp grid;
  int64_t pp, v, m;
  std::optional<CompressionPlan> plan;
  OpBuilder b;
  /// The 16-bit type of the pipeline messages (precision=bf16 or fp16), or null (fp32).
  FloatType halfMessages;
  RankedTensorType tokens, logits;
  Value allTokens, allLabels;
};

func::FuncOp Lowering::build(int64_t s, ArrayRef<Step> row, bool train) {
  const std::string ss = std::to_string(s);
  const int64_t chunks = pp * v;
  const bool isLast = s == pp - 1; // holds the last virtual stage: the loss
  Location loc = NameLoc::get(b.getStringAttr("stage" + ss + (train ? "_train_step" : "_eval_step")));
  int64_t batch = tokens.getDimSize(0), seq = tokens.getDimSize(1);
  auto allType = RankedTensorType::get({m * batch, seq}, tokens.getElementType());
  auto lossType = RankedTensorType::get({}, b.getF32Type());
  b.setInsertionPointToEnd(module.getBody());
  SmallVector<Type> argTypes = {allType};
  if (withLabels)
    argTypes.push_back(allType);
  auto fn = func::FuncOp::create(b, loc, "stage" + ss + (train ? "_train_step" : "_eval_step"),
                                 b.getFunctionType(argTypes, {lossType}));
  setStage(fn, s);
  fn->setAttr("ptrain.entry", b.getStringAttr(train ? "train" : "eval"));
  b.setInsertionPointToStart(fn.addEntryBlock());
  allTokens = fn.getArgument(0);
  allLabels = withLabels ? fn.getArgument(1) : Value();
  if (withLabels)
    fn.setArgAttr(1, "ptrain.role", b.getStringAttr("labels"));
  // The weighted loss divides each micro-batch's sum by the step's weight sum, known before the first forward.
  Value normalizer = isLast && lossWeight ? buildNormalizer(loc) : Value();

  // Per model chunk k (virtual stage c = k pp + s) and micro-batch i: the input and the forward's send.
  SmallVector<SmallVector<Value>> inputs(v, SmallVector<Value>(m));
  SmallVector<SmallVector<SmallVector<Value>>> forwardSends(v, SmallVector<SmallVector<Value>>(m));
  SmallVector<Value> pending; // sends not yet waited, in start order
  Value lossSum;
  // deterministic-dp: the micro-batches' losses and gradients as pairwise trees over the micro-batch index.
  TreeAccumulator lossTree(m);
  llvm::MapVector<StringAttr, TreeAccumulator> gradTrees;
  auto addLoss = [&](Value loss, int64_t i) {
    if (deterministicDp) {
      lossSum = lossTree.add(b, loc, i, loss);
      return;
    }
    lossSum = lossSum ? BinaryOp::create(b, loc, BinaryKind::Add, lossSum, loss).getResult() : loss;
  };
  // Forward activations are compressed in training steps only (evaluation runs uncompressed).
  auto inputOf = [&](int64_t c, int64_t i) {
    if (c == 0)
      return tokensOf(loc, i);
    Type inType = func("forward_stage" + std::to_string(c)).getArgumentTypes()[0];
    int64_t sender = s == 0 ? pp - 1 : s - 1;
    CodecAttrInterface codec = plan && train ? plan->forwardCodecOf(c - 1, i) : CodecAttrInterface();
    return receiveCompressible(loc, sender, s, (c - 1) / pp, c / pp, previousOffset(s),
                               tagOf(i, c - 1, /*gradient=*/false), inType, codec);
  };
  auto waitSend = [&](Value request) {
    WaitOp::create(b, loc, request);
    llvm::erase(pending, request);
  };

  if (train) {
    for (const Step &step : row) {
      const int64_t i = step.microBatch, k = step.chunk, c = k * pp + s;
      const std::string cs = std::to_string(c);
      switch (step.kind) {
      case Step::Forward: {
        inputs[k][i] = inputOf(c, i);
        Value out = call(loc, "forward_stage" + cs, {inputs[k][i]}, nullptr, i);
        sendCompressible(loc, s, s == pp - 1 ? 0 : s + 1, k, (c + 1) / pp, nextOffset(s),
                         tagOf(i, c, /*gradient=*/false), out, plan ? plan->forwardCodecOf(c, i) : CodecAttrInterface(),
                         plan && plan->forwardErrorFeedback, /*gradient=*/false, forwardSends[k][i]);
        pending.append(forwardSends[k][i]);
        break;
      }
      case Step::Backward: {
        Type outType = func("forward_stage" + cs).getResultTypes()[0];
        Value dout = receiveGradient(loc, s, c, i, outType);
        for (Value request : forwardSends[k][i]) // the forward output was received
          waitSend(request);
        Value din = call(loc, "stage" + cs + "_backward", {inputs[k][i], dout}, nullptr, i);
        if (deterministicDp)
          accumulateTree(loc, "stage" + cs + "_backward", i, gradTrees);
        if (c > 0)
          sendGradient(loc, s, c, i, din, pending);
        break;
      }
      case Step::ForwardBackward: {
        Value in = inputOf(c, i);
        SmallVector<Value> results;
        SmallVector<Value> args = {in, withLabels ? labelsOf(loc, i) : (c == 0 ? in : tokensOf(loc, i))};
        if (normalizer)
          args.push_back(normalizer);
        call(loc, "stage" + cs + "_forward_backward", args, &results, i);
        if (deterministicDp)
          accumulateTree(loc, "stage" + cs + "_forward_backward", i, gradTrees);
        addLoss(results[0], i);
        if (c > 0)
          sendGradient(loc, s, c, i, results[1], pending);
        break;
      }
      case Step::Optimizer:
        // The step leaves no micro-batch position behind (checkpoints and ranks agree on it).
        setMicroBatchRow(b, loc, module, 0);
        for (Value request : SmallVector<Value>(pending))
          waitSend(request);
        call(loc, "stage" + ss + "_optimizer_step", {});
        if (auto optimizerCall = cast<func::CallOp>(b.getInsertionBlock()->back()); optimizerCall.getNumResults())
          codecStatesKept += keepCodecStatesOnSkip(fn, optimizerCall);
        break;
      }
    }
  } else {
    // Forwards only, micro-batch by micro-batch through the stage's chunks (deadlock-free: every transfer goes
    // from (i, c) to (i, c + 1), which comes later in every rank's order).
    for (int64_t i = 0; i < m; ++i)
      for (int64_t k = 0; k < v; ++k) {
        const int64_t c = k * pp + s;
        Value in = inputOf(c, i);
        Value out = call(loc, "forward_stage" + std::to_string(c), {in}, nullptr, i);
        if (c != chunks - 1) {
          pending.push_back(sendMessage(loc, out, nextOffset(s), tagOf(i, c, /*gradient=*/false)));
          continue;
        }
        addLoss(evalLoss(loc, out, i, normalizer), i);
      }
    setMicroBatchRow(b, loc, module, 0);
    for (Value request : SmallVector<Value>(pending))
      waitSend(request);
  }
  // The mean loss over the micro-batches (and the dp replicas) on the last stage, 0 elsewhere, summed over pp
  // (and dp) onto every rank.
  std::optional<unsigned> dpAxis = grid.getAxisIndex("dp");
  int64_t dp = dpAxis ? grid.getAxisSize("dp") : 1;
  if (deterministicDp) {
    // The replicas' loss sums (0 off the last stage) in replica order, added pairwise, over G = M D (the
    // weighted parts are over the step's weight sum already); then over pp, where one term is not 0 (exact in
    // any order).
    Value local = sumOverReplicas(loc, isLast ? lossSum : scalar(loc, 0.0));
    Value mean = normalizer ? local : BinaryOp::create(b, loc, BinaryKind::Div, local, scalar(loc, double(m * dp)));
    auto reduce =
        AllReduceStartOp::create(b, loc, mean, grid.getSymName(), b.getStrArrayAttr({"pp"}), ReductionKind::Sum);
    func::ReturnOp::create(b, loc, WaitOp::create(b, loc, reduce.getRequest()).getResult());
    return fn;
  }
  // The weighted loss is already over the step's weight sum: the micro-batches' parts add up to the mean.
  Value loss = !isLast ? scalar(loc, 0.0)
               : normalizer
                   ? lossSum
                   : BinaryOp::create(b, loc, BinaryKind::Div, lossSum, scalar(loc, double(m * dp))).getResult();
  auto reduce = AllReduceStartOp::create(b, loc, loss, grid.getSymName(),
                                         dp > 1 ? b.getStrArrayAttr({"dp", "pp"}) : b.getStrArrayAttr({"pp"}),
                                         ReductionKind::Sum);
  Value shared = WaitOp::create(b, loc, reduce.getRequest()).getResult();
  func::ReturnOp::create(b, loc, shared);
  return fn;
}

struct LowerToRuntimePass : ptrain::impl::LowerToRuntimePassBase<LowerToRuntimePass> {
  using LowerToRuntimePassBase::LowerToRuntimePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (parameterCasts != "once" && parameterCasts != "per-call") {
      emitError(module.getLoc(), "--ptrain-lower-to-runtime: parameter-casts must be once or per-call, got '")
          << parameterCasts << "'";
      return signalPassFailure();
    }
    PipelineAttr pipeline = getPipeline(module);
    if (!pipeline) {
      emitError(module.getLoc(), "--ptrain-lower-to-runtime: no ptrain.pipeline attribute; run --ptrain-split-stages, "
                                 "--ptrain-build-training-step and --ptrain-schedule first");
      return signalPassFailure();
    }
    if (!pipeline.getMicroBatches()) {
      emitError(module.getLoc(), "--ptrain-lower-to-runtime: ptrain.pipeline has no training step (micro_batches); "
                                 "run --ptrain-build-training-step first");
      return signalPassFailure();
    }
    GridOp grid;
    for (auto g : module.getOps<GridOp>())
      if (llvm::is_contained(g.getAxisNames(), StringAttr::get(module.getContext(), "pp")))
        grid = g;
    if (!grid) {
      emitError(module.getLoc(), "--ptrain-lower-to-runtime: no ptrain.grid with an axis pp");
      return signalPassFailure();
    }
    // pp >= 1, virtual_stages >= 1 and 1 when pp is 1 (#ptrain.pipeline C1, C2).
    const int64_t pp = pipeline.getPp(), m = *pipeline.getMicroBatches(), v = pipeline.getVirtualStages();
    FailureOr<SmallVector<SmallVector<Step>>> rows = readSchedule(module, pp, v, m);
    if (failed(rows))
      return signalPassFailure();
    for (int64_t s = 0; s < pp; ++s)
      for (StringRef kind : {"_train_step", "_eval_step"})
        if (module.lookupSymbol("stage" + std::to_string(s) + kind.str())) {
          emitError(module.getLoc(), "--ptrain-lower-to-runtime: the module already has @stage")
              << s << kind << " (lowered twice?)";
          return signalPassFailure();
        }
    FailureOr<std::optional<CompressionPlan>> plan = readCompressionPlan(module, pp, m, "--ptrain-lower-to-runtime");
    if (failed(plan))
      return signalPassFailure();
    // mcbench's TP site: the recorded tp all-reduces of the stage functions become compressed all-reduces.
    if (failed(compressTensorParallelAllReduces(module, readTensorParallelRecord(module))))
      return signalPassFailure();
    // precision=bf16 or fp16: the other tp all-reduces move 16-bit values with an fp32 sum (docs/MixedPrecision.md,
    // "16-bit TP collectives").
    if (FloatType half = getMessageHalfType(module))
      numHalfTensorParallelSums += placeHalfTensorParallelSums(module, half);
    Lowering lowering(module, grid, pp, v, m, *plan);
    if (failed(lowering.init()))
      return signalPassFailure();
    // The optimizer steps' rewrites: fused embedding sync first (it takes the tied gradient out of the dp
    // buckets), then the dp compression of what the buckets still hold.
    if (*plan) {
      SmallVector<func::FuncOp> opts;
      for (int64_t s = 0; s < pp; ++s)
        opts.push_back(module.lookupSymbol<func::FuncOp>("stage" + std::to_string(s) + "_optimizer_step"));
      if ((**plan).fusedEmbedding && failed(fuseEmbeddingSync(module, opts, grid)))
        return signalPassFailure();
      for (int64_t s = 0; s < pp; ++s)
        if (failed(compressDataParallelAllReduces(module, opts[s], s, **plan)) ||
            failed(compressZeroReduceScatters(module, opts[s], s, **plan)))
          return signalPassFailure();
    }
    for (int64_t s = 0; s < pp; ++s) {
      lowering.build(s, (*rows)[s], /*train=*/true);
      if (eval)
        lowering.build(s, (*rows)[s], /*train=*/false);
    }
    if (lowering.stateError)
      return signalPassFailure();
    numTransfers += lowering.numTransfers;
    // precision=bf16 or fp16: each parameter is cast to 16 bits once per step, at the start of the training and
    // eval steps, rather than in every stage call (docs/MixedPrecision.md, "The once-per-step parameter cast").
    if (getMessageHalfType(module) && parameterCasts == "once") {
      FailureOr<int64_t> hoisted = hoistParameterCasts(module);
      if (failed(hoisted))
        return signalPassFailure();
      numParameterCasts += *hoisted;
    }
    if (getMessageHalfType(module))
      numHalfStashes += keepStashHalf(module);
  }
};

} // namespace
