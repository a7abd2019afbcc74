//===- QualityModel.h - the predicted quality cost of auto's choices -*- C++ -*-===//
//
// policy=auto's quality budget (docs/Compression.md, "Quality model"): each codec choice has a predicted
// cost, a fraction of the uncompressed run's validation loss, and the search keeps the plan's total within
// `auto-quality-budget` (default 0.02, 2%). The prediction is a heuristic built from the codec's relative
// error and the literature's rules; it is a model to be checked against measured losses (bench/cluster's
// time-to-target table), not a guarantee:
//
//   cost = scale * weight * e^2 * share
//
//  - scale: kQualityScale with the proxies, kMeasuredQualityScale with measured errors (each fitted to the
//    measured losses with its own errors);
//  - e: the codec's relative error on the edge: a measured one where given (auto-codec-errors: the figures of
//    ptrain-interpret --codec-errors, CodecErrors.h, measured with the site's error feedback, so not halved
//    again), else the worst-case proxy of estimateCodecError (CompressAuto.h); the proxy is halved with error
//    feedback on dp all-reduces and
//    TP sites (the residual is re-sent into the same sum the next time), not on backward pipeline sends (LEP's
//    residual reaches the previous stage with another micro-batch's activations: the telemetry's LEP cosine is
//    0.15-0.64, not 0, and PowerSGD with error feedback on every backward send measured +4.8% over 5 seeds);
//  - share: the edge's part of its kind (a forward send: one of the pipeline's (links x micro-batches) sends;
//    a backward send: one of the links, and a link costs what its worst compressed send costs, not the sum
//    over its micro-batches (measured: PowerSGD rank 16 on the one cool-down send of a link costs about what
//    it costs on all four); one of the TP sites; one stage's dp all-reduce among pp), so that compressing
//    every edge of a kind with e = 1 costs kQualityScale * weight;
//  - weight: 1, times 2 on the first pipeline boundary (MCBench, Bian et al. MLSys 2024: compressing the
//    early layers hurts most; the paper leaves them uncompressed), times 4 for plain quantization below 4
//    bits with the proxy (TAH-Quant, arXiv 2506.01352: 3-4 bits suffice only after a Hadamard rotation
//    spreads outliers; the uniform-data proxy understates that, a measured error does not);
//  - ruled out (infinite cost): top-k keeping less than 10% (Rudakov et al. 2024, arXiv 2401.07788: below
//    10% the pipeline does not converge), top-k on gradients (backward sends, dp all-reduces) without error
//    feedback (Karimireddy et al., ICML 2019, arXiv 1901.09847: a biased compressor needs error feedback to
//    converge; measured on the bundled GPT, bench/README.md "cluster" 2026-12-07: top-k 10% on the backward
//    sends without it, with 8-bit forward sends, ends 21% above the uncompressed validation loss after 300
//    steps, against a predicted 1.8%), plain quantization of forward activations below 4 bits (TAH-Quant;
//    measured, same page: 2-bit forward sends with PowerSGD rank 4 backward, predicted 1.37%, never reach the
//    uncompressed step-300 validation loss in 450 steps) and error feedback on forward activations (Rudakov
//    et al.: it does not help activations; auto never uses it there).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_QUALITYMODEL_H
#define PTRAIN_TRANSFORMS_QUALITYMODEL_H

#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace mlir::ptrain {

/// The scale of the quality model: the cost of compressing every edge of a kind with relative error 1, as a
/// fraction of the validation loss. Fitted (least squares through the origin) to measured losses:
/// bench/compression/quality_fit.py, the bundled GPT at pp 2 x 4 micro-batches, 300 steps clipped at 1.0,
/// 3-5 seeds, 9 plans (bench/README.md "quality", 2026-12-07: "Clipped, 300 steps, 5 seeds").
constexpr double kQualityScale = 0.039;

/// The same scale for measured errors (auto-codec-errors, CodecErrorProbe.h), which are not the proxies: least
/// squares through the origin over the four PowerSGD plans' mean measured costs (optimus-cc, rank 16 on every
/// backward send, rank 4 + EF on every send, auto's former plan), which it then predicts within 0.4 points
/// (bench/README.md "quality", "The quality model with these errors", 2026-12-07).
constexpr double kMeasuredQualityScale = 0.0487;

/// Where a codec sits, for the quality model.
struct QualitySite {
  enum Kind { BackwardSend, ForwardSend, TensorParallel, DataParallel } kind = BackwardSend;
  /// The pipeline boundary (0 = after the first virtual stage) of a send; ignored elsewhere.
  int64_t boundary = 0;
  /// The edge's part of all edges of its kind, in (0, 1].
  double share = 1;
  bool errorFeedback = false;
};

/// The predicted quality cost (fraction of the uncompressed validation loss) of `codec` on a tensor of
/// `type` at `site`; `measuredError` (measured with `site.errorFeedback`, CodecErrorProbe.h) replaces the error
/// proxy and its error-feedback factor when given. +infinity, with the rule in `why`,
/// when the literature rules the choice out; also +infinity when the codec has no error proxy and no
/// measured error is given (why says so).
double predictQualityCost(CodecAttrInterface codec, RankedTensorType type, const QualitySite &site,
                          std::optional<double> measuredError = std::nullopt, std::string *why = nullptr);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_QUALITYMODEL_H
