//===- ExpandCodecs.cpp - high-level codec collectives into phases --*- C++ -*-===//
//
// --ptrain-expand-codecs: see the pass description in Passes.td and docs/Compression.md ("Expansion").
// Data-parallel PowerSGD (Vogels et al. 2019, Algorithm 1 with Algorithm 2's error feedback) as its three
// phase ops around two plain all-reduces: P = M Q0, all-reduce P, P^ = orth(P), Q = M^T P^, all-reduce Q,
// decode alpha P^ Q^T, residual M - P^ Q^T / N, warm-start Q / N. The gathered codecs (top-k, quantization) as
// ptrain.compress, one all-gather per code, and a ptrain.decompress of each member's code summed in member
// order, as lib/Runtime/cpu/CompressedCollectives.cpp runs them.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainCodecPhaseOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "ptrain-expand-codecs"

namespace mlir::ptrain {
#define GEN_PASS_DEF_EXPANDCODECSPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {
struct ExpandCodecsPass : public ptrain::impl::ExpandCodecsPassBase<ExpandCodecsPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult expand(CompressedAllReduceStartOp start, PowerSGDAttr codec, SymbolTable &symbols);
  LogicalResult expandGathered(CompressedAllReduceStartOp start, CodecAttrInterface codec, SymbolTable &symbols);
};

/// The state symbol `op` reads or writes, or empty.
StringRef stateOf(Operation *op) {
  if (auto read = dyn_cast<StateReadOp>(op))
    return read.getState();
  if (auto write = dyn_cast<StateWriteOp>(op))
    return write.getState();
  return {};
}
} // namespace

namespace {
InFlightDiagnostic expandError(Operation *at) { return at->emitError("--ptrain-expand-codecs: "); }

/// The one ptrain.wait of `start` in its block and the size of its group, or failure with an error naming
/// `what` (the codec's collective).
FailureOr<std::pair<WaitOp, int64_t>> waitAndGroupSize(CompressedAllReduceStartOp start, SymbolTable &symbols,
                                                       StringRef what) {
  Value request = start.getRequest();
  auto wait = request.hasOneUse() ? dyn_cast<WaitOp>(*request.getUsers().begin()) : WaitOp();
  if (!wait || wait->getBlock() != start->getBlock())
    return expandError(start) << "the " << what << " all-reduce to expand needs exactly one ptrain.wait in its block";
  auto grid = symbols.lookup<GridOp>(start.getGrid());
  if (!grid)
    return expandError(start) << "no ptrain.grid @" << start.getGrid();
  return std::make_pair(wait, grid.getGroupSize(start.getGridAxes()));
}
} // namespace

LogicalResult ExpandCodecsPass::expandGathered(CompressedAllReduceStartOp start, CodecAttrInterface codec,
                                               SymbolTable &symbols) {
  FailureOr<std::pair<WaitOp, int64_t>> found = waitAndGroupSize(start, symbols, "gathered-codec");
  if (failed(found))
    return failure();
  auto [wait, members] = *found;
  auto type = cast<RankedTensorType>(start.getInput().getType());
  SmallVector<Type> codeTypes = codec.getCodeTypes(type); // 1-D: values, indices, packed bytes, scales
  Location loc = start.getLoc();

  // At the start: encode (with the member's own error feedback; the new residual is known here), then one
  // all-gather per code along its first dimension.
  OpBuilder b(start);
  auto compress = CompressOp::create(b, loc, codeTypes, ValueRange(start.getState()).getTypes(), start.getInput(),
                                     start.getState(), start.getParams(), codec, start.getErrorFeedback());
  SmallVector<Value> requests;
  for (Value code : compress.getCodes()) {
    auto codeType = cast<RankedTensorType>(code.getType());
    SmallVector<int64_t> shape(codeType.getShape());
    shape[0] *= members;
    auto gathered = RankedTensorType::get(shape, codeType.getElementType());
    requests.push_back(AllGatherStartOp::create(b, loc, RequestType::get(b.getContext(), gathered), code,
                                                start.getGrid(), start.getGridAxes(), 0)
                           .getRequest());
  }
  for (auto [old, now] : llvm::zip(start.getNewState(), compress.getNewState()))
    old.replaceAllUsesWith(now);

  // At the wait: every member's code decoded and added in member order, an average scaled by 1 / N.
  b.setInsertionPoint(wait);
  SmallVector<Value> gathered;
  for (Value request : requests)
    gathered.push_back(WaitOp::create(b, loc, request).getResult());
  Value sum;
  for (int64_t i = 0; i < members; ++i) {
    SmallVector<Value> codes;
    for (auto [all, codeType] : llvm::zip(gathered, codeTypes)) {
      auto shape = cast<RankedTensorType>(codeType).getShape();
      SmallVector<int64_t> offsets(shape.size(), 0);
      offsets[0] = i * shape[0];
      codes.push_back(SliceOp::create(b, loc, all, b.getDenseI64ArrayAttr(offsets), b.getDenseI64ArrayAttr(shape)));
    }
    Value decoded =
        DecompressOp::create(b, loc, type, TypeRange(), codes, ValueRange(), ValueRange(), codec).getResult();
    sum = sum ? Value(BinaryOp::create(b, loc, BinaryKind::Add, sum, decoded)) : decoded;
  }
  if (start.getReduction() == ReductionKind::Avg) {
    auto scalar = RankedTensorType::get({}, type.getElementType());
    Value alpha = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(scalar, b.getF32FloatAttr(1.0f / static_cast<float>(members))));
    sum = BinaryOp::create(b, loc, BinaryKind::Mul, sum, alpha);
  }
  wait.getResult().replaceAllUsesWith(sum);
  wait.erase();
  start.erase();
  ++numGathered;
  return success();
}

LogicalResult ExpandCodecsPass::expand(CompressedAllReduceStartOp start, PowerSGDAttr codec, SymbolTable &symbols) {
  auto error = [&](Operation *at) { return expandError(at); };
  FailureOr<std::pair<WaitOp, int64_t>> found = waitAndGroupSize(start, symbols, "PowerSGD");
  if (failed(found))
    return failure();
  auto [wait, members] = *found;

  // The new codec state moves to the finish, after the wait: its users before the wait must be state writes,
  // and nothing between the start and the wait may touch those states.
  SmallVector<StateWriteOp> moved;
  llvm::SmallPtrSet<Operation *, 4> movedOps;
  llvm::StringSet<> movedStates;
  for (Value state : start.getNewState())
    for (Operation *user : state.getUsers()) {
      if (user->getBlock() == wait->getBlock() && wait->isBeforeInBlock(user))
        continue;
      auto write = dyn_cast<StateWriteOp>(user);
      if (!write || write->getBlock() != start->getBlock())
        return error(user) << "the PowerSGD all-reduce's new codec state is known only after its wait; this use "
                              "before the wait is not a ptrain.state_write";
      moved.push_back(write);
      movedOps.insert(write);
      movedStates.insert(write.getState());
    }
  for (Operation *op = start->getNextNode(); op != wait; op = op->getNextNode())
    if (!movedOps.contains(op) && movedStates.contains(stateOf(op)))
      return error(op) << "touches codec state @" << stateOf(op)
                       << " between the PowerSGD all-reduce and its wait, where --ptrain-expand-codecs moves its "
                          "update";

  auto type = cast<RankedTensorType>(start.getInput().getType());
  auto [n, m] = *MatrixViewAttr::getMatrixShape(codec.getView(), type, nullptr);
  const int64_t r = codec.getRank();
  const bool exact = (n + m) * r >= n * m;
  auto pType = RankedTensorType::get({n, r}, type.getElementType());
  auto qType = RankedTensorType::get({m, r}, type.getElementType());
  Location loc = start.getLoc();
  size_t next = 0;
  Value residual = start.getErrorFeedback() ? start.getState()[next++] : Value();
  Value warmQ = codec.isWarmStart() ? start.getState()[next++] : Value();

  // Round 1 at the start: P = M Q0, all-reduce P.
  OpBuilder b(start);
  auto phaseP =
      PowerSGDPhasePOp::create(b, loc, TypeRange{type, pType, qType}, start.getInput(), residual, warmQ, codec);
  auto sumOf = [&](Value v) {
    return AllReduceStartOp::create(b, loc, v, start.getGrid(), start.getGridAxes(), ReductionKind::Sum).getRequest();
  };
  Value pRequest = sumOf(phaseP.getP());
  // The exact path's Q code carries the rest of M: it travels in the first round too.
  Value qExactRequest = exact ? sumOf(phaseP.getQ()) : Value();

  // Round 2 at the wait: orthogonalize the summed P, Q = M^T P^, all-reduce Q, finish.
  b.setInsertionPoint(wait);
  Value pHat = WaitOp::create(b, loc, pRequest).getResult(), qSum;
  if (exact) {
    qSum = WaitOp::create(b, loc, qExactRequest).getResult();
  } else {
    auto phaseQ = PowerSGDPhaseQOp::create(b, loc, TypeRange{pType, qType}, phaseP.getMatrix(), pHat, codec);
    pHat = phaseQ.getPHat();
    qSum = WaitOp::create(b, loc, sumOf(phaseQ.getQ())).getResult();
  }
  const float beta = 1.0f / static_cast<float>(members);
  const float alpha = start.getReduction() == ReductionKind::Avg ? beta : 1.0f;
  auto finish = PowerSGDFinishOp::create(b, loc, TypeRange{type, type, qType}, pHat, qSum, phaseP.getMatrix(), codec,
                                         b.getF32FloatAttr(alpha), b.getF32FloatAttr(beta));

  next = 0;
  if (start.getErrorFeedback())
    start.getNewState()[next++].replaceAllUsesWith(finish.getResidual());
  if (codec.isWarmStart())
    start.getNewState()[next++].replaceAllUsesWith(exact ? warmQ : finish.getWarmStartQ());
  wait.getResult().replaceAllUsesWith(finish.getResult());
  Operation *after = finish;
  for (StateWriteOp write : moved) {
    write->moveAfter(after);
    after = write;
  }
  wait.erase();
  start.erase();
  ++numExpanded;
  if (exact)
    ++numExact;
  return success();
}

void ExpandCodecsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  SmallVector<CompressedAllReduceStartOp> starts;
  module.walk([&](CompressedAllReduceStartOp op) { starts.push_back(op); });
  for (CompressedAllReduceStartOp start : starts) {
    if (auto codec = dyn_cast<PowerSGDAttr>(start.getCodec())) {
      if (failed(expand(start, codec, symbols)))
        return signalPassFailure();
    } else if (isa<TopKAttr, QuantAttr, TahQuantAttr>(start.getCodec())) {
      if (failed(expandGathered(start, start.getCodec(), symbols)))
        return signalPassFailure();
    } else {
      ++numKept; // rand-k and casts: reduced in compressed form by one collective already
    }
  }
}
