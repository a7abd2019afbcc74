//===- AdamWTable.h - Runs of AdamW updates as a table and a loop -*- C++ -*-===//
//
// The optimizer step of a model updates every parameter the same way: read the parameter, its gradient and
// its two moments from their states, ptrain.adamw, write the three results back and (usually) reset the
// gradient to zero. Emitted op by op, that is about 30 lines of C++ per parameter tensor, so the optimizer
// step grew with the depth of the model (issue 23 item 3: the code grows with the distinct ops). A run of
// such updates with the same step, schedule, betas and epsilon is emitted instead as one table of rows
// (the four state pointers, the element count, the weight decay, whether the gradient is reset) walked by a
// loop that calls ptrain_adamw_step_f32 in place on the states and ptrain_zero_bytes on the gradient
// (docs/CodegenCpu.md, "Optimizer").
//
// In place is bit-identical to the op-by-op form (copies of parameter and moments into arena buffers,
// the step on the copies, copies back): the kernel is elementwise and reads each element before writing
// it, and the learning rate is the same pure function of the step.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_ADAMWTABLE_H
#define PTRAIN_TARGET_CPP_ADAMWTABLE_H

#include "EmitCodecs.h"

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <vector>

namespace mlir::ptrain::cpp {

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
/// where every read and every adamw result has this single use and the constant only its write; `excluded` ops (writes the emitter defers) never join a row. Anything else ends a run.
std::vector<AdamWRun> findAdamWRuns(ArrayRef<Operation *> ops, const llvm::DenseSet<Operation *> &excluded);

/// The run's table and loop into `w`'s current block; `stateVar(symbol)` is the state's pointer variable
/// (a `float *` assigned by ptrain_step_init); `w.ptr` names the shared step value.
LogicalResult emitAdamWRun(const AdamWRun &run, llvm::function_ref<std::string(StringAttr)> stateVar,
                           CallWriter &w);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_ADAMWTABLE_H
