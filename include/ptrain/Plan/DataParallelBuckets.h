//===- DataParallelBuckets.h - the dp all-reduce buckets and their codecs -*- C++ -*-===//
//
// Queries over the data-parallel gradient all-reduces of a stage's optimizer step (the buckets that
// --ptrain-build-training-step forms, docs/TrainingStep.md) and the codec the compression plan gives each
// gradient (docs/Compression.md). The timing model (lib/Analysis/ModuleCosts.cpp) prices them and
// --ptrain-lower-to-runtime rewrites them (lib/Transforms/CompressDataParallel.cpp): both read them here.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_PLAN_DATAPARALLELBUCKETS_H
#define PTRAIN_PLAN_DATAPARALLELBUCKETS_H

#include "ptrain/Plan/CompressionPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::ptrain {

/// The `ptrain.all_reduce_start`s of `fn` whose grid axes are exactly `axes`, in program order.
llvm::SmallVector<AllReduceStartOp> allReducesOver(func::FuncOp fn, llvm::ArrayRef<llvm::StringRef> axes);

/// A bucket's operands: the pieces its input concatenates (a `ptrain.concat`), or the one input.
llvm::SmallVector<Value> bucketPieces(AllReduceStartOp start);

/// The gradient read behind a bucket piece (directly, or through its flattening `ptrain.reshape`), or null.
StateReadOp gradientReadOf(Value piece);

/// The codec of the dp all-reduce of the gradient `key` of `type` on `stage`: the plan's `dp_codecs`
/// override, else PowerSGD of rank min(scRank, n, m) (n x m the gradient's matrix view) when the stage is in
/// `dp_all_reduce` (Optimus-CC's selective stage compression, Song et al., ASPLOS 2023, section 4.4), else
/// null (exact).
CodecAttrInterface dataParallelCodecOf(const CompressionPlan &plan, int64_t stage, llvm::StringRef key,
                                       RankedTensorType type);

/// The gradient reads the `ptrain.all_reduce_start`s over `[dp]` of `optimizerStep` reduce (a bucket is one
/// read, or the concatenation of flattened reads), in bucket order, then those of its ZeRO-1 buckets
/// (zeroBucketReads); operands of another form are skipped.
llvm::SmallVector<StateReadOp> dataParallelGradientReads(func::FuncOp optimizerStep);

/// The same reads per bucket: one list per `ptrain.all_reduce_start` over `[dp]`, in bucket order (the
/// timing model prices one all-reduce per bucket).
llvm::SmallVector<llvm::SmallVector<StateReadOp>> dataParallelBuckets(func::FuncOp optimizerStep);

/// ZeRO-1's gradient buckets (docs/DistributedOptimizer.md): the `ptrain.reduce_scatter_start`s over `[dp]` of
/// `optimizerStep` and the ZeRO-1 compressed ones, `ptrain.compressed_reduce_scatter_start`, in program (bucket)
/// order.
llvm::SmallVector<Operation *> zeroBuckets(func::FuncOp optimizerStep);

/// The gradient reads a ZeRO-1 bucket reduce-scatters: the flattened reads its input concatenates (the zero
/// padding and operands of another form skipped).
llvm::SmallVector<StateReadOp> zeroBucketReads(Operation *bucket);

/// How a ZeRO-1 bucket's gradients are reduced (docs/DistributedOptimizer.md, "Compression"), from the codec
/// each gradient has (dataParallelCodecOf, by its state key):
/// - none has a codec: the plain flat reduce-scatter (`flatCodec` null, `perGradient` false);
/// - a codec that works on a flat tensor (quantization, #ptrain.quant): the whole bucket is reduce-scattered
///   compressed as one tensor, so every gradient must have the same codec (`flatCodec`);
/// - PowerSGD (#ptrain.powersgd, a low-rank codec of each gradient's matrix view: Vogels et al., NeurIPS 2019):
///   a flat bucket has no matrices, so each gradient is all-reduced alone, compressed with its own codec as
///   plain data parallelism does (Optimus-CC's selective stage compression, Song et al., ASPLOS 2023, sec. 4.4;
///   the gradients without a codec exactly), and each rank keeps its shard of the averaged bucket
///   (`perGradient`, `codecs[i]` the codec of reads[i], null where exact). Communication: PowerSGD's P and Q
///   all-reduces instead of the reduce-scatter; the all-gather of the updated shards is unchanged.
struct ZeroBucketReduction {
  CodecAttrInterface flatCodec;
  bool perGradient = false;
  llvm::SmallVector<CodecAttrInterface> codecs;
};

/// The reduction of a ZeRO-1 bucket of `stage` whose gradients are `reads` (above). Fails through `error`
/// (given the reason) when a flat codec is mixed with another codec or with none, or with PowerSGD.
FailureOr<ZeroBucketReduction> zeroBucketReduction(ModuleOp module, const CompressionPlan &plan, int64_t stage,
                                                   llvm::ArrayRef<StateReadOp> reads,
                                                   llvm::function_ref<InFlightDiagnostic()> error);

} // namespace mlir::ptrain

#endif // PTRAIN_PLAN_DATAPARALLELBUCKETS_H
