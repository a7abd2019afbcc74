//===- CompressDataParallel.cpp - dp gradient compression and FE ---*- C++ -*-===//
//
// See include/ptrain/Transforms/CompressDataParallel.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/CompressDataParallel.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainSubgroup.h"
#include "ptrain/Transforms/GradientClipping.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {
/// A dp all-reduce bucket of an optimizer step: its pieces (gradient reads, flattened when the bucket
/// concatenates several) and its one wait.
struct Bucket {
  AllReduceStartOp start;
  WaitOp wait;
  /// The bucket's operands (a reshape of a read, or a read), and the reads behind them.
  SmallVector<Value> pieces;
  SmallVector<StateReadOp> reads;
};

FailureOr<Bucket> readBucket(AllReduceStartOp start) {
  Bucket bucket;
  bucket.start = start;
  bucket.pieces = bucketPieces(start);
  for (Value piece : bucket.pieces) {
    StateReadOp op = gradientReadOf(piece);
    if (!op)
      return start.emitError("--ptrain-lower-to-runtime: the dp all-reduce to rewrite must reduce gradient reads "
                             "(ptrain.state_read, flattened and concatenated), got ")
             << piece;
    bucket.reads.push_back(op);
  }
  if (!start.getRequest().hasOneUse() || !isa<WaitOp>(*start.getRequest().getUsers().begin()))
    return start.emitError("--ptrain-lower-to-runtime: the dp all-reduce to rewrite needs exactly one wait");
  bucket.wait = cast<WaitOp>(*start.getRequest().getUsers().begin());
  return bucket;
}

/// Replaces the bucket's wait with `replacement` and erases the bucket and the concatenation feeding it.
void replaceBucket(Bucket &bucket, Value replacement) {
  bucket.wait.getResult().replaceAllUsesWith(replacement);
  bucket.wait.erase();
  Operation *feeder = bucket.start.getInput().getDefiningOp();
  bucket.start.erase();
  if (auto concat = dyn_cast_or_null<ConcatOp>(feeder); concat && concat->use_empty())
    concat.erase();
}

/// The flattened, concatenated `parts` in the bucket's input type (or the one part).
Value concatenate(OpBuilder &b, Location loc, Type type, ArrayRef<Value> parts) {
  return parts.size() == 1 ? parts[0] : Value(ConcatOp::create(b, loc, type, parts, b.getI64IntegerAttr(0)));
}

RankedTensorType flatOf(ArrayRef<Value> values) {
  int64_t total = 0;
  for (Value v : values)
    total += cast<RankedTensorType>(v.getType()).getNumElements();
  return RankedTensorType::get({total}, cast<RankedTensorType>(values[0].getType()).getElementType());
}

/// Posts the dp reduction of one gradient `read` (state key `key`) at `b`: a `ptrain.compressed_all_reduce_start`
/// with `codec`, its keyed states ("sc/<key>/residual" with error feedback, "sc/<key>/<codec state>") created
/// before `optimizerStep`, or a plain all-reduce when `codec` is null. Returns the request.
FailureOr<Value> startGradientAllReduce(OpBuilder &b, ModuleOp module, func::FuncOp optimizerStep, Location loc,
                                        StateReadOp read, StringRef key, CodecAttrInterface codec,
                                        const CompressionPlan &plan, StringRef grid, ReductionKind reduction,
                                        int64_t *numCompressed) {
  auto type = cast<RankedTensorType>(read.getType());
  ArrayAttr dpAxes = b.getStrArrayAttr({"dp"});
  if (!codec)
    return AllReduceStartOp::create(b, loc, read.getResult(), grid, dpAxes, reduction).getRequest();
  SmallVector<StateOp> stateOps;
  auto addState = [&](StringRef name, StringRef what, StateKind kind, RankedTensorType t) -> LogicalResult {
    FailureOr<StateOp> s = getOrAddCodecState(module, optimizerStep, name, "sc/" + key.str() + "/" + what.str(), kind, t);
    if (failed(s))
      return failure();
    stateOps.push_back(*s);
    return success();
  };
  if (plan.scErrorFeedback) {
    if (failed(addState("sc_residual", "residual", StateKind::CodecResidual, type)))
      return failure();
    markGradientResidual(module, stateOps.back());
  }
  auto [stateName, stateKind] = codecStateNameAndKind(codec);
  for (Type t : codec.getEncoderStateTypes(type))
    if (failed(addState(("sc_" + stateName).str(), stateName, stateKind, cast<RankedTensorType>(t))))
      return failure();
  SmallVector<Value> state;
  for (StateOp s : stateOps)
    state.push_back(StateReadOp::create(b, loc, s.getTensorType(), s.getSymName()));
  auto start = CompressedAllReduceStartOp::create(b, loc, read.getResult(), state, ValueRange(), grid,
                                                  {StringRef("dp")}, reduction, codec, plan.scErrorFeedback);
  for (auto [s, value] : llvm::zip(stateOps, start.getNewState()))
    StateWriteOp::create(b, loc, value, s.getSymName());
  if (numCompressed)
    ++*numCompressed;
  return start.getRequest();
}
} // namespace

LogicalResult mlir::ptrain::compressDataParallelAllReduces(ModuleOp module, func::FuncOp optimizerStep, int64_t stage,
                                                           const CompressionPlan &plan, int64_t *numCompressed) {
  SymbolTable symbols(module);
  for (AllReduceStartOp op : allReducesOver(optimizerStep, {"dp"})) {
    // Not a gradient bucket: ZeRO-1's clipping norm, a sum over [dp] of the shards' squared norms.
    if (llvm::none_of(bucketPieces(op), [](Value piece) { return bool(gradientReadOf(piece)); }))
      continue;
    FailureOr<Bucket> bucket = readBucket(op);
    if (failed(bucket))
      return failure();
    SmallVector<CodecAttrInterface> codecs;
    SmallVector<std::string> keys;
    for (StateReadOp read : bucket->reads) {
      auto gradState = symbols.lookup<StateOp>(read.getState());
      keys.push_back(gradState ? gradState.getKey().str() : read.getState().str());
      codecs.push_back(dataParallelCodecOf(plan, stage, keys.back(), cast<RankedTensorType>(read.getType())));
    }
    if (llvm::none_of(codecs, [](CodecAttrInterface c) { return bool(c); }))
      continue;

    OpBuilder b(op);
    SmallVector<Value> requests;
    for (auto [read, key, codec] : llvm::zip(bucket->reads, keys, codecs)) {
      FailureOr<Value> request = startGradientAllReduce(b, module, optimizerStep, op.getLoc(), read, key, codec, plan,
                                                        op.getGrid(), op.getReduction(), numCompressed);
      if (failed(request))
        return failure();
      requests.push_back(*request);
    }
    b.setInsertionPoint(bucket->wait);
    Location loc = op.getLoc();
    SmallVector<Value> results;
    for (auto [request, piece] : llvm::zip(requests, bucket->pieces)) {
      Value reduced = WaitOp::create(b, loc, request).getResult();
      if (reduced.getType() != piece.getType())
        reduced = ReshapeOp::create(b, loc, piece.getType(), reduced);
      results.push_back(reduced);
    }
    replaceBucket(*bucket, concatenate(b, loc, op.getInput().getType(), results));
  }
  return success();
}

/// A ZeRO-1 bucket whose gradients are reduced one by one (ZeroBucketReduction::perGradient: PowerSGD): each
/// gradient of `rs`'s flat input is all-reduced (avg over dp) alone with its codec (startGradientAllReduce;
/// the padding's zeros stay zeros), and this rank's shard of the averaged, re-flattened bucket is cut at its
/// dp coordinate (`ptrain.tp_split ... axis dp dim 0`, as the parameters' shard is) where the reduce-scatter
/// was waited. The reduce-scatter and its wait are erased.
static LogicalResult allReduceZeroBucket(ModuleOp module, func::FuncOp optimizerStep, ReduceScatterStartOp rs,
                                         ArrayRef<StateReadOp> reads, ArrayRef<CodecAttrInterface> codecs,
                                         const CompressionPlan &plan, int64_t *numCompressed) {
  if (!rs.getRequest().hasOneUse() || !isa<WaitOp>(*rs.getRequest().getUsers().begin()))
    return rs.emitError("--ptrain-lower-to-runtime: the ZeRO-1 reduce-scatter to rewrite needs exactly one wait");
  auto wait = cast<WaitOp>(*rs.getRequest().getUsers().begin());
  if (rs.getReduction() != ReductionKind::Avg)
    return rs.emitError("--ptrain-lower-to-runtime: a ZeRO-1 bucket with PowerSGD gradients must average over dp");
  SmallVector<Value> pieces;
  if (auto concat = rs.getInput().getDefiningOp<ConcatOp>())
    pieces.append(concat->operand_begin(), concat->operand_end());
  else
    pieces.push_back(rs.getInput());
  SymbolTable symbols(module);
  // Gradients fused embedding sync (fuseEmbeddingSync, run before) already reduced over [dp, pp] and wrote back:
  // the same on every replica, so they are not reduced (nor compressed) again.
  llvm::StringSet<> reduced;
  for (AllReduceStartOp sync : allReducesOver(optimizerStep, {"dp", "pp"}))
    if (auto read = sync.getInput().getDefiningOp<StateReadOp>())
      reduced.insert(read.getState());
  OpBuilder b(rs);
  Location loc = rs.getLoc();
  // One request per gradient piece (null for the padding and the gradients reduced already, left as they are).
  SmallVector<Value> requests;
  size_t r = 0;
  for (Value piece : pieces) {
    StateReadOp read = gradientReadOf(piece);
    if (!read) {
      if (!matchPattern(piece, m_Constant()))
        return rs.emitError("--ptrain-lower-to-runtime: a ZeRO-1 bucket's pieces must be flattened gradient reads "
                            "and the zero padding, got ")
               << piece;
      requests.push_back(Value());
      continue;
    }
    if (r >= reads.size() || reads[r] != read)
      return rs.emitError("--ptrain-lower-to-runtime: the ZeRO-1 bucket's gradient reads are out of order");
    if (reduced.contains(read.getState())) {
      requests.push_back(Value());
      ++r;
      continue;
    }
    auto gradState = symbols.lookup<StateOp>(read.getState());
    std::string key = gradState ? gradState.getKey().str() : read.getState().str();
    FailureOr<Value> request = startGradientAllReduce(b, module, optimizerStep, loc, read, key, codecs[r], plan,
                                                      rs.getGrid(), ReductionKind::Avg, numCompressed);
    if (failed(request))
      return failure();
    requests.push_back(*request);
    ++r;
  }
  b.setInsertionPoint(wait);
  SmallVector<Value> averaged;
  for (auto [request, piece] : llvm::zip(requests, pieces)) {
    Value v = request ? WaitOp::create(b, loc, request).getResult() : piece;
    if (v.getType() != piece.getType())
      v = ReshapeOp::create(b, loc, piece.getType(), v);
    averaged.push_back(v);
  }
  Value full = concatenate(b, loc, rs.getInput().getType(), averaged);
  auto shardType = cast<RequestType>(rs.getRequest().getType()).getValueType();
  Value shard = TPSplitOp::create(b, loc, shardType, full, rs.getGrid(), "dp", /*dim=*/0);
  wait.getResult().replaceAllUsesWith(shard);
  wait.erase();
  Operation *feeder = rs.getInput().getDefiningOp();
  rs.erase();
  if (auto concat = dyn_cast_or_null<ConcatOp>(feeder); concat && concat->use_empty())
    concat.erase();
  // The flattening reshapes of the gradients are read by nothing now (each gradient is reduced in its shape).
  for (Value piece : pieces)
    if (auto reshape = piece.getDefiningOp<ReshapeOp>(); reshape && reshape->use_empty())
      reshape.erase();
  return success();
}

LogicalResult mlir::ptrain::compressZeroReduceScatters(ModuleOp module, func::FuncOp optimizerStep, int64_t stage,
                                                       const CompressionPlan &plan, int64_t *numCompressed) {
  for (auto [k, bucket] : llvm::enumerate(zeroBuckets(optimizerStep))) {
    auto rs = dyn_cast<ReduceScatterStartOp>(bucket);
    if (!rs)
      continue;
    SmallVector<StateReadOp> reads = zeroBucketReads(rs);
    FailureOr<ZeroBucketReduction> reduction =
        zeroBucketReduction(module, plan, stage, reads, [&] { return rs.emitError("--ptrain-lower-to-runtime: "); });
    if (failed(reduction))
      return failure();
    if (reduction->perGradient) {
      if (failed(allReduceZeroBucket(module, optimizerStep, rs, reads, reduction->codecs, plan, numCompressed)))
        return failure();
      continue;
    }
    std::optional<CodecAttrInterface> codec = reduction->flatCodec;
    if (!*codec)
      continue;
    auto quant = dyn_cast<QuantAttr>(*codec);
    if (!quant)
      return rs.emitError("--ptrain-lower-to-runtime: the ZeRO-1 reduce-scatter compresses a bucket with "
                          "quantization (#ptrain.quant); ")
             << Attribute(*codec) << " on a ZeRO-1 bucket is not built (docs/DistributedOptimizer.md)";
    if (quant.getGranularity() == QuantGranularity::Channel)
      return rs.emitError("--ptrain-lower-to-runtime: a ZeRO-1 bucket is a flat tensor: quantize it with "
                          "granularity tensor or block (e.g. quant:bits=8,granularity=block,block-size=256), not ")
             << Attribute(*codec) << " (channel granularity would keep a scale per element)";
    auto type = cast<RankedTensorType>(rs.getInput().getType());
    OpBuilder b(rs);
    Location loc = rs.getLoc();
    SmallVector<Value> state;
    StateOp residual;
    if (plan.scErrorFeedback) {
      std::string bucketName = "stage" + std::to_string(stage) + "_zero_bucket" + std::to_string(k);
      FailureOr<StateOp> s =
          getOrAddCodecState(module, optimizerStep, "sc_" + bucketName + "_residual",
                             "sc/stage" + std::to_string(stage) + ".zero_bucket" + std::to_string(k) + "/residual",
                             StateKind::CodecResidual, type);
      if (failed(s))
        return failure();
      markGradientResidual(module, *s);
      residual = *s;
      state.push_back(StateReadOp::create(b, loc, type, residual.getSymName()));
    }
    auto start = CompressedReduceScatterStartOp::create(
        b, loc, rs.getRequest().getType(), TypeRange(ValueRange(state)), rs.getInput(), state, rs.getGrid(),
        rs.getGridAxes(), rs.getReduction(), *codec, plan.scErrorFeedback);
    if (residual)
      StateWriteOp::create(b, loc, start.getNewState()[0], residual.getSymName());
    rs.getRequest().replaceAllUsesWith(start.getRequest());
    rs.erase();
    if (numCompressed)
      ++*numCompressed;
  }
  return success();
}

/// The tied syncs of an optimizer step: its sums over [pp] that are not the global gradient norm, in order.
static SmallVector<AllReduceStartOp> tiedSyncs(func::FuncOp optimizerStep) {
  SmallVector<AllReduceStartOp> syncs;
  for (AllReduceStartOp sync : allReducesOver(optimizerStep, {"pp"}))
    if (!sync->hasAttr(kGlobalNormAttr)) // the global gradient norm (clip-norm): the same on every replica already
      syncs.push_back(sync);
  return syncs;
}

/// Takes the gradient `read` out of the dp buckets of `optimizerStep`: reduced locally, kept in place.
static LogicalResult removeFromBuckets(func::FuncOp optimizerStep, StateReadOp read) {
  for (AllReduceStartOp op : allReducesOver(optimizerStep, {"dp"})) {
    // Not a gradient bucket: ZeRO-1's clipping norm, a sum over [dp] of the shards' squared norms.
    if (llvm::none_of(bucketPieces(op), [](Value piece) { return bool(gradientReadOf(piece)); }))
      continue;
    FailureOr<Bucket> bucket = readBucket(op);
    if (failed(bucket))
      return failure();
    auto it = llvm::find_if(bucket->reads, [&](StateReadOp r) { return r.getState() == read.getState(); });
    if (it == bucket->reads.end())
      continue;
    size_t j = it - bucket->reads.begin();
    OpBuilder b(op);
    Location loc = op.getLoc();
    if (bucket->pieces.size() == 1) {
      replaceBucket(*bucket, bucket->pieces[0]);
      continue;
    }
    SmallVector<Value> rest(bucket->pieces);
    rest.erase(rest.begin() + j);
    Value restInput = concatenate(b, loc, flatOf(rest), rest);
    auto start = AllReduceStartOp::create(b, op.getLoc(), restInput, op.getGrid(), op.getGridAxes(), op.getReduction());
    b.setInsertionPoint(bucket->wait);
    Value reduced = WaitOp::create(b, loc, start.getRequest()).getResult();
    SmallVector<Value> parts = {reduced};
    if (rest.size() > 1) {
      SmallVector<Type> types;
      SmallVector<int64_t> sizes;
      for (Value piece : rest) {
        types.push_back(piece.getType());
        sizes.push_back(cast<RankedTensorType>(piece.getType()).getNumElements());
      }
      auto split = SplitOp::create(b, loc, types, reduced, b.getI64IntegerAttr(0), b.getDenseI64ArrayAttr(sizes));
      parts.assign(split.getResults().begin(), split.getResults().end());
    }
    parts.insert(parts.begin() + j, bucket->pieces[j]);
    replaceBucket(*bucket, concatenate(b, loc, op.getInput().getType(), parts));
  }
  return success();
}

LogicalResult mlir::ptrain::fuseEmbeddingSync(ModuleOp module, ArrayRef<func::FuncOp> optimizerSteps, GridOp grid) {
  // Without data parallelism the sync runs over [pp] (the holders) alone.
  const bool hasDp = grid.getAxisIndex("dp").has_value();
  const int64_t dp = hasDp ? grid.getAxisSize("dp") : 1;
  const int64_t pp = static_cast<int64_t>(optimizerSteps.size());
  SmallVector<StringRef> fusedAxes = {"pp"};
  if (hasDp)
    fusedAxes.insert(fusedAxes.begin(), "dp");
  // The k-th tied sync of every stage reduces the same parameter (BuildTrainingStep posts them in one order);
  // its holders are the stages whose input is the gradient read (the others contribute zeros).
  SmallVector<SmallVector<AllReduceStartOp>> syncs;
  for (func::FuncOp opt : optimizerSteps) {
    if (!opt)
      return mlir::emitError(module.getLoc(),
                             "--ptrain-lower-to-runtime: fused embedding sync: a stage has no optimizer step");
    syncs.push_back(tiedSyncs(opt));
    for (AllReduceStartOp sync : syncs.back())
      if (sync.getReduction() != ReductionKind::Sum || getSubgroup(sync) || !sync.getRequest().hasOneUse() ||
          !isa<WaitOp>(*sync.getRequest().getUsers().begin()))
        return sync.emitError("--ptrain-lower-to-runtime: fused embedding sync: the tied sync must be a sum over [pp] "
                              "of the whole axis with one wait");
    if (syncs.back().size() != syncs.front().size())
      return opt.emitError("--ptrain-lower-to-runtime: fused embedding sync: @")
             << opt.getSymName() << " has " << syncs.back().size() << " tied syncs over [pp], @"
             << func::FuncOp(optimizerSteps.front()).getSymName() << " has " << syncs.front().size();
  }
  for (size_t k = 0; k < syncs.front().size(); ++k) {
    SmallVector<int64_t> holders;
    for (int64_t s = 0; s < pp; ++s)
      if (syncs[s][k].getInput().getDefiningOp<StateReadOp>())
        holders.push_back(s);
    if (holders.empty())
      return syncs.front()[k].emitError("--ptrain-lower-to-runtime: fused embedding sync: no stage holds the "
                                        "parameter of this tied sync (its input is never a gradient read)");
    // The group {holders} x dp (per TP rank): a sub-group of pp when some stages do not hold the parameter
    // (the first and the last at pp > 2), the whole axis otherwise (pp = 2).
    const bool subgroup = static_cast<int64_t>(holders.size()) < pp;
    for (int64_t s = 0; s < pp; ++s) {
      AllReduceStartOp sync = syncs[s][k];
      auto wait = cast<WaitOp>(*sync.getRequest().getUsers().begin());
      auto read = sync.getInput().getDefiningOp<StateReadOp>();
      if (!read && subgroup) {
        // Not a member: the stage posts nothing (no zeros sent).
        if (!wait.getResult().use_empty())
          return wait.emitError("--ptrain-lower-to-runtime: fused embedding sync: a stage that does not hold the "
                                "tied parameter uses the result of its sync");
        Operation *zeros = sync.getInput().getDefiningOp();
        wait.erase();
        sync.erase();
        if (zeros && zeros->use_empty())
          zeros->erase();
        continue;
      }
      if (read && failed(removeFromBuckets(optimizerSteps[s], read)))
        return failure();
      // One reduction over {holders} x dp, divided by dp on the stages that keep the result.
      OpBuilder b(sync);
      auto fused = AllReduceStartOp::create(b, sync.getLoc(), sync.getInput(), sync.getGrid(),
                                            b.getStrArrayAttr(fusedAxes), ReductionKind::Sum);
      if (subgroup)
        setSubgroup(fused, "pp", holders);
      b.setInsertionPoint(wait);
      Value summed = WaitOp::create(b, wait.getLoc(), fused.getRequest()).getResult();
      if (!wait.getResult().use_empty() && dp > 1) {
        auto scalarType = RankedTensorType::get({}, b.getF32Type());
        Value size = arith::ConstantOp::create(
            b, wait.getLoc(), DenseElementsAttr::get(scalarType, b.getF32FloatAttr(static_cast<float>(dp))));
        summed = BinaryOp::create(b, wait.getLoc(), BinaryKind::Div, summed, size);
      }
      wait.getResult().replaceAllUsesWith(summed);
      wait.erase();
      sync.erase();
    }
  }
  return success();
}
