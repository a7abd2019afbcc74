//===- DistributedOptimizer.h - ZeRO-1 sharded AdamW over dp ------*- C++ -*-===//
//
// The IR of `--ptrain-build-training-step="dp=D zero=1"` (docs/DistributedOptimizer.md): the distributed
// optimizer of Megatron-LM (megatron/core/optimizer/distrib_optimizer.py) and ZeRO stage 1, "P_os"
// (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", SC'20, sec. 5.1).
// Each gradient bucket is reduce-scattered (avg) over dp instead of all-reduced; every dp rank runs AdamW on
// its 1 / D shard of the bucket, whose moments are the only ones it keeps; the updated shards are all-gathered
// and written back to the (replicated) parameters.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_DISTRIBUTEDOPTIMIZER_H
#define PTRAIN_TRANSFORMS_DISTRIBUTEDOPTIMIZER_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::ptrain {

/// AdamW's hyper-parameters (the pass options of --ptrain-build-training-step).
struct ShardedAdamWOptions {
  int64_t dp = 1;          ///< the size of grid axis dp (> 1)
  int64_t bucketBytes = 0; ///< the largest bucket in bytes; 0: one bucket per parameter
  LRScheduleAttr schedule;
  double beta1 = 0.9, beta2 = 0.95, epsilon = 1e-8;
  double weightDecay = 0.0; ///< applied to the buckets of parameters of rank >= 2 only
  /// Global-norm clipping (clip-norm > 0; docs/TrainingStep.md): the norm is summed over the dp shards and
  /// all-reduced over `normAxes` (dp, and pp / tp where the grid has them); `tp` weighs replicated parameters.
  double clipNorm = 0.0;
  int64_t tp = 1;
  SmallVector<StringRef> normAxes;
  /// fp16's loss scaling (LossScaling.h; docs/MixedPrecision.md, "The scaler with ZeRO-1"), null without: called
  /// once with this rank's waited gradient shards (tensor<N' / dp x f32> each, loss-scaled), it unscales them in
  /// place, returns the step's rank-0 i1 skip condition (the overflow flags summed over every grid axis) and may
  /// replace `t` with the step count the optimizer reads.
  llvm::function_ref<Value(MutableArrayRef<Value> shards, Value &t)> unscale = nullptr;
};

/// How a parameter's gradient counts in the global norm of clipping (GradientClipping.h): in full (a tp slice,
/// or any parameter at tp = 1), weighted 1 / tp (replicated over tp), or not at all (a tied parameter on a
/// stage other than the first that holds it).
enum class NormTerm { Owned, Replicated, Uncounted };

/// Creates (or returns) the state `name` with key `key`, kind optimizer_moment, of type `type`.
using AddMomentState = llvm::function_ref<StateOp(StringRef name, StringRef key, RankedTensorType type)>;

/// Builds, at `b`'s insertion point, the ZeRO-1 optimizer update of `params` (in bucket order: reverse order of
/// first use, as the dp all-reduce buckets) whose gradient accumulators are `gradState(param)`:
/// 1. the parameters are split into the decayed ones (rank >= 2) and the others, and each group fills buckets
///    of at most `bucketBytes` (a larger parameter alone), so that one AdamW op with one weight decay updates
///    a whole shard;
/// 2. per bucket of N f32 elements: the flattened gradients, concatenated and zero-padded to
///    N' = ceil(N / dp) dp, go through `ptrain.reduce_scatter_start ... axes [dp] reduction = avg` (all
///    started before the first wait); the parameters the same way through `ptrain.tp_split ... axis dp` (the
///    rank's shard, no communication: they are replicated over dp);
/// 3. `ptrain.adamw` on the shard with moments `stage<stage>_zero_bucket<k>_adam_m` / `_adam_v` (keys
///    `stage<stage>.zero_bucket<k>/adam_m`, type tensor<N' / dp x f32>, a #ptrain.zero_bucket) and step `t`;
/// 4. `ptrain.all_gather_start ... axes [dp] gather_dim = 0` of the new shard (all started before the first
///    wait), the padding sliced off, split and reshaped back into the parameters' states.
/// The gradient accumulators are not written (the caller zeroes them). Returns the number of buckets.
/// With clipping (options.clipNorm > 0) the buckets are also split by `normTerm(param)`, every reduce-scatter
/// is waited before the first update, the shards' squared norms (ptrain.sum_squares, Replicated ones times
/// 1 / tp, Uncounted ones left out) are all-reduced over options.normAxes into ptrain.clip_scale, and every
/// shard's gradient is multiplied by the scale before AdamW (Megatron-LM's distributed optimizer clips its
/// gradient shards the same way: clip_grad_norm_fp32 over the data-parallel and model-parallel groups).
/// With options.unscale (fp16), every reduce-scatter is waited first too, the shards are unscaled (before the
/// norm), and on a skipped step each shard's AdamW results (parameter shard, moments) are the old values
/// (ptrain.select), so the all-gather brings back the unchanged parameters (Megatron-LM's DistributedOptimizer:
/// unscale and check its main-gradient shards, found_inf all-reduced over every rank, skip the step).
int64_t buildShardedAdamW(OpBuilder &b, Location loc, GridOp grid, int64_t stage, ArrayRef<StateOp> params,
                          llvm::function_ref<StateOp(StateOp)> gradState, AddMomentState addMoment,
                          const ShardedAdamWOptions &options, Value t,
                          llvm::function_ref<NormTerm(StateOp)> normTerm = nullptr);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_DISTRIBUTEDOPTIMIZER_H
