//===- DataParallelBuckets.cpp - the dp all-reduce buckets and their codecs -*- C++ -*-===//
//
// See include/ptrain/Plan/DataParallelBuckets.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Plan/DataParallelBuckets.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::ptrain;

SmallVector<AllReduceStartOp> mlir::ptrain::allReducesOver(func::FuncOp fn, ArrayRef<StringRef> axes) {
  SmallVector<AllReduceStartOp> ops;
  fn.walk([&](AllReduceStartOp op) {
    if (llvm::equal(op.getGridAxes().getAsValueRange<StringAttr>(), axes))
      ops.push_back(op);
  });
  return ops;
}

SmallVector<Value> mlir::ptrain::bucketPieces(AllReduceStartOp start) {
  Value input = start.getInput();
  if (auto concat = input.getDefiningOp<ConcatOp>())
    return SmallVector<Value>(concat->operand_begin(), concat->operand_end());
  return {input};
}

StateReadOp mlir::ptrain::gradientReadOf(Value piece) {
  if (auto reshape = piece.getDefiningOp<ReshapeOp>())
    piece = reshape->getOperand(0);
  return piece.getDefiningOp<StateReadOp>();
}

SmallVector<StateReadOp> mlir::ptrain::dataParallelGradientReads(func::FuncOp optimizerStep) {
  SmallVector<StateReadOp> reads;
  for (const SmallVector<StateReadOp> &bucket : dataParallelBuckets(optimizerStep))
    reads.append(bucket.begin(), bucket.end());
  for (Operation *bucket : zeroBuckets(optimizerStep))
    llvm::append_range(reads, zeroBucketReads(bucket));
  return reads;
}

SmallVector<SmallVector<StateReadOp>> mlir::ptrain::dataParallelBuckets(func::FuncOp optimizerStep) {
  SmallVector<SmallVector<StateReadOp>> buckets;
  for (AllReduceStartOp op : allReducesOver(optimizerStep, {"dp"})) {
    buckets.emplace_back();
    for (Value piece : bucketPieces(op))
      if (StateReadOp read = gradientReadOf(piece))
        buckets.back().push_back(read);
  }
  return buckets;
}

CodecAttrInterface mlir::ptrain::dataParallelCodecOf(const CompressionPlan &plan, int64_t stage, StringRef key,
                                                     RankedTensorType type) {
  if (auto it = plan.dpCodecs.find(key.str()); it != plan.dpCodecs.end())
    return it->second;
  if (stage >= static_cast<int64_t>(plan.dpAllReduce.size()) || !plan.dpAllReduce[stage])
    return CodecAttrInterface();
  auto [n, m] = *MatrixViewAttr::getMatrixShape(MatrixViewAttr(), type, nullptr);
  return PowerSGDAttr::get(type.getContext(), std::min({plan.scRank, n, m}), BoolAttr(), MatrixViewAttr());
}

SmallVector<Operation *> mlir::ptrain::zeroBuckets(func::FuncOp optimizerStep) {
  SmallVector<Operation *> ops;
  optimizerStep.walk([&](Operation *op) {
    auto axes = op->getAttrOfType<ArrayAttr>("grid_axes");
    if (isa<ReduceScatterStartOp, CompressedReduceScatterStartOp>(op) && axes &&
        llvm::equal(axes.getAsValueRange<StringAttr>(), ArrayRef<StringRef>{"dp"}))
      ops.push_back(op);
  });
  return ops;
}

SmallVector<StateReadOp> mlir::ptrain::zeroBucketReads(Operation *bucket) {
  Value input = bucket->getOperand(0);
  SmallVector<Value> pieces;
  if (auto concat = input.getDefiningOp<ConcatOp>())
    pieces.append(concat->operand_begin(), concat->operand_end());
  else
    pieces.push_back(input);
  SmallVector<StateReadOp> reads;
  for (Value piece : pieces)
    if (StateReadOp read = gradientReadOf(piece))
      reads.push_back(read);
  return reads;
}

FailureOr<ZeroBucketReduction> mlir::ptrain::zeroBucketReduction(ModuleOp module, const CompressionPlan &plan,
                                                                 int64_t stage, ArrayRef<StateReadOp> reads,
                                                                 llvm::function_ref<InFlightDiagnostic()> error) {
  ZeroBucketReduction reduction;
  SmallVector<std::string> keys;
  for (StateReadOp constRead : reads) {
    StateReadOp read = constRead;
    auto state = module.lookupSymbol<StateOp>(read.getState());
    keys.push_back(state ? state.getKey().str() : read.getState().str());
    reduction.codecs.push_back(dataParallelCodecOf(plan, stage, keys.back(), cast<RankedTensorType>(read.getType())));
  }
  auto coded = llvm::find_if(reduction.codecs, [](CodecAttrInterface c) { return bool(c); });
  if (coded == reduction.codecs.end()) {
    reduction.codecs.clear();
    return reduction;
  }
  const bool perGradient = isa<PowerSGDAttr>(*coded);
  for (auto [i, c] : llvm::enumerate(reduction.codecs)) {
    // PowerSGD and exact gradients mix (each is reduced alone); a flat codec is the bucket's one codec.
    bool fits = perGradient ? (!c || isa<PowerSGDAttr>(c)) : c == *coded;
    if (fits)
      continue;
    InFlightDiagnostic diag = error();
    diag << "the ZeRO-1 bucket of '" << keys[coded - reduction.codecs.begin()] << "' and '" << keys[i] << "' ";
    if (perGradient)
      diag << "all-reduces its PowerSGD gradients one by one and cannot also reduce-scatter a flat codec, got ";
    else
      diag << "is reduce-scattered as one flat tensor and needs one codec for all its gradients, got ";
    diag << Attribute(*coded) << " and ";
    if (c)
      diag << Attribute(c);
    else
      diag << "none";
    return failure();
  }
  if (perGradient) {
    reduction.perGradient = true;
  } else {
    reduction.flatCodec = *coded;
    reduction.codecs.clear();
  }
  return reduction;
}
