//===- Passes.h - the ptrain pass pipelines -------------------------*- C++ -*-===//
//
// The training-step pipeline as one C++ pass pipeline (issue 28, item 1; docs/Pipeline.md): what
// ptrain-compile runs, and what `ptrain-opt --ptrain-pipeline="..."` runs, from one option set. Each pass
// derives its options from it (micro-batches, dp and tp are given once), and each pass still runs alone under
// its own flag (include/ptrain/Transforms/Passes.td). The layout follows upstream MLIR's GPU pipelines
// (mlir/Dialect/GPU/Pipelines/Passes.h).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_PIPELINES_PASSES_H
#define PTRAIN_PIPELINES_PASSES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::ptrain {

/// The options of --ptrain-pipeline. The parallel degrees and the schedule are given once; the optimizer's
/// options are --ptrain-build-training-step's; `compress-options` is the rest of --ptrain-compress's options in
/// that pass's own syntax (e.g. `compress-options={cb-rank=8 sc=false}`).
struct TrainingPipelineOptions : public PassPipelineOptions<TrainingPipelineOptions> {
  // The grid and the schedule.
  Option<int64_t> dp{*this, "dp", llvm::cl::desc("Data-parallel replicas."), llvm::cl::init(1)};
  Option<int64_t> tp{*this, "tp", llvm::cl::desc("Tensor-parallel ranks (> 1: --ptrain-raise, --ptrain-shard-tp)."),
                     llvm::cl::init(1)};
  Option<int64_t> pp{*this, "pp", llvm::cl::desc("Pipeline stages (--ptrain-split-stages)."), llvm::cl::init(1)};
  Option<int64_t> virtualStages{*this, "virtual-stages",
                                llvm::cl::desc("Model chunks per stage (interleaved schedule)."), llvm::cl::init(1)};
  Option<int64_t> microBatches{*this, "micro-batches", llvm::cl::desc("Micro-batches per step."),
                               llvm::cl::init(1)};
  Option<std::string> schedule{*this, "schedule", llvm::cl::desc("gpipe, 1f1b or interleaved (--ptrain-schedule)."),
                               llvm::cl::init("1f1b")};
  Option<int64_t> bucketBytes{*this, "bucket-bytes",
                              llvm::cl::desc("dp gradient all-reduce bucket size in bytes; -1: the pass's default."),
                              llvm::cl::init(-1)};
  Option<bool> deterministicDp{*this, "deterministic-dp",
                               llvm::cl::desc("Gradient and loss sums in an order independent of dp "
                                              "(--ptrain-build-training-step deterministic-dp)."),
                               llvm::cl::init(false)};
  Option<int64_t> zero{*this, "zero",
                       llvm::cl::desc("ZeRO stage of the dp optimizer: 0 all-reduces the gradient buckets, 1 "
                                      "reduce-scatters them and shards AdamW over dp (docs/DistributedOptimizer.md)."),
                       llvm::cl::init(0)};
  Option<std::string> parameterCasts{
      *this, "parameter-casts",
      llvm::cl::desc("once (cast each parameter to 16 bits once per step) or per-call (in every stage call) "
                     "under precision=bf16 or fp16 (--ptrain-lower-to-runtime parameter-casts)."),
      llvm::cl::init("once")};
  Option<bool> vocabParallel{*this, "vocab-parallel", llvm::cl::desc("Split the vocabulary over tp."),
                             llvm::cl::init(false)};
  Option<int64_t> vocabMultiple{*this, "vocab-multiple", llvm::cl::desc("Pad the vocabulary to tp x this."),
                                llvm::cl::init(1)};
  Option<int64_t> linearAEDim{*this, "linear-ae-dim",
                              llvm::cl::desc("Linear autoencoder code size between stages; 0: none."),
                              llvm::cl::init(0)};
  Option<int64_t> linearAESkipStages{*this, "linear-ae-skip-stages",
                                     llvm::cl::desc("Stage boundaries without the autoencoder."), llvm::cl::init(0)};
  // The optimizer and the loss (--ptrain-build-training-step's options of the same names).
  Option<std::string> optimizer{*this, "optimizer", llvm::cl::desc("adamw, sgd or none."), llvm::cl::init("adamw")};
  Option<double> lr{*this, "lr", llvm::cl::desc("Peak learning rate."), llvm::cl::init(3e-4)};
  Option<int64_t> warmupSteps{*this, "warmup-steps", llvm::cl::desc("Linear warm-up steps."), llvm::cl::init(100)};
  Option<int64_t> totalSteps{*this, "total-steps", llvm::cl::desc("Steps of the cosine schedule."),
                             llvm::cl::init(2000)};
  Option<double> minLrRatio{*this, "min-lr-ratio", llvm::cl::desc("Final learning rate / peak."),
                            llvm::cl::init(0.1)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::desc("AdamW decoupled weight decay."),
                             llvm::cl::init(0.1)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum."), llvm::cl::init(0.0)};
  Option<double> clipNorm{*this, "clip-norm", llvm::cl::desc("Global-norm clipping; 0: off."), llvm::cl::init(0.0)};
  Option<std::string> precision{*this, "precision",
                                llvm::cl::desc("fp32, bf16 or fp16 (16-bit GEMM operands, fp32 master weights and "
                                               "sums, 16-bit pipeline messages; docs/MixedPrecision.md)."),
                                llvm::cl::init("fp32")};
  Option<bool> halfActivations{*this, "half-activations",
                                llvm::cl::desc("precision=bf16 or fp16: activations between the non-GEMM ops in 16 "
                                               "bits (default); false keeps them fp32 "
                                               "(--ptrain-build-training-step half-activations)."),
                                llvm::cl::init(true)};
  // fp16's dynamic loss scaler (--ptrain-build-training-step's options of the same names; Megatron's defaults).
  Option<double> initialLossScale{*this, "initial-loss-scale", llvm::cl::desc("fp16: the first loss scale."),
                                  llvm::cl::init(4294967296.0)};
  Option<double> minLossScale{*this, "min-loss-scale", llvm::cl::desc("fp16: the smallest loss scale."),
                              llvm::cl::init(1.0)};
  Option<int64_t> lossScaleWindow{*this, "loss-scale-window",
                                  llvm::cl::desc("fp16: clean steps before the loss scale doubles."),
                                  llvm::cl::init(1000)};
  Option<int64_t> hysteresis{*this, "hysteresis", llvm::cl::desc("fp16: overflowing steps before the scale halves."),
                             llvm::cl::init(2)};
  Option<std::string> ignoreIndex{*this, "ignore-index", llvm::cl::desc("The label the loss does not count."),
                                  llvm::cl::init("")};
  ListOption<double> classWeights{*this, "class-weights", llvm::cl::desc("Class weights of the loss.")};
  // Compression, timing and the outputs.
  Option<std::string> policy{*this, "policy", llvm::cl::desc("Compression policy; none: no --ptrain-compress."),
                             llvm::cl::init("none")};
  Option<std::string> compressOptions{*this, "compress-options",
                                      llvm::cl::desc("More --ptrain-compress options, in its syntax."),
                                      llvm::cl::init("")};
  Option<std::string> cluster{*this, "cluster", llvm::cl::desc("Cluster JSON of --ptrain-critical-path."),
                              llvm::cl::init("")};
  Option<std::string> report{*this, "report", llvm::cl::desc("--ptrain-report's JSON file; empty: no report."),
                             llvm::cl::init("")};
  Option<std::string> memoryPlan{*this, "memory-plan",
                                 llvm::cl::desc("--ptrain-memory-plan's JSON file; empty: the pass is not run."),
                                 llvm::cl::init("")};
  Option<bool> verify{*this, "verify", llvm::cl::desc("Run --ptrain-verify-plan at the end."), llvm::cl::init(true)};

  /// True when the step spans ranks or micro-batches (dp, tp, pp or micro-batches > 1): the pipeline then
  /// schedules, lowers and verifies; otherwise it only builds the single-rank training step.
  bool isParallel() const { return pp > 1 || microBatches > 1 || dp > 1 || tp > 1; }
};

/// Checks option combinations no single pass can see (vocab-parallel without tp > 1, a policy without traffic
/// between ranks, a report of a single-rank step, ...). Returns the error text, empty when they fit.
std::string checkTrainingPipelineOptions(const TrainingPipelineOptions &options);

/// Adds the training-step pipeline to `pm` (anchored on builtin.module), in ptrain-compile's order:
///   [--ptrain-raise, --ptrain-shard-tp]  (tp > 1)
///   --ptrain-split-stages, [--ptrain-insert-linear-ae], --ptrain-build-training-step, --ptrain-schedule,
///   [--ptrain-critical-path]  (a policy or a report), [--ptrain-compress], [--ptrain-report],
///   --ptrain-lower-to-runtime, [--ptrain-memory-plan], [--ptrain-verify-plan]
/// when options.isParallel(), else --ptrain-build-training-step alone. Fails, calling `errorHandler` with
/// the reason, on options that checkTrainingPipelineOptions refuses or a `compress-options` string that
/// --ptrain-compress does not parse.
LogicalResult buildTrainingPipeline(OpPassManager &pm, const TrainingPipelineOptions &options,
                                    llvm::function_ref<LogicalResult(const llvm::Twine &)> errorHandler);

/// Registers --ptrain-pipeline (ptrain-opt).
void registerTrainingPipelines();

} // namespace mlir::ptrain

#endif // PTRAIN_PIPELINES_PASSES_H
