//===- AdamWRuns.h - Runs of AdamW updates updated in place ------*- C++ -*-===//
//
// The optimizer step of a model updates every parameter the same way: read the
// parameter, its gradient and its two moments from their states, ptrain.adamw,
// write the three results back and (usually) reset the gradient to zero. A run
// of such updates with the same step, schedule, betas and epsilon is updated in
// place on the states (the CPU target writes it as a table and a loop,
// lib/Target/Cpp/AdamWTable.h): its ops take no buffer of the function's arena,
// which the storage analysis (BufferLiveness.h) and thus the memory plan know.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_ADAMWRUNS_H
#define PTRAIN_ANALYSIS_ADAMWRUNS_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/DenseSet.h"

#include <vector>

namespace mlir::ptrain {

/// One parameter's update: the states it reads and writes.
struct AdamWRow {
  AdamWOp op;
  StringAttr param, grad, m, v; ///< the state symbols
  bool zeroGrad = false;        ///< the gradient state is reset to +0.0 after the update
};

/// A contiguous run of at least two updates of one step, schedule, beta1, beta2 and epsilon.
struct AdamWRun {
  std::vector<AdamWRow> rows;
  SmallVector<Operation *> ops; ///< every op of the run, in order: ops.front() emits the loop
};

/// The runs in `ops` (one function's body in order). A row is the op sequence
///   4 x ptrain.state_read (param, grad, m, v in any order), ptrain.adamw of exactly those reads,
///   3 x ptrain.state_write of new_param, new_m, new_v into the states param, m, v were read from,
///   optionally arith.constant of a +0.0 f32 splat + ptrain.state_write of it into the grad state,
/// where every read and every adamw result has this single use and the constant only its write; `excluded`
/// ops (writes the emitter defers) never join a row. Anything else ends a run.
std::vector<AdamWRun> findAdamWRuns(ArrayRef<Operation *> ops, const llvm::DenseSet<Operation *> &excluded);

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_ADAMWRUNS_H
