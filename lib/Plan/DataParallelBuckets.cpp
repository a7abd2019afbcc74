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
