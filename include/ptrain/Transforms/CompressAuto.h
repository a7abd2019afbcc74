//===- CompressAuto.h - policy=auto: greedy search by re-simulation -*- C++ -*-===//
//
// --ptrain-compress="policy=auto" (docs/Compression.md, "policy=auto"): starting from the best of its
// seeds (the uncompressed plan and the Optimus-CC rule's plans), repeatedly applies the move that lowers the
// modelled iteration time most, re-simulating the whole plan for every candidate (1F1B has many tied
// critical paths, so slack alone misleads). A move sets one edge, or a group of edges (every backward send
// of a link, of a micro-batch, of the pipeline; every forward send of a link or of the pipeline; every
// stage's dp all-reduce), to a codec or back to uncompressed, or turns fused embedding sync (FE) on or off.
// Edges are the ones the timing model prices: each backward send (stage, micro-batch; with virtual stages,
// virtual stage and micro-batch, and the links are virtual links c -> c - 1) and each stage's dp
// gradient all-reduce with PowerSGD at the ranks of `auto-ranks` (clamped to min(n, m)) and with the codecs of
// `auto-dp-codecs` (per gradient: casts, quantization, top-k), each forward send
// with the codecs of `auto-forward-codecs`, FE where the plan has a tied parameter and dp > 1, and, with
// tensor parallelism, each TP site (CompressTensorParallel.h) with the codecs of `auto-tp-codecs`.
// Every applied move lowers the modelled time, so auto is never modelled slower than its best seed.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_COMPRESSAUTO_H
#define PTRAIN_TRANSFORMS_COMPRESSAUTO_H

#include "ptrain/Plan/CompressTensorParallel.h"
#include "ptrain/Transforms/CompressionConfig.h"

#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::ptrain {

struct MeasuredCodecErrors; // CodecErrors.h

struct AutoSearchOptions {
  /// PowerSGD ranks to try (each clamped to min(n, m) of the edge, duplicates dropped).
  std::vector<int64_t> ranks;
  /// Stop when the best change saves at most this fraction of the uncompressed iteration time.
  double minGain = 0.001;
  /// Skip a codec whose estimated relative error on the edge exceeds this (see estimatePowerSGDError).
  double errorBudget = 1.0;
  /// At most this many changes.
  int64_t maxPicks = 256;
  /// Codecs besides PowerSGD to try on the backward sends (each with and without error feedback: one
  /// backward_error_feedback flag for the plan, a search dimension); empty: PowerSGD only.
  std::vector<CodecAttrInterface> backwardCodecs;
  /// Codecs to try on the forward (activation) sends; empty: forward sends are not candidates.
  std::vector<CodecAttrInterface> forwardCodecs;
  /// The largest predicted quality cost of the plan (QualityModel.h), a fraction of the uncompressed
  /// validation loss; +infinity: no limit.
  double qualityBudget = 0.02;
  /// Fused embedding sync (Optimus-CC section 4.3) is a candidate: dp > 1 and a tied-parameter sync.
  bool fusedEmbedding = false;
  /// Codecs to try on the tensor-parallel all-reduce sites (forward sites: the stateless ones); empty: TP
  /// sites are not candidates.
  std::vector<CodecAttrInterface> tpCodecs;
  /// Error feedback on the backward TP sites (a residual per site and rank; its cost is in the timing).
  bool tpErrorFeedback = true;
  /// Codecs besides PowerSGD to try on the dp gradient all-reduces: a move sets every gradient of a stage
  /// that the codec serves (within the error budget, not ruled out by the quality model) to it, through
  /// the record's per-gradient `dp_codecs`, with the dp error feedback; empty: PowerSGD only.
  std::vector<CodecAttrInterface> dpCodecs;
  /// Measured errors of the send codecs (auto-codec-errors, CodecErrors.h): where the file has a figure for a
  /// boundary, codec and error-feedback mode, the quality model takes it instead of the proxy. Null: proxies.
  const MeasuredCodecErrors *measuredErrors = nullptr;
};

/// One quality figure of a send codec the search priced, and where its error came from (auto.json's
/// `send_quality_figures`).
struct AutoQualityFigure {
  /// "backward sends of boundary 0", "forward sends of boundary 1".
  std::string site;
  /// The codec attribute's text.
  std::string codec;
  bool errorFeedback = false;
  /// From auto-codec-errors (true) or the proxy of estimateCodecError (false).
  bool measured = false;
  /// The relative error used (std::nullopt: no proxy and no measurement), and the predicted quality cost
  /// (+infinity when the literature rules the choice out).
  std::optional<double> error;
  double qualityCost = 0;
};

/// A plan the search may start from (its PowerSGD ranks are mapped to the nearest candidate rank).
struct AutoSeed {
  /// For the report: "none", "optimus-cc", "optimus-cc cb-sends=critical", ...
  std::string name;
  /// backwardSends and forwardSends (codecs of the candidates or null), backwardErrorFeedback,
  /// forwardErrorFeedback (must be false: auto has no forward error feedback), dpAllReduce / scRank and
  /// fusedEmbedding (used when FE is a candidate); the other fields are ignored.
  CompressionPlan plan;
  /// The rule's CB rank (before any clamp to the links' min(n, m)), for the report.
  int64_t cbRank = 16;
};

/// How each seed was modelled and which one the search started from.
struct AutoSummary {
  double uncompressedSeconds = 0;
  /// Per seed, in order: its name and modelled iteration seconds, or a negative time when the seed is not
  /// expressible with the candidates (a rank beyond the error budget).
  std::vector<std::pair<std::string, double>> seeds;
  /// Per seed: its predicted quality cost (QualityModel.h); +infinity for a rule the literature excludes.
  std::vector<double> seedQualityCosts;
  /// The index into `seeds` the search started from.
  size_t start = 0;
  /// The modelled iteration seconds of the final plan, and its predicted quality cost.
  double finalSeconds = 0, finalQualityCost = 0;
  double qualityBudget = 0;
  /// Per TP site of the candidates (with auto-tp-codecs), in record order: "<site>: <codec> (...)", why it
  /// is or is not compressed in the final plan, measured by re-simulating it alone changed.
  std::vector<std::string> tensorParallelSites;
  /// The auto-codec-errors file ("" without one) and every send codec's quality figure, in pricing order.
  std::string codecErrorsFile;
  std::vector<AutoQualityFigure> qualityFigures;
};

/// One move the search applied, in order.
struct AutoDecision {
  /// "backward send stage 2 B15", "backward sends of link 3 -> 2", "backward sends of micro-batch 4",
  /// "every backward send", "forward send stage 0 F2", "forward sends of link 0 -> 1", "every forward send",
  /// "dp all-reduce stage 0", "every dp all-reduce" (a PowerSGD rank, or another dp codec on each of the
  /// stage's gradients: "#ptrain.cast<bf16> (per gradient)"), "fused embedding sync", "forward tp all-reduce attn_out
  /// of layer 3", "tp all-reduces mlp_in of every layer", "every backward tp all-reduce" or "every tp
  /// all-reduce".
  std::string edge;
  /// The codec, or "none" for a removal ("on" / "off" for fused embedding sync).
  std::string codec;
  /// Modelled seconds the change saved and the iteration time after it.
  double savedSeconds = 0, iterationSeconds = 0;
  /// The predicted quality cost the change added (negative: removed) and the plan's total after it
  /// (QualityModel.h; fractions of the uncompressed validation loss).
  double qualityCost = 0, totalQualityCost = 0;
  /// Where the errors behind qualityCost come from: "measured" (auto-codec-errors), "proxy", "measured and
  /// proxy", or "none" (no codec error changes, e.g. fused embedding sync).
  std::string errorSource;
};

/// The error proxy of PowerSGD rank r on an n x m matrix: sqrt(1 - r / min(n, m)), the relative Frobenius
/// error of the best rank-r approximation when all min(n, m) singular values are equal (the worst case for
/// a given rank; real gradients, with decaying spectra, do better, and error feedback re-sends the rest).
/// 0 when r >= min(n, m) (exact).
double estimatePowerSGDError(int64_t n, int64_t m, int64_t r);
/// The error proxy of `codec` on a tensor of `type` (relative Frobenius error, worst case or uniform data):
///  - PowerSGD: estimatePowerSGDError on the codec's matrix view;
///  - uniform quantization to b bits: 1 / (2^b - 1), the rms rounding error step / sqrt(12) of a step
///    2a / (2^b - 1) over data uniform in [-a, a] (rms a / sqrt(3));
///  - fp16 / bf16 casts: the unit roundoff 2^-11 / 2^-8;
///  - top-k / rand-k keeping k of n elements: sqrt(1 - k / n) (equal magnitudes, the worst case of top-k).
/// Returns std::nullopt for a codec it has no proxy for.
std::optional<double> estimateCodecError(CodecAttrInterface codec, RankedTensorType type);

/// Fills `plan` (backwardSends, forwardSends, dpAllReduce, scRank, fusedEmbedding; the caller set the shapes) and
/// `tensorParallel` (the record's `tp_all_reduces`) by the greedy search on the module's `ptrain.cluster`, started
/// from the best of the uncompressed plan and `seeds`; `decisions` explains each move and `summary` the seeds and
/// the TP sites. Seeds and moves whose predicted quality cost exceeds `options.qualityBudget` are not taken.
/// Errors (through `emitError`) say what is missing: no cluster, or a timing model that cannot be
/// built.
LogicalResult searchAutoCompression(ModuleOp module, const CompressionEdges &edges, const AutoSearchOptions &options,
                                    llvm::ArrayRef<AutoSeed> seeds, CompressionPlan &plan,
                                    std::vector<TensorParallelCodec> &tensorParallel,
                                    std::vector<AutoDecision> &decisions, AutoSummary &summary,
                                    llvm::function_ref<InFlightDiagnostic()> emitError);

/// The search's explanation as JSON (`auto-report`, docs/Compression.md): {"uncompressed_s", "final_s",
/// "speedup", "quality_budget", "final_quality_cost", "seeds": [{"name", "seconds" (null: not expressible),
/// "quality_cost"}], "start" (the seed's name), "moves": [{"edge", "codec", "saved_s", "iteration_s",
/// "quality_cost", "total_quality_cost", "error_source"}], "tp_sites": [...], "codec_errors" (the
/// auto-codec-errors file or null), "send_quality_figures": [{"site", "codec", "error_feedback", "error",
/// "source" ("measured" or "proxy"), "quality_cost"}]}. Seconds are modelled iteration seconds;
/// quality costs are fractions of the uncompressed validation loss (QualityModel.h); an infinite cost (a
/// choice the literature rules out) is written as null.
llvm::json::Value autoSummaryToJSON(const AutoSummary &summary, llvm::ArrayRef<AutoDecision> decisions);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_COMPRESSAUTO_H
