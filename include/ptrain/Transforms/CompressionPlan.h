//===- CompressionPlan.h - the decisions of --ptrain-compress -----*- C++ -*-===//
//
// The module attribute `ptrain.compression` that --ptrain-compress writes and --ptrain-lower-to-runtime
// reads (docs/Compression.md), and the rewrite of a stage's data-parallel gradient all-reduce into
// per-parameter compressed all-reduces (Optimus-CC's selective stage compression, Song et al., ASPLOS 2023,
// section 4.4).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_COMPRESSIONPLAN_H
#define PTRAIN_TRANSFORMS_COMPRESSIONPLAN_H

#include "ptrain/Dialect/PTrain/IR/PTrainAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::ptrain {

/// The decisions of one compression policy for a pipeline of `pp` stages and `m` micro-batches.
struct CompressionPlan {
  std::string policy;
  /// Per stage s, per micro-batch i: the gradient s sends to s - 1 after B<i>/FB<i> is compressed with
  /// `cbCodec` (all false on stage 0).
  std::vector<std::vector<bool>> backwardSends;
  /// The codec of the compressed backward sends (PowerSGD).
  PowerSGDAttr cbCodec;
  /// One error-feedback residual per link (lazy error propagation).
  bool lep = true;
  /// Per stage: its dp gradient all-reduce is compressed per parameter.
  std::vector<bool> dpAllReduce;
  /// PowerSGD rank of the dp compression before clamping to min(n, m).
  int64_t scRank = 128;
  bool scErrorFeedback = true;

  bool compressesSend(int64_t stage, int64_t microBatch) const {
    return stage < static_cast<int64_t>(backwardSends.size()) && backwardSends[stage][static_cast<size_t>(microBatch)];
  }

  /// The plan as the `ptrain.compression` dictionary.
  DictionaryAttr toAttr(MLIRContext *context) const;
};

/// Reads `ptrain.compression` of `module`: std::nullopt when absent; failure, with an error prefixed by
/// `pass`, when malformed or not of `pp` stages and `m` micro-batches.
FailureOr<std::optional<CompressionPlan>> readCompressionPlan(ModuleOp module, int64_t pp, int64_t m,
                                                              llvm::StringRef pass);

/// The key of the state `what` ("residual", "warm_start_q") of the backward link `stage` -> `stage` - 1.
std::string backwardLinkStateKey(int64_t stage, llvm::StringRef what);

/// `base`, or `base`_1, `base`_2, ... : the first name no symbol of `module` has.
std::string uniqueSymbolName(ModuleOp module, llvm::StringRef base);

/// Rewrites every `ptrain.all_reduce_start` over `[dp]` in `optimizerStep` (a bucket: one gradient read, or
/// the concatenation of flattened gradient reads) into one `ptrain.compressed_all_reduce_start` per
/// gradient with PowerSGD of rank min(plan.scRank, n, m), error feedback when plan.scErrorFeedback, and the
/// keyed states "sc/<gradient key>/residual" and "sc/<gradient key>/warm_start_q" (created before
/// `optimizerStep`); the bucket's wait becomes the waits of those collectives, flattened and concatenated.
/// Fails (with an error) on a bucket of another form.
LogicalResult compressDataParallelAllReduces(ModuleOp module, func::FuncOp optimizerStep, const CompressionPlan &plan,
                                             int64_t *numCompressed = nullptr);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_COMPRESSIONPLAN_H
