//===- CompressionConfig.h - codec specs and per-edge overrides ---*- C++ -*-===//
//
// What a user writes to configure --ptrain-compress (docs/Compression.md, "Configuration"): codec specs in
// pass options (`fwd-codec=quant:bits=4`) and the per-edge override file (`overrides=FILE`, JSON) naming
// edges by stage, link, schedule step or parameter.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_COMPRESSIONCONFIG_H
#define PTRAIN_TRANSFORMS_COMPRESSIONCONFIG_H

#include "ptrain/Plan/CompressionPlan.h"

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace mlir::ptrain {

/// Parses a codec spec; null for "none". The forms:
///   none | fp16 | bf16
///   powersgd:rank=R[,warm-start=false]
///   topk:k=K | topk:ratio=X
///   randk:k=K|ratio=X[,seed=S]                       (seed 0 by default)
///   quant:bits=B[,granularity=tensor|channel|block][,block-size=N][,symmetric=false]
///   an MLIR codec attribute, e.g. #ptrain.topk<k = 4>
/// Fails through `emitError` (prefixed with `what`) on a malformed spec or an invalid codec (rank <= 0, bits
/// not in {2, 4, 8}, ...: the attribute's own constraints).
FailureOr<CodecAttrInterface> parseCodecSpec(MLIRContext *context, llvm::StringRef spec, llvm::StringRef what,
                                             llvm::function_ref<InFlightDiagnostic()> emitError);

/// Whether `codec` can serve a transfer of `type` (`edge` names it in the error): the codec's constraints for
/// the type (PowerSGD rank <= min(n, m), k <= elements, ...) and a runtime kernel (the linear autoencoder is
/// not a send codec: --ptrain-insert-linear-ae adds it to the model before autodiff; the error says so).
LogicalResult checkCodecForEdge(CodecAttrInterface codec, RankedTensorType type, const llvm::Twine &edge,
                                llvm::function_ref<InFlightDiagnostic()> emitError);

/// What the override file can name in a module.
struct CompressionEdges {
  int64_t pp = 1, m = 1, dp = 1;
  /// Model chunks per stage (the interleaved schedule's virtual stages): pp v virtual stages, chunk k of
  /// stage s being virtual stage k pp + s.
  int64_t v = 1;
  /// Per stage, its schedule row ("F0", "B0", "FB0", "O"; "F0.1", ... with virtual stages).
  std::vector<std::vector<std::string>> steps;
  /// Per virtual stage c (the stage without virtual stages): the type of the activation it sends forward
  /// (null on the last one) and of the gradient it sends backward (null on virtual stage 0).
  std::vector<RankedTensorType> forwardTypes, backwardTypes;
  /// Per stage: the gradient keys ("<parameter>/grad") and types its dp all-reduce reduces (empty when dp = 1).
  std::vector<std::vector<std::pair<std::string, RankedTensorType>>> gradients;
};

/// Applies the override file at `path` to `plan`. The file is a JSON object with an array "edges"; every
/// entry has "codec" (a spec, "none" for uncompressed) and names its edges with one of
///   "stage": s, "direction": "forward"|"backward"   every send of stage s in that direction;
///   "link": "a->b" (|a - b| = 1)                    every send on that link;
///   "stage": s, "step": "F3"|"B3"|"FB3"             the send after that step;
///   "parameter": key                                 that parameter's dp gradient all-reduce (dp > 1).
/// Entries apply in order (later ones win). Errors through `emitError` name the file, the entry and the
/// field: a malformed file, an unknown field, a stage, link, step or parameter that does not exist, a step
/// that sends nothing, a codec that cannot serve the edge. Increments `numOverridden` per edge set.
LogicalResult applyCompressionOverrides(llvm::StringRef path, const CompressionEdges &edges, CompressionPlan &plan,
                                        MLIRContext *context, llvm::function_ref<InFlightDiagnostic()> emitError,
                                        int64_t &numOverridden);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_COMPRESSIONCONFIG_H
