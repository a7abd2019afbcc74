//===- DeterministicSum.cpp - sums whose order does not depend on dp -----===//
//
// See include/ptrain/Transforms/DeterministicSum.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/DeterministicSum.h"

#include "llvm/Support/MathExtras.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

using namespace mlir;
using namespace mlir::ptrain;

Value mlir::ptrain::pairwiseSum(OpBuilder &b, Location loc, ArrayRef<Value> terms) {
  assert(llvm::isPowerOf2_64(terms.size()) && "pairwiseSum needs a power-of-two count");
  SmallVector<Value> level(terms.begin(), terms.end());
  while (level.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i < level.size(); i += 2)
      next.push_back(BinaryOp::create(b, loc, BinaryKind::Add, level[i], level[i + 1]));
    level = std::move(next);
  }
  return level.front();
}

Value TreeAccumulator::add(OpBuilder &b, Location loc, int64_t index, Value v) {
  assert(index >= 0 && index < leaves && "leaf index out of range");
  int64_t level = 0, width = leaves;
  while (width > 1) {
    auto sibling = pending.find({level, index ^ 1});
    if (sibling == pending.end()) {
      pending[{level, index}] = v;
      return Value();
    }
    Value left = index & 1 ? sibling->second : v, right = index & 1 ? v : sibling->second;
    pending.erase(sibling);
    v = BinaryOp::create(b, loc, BinaryKind::Add, left, right);
    index >>= 1;
    width >>= 1;
    ++level;
  }
  return v;
}
