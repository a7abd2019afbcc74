//===- CompressTensorParallel.h - mcbench's TP site: codecs on TP all-reduces -*- C++ -*-===//
//
// The tensor-parallel site of policy=mcbench (Bian et al., MLSys 2024; docs/Compression.md, "The TP site"):
// codecs on the all-reduces of Megatron's f/g pair that --ptrain-shard-tp inserts. A site is one
// `ptrain.tp_all_reduce` of a stage function:
// * forward: g after a row-parallel linear (`ptrain.linear` role attn_out or mlp_down), in the stage's
//   forward function and in the forward its backward function recomputes;
// * backward: the gradient of f (`ptrain.tp_copy`) before a column-parallel linear, named by the linear it
//   feeds (attn_in: Q|K|V; mlp_in: the MLP's up/gate projection).
// --ptrain-compress records the compressed sites as `tp_all_reduces` in `ptrain.compression`;
// --ptrain-lower-to-runtime rewrites each into `ptrain.compressed_all_reduce_start` over [tp] and its wait
// (summable codes reduced in compressed form, the others gathered, decoded and summed).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_PLAN_COMPRESSTENSORPARALLEL_H
#define PTRAIN_PLAN_COMPRESSTENSORPARALLEL_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mlir::ptrain {

/// One tensor-parallel all-reduce of a stage function.
struct TensorParallelSite {
  TPAllReduceOp op;
  /// The `ptrain.stage` of the function holding it.
  int64_t stage = 0;
  /// The transformer layer (`ptrain.linear`'s layer).
  int64_t layer = 0;
  /// attn_out, mlp_down (forward); attn_in, mlp_in (backward).
  std::string role;
  bool forward = true;
};

/// Every site of the functions with a `ptrain.stage`, in function and program order. Tensor-parallel
/// all-reduces that are neither (the vocabulary-parallel embedding and loss) are not sites.
std::vector<TensorParallelSite> collectTensorParallelSites(ModuleOp module);

/// One site per (layer, role, direction) of `module` (the first of its ops: a forward site also runs in the
/// forward its backward recomputes), in the record's order: by layer, each layer's in forward order
/// (attn_out, mlp_down, attn_in, mlp_in).
std::vector<TensorParallelSite> uniqueTensorParallelSites(ModuleOp module);

/// "forward tp all-reduce attn_out of layer 3" (the report's and the errors' name of a site).
std::string tensorParallelSiteName(const TensorParallelSite &site);

/// The codec of one (layer, role) site; `forward` is implied by the role.
struct TensorParallelCodec {
  int64_t layer = 0;
  std::string role;
  bool forward = true;
  CodecAttrInterface codec;
  /// Error feedback (backward sites only): a residual per site and rank, `tp/layer<l>/<role>/residual`, added
  /// to the next gradient the site reduces and updated after its encode, carried across micro-batches and
  /// iterations. Forward sites are stateless: the backward recomputes their forward, which must decode the
  /// same value (a residual advanced in between would not).
  bool errorFeedback = false;
};

/// Why `codec` cannot serve the forward site of `type` (a non-empty reason), or "" when it can: forward sites
/// take stateless codecs only (the recomputed forward must decode the same value).
std::string forwardSiteRefusal(CodecAttrInterface codec, RankedTensorType type);

/// The codecs mcbench puts on the sites of `module`: `forwardCodec` on every forward site and
/// `backwardCodec` on every backward site of the layers >= `skipLayers` (either may be null), the backward
/// ones with error feedback when `backwardErrorFeedback`. Errors through
/// `emitError`: no site at all (tp = 1, or --ptrain-shard-tp not run), a codec that cannot serve the site's
/// tensor, a forward codec with encoder state (rand-k's counter, PowerSGD's warm-start Q: the backward
/// recomputes the forward, which must decode the same value) and the linear autoencoder.
FailureOr<std::vector<TensorParallelCodec>>
planTensorParallelCompression(ModuleOp module, CodecAttrInterface forwardCodec, CodecAttrInterface backwardCodec,
                              int64_t skipLayers, bool backwardErrorFeedback,
                              llvm::function_ref<InFlightDiagnostic()> emitError);

/// The record entry `tp_all_reduces`: one #ptrain.tp_site<layer, role, direction, codec[, error_feedback]> per
/// compressed site.
ArrayAttr tensorParallelRecord(MLIRContext *context, llvm::ArrayRef<TensorParallelCodec> codecs);

/// Reads `tp_all_reduces` of `ptrain.compression` (empty when absent). The verifier has checked the entries
/// (#ptrain.compression C7, #ptrain.tp_site C1-C4).
std::vector<TensorParallelCodec> readTensorParallelRecord(ModuleOp module);

/// The key of the codec state `what` of a site: "tp/layer<l>/<role>/<what>".
std::string tensorParallelStateKey(int64_t layer, llvm::StringRef role, llvm::StringRef what);

/// Rewrites every site of `module` that `codecs` names into `ptrain.compressed_all_reduce_start` over [tp]
/// (sum; error feedback with the site's residual where the entry has it) with the codec's keyed states and a
/// `ptrain.wait`; counts them in `numCompressed`.
LogicalResult compressTensorParallelAllReduces(ModuleOp module, llvm::ArrayRef<TensorParallelCodec> codecs,
                                               int64_t *numCompressed = nullptr);

} // namespace mlir::ptrain

#endif // PTRAIN_PLAN_COMPRESSTENSORPARALLEL_H
