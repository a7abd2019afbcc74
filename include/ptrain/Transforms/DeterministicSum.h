//===- DeterministicSum.h - sums whose order does not depend on dp -*- C++ -*-===//
//
// deterministic-dp (--ptrain-build-training-step, docs/Runtime.md "Deterministic data parallelism"): a step's
// G = D M micro-batches are summed as one fixed pairwise tree over the global micro-batch index g = d M + i
// (replica d, micro-batch i). With D and M powers of two, replica d's M micro-batches are a complete subtree,
// so each rank adds its own subtree (TreeAccumulator, in any order the schedule runs them) and the dp
// reduction adds the D subtree sums as the tree's upper levels (pairwiseSum over an all-gather in replica
// order). Floating-point addition is commutative, so only the pairing matters and every D gives the bits of
// D = 1. (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., sec. 4.1: pairwise summation.)
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_DETERMINISTICSUM_H
#define PTRAIN_TRANSFORMS_DETERMINISTICSUM_H

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <map>

namespace mlir::ptrain {

/// The pairwise sum of `terms` (all of one tensor type; a power-of-two count): ((t0 + t1) + (t2 + t3)) ...,
/// built with ptrain.binary add at `b`'s insertion point. One term: that term.
Value pairwiseSum(OpBuilder &b, Location loc, ArrayRef<Value> terms);

/// A pairwise tree over `leaves` (a power of two) indices built from terms that arrive in any order: add(i, v)
/// places leaf i and adds every pair of siblings that are both known (the lower index on the left), so at most
/// one partial sum per tree level stays alive when the leaves come in increasing (or decreasing) order.
class TreeAccumulator {
public:
  explicit TreeAccumulator(int64_t leaves) : leaves(leaves) {}
  /// Places leaf `index` (< leaves, each once) with the value `v`; returns the root (the sum of every leaf)
  /// once the last leaf is in, else a null Value.
  Value add(OpBuilder &b, Location loc, int64_t index, Value v);

private:
  int64_t leaves;
  /// The partial sums waiting for their sibling: (level, index at that level) -> value.
  std::map<std::pair<int64_t, int64_t>, Value> pending;
};

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_DETERMINISTICSUM_H
