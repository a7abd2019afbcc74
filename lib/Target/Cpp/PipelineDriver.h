//===- PipelineDriver.h - The pipeline schedule as C++ (--emit-cpp) -*- C++ -*-===//
//
// For a module split into pipeline stages (`ptrain.pipeline`) and scheduled
// (`ptrain.schedule`), the driver entry points of the compiled step
// (docs/CodegenCpu.md, "Pipeline modules"):
//   ptrain_step_train(tokens[M*B, S], out_loss): this rank's stage runs its
//     row of the schedule table: forwards, backwards (with recomputation),
//     point-to-point activation / gradient transfers, the optimizer step; the
//     mean loss over the micro-batches is all-reduced onto every rank;
//   ptrain_step_eval(tokens[M*B, S], out_loss): forward and loss only, every
//     micro-batch in order (GPipe-like), no state changes.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_CPP_PIPELINEDRIVER_H
#define PTRAIN_TARGET_CPP_PIPELINEDRIVER_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::ptrain::cpp {

/// The stage and micro-batch counts of a pipeline module.
struct PipelineShape {
  int64_t pp = 1;
  int64_t microBatches = 1;
};

/// Reads `ptrain.pipeline` = {pp, micro_batches, ...}; failure (with an error) when malformed.
FailureOr<PipelineShape> readPipelineShape(ModuleOp module);

/// Appends to `globals` the driver's static buffers and to `code` the stage
/// functions and the extern "C" entry points ptrain_step_train and
/// ptrain_step_eval. `ppComm` is the C expression of the pipeline axis's
/// communicator (rank i of it = stage i), `stage` the C expression of this
/// rank's stage. The calls are wrapped in PTRAIN_STEP_CALL.
LogicalResult emitPipelineDriver(ModuleOp module, const PipelineShape &shape, StringRef ppComm,
                                 StringRef stage, std::string &globals, std::string &code);

} // namespace mlir::ptrain::cpp

#endif // PTRAIN_TARGET_CPP_PIPELINEDRIVER_H
