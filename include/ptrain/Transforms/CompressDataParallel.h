//===- CompressDataParallel.h - dp gradient compression and FE ----*- C++ -*-===//
//
// The rewrites of a stage's optimizer step that --ptrain-lower-to-runtime applies for `ptrain.compression`
// (docs/Compression.md): the data-parallel gradient all-reduce compressed per parameter (Optimus-CC's
// selective stage compression, Song et al., ASPLOS 2023, section 4.4, and per-parameter overrides), and the
// fused embedding synchronization (section 4.3).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_COMPRESSDATAPARALLEL_H
#define PTRAIN_TRANSFORMS_COMPRESSDATAPARALLEL_H

#include "ptrain/Plan/DataParallelBuckets.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::ptrain {

/// Rewrites every `ptrain.all_reduce_start` over `[dp]` in `optimizerStep` of `stage` (a bucket: one
/// gradient read, or the concatenation of flattened gradient reads) in which some gradient has a codec
/// (dataParallelCodecOf) into one collective per gradient: a `ptrain.compressed_all_reduce_start` with error
/// feedback when plan.scErrorFeedback and the keyed states "sc/<gradient key>/residual" and
/// "sc/<gradient key>/<codec state>" (created before `optimizerStep`), or a plain all-reduce for the
/// gradients without a codec; the bucket's wait becomes their waits, flattened and concatenated. Fails (with
/// an error) on a bucket of another form.
LogicalResult compressDataParallelAllReduces(ModuleOp module, func::FuncOp optimizerStep, int64_t stage,
                                             const CompressionPlan &plan, int64_t *numCompressed = nullptr);

/// Rewrites every ZeRO-1 bucket reduce-scatter (`ptrain.reduce_scatter_start` over `[dp]`, the k-th of
/// `optimizerStep` of `stage`) whose gradients have a codec, as zeroBucketReduction says
/// (docs/DistributedOptimizer.md, "Compression"):
/// - quantization (one codec for the bucket): a `ptrain.compressed_reduce_scatter_start` of the same flat
///   bucket and request, with error feedback when plan.scErrorFeedback and the keyed residual
///   "sc/stage<s>.zero_bucket<k>/residual" (the whole padded bucket, fp32, per dp rank);
/// - PowerSGD: each gradient all-reduced alone (avg over dp) as compressDataParallelAllReduces does, with the
///   same keyed states "sc/<gradient key>/..."; a gradient the fused embedding sync reduced already is left as
///   it is; this rank's shard of the averaged, flattened, padded bucket (`ptrain.tp_split` on dp) replaces
///   the reduce-scatter's wait.
/// Another codec (a cast, top-k), or a bucket whose gradients mix codecs the two forms cannot run together, is
/// an error at the reduce-scatter.
LogicalResult compressZeroReduceScatters(ModuleOp module, func::FuncOp optimizerStep, int64_t stage,
                                         const CompressionPlan &plan, int64_t *numCompressed = nullptr);

/// Fused embedding synchronization (Optimus-CC section 4.3) in the optimizer steps of every stage
/// (`optimizerSteps[s]` is stage s's): every gradient a tied sync (`ptrain.all_reduce_start` over `[pp]`, sum)
/// reduces leaves the holders' dp all-reduce buckets, and the sync runs once over `[dp, pp]` (sum), divided by
/// the dp size: sum over the holders of the dp average, in one collective instead of two. When some stages do
/// not hold the parameter (the middle stages of a tied embedding at pp > 2), the collective carries the
/// subgroup `pp = [holders]` and the other stages post nothing; when every stage holds it (pp = 2), it spans
/// the whole axis. Without a `dp` axis the sync runs over `[pp]` (with the subgroup) and is not divided.
/// Fails (with an error) on a tied sync or bucket of another form, or when the stages disagree on their
/// number of tied syncs.
LogicalResult fuseEmbeddingSync(ModuleOp module, ArrayRef<func::FuncOp> optimizerSteps, GridOp grid);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_COMPRESSDATAPARALLEL_H
