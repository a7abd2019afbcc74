//===- CompressionPlan.cpp - the decisions of --ptrain-compress ---*- C++ -*-===//
//
// See include/ptrain/Transforms/CompressionPlan.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/CompressionPlan.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::ptrain;

DictionaryAttr CompressionPlan::toAttr(MLIRContext *context) const {
  Builder b(context);
  auto bools = [&](const std::vector<bool> &flags) {
    SmallVector<Attribute> attrs;
    for (bool flag : flags)
      attrs.push_back(b.getBoolAttr(flag));
    return b.getArrayAttr(attrs);
  };
  SmallVector<Attribute> sends;
  for (const std::vector<bool> &row : backwardSends)
    sends.push_back(bools(row));
  NamedAttrList entries;
  entries.set("policy", b.getStringAttr(policy));
  entries.set("backward_sends", b.getArrayAttr(sends));
  if (cbCodec)
    entries.set("cb_codec", cbCodec);
  entries.set("lep", b.getBoolAttr(lep));
  entries.set("dp_all_reduce", bools(dpAllReduce));
  entries.set("sc_rank", b.getI64IntegerAttr(scRank));
  entries.set("sc_error_feedback", b.getBoolAttr(scErrorFeedback));
  return entries.getDictionary(context);
}

FailureOr<std::optional<CompressionPlan>> mlir::ptrain::readCompressionPlan(ModuleOp module, int64_t pp, int64_t m,
                                                                            StringRef pass) {
  auto dict = module->getAttrOfType<DictionaryAttr>("ptrain.compression");
  if (!dict)
    return std::optional<CompressionPlan>();
  auto bad = [&](const Twine &why) {
    emitError(module.getLoc()) << pass << ": ptrain.compression: " << why;
    return failure();
  };
  CompressionPlan plan;
  auto policy = dict.getAs<StringAttr>("policy");
  if (!policy)
    return bad("needs a string `policy`");
  plan.policy = policy.getValue().str();
  auto readFlags = [&](ArrayAttr array, int64_t size, std::vector<bool> &out) -> LogicalResult {
    if (!array || static_cast<int64_t>(array.size()) != size)
      return failure();
    for (Attribute flag : array) {
      auto value = dyn_cast<BoolAttr>(flag);
      if (!value)
        return failure();
      out.push_back(value.getValue());
    }
    return success();
  };
  auto sends = dict.getAs<ArrayAttr>("backward_sends");
  if (!sends || static_cast<int64_t>(sends.size()) != pp)
    return bad("`backward_sends` needs one row per stage (" + Twine(pp) + ")");
  for (Attribute row : sends) {
    plan.backwardSends.emplace_back();
    if (failed(readFlags(dyn_cast<ArrayAttr>(row), m, plan.backwardSends.back())))
      return bad("every `backward_sends` row needs one bool per micro-batch (" + Twine(m) + ")");
  }
  if (!plan.backwardSends.empty() && llvm::is_contained(plan.backwardSends[0], true))
    return bad("stage 0 sends no gradient backward");
  plan.cbCodec = dict.getAs<PowerSGDAttr>("cb_codec");
  bool anySend = llvm::any_of(plan.backwardSends, [](auto &row) { return llvm::is_contained(row, true); });
  if (anySend && !plan.cbCodec)
    return bad("compressed backward sends need a #ptrain.powersgd `cb_codec`");
  auto lep = dict.getAs<BoolAttr>("lep");
  plan.lep = !lep || lep.getValue();
  if (failed(readFlags(dict.getAs<ArrayAttr>("dp_all_reduce"), pp, plan.dpAllReduce)))
    return bad("`dp_all_reduce` needs one bool per stage (" + Twine(pp) + ")");
  if (auto rank = dict.getAs<IntegerAttr>("sc_rank"))
    plan.scRank = rank.getInt();
  if (plan.scRank < 1)
    return bad("`sc_rank` must be >= 1");
  auto ef = dict.getAs<BoolAttr>("sc_error_feedback");
  plan.scErrorFeedback = !ef || ef.getValue();
  return std::optional<CompressionPlan>(std::move(plan));
}

std::string mlir::ptrain::backwardLinkStateKey(int64_t stage, StringRef what) {
  return "cb/pp" + std::to_string(stage) + "->" + std::to_string(stage - 1) + "/" + what.str();
}

std::string mlir::ptrain::uniqueSymbolName(ModuleOp module, StringRef base) {
  std::string name = base.str();
  for (int64_t k = 1; module.lookupSymbol(name); ++k)
    name = base.str() + "_" + std::to_string(k);
  return name;
}

namespace {
/// The module-level state `key`: the existing one (a parameter held by two stages, such as a tied embedding,
/// shares it: each rank keeps its own value), or a new one of `kind` and `type` placed before `anchor`, with
/// a unique symbol name.
StateOp addState(ModuleOp module, Operation *anchor, StringRef name, StringRef key, StateKind kind,
                 RankedTensorType type) {
  for (auto state : module.getOps<StateOp>())
    if (state.getKey() == key)
      return state;
  OpBuilder b(anchor);
  return StateOp::create(b, anchor->getLoc(), uniqueSymbolName(module, name), key, kind, type);
}
} // namespace

LogicalResult mlir::ptrain::compressDataParallelAllReduces(ModuleOp module, func::FuncOp optimizerStep,
                                                           const CompressionPlan &plan, int64_t *numCompressed) {
  SmallVector<AllReduceStartOp> buckets;
  optimizerStep.walk([&](AllReduceStartOp op) {
    if (op.getGridAxes().size() == 1 && cast<StringAttr>(op.getGridAxes()[0]).getValue() == "dp")
      buckets.push_back(op);
  });
  SymbolTable symbols(module);
  for (AllReduceStartOp bucket : buckets) {
    // The gradients of the bucket, each with its flattening reshape (or none).
    SmallVector<StateReadOp> grads;
    Value input = bucket.getInput();
    SmallVector<Value> pieces;
    if (auto concat = input.getDefiningOp<ConcatOp>())
      pieces.append(concat->operand_begin(), concat->operand_end());
    else
      pieces.push_back(input);
    for (Value piece : pieces) {
      if (auto reshape = piece.getDefiningOp<ReshapeOp>())
        piece = reshape->getOperand(0);
      auto read = piece.getDefiningOp<StateReadOp>();
      if (!read)
        return bucket.emitError("--ptrain-lower-to-runtime: the dp all-reduce to compress must reduce gradient "
                                "reads (ptrain.state_read, flattened and concatenated), got ")
               << piece;
      grads.push_back(read);
    }
    if (!bucket.getRequest().hasOneUse() || !isa<WaitOp>(*bucket.getRequest().getUsers().begin()))
      return bucket.emitError("--ptrain-lower-to-runtime: the dp all-reduce to compress needs exactly one wait");
    auto oldWait = cast<WaitOp>(*bucket.getRequest().getUsers().begin());

    OpBuilder b(bucket);
    Location loc = bucket.getLoc();
    SmallVector<Value> requests;
    for (StateReadOp read : grads) {
      auto type = cast<RankedTensorType>(read.getType());
      auto gradState = symbols.lookup<StateOp>(read.getState());
      std::string key = gradState ? gradState.getKey().str() : read.getState().str();
      auto [n, mm] = *MatrixViewAttr::getMatrixShape(MatrixViewAttr(), type, nullptr);
      auto codec = PowerSGDAttr::get(b.getContext(), std::min({plan.scRank, n, mm}), BoolAttr(), MatrixViewAttr());
      SmallVector<Value> state;
      SmallVector<StateOp> stateOps;
      if (plan.scErrorFeedback) {
        stateOps.push_back(
            addState(module, optimizerStep, "sc_residual", "sc/" + key + "/residual", StateKind::CodecResidual, type));
      }
      for (Type t : codec.getEncoderStateTypes(type))
        stateOps.push_back(addState(module, optimizerStep, "sc_warm_start_q", "sc/" + key + "/warm_start_q",
                                    StateKind::CodecWarmStart, cast<RankedTensorType>(t)));
      for (StateOp s : stateOps)
        state.push_back(StateReadOp::create(b, loc, s.getTensorType(), s.getSymName()));
      auto start = CompressedAllReduceStartOp::create(b, loc, read.getResult(), state, ValueRange(), bucket.getGrid(),
                                                      {StringRef("dp")}, bucket.getReduction(),
                                                      cast<CodecAttrInterface>(codec), plan.scErrorFeedback);
      for (auto [s, value] : llvm::zip(stateOps, start.getNewState()))
        StateWriteOp::create(b, loc, value, s.getSymName());
      requests.push_back(start.getRequest());
      if (numCompressed)
        ++*numCompressed;
    }
    b.setInsertionPoint(oldWait);
    SmallVector<Value> results;
    for (Value request : requests) {
      Value reduced = WaitOp::create(b, loc, request).getResult();
      auto type = cast<RankedTensorType>(reduced.getType());
      if (grads.size() > 1 && type.getRank() != 1)
        reduced =
            ReshapeOp::create(b, loc, RankedTensorType::get({type.getNumElements()}, type.getElementType()), reduced);
      results.push_back(reduced);
    }
    Value replacement = results.size() == 1
                            ? results[0]
                            : Value(ConcatOp::create(b, loc, input.getType(), results, b.getI64IntegerAttr(0)));
    oldWait.getResult().replaceAllUsesWith(replacement);
    oldWait.erase();
    Operation *dead = input.getDefiningOp();
    bucket.erase();
    // The concatenation and reshapes that fed the bucket, now unused.
    if (auto concat = dyn_cast_or_null<ConcatOp>(dead)) {
      SmallVector<Operation *> feeders;
      for (Value operand : concat->getOperands())
        if (auto reshape = operand.getDefiningOp<ReshapeOp>())
          feeders.push_back(reshape);
      concat.erase();
      for (Operation *op : feeders)
        if (op->use_empty())
          op->erase();
    }
  }
  return success();
}
