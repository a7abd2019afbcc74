//===- AdamWTable.h - Runs of AdamW updates as a table and a loop -*- C++ -*-===//
//
// The optimizer step of a model updates every parameter the same way: read the parameter, its gradient and
// its two moments from their states, ptrain.adamw, write the three results back and (usually) reset the
// gradient to zero. Emitted op by op, that is about 30 lines of C++ per parameter tensor, so the optimizer
// step grew with the depth of the model (issue 23 item 3: the code grows with the distinct ops). A run of
// such updates with the same step, schedule, betas and epsilon is emitted instead as one table of rows
// (the four states' indices in state_f32, the element count, the weight decay, whether the gradient is reset)
// walked by a loop that calls ptrain_adamw_step_f32 in place on the states and ptrain_zero_bytes on the
// gradient (docs/CodegenCpu.md, "Optimizer"). The rows of a model's layers differ only in their indices, by the
// same strides from layer to layer: the table holds one layer's rows and a table of runs (rows, count,
// strides) repeats them, so it grows with a layer's parameters, not with the layers; the runs are found
// greedily, as the state table's (include/ptrain/Target/Common/StateTable.h).
//
// In place is bit-identical to the op-by-op form (copies of parameter and moments into arena buffers,
// the step on the copies, copies back): the kernel is elementwise and reads each element before writing
// it, and the learning rate is the same pure function of the step.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_ADAMWTABLE_H
#define PTRAIN_TARGET_CPP_ADAMWTABLE_H

#include "EmitCodecs.h"

#include "ptrain/Analysis/AdamWRuns.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <vector>

namespace mlir::ptrain::cpp {

/// The run's table and loop into `w`'s current block; `stateIndex(symbol)` is the state's index in state_f32 (its
/// `float *`, assigned by ptrain_step_init). The rows of the run's layers are runs of one layer's rows (the same
/// counts, decays and resets, the state indices up by the same strides from layer to layer): the table holds one
/// layer's rows, commented with their parameters' symbols, and each run's period, count and strides.
/// `learningRate(schedule, step)` writes `t` and `lr` (StepFunction::hostLearningRate). `kernelOf(op)` is the
/// generated AdamW kernel the step calls for a row's update (AdamWArith.h), or empty: when every row has one,
/// each row holds its kernel and the loop calls it (with ptrain_adamw_coefficients_f32's coefficients) instead
/// of ptrain_adamw_step_f32.
LogicalResult emitAdamWRun(const AdamWRun &run, llvm::function_ref<int64_t(StringAttr)> stateIndex,
                           llvm::function_ref<LogicalResult(LRScheduleAttr, Value)> learningRate,
                           llvm::function_ref<std::string(AdamWOp)> kernelOf, CallWriter &w);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_ADAMWTABLE_H
