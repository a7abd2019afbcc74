//===- DeadOps.h - Side-effect-free ops whose results nothing reads -*- C++ -*-===//
//
// The autodiff of --ptrain-build-training-step also differentiates with
// respect to constants: the attention's scale (`x * c`: a product and its sum
// to a scalar) and its additive mask (a sum_to to [S, S]) get gradients that
// no op reads. --emit-cpp and the memory plan (MemoryPlan.h) skip such ops
// (docs/CodegenCpu.md, "Dead ops"): an op is dead when it has no memory
// effects, has results, and every user of its results is dead too (decided
// walking the body backwards). Constants and aliases (reshape) are never
// dead: they cost nothing and their declarations stay.
//
// The forward of a parameter is not dead either: an op reading a parameter
// (a matmul by a weight, a bias add) and the ops computing from its results.
// Such dead ops are the tail of a stage's last layer in its backward, which
// recomputes the forward but takes the incoming gradient in place of the
// stage's output (the last matmul, bias add and residual add): computing and
// discarding them makes that layer the same code as every other layer, a call
// of the same outlined block (BlockOutliner.h; issue 23 item 3: the code of a
// 12-layer model within 10% of a 2-layer one's). The cost is that tail once
// per backward and its buffers, which the memory plan counts the same way.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_DEADOPS_H
#define PTRAIN_ANALYSIS_DEADOPS_H

#include "mlir/IR/Operation.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir::ptrain {

class DeadOps {
public:
  /// Analyzes the ops of one function body, in order.
  explicit DeadOps(ArrayRef<Operation *> ops);

  /// `op` computes only values that nothing live reads: nothing is emitted for it, its results get no buffer.
  bool isDead(Operation *op) const { return dead.contains(op); }
  int64_t size() const { return dead.size(); }

private:
  llvm::DenseSet<Operation *> dead;
};

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_DEADOPS_H
