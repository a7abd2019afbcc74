//===- QualityModel.cpp - the predicted quality cost of auto's choices -*- C++ -*-===//
//
// See include/ptrain/Transforms/QualityModel.h (the formula and its sources) and docs/Compression.md,
// "Quality model".
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/QualityModel.h"

#include "ptrain/Transforms/CompressAuto.h"

using namespace mlir;
using namespace mlir::ptrain;

double mlir::ptrain::predictQualityCost(CodecAttrInterface codec, RankedTensorType type, const QualitySite &site,
                                        std::optional<double> measuredError, std::string *why) {
  constexpr double kRuledOut = std::numeric_limits<double>::infinity();
  auto refuse = [&](const char *rule) {
    if (why)
      *why = rule;
    return kRuledOut;
  };
  if (auto topk = dyn_cast<TopKAttr>(codec); topk && type && type.hasStaticShape() &&
                                             10 * topk.getKFor(type.getNumElements()) < type.getNumElements())
    return refuse("top-k below 10% of the elements (Rudakov et al. 2024, arXiv 2401.07788: does not converge)");
  if (isa<TopKAttr>(codec) && !site.errorFeedback &&
      (site.kind == QualitySite::BackwardSend || site.kind == QualitySite::DataParallel))
    return refuse("top-k on gradients without error feedback (Karimireddy et al., ICML 2019, arXiv 1901.09847: a "
                  "biased compressor needs it to converge; bench/README.md \"cluster\": mcbench's top-k 10% "
                  "without it is 21% above the uncompressed validation loss after 300 steps)");
  if (auto quant = dyn_cast<QuantAttr>(codec); quant && quant.getBits() < 4 && site.kind == QualitySite::ForwardSend)
    return refuse("plain quantization of activations below 4 bits (TAH-Quant, arXiv 2506.01352: 3-4 bits suffice "
                  "only after a Hadamard rotation; bench/README.md \"cluster\": 2-bit forward sends with PowerSGD "
                  "rank 4 backward never reach the uncompressed validation loss of step 300 in 450 steps)");
  if (site.kind == QualitySite::ForwardSend && site.errorFeedback)
    return refuse("error feedback on activations (Rudakov et al. 2024: it does not help activations)");
  std::optional<double> error = measuredError ? measuredError : estimateCodecError(codec, type);
  if (!error)
    return refuse("no error proxy for this codec and no measured error");
  // Error feedback halves the error where its residual is re-sent into the same sum: dp all-reduces (Vogels et
  // al. 2019) and TP sites. Not on backward pipeline sends (LEP): the residual reaches the previous stage with
  // another micro-batch's activations, and the codec telemetry's LEP cosine (docs/CodegenCpu.md, "Codec
  // telemetry": 0.15-0.64, not 0) says that error does not cancel; measured, PowerSGD rank 16 with error
  // feedback on every backward send costs +4.8% over 5 seeds (bench/README.md "quality", 2026-12-07).
  // A measured error with error feedback already holds its effect (CodecErrorProbe.h keeps the residual across
  // the measured messages): it is not halved again.
  double e = *error * (!measuredError && site.errorFeedback && site.kind != QualitySite::BackwardSend ? 0.5 : 1.0);
  double weight = 1;
  bool send = site.kind == QualitySite::BackwardSend || site.kind == QualitySite::ForwardSend;
  if (send && site.boundary == 0)
    weight *= 2; // MCBench: the early layers
  // TAH-Quant: below 4 bits only after a rotation. The proxy (uniform data) understates real tensors' error
  // there; a measured error already shows it (2-bit backward + EF: measured e = 0.76, cost +6.3%, predicted
  // 5.6% without the weight, 22% with it; bench/README.md "quality").
  if (auto quant = dyn_cast<QuantAttr>(codec); quant && quant.getBits() < 4 && !measuredError)
    weight *= 4;
  return (measuredError ? kMeasuredQualityScale : kQualityScale) * weight * e * e * site.share;
}
