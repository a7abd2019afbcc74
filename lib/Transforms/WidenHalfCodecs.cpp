//===- WidenHalfCodecs.cpp - 16-bit codec ops onto the f32 kernels --------===//
//
// --ptrain-widen-half-codecs: see include/ptrain/Transforms/WidenHalfCodecs.h and the pass description in
// Passes.td (issue 24 item 2).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/WidenHalfCodecs.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "ptrain-widen-half-codecs"

namespace mlir::ptrain {
#define GEN_PASS_DEF_WIDENHALFCODECSPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {

bool isHalfTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isHalfFloat(tensor.getElementType());
}

/// `value` cast to `type` (no op when it has it).
Value castTo(PatternRewriter &rewriter, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return CastOp::create(rewriter, loc, type, value);
}

/// Matches a codec op whose tensor (`type`: the compress's input, the decompress's result) is bf16 or f16 and that
/// has no parameters (the linear autoencoder's, which the verifier refuses on 16-bit tensors anyway).
LogicalResult matchHalfCodecOp(PatternRewriter &rewriter, Operation *op, Type type, ValueRange params) {
  if (!isHalfTensor(type))
    return rewriter.notifyMatchFailure(op, "the codec's tensor is not bf16 or f16");
  if (!params.empty())
    return rewriter.notifyMatchFailure(op, "a codec with parameters (the linear autoencoder) codes f32 only");
  return success();
}

struct WidenCompress : OpRewritePattern<CompressOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CompressOp op, PatternRewriter &rewriter) const override {
    auto type = op.getInput().getType();
    if (failed(matchHalfCodecOp(rewriter, op, type, op.getParams())))
      return failure();
    CodecAttrInterface codec = op.getCodec();
    const RankedTensorType wide = getCodecComputeType(type);
    SmallVector<Type> wideCodes = codec.getCodeTypes(wide);
    Location loc = op.getLoc();
    Value x = castTo(rewriter, loc, op.getInput(), wide);
    auto encode = CompressOp::create(rewriter, loc, wideCodes, op.getNewState().getTypes(), x, op.getState(),
                                     ValueRange(), codec, op.getErrorFeedback());
    encode->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    SmallVector<Value> codes, newState(encode.getNewState());
    bool rounded = false;
    for (auto [code, narrow] : llvm::zip(encode.getCodes(), op.getCodes().getTypes())) {
      codes.push_back(castTo(rewriter, loc, code, narrow));
      rounded |= code.getType() != narrow;
    }
    if (rounded && op.getErrorFeedback()) {
      // The residual keeps what the 16-bit values lost: the f32 kernel left e' = 0 where it kept v (it sent v
      // exactly), so e' + decode(v - widen(round(v))) is g + e - decode(the codes sent), exactly (each
      // difference is an f32 number, and decode only scatters it: top-k and rand-k).
      if (!isa<TopKAttr, RandKAttr>(codec))
        return rewriter.notifyMatchFailure(op, "only top-k and rand-k keep 16-bit codes");
      SmallVector<Value> lost;
      for (auto [code, narrow] : llvm::zip(encode.getCodes(), codes)) {
        if (code.getType() == narrow.getType()) {
          lost.push_back(code);
          continue;
        }
        Value back = castTo(rewriter, loc, narrow, code.getType());
        lost.push_back(BinaryOp::create(rewriter, loc, BinaryKind::Sub, code, back));
      }
      // rand-k's decoder reads the counter the encoder read (the state after the residual).
      ValueRange decoderState = ValueRange(op.getState()).drop_front();
      auto decode = DecompressOp::create(rewriter, loc, wide, decoderState.getTypes(), lost, decoderState,
                                         ValueRange(), codec);
      newState[0] = BinaryOp::create(rewriter, loc, BinaryKind::Add, newState[0], decode.getResult());
    }
    SmallVector<Value> results(codes);
    llvm::append_range(results, newState);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct WidenDecompress : OpRewritePattern<DecompressOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DecompressOp op, PatternRewriter &rewriter) const override {
    auto type = op.getResult().getType();
    if (failed(matchHalfCodecOp(rewriter, op, type, op.getParams())))
      return failure();
    const RankedTensorType wide = getCodecComputeType(cast<RankedTensorType>(type));
    Location loc = op.getLoc();
    SmallVector<Value> codes;
    for (auto [code, wideType] : llvm::zip(op.getCodes(), op.getCodec().getCodeTypes(wide)))
      codes.push_back(castTo(rewriter, loc, code, wideType));
    auto decode = DecompressOp::create(rewriter, loc, wide, op.getNewState().getTypes(), codes, op.getState(),
                                       ValueRange(), op.getCodec());
    decode->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    SmallVector<Value> results = {castTo(rewriter, loc, decode.getResult(), type)};
    llvm::append_range(results, decode.getNewState());
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct WidenCompressedAllReduce : OpRewritePattern<CompressedAllReduceStartOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CompressedAllReduceStartOp op, PatternRewriter &rewriter) const override {
    auto type = op.getInput().getType();
    if (failed(matchHalfCodecOp(rewriter, op, type, op.getParams())))
      return failure();
    SmallVector<WaitOp> waits;
    for (Operation *user : op.getRequest().getUsers()) {
      auto wait = dyn_cast<WaitOp>(user);
      if (!wait)
        return rewriter.notifyMatchFailure(op, "the request has a user that is not a ptrain.wait");
      waits.push_back(wait);
    }
    const RankedTensorType wide = getCodecComputeType(cast<RankedTensorType>(type));
    Location loc = op.getLoc();
    Value x = castTo(rewriter, loc, op.getInput(), wide);
    auto start = CompressedAllReduceStartOp::create(
        rewriter, loc, RequestType::get(rewriter.getContext(), wide), op.getNewState().getTypes(), x, op.getState(),
        op.getParams(), op.getGridAttr(), op.getGridAxesAttr(), op.getReductionAttr(), op.getCodec(),
        op.getErrorFeedbackAttr(),
        // Top-k and rand-k send the 16-bit values the 16-bit op sends (C8; the runtimes' value_dtype).
        isa<TopKAttr, RandKAttr>(op.getCodec()) ? TypeAttr::get(cast<RankedTensorType>(type).getElementType())
                                                : TypeAttr());
    start->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    for (WaitOp wait : waits) {
      rewriter.setInsertionPoint(wait);
      auto sum = WaitOp::create(rewriter, wait.getLoc(), start.getRequest());
      sum->setDiscardableAttrs(wait->getDiscardableAttrDictionary());
      rewriter.replaceOp(wait, castTo(rewriter, wait.getLoc(), sum.getResult(), type));
    }
    SmallVector<Value> results = {start.getRequest()};
    llvm::append_range(results, start.getNewState());
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct WidenHalfCodecsPass : ptrain::impl::WidenHalfCodecsPassBase<WidenHalfCodecsPass> {
  using WidenHalfCodecsPassBase::WidenHalfCodecsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (auto c = dyn_cast<CompressOp>(op); c && isHalfTensor(c.getInput().getType())) {
        ++numCompresses;
        ops.push_back(op);
      } else if (auto d = dyn_cast<DecompressOp>(op); d && isHalfTensor(d.getResult().getType())) {
        ++numDecompresses;
        ops.push_back(op);
      } else if (auto a = dyn_cast<CompressedAllReduceStartOp>(op); a && isHalfTensor(a.getInput().getType())) {
        ++numAllReduces;
        ops.push_back(op);
      }
    });
    // Each op once, in place (not the greedy driver: it would also erase the module's dead ops, so an fp32 step
    // would not stay byte-identical; not the walk driver: the compressed all-reduce's rewrite replaces its waits,
    // which come later in the walk).
    MLIRContext *context = &getContext();
    WidenCompress compress(context);
    WidenDecompress decompress(context);
    WidenCompressedAllReduce allReduce(context);
    for (Operation *op : ops) {
      PatternRewriter rewriter(context);
      rewriter.setInsertionPoint(op);
      LogicalResult done = failure();
      if (auto c = dyn_cast<CompressOp>(op))
        done = compress.matchAndRewrite(c, rewriter);
      else if (auto d = dyn_cast<DecompressOp>(op))
        done = decompress.matchAndRewrite(d, rewriter);
      else
        done = allReduce.matchAndRewrite(cast<CompressedAllReduceStartOp>(op), rewriter);
      if (failed(done)) {
        op->emitOpError("--ptrain-widen-half-codecs: this 16-bit codec op has no f32 form (a codec with parameters, "
                        "or a request read by something other than ptrain.wait)");
        return signalPassFailure();
      }
    }
  }
};

} // namespace

void mlir::ptrain::populateWidenHalfCodecsPatterns(RewritePatternSet &patterns) {
  patterns.add<WidenCompress, WidenDecompress, WidenCompressedAllReduce>(patterns.getContext());
}
