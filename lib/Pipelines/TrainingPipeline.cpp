//===- TrainingPipeline.cpp - the training-step pass pipeline -----*- C++ -*-===//
//
// See include/ptrain/Pipelines/Passes.h and docs/Pipeline.md.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Pipelines/Passes.h"

#include "ptrain/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::ptrain;

std::string mlir::ptrain::checkTrainingPipelineOptions(const TrainingPipelineOptions &o) {
  std::string error;
  llvm::raw_string_ostream os(error);
  if (o.dp < 1 || o.tp < 1 || o.pp < 1 || o.microBatches < 1)
    os << "dp = " << o.dp << ", tp = " << o.tp << ", pp = " << o.pp << ", micro-batches = " << o.microBatches
       << ": each must be at least 1";
  else if (o.parameterCasts != "once" && o.parameterCasts != "per-call")
    os << "parameter-casts must be once or per-call, got '" << o.parameterCasts << "'";
  else if (o.vocabParallel && o.tp < 2)
    os << "vocab-parallel needs tp > 1 (got tp = " << o.tp << ")";
  else if (o.isParallel() && o.optimizer == "none")
    os << "optimizer = none: a pipeline or parallel step (dp, tp, pp or micro-batches > 1) needs adamw or sgd";
  else if (o.policy != "none" && o.pp == 1 && o.dp == 1 && o.tp == 1)
    os << "policy = " << o.policy << ": compression needs traffic between ranks (pp, dp or tp > 1)";
  else if (o.policy == "none" && !StringRef(o.compressOptions).trim().empty())
    os << "compress-options = '" << o.compressOptions << "' without a policy";
  else if (!o.isParallel() && (!o.report.empty() || !o.memoryPlan.empty()))
    os << "report and memory-plan need a pipeline or parallel step (dp, tp, pp or micro-batches > 1)";
  else if (o.deterministicDp && !o.isParallel())
    os << "deterministic-dp needs a pipeline or parallel step (dp, tp, pp or micro-batches > 1)";
  else if (o.deterministicDp && o.policy != "none")
    os << "deterministic-dp with policy = " << o.policy
       << ": a codec's error feedback depends on how the micro-batches are split between replicas; use policy = none";
  else if (o.deterministicDp && o.linearAEDim != 0)
    os << "deterministic-dp with linear-ae-dim = " << o.linearAEDim
       << ": the autoencoders' gradients are accumulated by --ptrain-insert-linear-ae, not as the tree";
  else if (o.linearAEDim == 0 && o.linearAESkipStages != 0)
    os << "linear-ae-skip-stages = " << o.linearAESkipStages << " without linear-ae-dim";
  return error;
}

/// --ptrain-build-training-step's options: the optimizer's, and the micro-batches and dp of the grid.
static BuildTrainingStepPassOptions trainingStepOptions(const TrainingPipelineOptions &o) {
  BuildTrainingStepPassOptions step;
  step.optimizer = o.optimizer;
  step.lr = o.lr;
  step.warmupSteps = o.warmupSteps;
  step.totalSteps = o.totalSteps;
  step.minLrRatio = o.minLrRatio;
  step.weightDecay = o.weightDecay;
  step.momentum = o.momentum;
  step.clipNorm = o.clipNorm;
  step.precision = o.precision;
  step.halfActivations = o.halfActivations;
  step.initialLossScale = o.initialLossScale;
  step.minLossScale = o.minLossScale;
  step.lossScaleWindow = o.lossScaleWindow;
  step.hysteresis = o.hysteresis;
  step.ignoreIndex = o.ignoreIndex;
  step.classWeights.assign(o.classWeights.begin(), o.classWeights.end());
  step.zero = o.zero; // the pass rejects zero=1 without dp > 1 (a one-rank step has no dp)
  if (o.isParallel()) {
    step.microBatches = o.microBatches;
    step.dp = o.dp;
    step.deterministicDp = o.deterministicDp;
    if (o.bucketBytes >= 0)
      step.bucketBytes = o.bucketBytes;
  }
  return step;
}

LogicalResult mlir::ptrain::buildTrainingPipeline(OpPassManager &pm, const TrainingPipelineOptions &o,
                                                  function_ref<LogicalResult(const Twine &)> errorHandler) {
  if (std::string error = checkTrainingPipelineOptions(o); !error.empty())
    return errorHandler("--ptrain-pipeline: " + error);
  if (!o.isParallel()) {
    pm.addPass(createBuildTrainingStepPass(trainingStepOptions(o)));
    return success();
  }
  // Tensor parallelism shards the forward graph first: raise finds the layers, shard-tp slices them.
  if (o.tp > 1) {
    pm.addPass(createRaisePass());
    ShardTPPassOptions shard;
    shard.tp = o.tp;
    shard.vocabParallel = o.vocabParallel;
    shard.vocabMultiple = o.vocabMultiple;
    pm.addPass(createShardTPPass(shard));
  }
  SplitStagesPassOptions split;
  split.pp = o.pp;
  split.virtualStages = o.virtualStages;
  pm.addPass(createSplitStagesPass(split));
  if (o.linearAEDim != 0) { // trainable weights: before autodiff builds the step
    InsertLinearAEPassOptions ae;
    ae.dim = o.linearAEDim;
    ae.skipStages = o.linearAESkipStages;
    pm.addPass(createInsertLinearAEPass(ae));
  }
  pm.addPass(createBuildTrainingStepPass(trainingStepOptions(o)));
  SchedulePassOptions schedule;
  schedule.schedule = o.schedule;
  schedule.microBatches = o.microBatches;
  pm.addPass(createSchedulePass(schedule));
  if (o.policy != "none" || !o.report.empty()) {
    CriticalPathPassOptions criticalPath;
    criticalPath.cluster = o.cluster;
    criticalPath.parameterCasts = o.parameterCasts;
    pm.addPass(createCriticalPathPass(criticalPath));
  }
  if (o.policy != "none") {
    // The policy is the pipeline's; the rest is --ptrain-compress's own syntax, parsed by the pass.
    std::unique_ptr<Pass> compress = createCompressPass();
    std::string options = "policy=" + o.policy + " " + StringRef(o.compressOptions).trim().str();
    if (failed(compress->initializeOptions(StringRef(options).rtrim(), [&](const Twine &message) {
          // llvm::cl prints a value's parse error itself (naming the option) and passes no message.
          std::string why = message.str();
          return errorHandler("--ptrain-pipeline: compress-options: " +
                              (why.empty() ? "'" + options + "' does not parse (the option is named above)" : why));
        })))
      return failure();
    pm.addPass(std::move(compress));
  }
  if (!o.report.empty()) {
    ReportPassOptions report;
    report.json = o.report;
    report.parameterCasts = o.parameterCasts;
    pm.addPass(createReportPass(report));
  }
  LowerToRuntimePassOptions lower;
  lower.parameterCasts = o.parameterCasts;
  pm.addPass(createLowerToRuntimePass(lower));
  // A 16-bit plan's codec ops on bf16 / f16 messages onto the f32 kernels behind an exact widen (a no-op in
  // fp32; docs/Compression.md, "Codecs on 16-bit traffic").
  pm.addPass(createWidenHalfCodecsPass());
  // Each rank's memory over its schedule (states, stash, temporaries; docs/TrainingStep.md).
  if (!o.memoryPlan.empty()) {
    MemoryPlanPassOptions memory;
    memory.json = o.memoryPlan;
    pm.addPass(createMemoryPlanPass(memory));
  }
  if (o.verify) // Every rank's steps run abstractly: no deadlock, no mismatched communication.
    pm.addPass(createVerifyPlanPass());
  return success();
}

void mlir::ptrain::registerTrainingPipelines() {
  registerPassPipeline(
      "ptrain-pipeline",
      "The training-step pipeline of ptrain-compile from one option set (docs/Pipeline.md): "
      "dp, tp, pp, micro-batches, schedule, policy, cluster, ...",
      [](OpPassManager &pm, StringRef text, function_ref<LogicalResult(const Twine &)> errorHandler) {
        TrainingPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        return buildTrainingPipeline(pm, options, errorHandler);
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) { optHandler(TrainingPipelineOptions()); });
}
