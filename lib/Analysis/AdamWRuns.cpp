//===- AdamWRuns.cpp - Runs of AdamW updates updated in place -------------===//
//
// See AdamWRuns.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/AdamWRuns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {

/// Whether `v` is a +0.0 f32 splat constant.
bool isPositiveZeroSplat(Value v) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  auto attr = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
  return attr && attr.isSplat() && attr.getElementType().isF32() &&
         attr.getSplatValue<APFloat>().bitcastToAPInt().isZero();
}

/// The row starting at ops[i] and its number of ops, or 0 ops.
std::pair<AdamWRow, size_t> matchRow(ArrayRef<Operation *> ops, size_t i,
                                     const llvm::DenseSet<Operation *> &excluded) {
  AdamWRow row;
  if (i + 8 > ops.size())
    return {row, 0};
  llvm::SmallDenseMap<Value, StateReadOp> reads;
  for (size_t k = 0; k < 4; ++k) {
    auto read = dyn_cast<StateReadOp>(ops[i + k]);
    if (!read || !read.getResult().hasOneUse())
      return {row, 0};
    reads[read.getResult()] = read;
  }
  auto adam = dyn_cast<AdamWOp>(ops[i + 4]);
  if (!adam)
    return {row, 0};
  auto stateOf = [&](Value operand) -> StringAttr {
    auto it = reads.find(operand);
    return it == reads.end() ? StringAttr() : it->second.getStateAttr().getAttr();
  };
  row.op = adam;
  row.param = stateOf(adam.getParam());
  row.grad = stateOf(adam.getGrad());
  row.m = stateOf(adam.getM());
  row.v = stateOf(adam.getV());
  if (!row.param || !row.grad || !row.m || !row.v ||
      llvm::SmallDenseSet<StringAttr>{row.param, row.grad, row.m, row.v}.size() != 4)
    return {row, 0};
  // The three writes of the results into the states they came from, in any order.
  llvm::SmallDenseMap<Value, StringAttr> expected{
      {adam.getNewParam(), row.param}, {adam.getNewM(), row.m}, {adam.getNewV(), row.v}};
  for (Value result : adam.getResults())
    if (!result.hasOneUse())
      return {row, 0};
  for (size_t k = 5; k < 8; ++k) {
    auto write = dyn_cast<StateWriteOp>(ops[i + k]);
    if (!write || excluded.contains(write))
      return {row, 0};
    auto it = expected.find(write.getValue());
    if (it == expected.end() || it->second != write.getStateAttr().getAttr())
      return {row, 0};
    expected.erase(it);
  }
  size_t n = 8;
  // The gradient reset: a +0.0 splat constant of this write alone, then its write into the gradient state.
  if (i + 10 <= ops.size()) {
    auto constant = dyn_cast<arith::ConstantOp>(ops[i + 8]);
    auto reset = dyn_cast<StateWriteOp>(ops[i + 9]);
    if (constant && reset && !excluded.contains(reset) && constant.getResult().hasOneUse() &&
        reset.getValue() == constant.getResult() && reset.getStateAttr().getAttr() == row.grad &&
        isPositiveZeroSplat(constant.getResult())) {
      row.zeroGrad = true;
      n = 10;
    }
  }
  return {row, n};
}

/// Whether `a` and `b` share what the run's loop hoists: the step, the schedule, beta1, beta2 and epsilon.
bool sameStep(AdamWOp a, AdamWOp b) {
  return a.getStep() == b.getStep() && a.getSchedule() == b.getSchedule() && a.getBeta1Attr() == b.getBeta1Attr() &&
         a.getBeta2Attr() == b.getBeta2Attr() && a.getEpsilonAttr() == b.getEpsilonAttr();
}

} // namespace

std::vector<AdamWRun> mlir::ptrain::findAdamWRuns(ArrayRef<Operation *> ops,
                                                       const llvm::DenseSet<Operation *> &excluded) {
  std::vector<AdamWRun> runs;
  AdamWRun current;
  auto close = [&]() {
    if (current.rows.size() >= 2)
      runs.push_back(std::move(current));
    current = AdamWRun();
  };
  for (size_t i = 0; i < ops.size();) {
    auto [row, n] = matchRow(ops, i, excluded);
    if (n == 0) {
      close();
      ++i;
      continue;
    }
    if (!current.rows.empty() && !sameStep(current.rows.front().op, row.op))
      close();
    current.rows.push_back(row);
    current.ops.append(ops.begin() + i, ops.begin() + i + n);
    i += n;
  }
  close();
  return runs;
}
