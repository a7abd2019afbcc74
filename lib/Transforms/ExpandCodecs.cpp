//===- ExpandCodecs.cpp - high-level codec collectives into phases --*- C++ -*-===//
//
// --ptrain-expand-codecs: see the pass description in Passes.td and docs/Compression.md ("Expansion").
// Data-parallel PowerSGD (Vogels et al. 2019, Algorithm 1 with Algorithm 2's error feedback) as its three
// phase ops around two plain all-reduces: P = M Q0, all-reduce P, P^ = orth(P), Q = M^T P^, all-reduce Q,
// decode alpha P^ Q^T, residual M - P^ Q^T / N, warm-start Q / N.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainCodecPhaseOps.h"

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

LogicalResult ExpandCodecsPass::expand(CompressedAllReduceStartOp start, PowerSGDAttr codec, SymbolTable &symbols) {
  auto error = [&](Operation *at) { return at->emitError("--ptrain-expand-codecs: "); };
  Value request = start.getRequest();
  auto wait = request.hasOneUse() ? dyn_cast<WaitOp>(*request.getUsers().begin()) : WaitOp();
  if (!wait || wait->getBlock() != start->getBlock())
    return error(start) << "the PowerSGD all-reduce to expand needs exactly one ptrain.wait in its block";
  auto grid = symbols.lookup<GridOp>(start.getGrid());
  if (!grid)
    return error(start) << "no ptrain.grid @" << start.getGrid();
  const int64_t members = grid.getGroupSize(start.getGridAxes());

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
    auto codec = dyn_cast<PowerSGDAttr>(start.getCodec());
    if (!codec) {
      ++numKept;
      continue;
    }
    if (failed(expand(start, codec, symbols)))
      return signalPassFailure();
  }
}
