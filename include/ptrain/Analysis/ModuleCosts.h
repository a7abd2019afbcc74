//===- ModuleCosts.h - per-stage costs of a scheduled module -------*- C++ -*-===//
//
// Reads a module after --ptrain-schedule (grid, `ptrain.pipeline`, `ptrain.schedule`, the stage functions
// of --ptrain-build-training-step) and a cluster, and derives the PipelineCosts the plan is built from
// (docs/TimingModel.md):
//
// * op time = max(FLOPs / peak FLOP/s of its dtype, bytes / memory bandwidth) / efficiency (CostOpInterface,
//   PTrainCost.h), summed over a function (callees included);
// * tensor parallelism is not sharded in the IR yet: a stage's compute is divided by tp, and each layer
//   (one attention, i.e. one softmax) adds Megatron's all-reduces of the b x s x h activation: 2 per forward,
//   4 per backward (recomputed forward + backward), 4 per fused forward-backward (Shoeybi et al.,
//   "Megatron-LM", 2019, section 3). This is replaced by the IR's own collectives once --ptrain-shard-tp
//   exists;
// * messages: latency + bytes / bandwidth; NCCL ring collectives over n ranks: 2(n-1) latencies +
//   2(n-1)/n bytes / bandwidth for all-reduce (NCCL's bus-bandwidth factor; docs/performance in
//   nccl-tests); inter-node bandwidth per GPU = the node's bandwidth / the GPUs of the node holding the
//   same stage (they communicate at the same time);
// * memory per device: parameters, gradient accumulators and optimizer moments the stage's functions use
//   (/ tp), the stage inputs kept for micro-batches in flight (forward done, backward not yet), and the sum of
//   all op results of the stage's backward (an upper bound on the working set of one recomputed micro-batch,
//   / tp);
// * interleaved 1F1B: one StageCosts per virtual stage (its @forward_stage<c> and @stage<c>_backward), one
//   RankCosts per rank (its @stage<s>_optimizer_step, dp all-reduce and memory over all its chunks);
// * compression (`ptrain.compression` of --ptrain-compress, unless `applyCompression` is false): compressed
//   backward sends carry the codec's codes and add its kernels (CodecCosts.h) to the sender's and the
//   receiver's compute streams; a compressed dp all-reduce becomes data-parallel PowerSGD per gradient of the
//   rank's TP shard (the larger dimension divided by tp, Megatron's column/row/vocabulary split), rank
//   min(sc_rank, n, m), exact where (n + m) r >= n m;
// * link contention: each rank's node (its first GPU's) is recorded, so that transfers of stages sharing a
//   node share its NIC (PipelinePlan.h).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_MODULECOSTS_H
#define PTRAIN_ANALYSIS_MODULECOSTS_H

#include "ptrain/Analysis/Cluster.h"
#include "ptrain/Analysis/PipelinePlan.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mlir::ptrain {

/// What a stage costs, with the details the report shows.
/// Per rank; with virtual stages, sums over the rank's chunks (the TP figures per step are the chunks'
/// average).
struct StageDetails {
  std::string forwardFunction;
  int64_t layers = 0;
  /// FLOPs per micro-batch of the stage's forward and backward (full, unsharded).
  double forwardFlops = 0, backwardFlops = 0;
  /// Seconds of the TP all-reduces inside one F and one B (or FB) step.
  double tpForwardSeconds = 0, tpBackwardSeconds = 0;
  /// Bytes each GPU sends in the TP all-reduces of one F and one B (or FB) step (2(tp-1)/tp of the data per
  /// all-reduce), and whether the TP group crosses nodes.
  double tpForwardBytes = 0, tpBackwardBytes = 0;
  bool tpInterNode = false;
  /// Bytes per device: parameters; parameters + gradients + moments; in-flight stage inputs; working set.
  double parameterBytes = 0, stateBytes = 0, activationBytes = 0, workingBytes = 0;
  /// Micro-batches in flight at the peak (forward done, backward not yet).
  int64_t inFlight = 0;
};

/// What one compressed tp all-reduce site (`tp_all_reduces` entry) saves in one stage function: seconds off
/// the F step (the stage's forward) or off the B / FB step (its backward, which recomputes the forward), and
/// the bytes each GPU no longer sends. policy=auto prices its TP candidates with these.
struct TensorParallelSaving {
  int64_t stage = 0, layer = 0;
  std::string role;
  bool forward = true;
  /// In the stage's backward function (B, or FB on the last stage) rather than its forward (F).
  bool inBackward = false;
  double seconds = 0, bytes = 0;
  /// The codec's text, for the report.
  std::string codec;
};

/// The timing model of a scheduled module.
struct ModuleTimingModel {
  int64_t dp = 1, tp = 1, pp = 1, virtualStages = 1, microBatches = 0;
  /// What turns a stage function's compute, a state's bytes and a gradient's all-reduce into one TP rank's:
  /// tp where the module's ops are whole (tensor parallelism priced analytically), 1 where --ptrain-shard-tp
  /// sharded them (it has `ptrain.tp_all_reduce` sites: its ops and states already have one rank's shapes).
  double tpShard = 1;
  std::string scheduleKind;
  /// The `ptrain.compression` policy the costs include; empty when uncompressed.
  std::string compressionPolicy;
  PipelineCosts costs;
  std::vector<StageDetails> stages;
  /// One per compressed TP site and stage function holding it, in site order (already in `costs`).
  std::vector<TensorParallelSaving> tpSavings;
};

/// Derives the timing model of `module` on `cluster`. Fails, naming what is missing, when the module has
/// no `ptrain.pipeline` or `ptrain.schedule`, no grid with an axis pp of the pipeline's size, a stage
/// function is missing, a table entry is malformed, the cluster has fewer GPUs than the grid, or a peak
/// FLOP/s the ops need is missing from the cluster.
/// With `applyCompression` false, `ptrain.compression` is ignored (the uncompressed baseline); a malformed
/// `ptrain.compression` is an error otherwise.
/// `parameterCastsOnce`: the placement of a bf16 or fp16 pipeline's parameter casts that the lowering will be
/// given (--ptrain-lower-to-runtime parameter-casts; docs/MixedPrecision.md, "The once-per-step parameter cast"):
/// true (`once`) prices each distinct 16-bit parameter copy once per step with the optimizer step O and nothing
/// per F/B call; false (`per-call`) prices the casts in every stage call, where that lowering leaves them.
llvm::Expected<ModuleTimingModel> buildModuleTimingModel(ModuleOp module, const ClusterSpec &cluster,
                                                         bool applyCompression = true, bool parameterCastsOnce = true);

/// Seconds of an all-reduce of `bytes` per rank over `n` ranks on a link (NCCL ring: 2(n-1) latencies and
/// 2(n-1)/n of the bytes at `bandwidth`); 0 when n <= 1.
double allReduceSeconds(double bytes, int64_t n, double bandwidth, double latency);
/// Seconds of a reduce-scatter or all-gather ((n-1) latencies, (n-1)/n of the bytes); 0 when n <= 1.
double reduceScatterSeconds(double bytes, int64_t n, double bandwidth, double latency);

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_MODULECOSTS_H
