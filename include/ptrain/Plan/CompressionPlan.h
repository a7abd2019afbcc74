//===- CompressionPlan.h - the decisions of --ptrain-compress -----*- C++ -*-===//
//
// The module attribute `ptrain.compression` (#ptrain.compression, PTrainPlanAttrs.td) that --ptrain-compress writes and
// --ptrain-lower-to-runtime reads (docs/Compression.md): per pipeline edge (stage, direction, micro-batch) the codec of
// its transfer, per stage whether its data-parallel gradient all-reduce is compressed, per-parameter data-parallel
// codec overrides, and fused embedding synchronization. The data-parallel rewrites are in CompressDataParallel.h.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_PLAN_COMPRESSIONPLAN_H
#define PTRAIN_PLAN_COMPRESSIONPLAN_H

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::ptrain {

/// The decisions of one compression policy for a pipeline of `pp` stages and `m` micro-batches.
struct CompressionPlan {
  std::string policy;
  /// Per stage s, per model chunk k and micro-batch i (entry k M + i; one chunk without virtual stages): the
  /// codec of the gradient virtual stage k P + s sends to the previous virtual stage after B<i>.<k>/FB<i>.<k>,
  /// or null (sent as is; always null on virtual stage 0).
  std::vector<std::vector<CodecAttrInterface>> backwardSends;
  /// Per stage s, per model chunk k and micro-batch i (entry k M + i): the codec of the activation virtual
  /// stage k P + s sends to the next virtual stage after F<i>.<k>, or null (always null on the last virtual
  /// stage).
  std::vector<std::vector<CodecAttrInterface>> forwardSends;
  /// Model chunks per stage (the interleaved schedule's virtual stages; 1 otherwise).
  int64_t virtualStages = 1;
  /// The policy's codec of each direction (the record writes `true` for a send with it); may be null.
  CodecAttrInterface backwardCodec, forwardCodec;
  /// Error feedback with one residual per link and direction (backward: Optimus-CC's lazy error
  /// propagation).
  bool backwardErrorFeedback = true;
  bool forwardErrorFeedback = false;
  /// Per stage: its dp gradient all-reduce is compressed per parameter (selective stage compression).
  std::vector<bool> dpAllReduce;
  /// PowerSGD rank of the dp compression before clamping to min(n, m).
  int64_t scRank = 128;
  bool scErrorFeedback = true;
  /// Per gradient key ("<parameter>/grad"): its dp all-reduce's codec, overriding `dpAllReduce`; null
  /// reduces it exactly.
  std::map<std::string, CodecAttrInterface> dpCodecs;
  /// Fused embedding synchronization (Optimus-CC section 4.3): a parameter held by several stages (the tied
  /// embedding) leaves the dp all-reduce and is reduced once over dp x pp.
  bool fusedEmbedding = false;
  /// The stages whose outgoing edges are never compressed (mcbench: the first L stages), for the record.
  int64_t skipStages = 0;

  /// The entry of virtual stage `c` (chunk c / P of stage c mod P) and micro-batch `i` in `rows` (P rows of
  /// V M entries); without virtual stages, rows[c][i].
  template <typename Rows>
  static auto sendOf(Rows &rows, int64_t virtualStages, int64_t c, int64_t i) -> decltype(rows[0][0]) {
    const int64_t p = rows.size(), m = rows[c % p].size() / virtualStages;
    return rows[c % p][(c / p) * m + i];
  }
  CodecAttrInterface &backwardSend(int64_t c, int64_t i) { return sendOf(backwardSends, virtualStages, c, i); }
  CodecAttrInterface &forwardSend(int64_t c, int64_t i) { return sendOf(forwardSends, virtualStages, c, i); }
  /// The codec of the gradient virtual stage `c` sends backward (activation it sends forward) for micro-batch
  /// `i`; null when uncompressed or when the plan has no rows.
  CodecAttrInterface backwardCodecOf(int64_t c, int64_t i) const {
    return backwardSends.empty() ? CodecAttrInterface() : sendOf(backwardSends, virtualStages, c, i);
  }
  CodecAttrInterface forwardCodecOf(int64_t c, int64_t i) const {
    return forwardSends.empty() ? CodecAttrInterface() : sendOf(forwardSends, virtualStages, c, i);
  }

  /// The plan as the `ptrain.compression` record (without tensor-parallel sites: withTensorParallel).
  CompressionAttr toAttr(MLIRContext *context) const;
};

/// Reads `ptrain.compression` of `module`: std::nullopt when absent; failure, with an error prefixed by
/// `pass`, when not of `pp` stages and `m` micro-batches (rows of V M entries with the `virtual_stages` V of
/// `ptrain.pipeline`; checked where it sits, #ptrain.compression C10, unless the pipeline changed since).
FailureOr<std::optional<CompressionPlan>> readCompressionPlan(ModuleOp module, int64_t pp, int64_t m,
                                                              llvm::StringRef pass);

/// The key of the state `what` ("residual", "warm_start_q", "counter") of the pipeline link `from` -> `to`:
/// "pp<from>-><to>/<what>"; with virtual stages, of the chunk boundary from the sender's model chunk
/// `chunks`->first to the receiver's `chunks`->second: "pp<from>-><to>/c<k>-><k'>/<what>" (two chunks of one
/// rank send on the same physical link, at pp = 2 in both directions; each boundary and direction has its own
/// residual and warm start).
std::string linkStateKey(int64_t from, int64_t to, llvm::StringRef what,
                         std::optional<std::pair<int64_t, int64_t>> chunks = std::nullopt);

/// The name in state keys ("warm_start_q" for PowerSGD, "counter" for rand-k) and the kind of a codec's own
/// state (its encoder state; rand-k's decoder keeps the same counter).
std::pair<llvm::StringRef, StateKind> codecStateNameAndKind(CodecAttrInterface codec);

/// The unit attribute on a `ptrain.state` of kind codec_residual whose residual holds gradient values in the loss
/// scale's units (precision=fp16: a backward pipeline link's, a dp gradient's or ZeRO-1 bucket's, a backward TP
/// site's residual; never a forward one). keepCodecStatesOnSkip (LossScaling.h) rescales such a residual by new
/// scale / old scale when the scaler changes the scale (docs/MixedPrecision.md, "Residuals across a scale change").
inline constexpr llvm::StringLiteral kLossScaledResidualAttr = "ptrain.loss_scaled";

/// Marks `residual`, the error-feedback residual of gradient traffic, with kLossScaledResidualAttr when `module`'s
/// step is built with precision=fp16 (its gradients are loss-scaled); leaves it unchanged otherwise.
void markGradientResidual(ModuleOp module, StateOp residual);

/// `base`, or `base`_1, `base`_2, ... : the first name no symbol of `module` has.
std::string uniqueSymbolName(ModuleOp module, llvm::StringRef base);

/// The module-level state `key`: the existing one (each rank keeps its own value), or a new one of `kind` and
/// `type` placed before `anchor` with a unique symbol name from `name`. Fails, with an error at `anchor`,
/// when the existing state has another type.
FailureOr<StateOp> getOrAddCodecState(ModuleOp module, Operation *anchor, llvm::StringRef name, llvm::StringRef key,
                                      StateKind kind, RankedTensorType type);

} // namespace mlir::ptrain

#endif // PTRAIN_PLAN_COMPRESSIONPLAN_H
