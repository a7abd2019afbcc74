//===- CompressAuto.cpp - policy=auto: greedy search by re-simulation -*- C++ -*-===//
//
// See include/ptrain/Transforms/CompressAuto.h. The codec costs of every candidate come from the timing
// model itself (one probe model per rank with every allowed edge compressed at that rank), so the search
// prices a change exactly as --ptrain-report will; each candidate is then timed by rebuilding and
// simulating the plan from the changed PipelineCosts.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/CompressAuto.h"

#include "ptrain/Analysis/ModuleCluster.h"
#include "ptrain/Analysis/ModuleCosts.h"
#include "ptrain/Analysis/PipelinePlan.h"
#include "ptrain/Transforms/CodecErrors.h"
#include "ptrain/Transforms/MixedPrecision.h"
#include "ptrain/Transforms/QualityModel.h"

#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::ptrain;

double mlir::ptrain::estimatePowerSGDError(int64_t n, int64_t m, int64_t r) {
  int64_t k = std::min(n, m);
  return r >= k ? 0.0 : std::sqrt(1.0 - static_cast<double>(r) / static_cast<double>(k));
}

std::optional<double> mlir::ptrain::estimateCodecError(CodecAttrInterface codec, RankedTensorType type) {
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  const int64_t n = type.getNumElements();
  auto keep = [&](int64_t k) {
    return k >= n ? 0.0 : std::sqrt(1.0 - static_cast<double>(k) / static_cast<double>(n));
  };
  if (auto powersgd = dyn_cast<PowerSGDAttr>(codec)) {
    auto nm = MatrixViewAttr::getMatrixShape(powersgd.getView(), type, nullptr);
    if (failed(nm))
      return std::nullopt;
    return estimatePowerSGDError(nm->first, nm->second, powersgd.getRank());
  }
  if (auto quant = dyn_cast<QuantAttr>(codec))
    return 1.0 / (std::ldexp(1.0, quant.getBits()) - 1.0);
  if (auto tah = dyn_cast<TahQuantAttr>(codec)) {
    // The uniform proxy at each tile's width, weighted by the tiles' shares (docs/Compression.md "auto").
    const double high = tah.getHighRatioValue();
    return high / (std::ldexp(1.0, tah.getHighBits()) - 1.0) + (1.0 - high) / (std::ldexp(1.0, tah.getLowBits()) - 1.0);
  }
  if (auto cast = dyn_cast<CastAttr>(codec))
    return cast.getType().isBF16() ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  if (auto topk = dyn_cast<TopKAttr>(codec))
    return keep(topk.getKFor(n));
  if (auto randk = dyn_cast<RandKAttr>(codec))
    return keep(randk.getKFor(n));
  return std::nullopt;
}

namespace {
/// One codec a backward send can take, with its modelled cost and predicted quality cost without ([0]) and
/// with ([1]) error feedback. `rank` is the option's code: > 0 PowerSGD at that rank, < 0 the backward codec
/// -rank - 1 of AutoSearchOptions::backwardCodecs.
struct SendOption {
  int64_t rank = 0;
  CodecAttrInterface codec;
  CompressedTransfer transfer[2];
  bool priced[2] = {false, false};
  double quality[2] = {0, 0};
  /// Whether quality[] came from a measured error (auto-codec-errors) rather than the proxy.
  bool measured[2] = {false, false};
};
/// One codec a forward send can take (the index into AutoSearchOptions::forwardCodecs), with its cost.
struct ForwardOption {
  int64_t index = 0;
  CodecAttrInterface codec;
  CompressedTransfer transfer;
  double quality = 0;
  bool measured = false;
};
/// One codec a TP site can take (the index into AutoSearchOptions::tpCodecs), with what it saves in each stage
/// function holding the site.
struct TensorParallelOption {
  int64_t index = 0;
  CodecAttrInterface codec;
  std::string text;
  std::vector<TensorParallelSaving> savings;
  double quality = 0;
};
} // namespace

static llvm::Expected<double> iterationSeconds(const PipelineCosts &costs) {
  PipelinePlanIndex index;
  auto plan = buildPipelinePlan(costs, index);
  if (!plan)
    return plan.takeError();
  Timeline timeline;
  std::string error;
  if (!simulate(*plan, timeline, error))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
  return timeline.iterationTime;
}

LogicalResult mlir::ptrain::searchAutoCompression(ModuleOp module, const CompressionEdges &edges,
                                                  const AutoSearchOptions &options, ArrayRef<AutoSeed> seeds,
                                                  CompressionPlan &plan,
                                                  std::vector<TensorParallelCodec> &tensorParallel,
                                                  std::vector<AutoDecision> &decisions, AutoSummary &summary,
                                                  llvm::function_ref<InFlightDiagnostic()> emitError) {
  const int64_t pp = edges.pp, m = edges.m;
  // Sends are per virtual stage c (chunk c / pp of stage c mod pp; the stage without virtual stages), dp
  // all-reduces per stage.
  const int64_t chunks = edges.pp * edges.v;
  auto modelError = [&](llvm::Error e) {
    emitError() << "policy=auto: the timing model: " << llvm::toString(std::move(e));
    return failure();
  };
  auto cluster = getModuleCluster(module, "");
  if (!cluster) {
    emitError() << "policy=auto times the plan on the module's cluster (run --ptrain-critical-path=\"cluster=FILE\" "
                   "first): "
                << llvm::toString(cluster.takeError());
    return failure();
  }
  auto base = buildModuleTimingModel(module, *cluster, /*applyCompression=*/false);
  if (!base)
    return modelError(base.takeError());

  MLIRContext *context = module.getContext();
  auto emptyProbe = [&] {
    CompressionPlan probe;
    probe.policy = "auto";
    probe.virtualStages = edges.v;
    probe.backwardSends.assign(pp, std::vector<CodecAttrInterface>(edges.v * m));
    probe.forwardSends.assign(pp, std::vector<CodecAttrInterface>(edges.v * m));
    probe.dpAllReduce.assign(pp, false);
    return probe;
  };
  auto modelOf = [&](const CompressionPlan &probe, ArrayRef<TensorParallelCodec> tp = {}) {
    CompressionAttr record = probe.toAttr(context);
    if (!tp.empty())
      record = record.withTensorParallel(tensorParallelRecord(context, tp), 0);
    setCompression(module, record);
    auto model = buildModuleTimingModel(module, *cluster, /*applyCompression=*/true);
    removeCompression(module);
    return model;
  };
  // The costs without codecs, per FE mode: with fused embedding sync the tied gradients leave the dp
  // buckets and are reduced once over dp x pp (costs.tied and ranks[].dataParallel change).
  std::vector<bool> feModes = {false};
  if (options.fusedEmbedding)
    feModes.push_back(true);
  std::vector<PipelineCosts> baseCosts = {base->costs};
  if (options.fusedEmbedding) {
    CompressionPlan probe = emptyProbe();
    probe.fusedEmbedding = true;
    auto model = modelOf(probe);
    if (!model)
      return modelError(model.takeError());
    baseCosts.push_back(model->costs);
  }

  // Probe models: per rank (and FE mode), every edge within the error budget compressed at that rank
  // (clamped to min(n, m); a clamp that repeats a smaller option's rank is dropped).
  std::vector<int64_t> ranks = options.ranks;
  llvm::sort(ranks);
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::vector<std::vector<std::vector<SendOption>>> sendOptions(chunks, std::vector<std::vector<SendOption>>(m));
  // [FE mode][stage]: requested rank -> the compressed dp all-reduce.
  std::vector<std::vector<std::map<int64_t, CompressedAllReduce>>> dpOptions(
      feModes.size(), std::vector<std::map<int64_t, CompressedAllReduce>>(pp));
  // The predicted quality cost of a codec on one edge (QualityModel.h): a forward send is one of the pipeline's
  // (links x micro-batches) sends; a backward send's cost is its link's (share 1 / links), and a link costs what
  // its worst compressed send costs (qualityOf), not the sum over its micro-batches: measured, PowerSGD on the
  // cool-down send alone costs about what it costs on every send (QualityModel.h).
  const double links = chunks > 1 ? static_cast<double>(chunks - 1) : 1.0;
  // With auto-codec-errors, a figure measured at the boundary replaces the proxy (`measured` says which was
  // used); each distinct (boundary, codec, error feedback) figure is listed once in the summary.
  std::set<std::string> listed;
  auto sendQuality = [&](CodecAttrInterface codec, RankedTensorType type, bool forward, int64_t boundary, bool ef,
                         bool *measured = nullptr) {
    QualitySite site;
    site.kind = forward ? QualitySite::ForwardSend : QualitySite::BackwardSend;
    site.boundary = boundary;
    site.share = forward ? 1.0 / (links * static_cast<double>(m)) : 1.0 / links;
    site.errorFeedback = ef;
    std::optional<double> error =
        options.measuredErrors ? options.measuredErrors->lookup(forward, boundary, codec, ef) : std::nullopt;
    if (measured)
      *measured = error.has_value();
    double cost = predictQualityCost(codec, type, site, error);
    AutoQualityFigure figure;
    figure.site = std::string(forward ? "forward" : "backward") + " sends of boundary " + std::to_string(boundary);
    llvm::raw_string_ostream(figure.codec) << Attribute(codec);
    figure.errorFeedback = ef;
    figure.measured = error.has_value();
    figure.error = error ? error : estimateCodecError(codec, type);
    figure.qualityCost = cost;
    if (listed.insert(figure.site + "|" + figure.codec + (ef ? "|ef" : "")).second)
      summary.qualityFigures.push_back(std::move(figure));
    return cost;
  };
  // The backward sends' costs without error feedback ([0]) from a probe of the same codecs without it.
  auto priceWithoutErrorFeedback = [&](CompressionPlan probe, int64_t code) -> LogicalResult {
    probe.backwardErrorFeedback = false;
    probe.fusedEmbedding = false;
    probe.dpAllReduce.assign(pp, false);
    auto model = modelOf(probe);
    if (!model)
      return modelError(model.takeError());
    for (int64_t s = 1; s < chunks; ++s)
      for (int64_t i = 0; i < m; ++i)
        if (auto it = model->costs.stages[s].compressedBackward.find(i);
            probe.backwardSend(s, i) && it != model->costs.stages[s].compressedBackward.end())
          for (SendOption &option : sendOptions[s][i])
            if (option.rank == code || (code == 0 && option.rank > 0 && option.codec == probe.backwardSend(s, i))) {
              option.transfer[0] = it->second;
              option.priced[0] = true;
              option.quality[0] =
                  sendQuality(option.codec, edges.backwardTypes[s], false, s - 1, false, &option.measured[0]);
            }
    return success();
  };

  for (int64_t r : ranks) {
    CompressionPlan probe = emptyProbe();
    probe.scRank = r;
    std::vector<int64_t> stageRank(chunks, 0);
    bool any = false;
    for (int64_t s = 1; s < chunks; ++s) {
      auto nm = MatrixViewAttr::getMatrixShape(MatrixViewAttr(), edges.backwardTypes[s], nullptr);
      if (failed(nm))
        continue;
      int64_t rc = std::min({r, nm->first, nm->second});
      if (estimatePowerSGDError(nm->first, nm->second, rc) > options.errorBudget ||
          (!sendOptions[s][0].empty() && sendOptions[s][0].back().rank == rc))
        continue;
      auto codec = PowerSGDAttr::get(context, rc, BoolAttr(), MatrixViewAttr());
      if (failed(codec.verifyForType([] { return InFlightDiagnostic(); }, edges.backwardTypes[s])))
        continue;
      stageRank[s] = rc;
      for (int64_t i = 0; i < m; ++i)
        probe.backwardSend(s, i) = codec;
      any = true;
    }
    for (int64_t s = 0; s < pp && edges.dp > 1; ++s) {
      double error = 0;
      for (const auto &[key, type] : edges.gradients[s])
        if (auto nm = MatrixViewAttr::getMatrixShape(MatrixViewAttr(), type, nullptr); succeeded(nm))
          error = std::max(error, estimatePowerSGDError(nm->first, nm->second, std::min({r, nm->first, nm->second})));
      // Without dp all-reduces in the IR (a step built at dp = 1 on a dp grid) the timing model still prices
      // the stage's dp all-reduce from its parameters; the error proxy then has no gradients to bound.
      probe.dpAllReduce[s] = error <= options.errorBudget;
      any |= probe.dpAllReduce[s];
    }
    if (!any)
      continue;
    for (bool fe : feModes) {
      probe.fusedEmbedding = fe;
      auto model = modelOf(probe);
      if (!model)
        return modelError(model.takeError());
      // The sends' costs do not depend on FE: taken from the first mode.
      for (int64_t s = 1; s < chunks && !fe; ++s)
        for (int64_t i = 0; i < m && stageRank[s]; ++i)
          if (auto it = model->costs.stages[s].compressedBackward.find(i);
              it != model->costs.stages[s].compressedBackward.end()) {
            SendOption option;
            option.rank = stageRank[s];
            option.codec = probe.backwardSend(s, i);
            option.transfer[1] = it->second;
            option.priced[1] = true;
            option.quality[1] =
                sendQuality(option.codec, edges.backwardTypes[s], false, s - 1, true, &option.measured[1]);
            sendOptions[s][i].push_back(option);
          }
      for (int64_t s = 0; s < pp; ++s)
        if (probe.dpAllReduce[s] && model->costs.ranks[s].compressedDataParallel)
          dpOptions[fe][s][r] = *model->costs.ranks[s].compressedDataParallel;
    }
    if (llvm::any_of(stageRank, [](int64_t r) { return r != 0; }) && failed(priceWithoutErrorFeedback(probe, 0)))
      return failure();
  }
  // The dp all-reduce's quality cost per stage and requested rank: its worst gradient (one stage of pp).
  std::vector<std::map<int64_t, double>> dpQuality(pp);
  for (int64_t s = 0; s < pp; ++s)
    for (int64_t r : ranks) {
      double q = 0;
      for (const auto &[key, type] : edges.gradients[s])
        if (auto nm = MatrixViewAttr::getMatrixShape(MatrixViewAttr(), type, nullptr); succeeded(nm)) {
          int64_t rc = std::min({r, nm->first, nm->second});
          QualitySite site;
          site.kind = QualitySite::DataParallel;
          site.share = 1.0 / static_cast<double>(pp);
          site.errorFeedback = true;
          q = std::max(q, predictQualityCost(PowerSGDAttr::get(context, rc, BoolAttr(), MatrixViewAttr()), type, site));
        }
      dpQuality[s][r] = q;
    }
  // The other dp codecs (`dpCodecs`, code -j - 1 in State::dp): per codec, a probe with every gradient it
  // serves within the error budget and not ruled out compressed with it (the record's per-gradient
  // dp_codecs), per FE mode; a stage's option exists when the probe compressed some of its gradients.
  // dpKeys[s][code]: the gradients the code compresses on stage s.
  std::vector<std::map<int64_t, std::vector<std::string>>> dpKeys(pp);
  for (auto [j, codec] : llvm::enumerate(options.dpCodecs)) {
    const int64_t code = -static_cast<int64_t>(j) - 1;
    CompressionPlan probe = emptyProbe();
    for (int64_t s = 0; s < pp && edges.dp > 1; ++s) {
      double q = 0;
      for (const auto &[key, type] : edges.gradients[s]) {
        if (!type || failed(codec.verifyForType([] { return InFlightDiagnostic(); }, type)))
          continue;
        std::optional<double> error = estimateCodecError(codec, type);
        QualitySite site;
        site.kind = QualitySite::DataParallel;
        site.share = 1.0 / static_cast<double>(pp);
        site.errorFeedback = true;
        double cost = predictQualityCost(codec, type, site);
        if (!error || *error > options.errorBudget || std::isinf(cost))
          continue;
        probe.dpCodecs[key] = codec;
        dpKeys[s][code].push_back(key);
        q = std::max(q, cost);
      }
      if (dpKeys[s].count(code))
        dpQuality[s][code] = q;
    }
    if (probe.dpCodecs.empty())
      continue;
    for (bool fe : feModes) {
      probe.fusedEmbedding = fe;
      auto model = modelOf(probe);
      if (!model)
        return modelError(model.takeError());
      for (int64_t s = 0; s < pp; ++s)
        if (dpKeys[s].count(code) && model->costs.ranks[s].compressedDataParallel)
          dpOptions[fe][s][code] = *model->costs.ranks[s].compressedDataParallel;
    }
  }
  // Backward probes of the other codecs: per codec of `backwardCodecs`, every backward send it can encode
  // within the error budget and not ruled out, with error feedback and without.
  for (auto [j, codec] : llvm::enumerate(options.backwardCodecs)) {
    const int64_t code = -static_cast<int64_t>(j) - 1;
    CompressionPlan probe = emptyProbe();
    bool any = false;
    for (int64_t s = 1; s < chunks; ++s) {
      RankedTensorType type = edges.backwardTypes[s];
      if (!type || failed(codec.verifyForType([] { return InFlightDiagnostic(); }, type)))
        continue;
      std::optional<double> error = estimateCodecError(codec, type);
      // Ruled out only when the quality model rules it out with and without error feedback (top-k on
      // gradients needs it: the option without it then has an infinite cost, which no budget takes).
      if (!error || *error > options.errorBudget ||
          (std::isinf(sendQuality(codec, type, false, s - 1, false)) &&
           std::isinf(sendQuality(codec, type, false, s - 1, true))))
        continue;
      for (int64_t i = 0; i < m; ++i)
        probe.backwardSend(s, i) = codec;
      any = true;
    }
    if (!any)
      continue;
    auto model = modelOf(probe);
    if (!model)
      return modelError(model.takeError());
    for (int64_t s = 1; s < chunks; ++s)
      for (int64_t i = 0; i < m; ++i)
        if (auto it = model->costs.stages[s].compressedBackward.find(i);
            probe.backwardSend(s, i) && it != model->costs.stages[s].compressedBackward.end()) {
          SendOption option;
          option.rank = code;
          option.codec = codec;
          option.transfer[1] = it->second;
          option.priced[1] = true;
          option.quality[1] = sendQuality(codec, edges.backwardTypes[s], false, s - 1, true, &option.measured[1]);
          sendOptions[s][i].push_back(option);
        }
    if (failed(priceWithoutErrorFeedback(probe, code)))
      return failure();
  }
  // Forward probes: per codec of `forwardCodecs`, every forward send it can encode within the error budget.
  std::vector<std::vector<std::vector<ForwardOption>>> forwardOptions(chunks,
                                                                      std::vector<std::vector<ForwardOption>>(m));
  // In a bf16 or fp16 plan the codec reads the 16-bit message (docs/Compression.md, "Codecs on 16-bit traffic"):
  // a candidate must accept the 16-bit type, so a cast codec (its C3) is never offered there.
  const FloatType half = getMessageHalfType(module);
  auto wireType = [&](RankedTensorType type) {
    return type && half && type.getElementType().isF32() ? type.clone(half) : type;
  };
  for (auto [j, codec] : llvm::enumerate(options.forwardCodecs)) {
    CompressionPlan probe = emptyProbe();
    bool any = false;
    for (int64_t s = 0; s + 1 < chunks; ++s) {
      RankedTensorType type = edges.forwardTypes[s];
      if (!type || failed(codec.verifyForType([] { return InFlightDiagnostic(); }, wireType(type))))
        continue;
      std::optional<double> error = estimateCodecError(codec, type);
      if (!error || *error > options.errorBudget || std::isinf(sendQuality(codec, type, true, s, false)))
        continue;
      for (int64_t i = 0; i < m; ++i)
        probe.forwardSend(s, i) = codec;
      any = true;
    }
    if (!any)
      continue;
    auto model = modelOf(probe);
    if (!model)
      return modelError(model.takeError());
    for (int64_t s = 0; s + 1 < chunks; ++s)
      for (int64_t i = 0; i < m; ++i)
        if (auto it = model->costs.stages[s].compressedForward.find(i);
            probe.forwardSend(s, i) && it != model->costs.stages[s].compressedForward.end()) {
          ForwardOption option{static_cast<int64_t>(j), codec, it->second, 0, false};
          option.quality = sendQuality(codec, edges.forwardTypes[s], true, s, false, &option.measured);
          forwardOptions[s][i].push_back(option);
        }
  }

  // TP probes: per codec of `tpCodecs`, every TP site it can serve within the error budget (forward sites:
  // stateless codecs only), compressed together; the model reports what each site saves in each stage function.
  std::vector<TensorParallelSite> tpSites;
  if (!options.tpCodecs.empty())
    tpSites = uniqueTensorParallelSites(module);
  std::vector<std::vector<TensorParallelOption>> tpOptions(tpSites.size());
  for (auto [j, codec] : llvm::enumerate(options.tpCodecs)) {
    std::vector<TensorParallelCodec> probeTp;
    for (const TensorParallelSite &site : tpSites) {
      auto type = cast<RankedTensorType>(site.op->getResult(0).getType());
      std::optional<double> error = estimateCodecError(codec, type);
      if (isa<LinearAEAttr>(codec) || failed(codec.verifyForType([] { return InFlightDiagnostic(); }, wireType(type))) ||
          (site.forward && !forwardSiteRefusal(codec, type).empty()) || !error || *error > options.errorBudget)
        continue;
      probeTp.push_back({site.layer, site.role, site.forward, codec, !site.forward && options.tpErrorFeedback});
    }
    if (probeTp.empty())
      continue;
    auto model = modelOf(emptyProbe(), probeTp);
    if (!model)
      return modelError(model.takeError());
    for (const TensorParallelSaving &saving : model->tpSavings)
      for (auto [k, site] : llvm::enumerate(tpSites)) {
        if (site.layer != saving.layer || site.role != saving.role || site.forward != saving.forward)
          continue;
        if (tpOptions[k].empty() || tpOptions[k].back().index != static_cast<int64_t>(j)) {
          QualitySite site;
          site.kind = QualitySite::TensorParallel;
          site.share = 1.0 / static_cast<double>(tpSites.size());
          site.errorFeedback = !tpSites[k].forward && options.tpErrorFeedback;
          tpOptions[k].push_back({static_cast<int64_t>(j), codec, saving.codec, {},
                                  predictQualityCost(codec, cast<RankedTensorType>(tpSites[k].op->getResult(0).getType()),
                                                     site)});
        }
        tpOptions[k].back().savings.push_back(saving);
      }
  }

  // The search state: per (stage, micro-batch) the rank of the backward send's option and 1 + the index of
  // the forward send's codec, per stage the requested rank of its dp all-reduce (> 0: PowerSGD; < 0: the dp
  // codec -code - 1 on each gradient it serves; 0 = uncompressed), and whether FE is on. The record has one
  // sc_rank, so every dp all-reduce compressed with PowerSGD has the same requested rank. Per TP site, 1 + the index of its codec in `tpCodecs` (0 = uncompressed).
  struct State {
    std::vector<std::vector<int64_t>> send, fwd;
    std::vector<int64_t> dp;
    bool fe = false;
    std::vector<int64_t> tp;
    /// Error feedback on the backward sends (one flag for the plan).
    bool bwdEf = true;
    bool operator==(const State &o) const {
      return send == o.send && fwd == o.fwd && dp == o.dp && fe == o.fe && tp == o.tp && bwdEf == o.bwdEf;
    }
  };
  auto findSend = [&](int64_t s, int64_t i, int64_t rank) -> const SendOption * {
    for (const SendOption &option : sendOptions[s][i])
      if (option.rank == rank)
        return &option;
    return nullptr;
  };
  auto findForward = [&](int64_t s, int64_t i, int64_t code) -> const ForwardOption * {
    for (const ForwardOption &option : forwardOptions[s][i])
      if (option.index + 1 == code)
        return &option;
    return nullptr;
  };
  auto findTensorParallel = [&](size_t k, int64_t code) -> const TensorParallelOption * {
    for (const TensorParallelOption &option : tpOptions[k])
      if (option.index + 1 == code)
        return &option;
    return nullptr;
  };
  auto costsOf = [&](const State &state) {
    PipelineCosts costs = baseCosts[state.fe];
    // A compressed TP site shortens the steps of the functions holding it (F, and B or FB, which recompute).
    for (size_t k = 0; k < tpSites.size(); ++k)
      if (state.tp[k])
        for (const TensorParallelSaving &saving : findTensorParallel(k, state.tp[k])->savings) {
          StageCosts &c = costs.stages[saving.stage];
          (!saving.inBackward           ? c.forward
           : saving.stage == chunks - 1 ? c.forwardBackward
                                        : c.backward) -= saving.seconds;
        }
    for (int64_t s = 1; s < chunks; ++s)
      for (int64_t i = 0; i < m; ++i)
        if (state.send[s][i])
          costs.stages[s].compressedBackward[i] = findSend(s, i, state.send[s][i])->transfer[state.bwdEf];
    for (int64_t s = 0; s + 1 < chunks; ++s)
      for (int64_t i = 0; i < m; ++i)
        if (state.fwd[s][i])
          costs.stages[s].compressedForward[i] = findForward(s, i, state.fwd[s][i])->transfer;
    for (int64_t s = 0; s < pp; ++s)
      if (state.dp[s])
        costs.ranks[s].compressedDataParallel = dpOptions[state.fe][s].at(state.dp[s]);
    return costs;
  };
  auto timeOf = [&](const State &state) { return iterationSeconds(costsOf(state)); };
  // Where the quality figures of the edges a move changes come from: "measured" (auto-codec-errors), "proxy"
  // (estimateCodecError; dp and TP sites always), "measured and proxy", or "none" (no codec's error changes:
  // fused embedding sync, which is exact).
  auto errorSourceOf = [&](const State &before, const State &after) -> std::string {
    bool measured = false, proxy = false;
    auto note = [&](bool fromFile) { (fromFile ? measured : proxy) = true; };
    for (int64_t s = 1; s < chunks; ++s)
      for (int64_t i = 0; i < m; ++i)
        if (before.send[s][i] != after.send[s][i] ||
            (before.bwdEf != after.bwdEf && (before.send[s][i] || after.send[s][i])))
          for (const State *state : {&before, &after})
            if (state->send[s][i])
              note(findSend(s, i, state->send[s][i])->measured[state->bwdEf]);
    for (int64_t s = 0; s + 1 < chunks; ++s)
      for (int64_t i = 0; i < m; ++i)
        if (before.fwd[s][i] != after.fwd[s][i])
          for (const State *state : {&before, &after})
            if (state->fwd[s][i])
              note(findForward(s, i, state->fwd[s][i])->measured);
    if (before.dp != after.dp || before.tp != after.tp)
      note(false);
    return measured && proxy ? "measured and proxy" : measured ? "measured" : proxy ? "proxy" : "none";
  };
  // The plan's predicted quality cost: the sum over its compressed edges, a backward link counted once at its
  // worst send (QualityModel.h).
  auto qualityOf = [&](const State &state) {
    double q = 0;
    for (int64_t s = 1; s < chunks; ++s) {
      double link = 0;
      for (int64_t i = 0; i < m; ++i)
        if (state.send[s][i])
          link = std::max(link, findSend(s, i, state.send[s][i])->quality[state.bwdEf]);
      q += link;
    }
    for (int64_t s = 0; s + 1 < chunks; ++s)
      for (int64_t i = 0; i < m; ++i)
        if (state.fwd[s][i])
          q += findForward(s, i, state.fwd[s][i])->quality;
    for (int64_t s = 0; s < pp; ++s)
      if (state.dp[s])
        q += dpQuality[s].at(state.dp[s]);
    for (size_t k = 0; k < tpSites.size(); ++k)
      if (state.tp[k])
        q += findTensorParallel(k, state.tp[k])->quality;
    return q;
  };
  // Every compressed backward send is priced in the state's error-feedback mode.
  auto sendsPriced = [&](const State &state) {
    for (int64_t s = 1; s < chunks; ++s)
      for (int64_t i = 0; i < m; ++i)
        if (state.send[s][i] && !findSend(s, i, state.send[s][i])->priced[state.bwdEf])
          return false;
    return true;
  };
  // The option of a requested rank on a send: the largest option rank <= it (its clamp to min(n, m)), else
  // the smallest option (the requested rank is beyond the error budget); 0 when the send has no option.
  auto sendRankFor = [&](int64_t s, int64_t i, int64_t requested) -> int64_t {
    int64_t rank = 0, smallest = 0;
    for (const SendOption &option : sendOptions[s][i]) {
      if (option.rank > 0 && option.rank <= requested)
        rank = option.rank;
      if (option.rank > 0 && !smallest)
        smallest = option.rank;
    }
    return rank ? rank : smallest;
  };
  // The code a send takes in a group move: a rank (> 0, as sendRankFor), another backward codec (< 0, when
  // the send has it), or 0 (the send keeps its code).
  auto sendCodeFor = [&](int64_t s, int64_t i, int64_t code) -> int64_t {
    return code > 0 ? sendRankFor(s, i, code) : code < 0 && findSend(s, i, code) ? code : 0;
  };
  // The candidate rank nearest `rank` (ties: the smaller), for mapping a seed's ranks.
  auto nearestRank = [&](int64_t rank) {
    int64_t best = ranks.front();
    for (int64_t r : ranks)
      if (std::llabs(r - rank) < std::llabs(best - rank))
        best = r;
    return best;
  };

  const std::vector<std::vector<int64_t>> none(chunks, std::vector<int64_t>(m, 0));
  const State empty{none, none, std::vector<int64_t>(pp, 0), false, std::vector<int64_t>(tpSites.size(), 0)};
  State current = empty;
  auto now = timeOf(current);
  if (!now)
    return modelError(now.takeError());
  summary.uncompressedSeconds = *now;
  summary.seeds.push_back({"none", *now});
  summary.seedQualityCosts.push_back(0);
  summary.start = 0;
  summary.qualityBudget = options.qualityBudget;
  const double budget = options.qualityBudget;
  auto indexOf = [](ArrayRef<CodecAttrInterface> codecs, CodecAttrInterface codec) -> int64_t {
    auto it = llvm::find(codecs, codec);
    return it == codecs.end() ? -1 : it - codecs.begin();
  };
  for (const AutoSeed &seed : seeds) {
    State state = empty;
    state.fe = options.fusedEmbedding && seed.plan.fusedEmbedding;
    state.bwdEf = seed.plan.backwardErrorFeedback;
    bool expressible = !seed.plan.forwardErrorFeedback ||
                       llvm::all_of(seed.plan.forwardSends, [](const std::vector<CodecAttrInterface> &row) {
                         return llvm::all_of(row, [](CodecAttrInterface c) { return !c; });
                       });
    for (int64_t s = 1; s < chunks && !seed.plan.backwardSends.empty(); ++s)
      for (int64_t i = 0; i < m; ++i)
        if (isa_and_nonnull<PowerSGDAttr>(seed.plan.backwardCodecOf(s, i))) {
          // The rule's rank at the nearest candidate, clamped to min(n, m) as the probes clamp it.
          auto nm = MatrixViewAttr::getMatrixShape(MatrixViewAttr(), edges.backwardTypes[s], nullptr);
          int64_t rank = succeeded(nm) ? std::min({nearestRank(seed.cbRank), nm->first, nm->second}) : 0;
          state.send[s][i] = findSend(s, i, rank) ? rank : 0;
          expressible &= state.send[s][i] != 0;
        } else if (CodecAttrInterface codec = seed.plan.backwardCodecOf(s, i)) {
          int64_t j = indexOf(options.backwardCodecs, codec);
          state.send[s][i] = j >= 0 && findSend(s, i, -j - 1) ? -j - 1 : 0;
          expressible &= state.send[s][i] != 0;
        }
    for (int64_t s = 0; s + 1 < chunks && !seed.plan.forwardSends.empty(); ++s)
      for (int64_t i = 0; i < m; ++i)
        if (CodecAttrInterface codec = seed.plan.forwardCodecOf(s, i)) {
          int64_t j = indexOf(options.forwardCodecs, codec);
          state.fwd[s][i] = j >= 0 && findForward(s, i, j + 1) ? j + 1 : 0;
          expressible &= state.fwd[s][i] != 0;
        }
    expressible &= sendsPriced(state);
    for (int64_t s = 0; s < pp && s < static_cast<int64_t>(seed.plan.dpAllReduce.size()); ++s)
      if (seed.plan.dpAllReduce[s]) {
        state.dp[s] = nearestRank(seed.plan.scRank);
        expressible &= dpOptions[state.fe][s].count(state.dp[s]) != 0;
      }
    // A seed whose ranks are not candidates runs at the nearest ones: the name says so.
    std::string name = seed.name;
    for (auto [what, rank] : {std::pair<const char *, int64_t>{"CB", seed.cbRank}, {"SC", seed.plan.scRank}})
      if (nearestRank(rank) != rank)
        name += std::string(" (") + what + " at rank " + std::to_string(nearestRank(rank)) + ")";
    if (!expressible) {
      summary.seeds.push_back({name, -1});
      summary.seedQualityCosts.push_back(0);
      continue;
    }
    auto t = timeOf(state);
    if (!t)
      return modelError(t.takeError());
    summary.seeds.push_back({name, *t});
    double quality = qualityOf(state);
    summary.seedQualityCosts.push_back(quality);
    if (*t < *now && quality <= budget) {
      *now = *t;
      current = state;
      summary.start = summary.seeds.size() - 1;
    }
  }

  // The moves, in tie order: dp all-reduces (each stage, then every stage), then backward sends (each
  // send, each link, each micro-batch, every send); within a move the larger rank (the smaller error)
  // first, removal last.
  struct Move {
    State state;
    std::string edge, codec;
  };
  auto sendCodec = [&](int64_t s, int64_t i, int64_t rank) -> std::string {
    return rank ? findSend(s, i, rank)->transfer[1].codec : "none";
  };
  auto moves = [&](const State &from) {
    std::vector<Move> out;
    // The codec state (PowerSGD's warm-start Q) is keyed by the link (with virtual stages, by the chunk
    // boundary: one virtual link), so the compressed sends of a link share one rank: a move that would mix
    // ranks on a link is not a candidate.
    auto oneRankPerLink = [&](const State &state) {
      for (int64_t s = 1; s < chunks; ++s) {
        int64_t rank = 0;
        for (int64_t r : state.send[s])
          if (r && rank && r != rank)
            return false;
          else
            rank = r ? r : rank;
      }
      return true;
    };
    // A link's compressed forward sends share one codec likewise.
    auto oneCodecPerLink = [&](const State &state) {
      for (int64_t s = 0; s + 1 < chunks; ++s)
        for (int64_t code : state.fwd[s])
          if (code && llvm::any_of(state.fwd[s], [&](int64_t c) { return c && c != code; }))
            return false;
      return true;
    };
    // Every compressed dp all-reduce must have an option in the state's FE mode.
    auto dpPriced = [&](const State &state) {
      for (int64_t s = 0; s < pp; ++s)
        if (state.dp[s] && !dpOptions[state.fe][s].count(state.dp[s]))
          return false;
      return true;
    };
    auto add = [&](State state, std::string edge, std::string codec) {
      if (!(state == from) && oneRankPerLink(state) && oneCodecPerLink(state) && dpPriced(state) &&
          sendsPriced(state) && qualityOf(state) <= budget)
        out.push_back({std::move(state), std::move(edge), std::move(codec)});
    };
    {
      State state = from;
      state.bwdEf = !from.bwdEf;
      add(state, "backward error feedback", state.bwdEf ? "on" : "off");
    }
    if (options.fusedEmbedding) {
      State state = from;
      state.fe = !from.fe;
      add(state, "fused embedding sync", state.fe ? "on" : "off");
    }
    // The dp codes: PowerSGD ranks (larger first), the other dp codecs, uncompressed.
    std::vector<int64_t> requested(ranks.rbegin(), ranks.rend());
    for (int64_t j = 0; j < static_cast<int64_t>(options.dpCodecs.size()); ++j)
      requested.push_back(-j - 1);
    requested.push_back(0);
    auto dpCodecName = [&](int64_t r) -> std::string {
      if (r > 0)
        return "#ptrain.powersgd<rank = " + std::to_string(r) + "> (clamped per gradient)";
      if (r == 0)
        return "none";
      std::string text;
      llvm::raw_string_ostream(text) << Attribute(options.dpCodecs[-r - 1]);
      return text + " (per gradient)";
    };
    int64_t scRank = 0;
    for (int64_t r : from.dp)
      scRank = r > 0 ? r : scRank;
    int64_t powerSGDStages = llvm::count_if(from.dp, [](int64_t r) { return r > 0; });
    for (int64_t s = 0; s < pp; ++s)
      for (int64_t r : requested) {
        // One stage at another PowerSGD rank only when it is the only one with PowerSGD (one sc_rank).
        const auto &stageOptions = dpOptions[from.fe][s];
        if ((r && !stageOptions.count(r)) ||
            (r > 0 && scRank && r != scRank && !(powerSGDStages == 1 && from.dp[s] > 0)))
          continue;
        State state = from;
        state.dp[s] = r;
        add(state, "dp all-reduce stage " + std::to_string(s), r ? dpCodecName(r) : "none");
      }
    for (int64_t r : requested) {
      State state = from;
      bool possible = true;
      for (int64_t s = 0; s < pp; ++s) {
        const auto &stageOptions = dpOptions[from.fe][s];
        state.dp[s] = stageOptions.count(r) ? r : 0;
        possible &= !r || stageOptions.count(r) || stageOptions.empty();
      }
      if (possible && edges.dp > 1)
        add(state, "every dp all-reduce", dpCodecName(r));
    }
    // A send named by its schedule step: "backward send stage 1 B3" ("... B3.1" for model chunk 1).
    auto sendName = [&](bool forward, int64_t c, int64_t i) {
      std::string step = (forward           ? "F"
                          : c == chunks - 1 ? "FB"
                                            : "B") +
                         std::to_string(i) + (c >= pp ? "." + std::to_string(c / pp) : std::string());
      return std::string(forward ? "forward" : "backward") + " send stage " + std::to_string(c % pp) + " " + step;
    };
    // A virtual link between virtual stages (a link between stages without virtual stages).
    auto linkName = [&](int64_t from, int64_t to) {
      std::string link = std::to_string(from) + " -> " + std::to_string(to);
      return edges.v > 1 ? "virtual link " + link + " (stage " + std::to_string(from % pp) + " -> " +
                               std::to_string(to % pp) + ")"
                         : "link " + link;
    };
    auto stageName = [&](int64_t s, int64_t i) { return sendName(false, s, i); };
    for (int64_t s = 1; s < chunks; ++s)
      for (int64_t i = 0; i < m; ++i) {
        for (auto it = sendOptions[s][i].rbegin(); it != sendOptions[s][i].rend(); ++it) {
          State state = from;
          state.send[s][i] = it->rank;
          add(state, stageName(s, i), it->transfer[1].codec);
        }
        State state = from;
        state.send[s][i] = 0;
        add(state, stageName(s, i), "none");
      }
    // Group moves: every send of a set at the requested rank (each send's clamp), or uncompressed.
    // The codes of group moves: the ranks (larger first), the other backward codecs, uncompressed.
    std::vector<int64_t> sendCodes(ranks.rbegin(), ranks.rend());
    for (int64_t j = 0; j < static_cast<int64_t>(options.backwardCodecs.size()); ++j)
      sendCodes.push_back(-j - 1);
    sendCodes.push_back(0);
    auto group = [&](std::string edge, auto member) {
      for (int64_t r : sendCodes) {
        State state = from;
        std::string codec = r ? "" : "none";
        for (int64_t s = 1; s < chunks; ++s)
          for (int64_t i = 0; i < m; ++i)
            if (member(s, i) && (!r || sendCodeFor(s, i, r))) {
              state.send[s][i] = r ? sendCodeFor(s, i, r) : 0;
              if (codec.empty())
                codec = sendCodec(s, i, state.send[s][i]);
            }
        if (!codec.empty())
          add(state, edge, codec + (r > 0 && chunks > 2 ? " (clamped per link)" : ""));
      }
      // The compressed sends of the set at another rank or codec (the uncompressed ones stay so).
      for (int64_t r : sendCodes) {
        State state = from;
        std::string codec;
        for (int64_t s = 1; s < chunks && r; ++s)
          for (int64_t i = 0; i < m; ++i)
            if (member(s, i) && from.send[s][i] && sendCodeFor(s, i, r)) {
              state.send[s][i] = sendCodeFor(s, i, r);
              if (codec.empty())
                codec = sendCodec(s, i, state.send[s][i]);
            }
        if (!codec.empty())
          add(state, edge + " (the compressed ones)", codec + (r > 0 && chunks > 2 ? " (clamped per link)" : ""));
      }
    };
    for (int64_t l = 1; l < chunks; ++l)
      group("backward sends of " + linkName(l, l - 1), [&](int64_t s, int64_t) { return s == l; });
    for (int64_t k = 0; k < m && chunks > 2; ++k)
      group("backward sends of micro-batch " + std::to_string(k), [&](int64_t, int64_t i) { return i == k; });
    if (m > 1)
      group("every backward send", [](int64_t, int64_t) { return true; });
    // Forward sends: each send, each link's sends and every send set to one codec, or uncompressed.
    for (int64_t s = 0; s + 1 < chunks; ++s)
      for (int64_t i = 0; i < m; ++i) {
        for (const ForwardOption &option : forwardOptions[s][i]) {
          State state = from;
          state.fwd[s][i] = option.index + 1;
          add(state, sendName(true, s, i), option.transfer.codec);
        }
        State state = from;
        state.fwd[s][i] = 0;
        add(state, sendName(true, s, i), "none");
      }
    auto forwardGroup = [&](std::string edge, auto member) {
      for (int64_t code = 0; code <= static_cast<int64_t>(options.forwardCodecs.size()); ++code) {
        State state = from;
        std::string codec = code ? "" : "none";
        for (int64_t s = 0; s + 1 < chunks; ++s)
          for (int64_t i = 0; i < m; ++i)
            if (member(s) && (!code || findForward(s, i, code))) {
              state.fwd[s][i] = code;
              if (codec.empty())
                codec = findForward(s, i, code)->transfer.codec;
            }
        if (!codec.empty())
          add(state, edge, codec);
      }
    };
    for (int64_t l = 0; l + 1 < chunks && m > 1; ++l)
      forwardGroup("forward sends of " + linkName(l, l + 1), [&](int64_t s) { return s == l; });
    if (chunks > 2)
      forwardGroup("every forward send", [](int64_t) { return true; });
    // TP sites: each site, a role's sites of every layer, every forward / backward site and every site, set to
    // one codec (the sites of the set that take it) or uncompressed.
    auto tpGroup = [&](const std::string &edge, auto member) {
      for (int64_t n = 1; n <= static_cast<int64_t>(options.tpCodecs.size()) + 1; ++n) {
        int64_t code = n % static_cast<int64_t>(options.tpCodecs.size() + 1); // removal last
        State state = from;
        std::string codec = code ? "" : "none";
        for (size_t k = 0; k < tpSites.size(); ++k)
          if (member(k) && (!code || findTensorParallel(k, code))) {
            state.tp[k] = code;
            if (codec.empty())
              codec = findTensorParallel(k, code)->text;
          }
        if (!codec.empty())
          add(state, edge, codec);
      }
    };
    for (size_t k = 0; k < tpSites.size(); ++k)
      tpGroup(tensorParallelSiteName(tpSites[k]), [&](size_t i) { return i == k; });
    std::vector<std::string> roles;
    for (const TensorParallelSite &site : tpSites)
      if (!llvm::is_contained(roles, site.role))
        roles.push_back(site.role);
    for (const std::string &role : roles)
      if (llvm::count_if(tpSites, [&](const TensorParallelSite &s) { return s.role == role; }) > 1)
        tpGroup("tp all-reduces " + role + " of every layer", [&](size_t i) { return tpSites[i].role == role; });
    for (bool forward : {true, false})
      tpGroup(std::string("every ") + (forward ? "forward" : "backward") + " tp all-reduce",
              [&](size_t i) { return tpSites[i].forward == forward; });
    if (!tpSites.empty())
      tpGroup("every tp all-reduce", [](size_t) { return true; });
    return out;
  };

  for (int64_t pick = 0; pick < options.maxPicks; ++pick) {
    double bestTime = *now - options.minGain * summary.uncompressedSeconds;
    std::optional<Move> best;
    for (Move &move : moves(current)) {
      auto t = timeOf(move.state);
      if (!t)
        return modelError(t.takeError());
      if (*t < bestTime) {
        bestTime = *t;
        best = std::move(move);
      }
    }
    if (!best)
      break;
    double before = qualityOf(current);
    State previous = current;
    current = best->state;
    double after = qualityOf(current);
    decisions.push_back(
        {best->edge, best->codec, *now - bestTime, bestTime, after - before, after, errorSourceOf(previous, current)});
    *now = bestTime;
  }
  summary.finalSeconds = *now;
  summary.finalQualityCost = qualityOf(current);

  // Why each TP site is (or is not) compressed: the final plan re-simulated with that one site changed.
  for (size_t k = 0; k < tpSites.size(); ++k) {
    std::string line = tensorParallelSiteName(tpSites[k]) + ": ";
    auto delta = [&](int64_t code) -> llvm::Expected<double> {
      State state = current;
      state.tp[k] = code;
      auto t = timeOf(state);
      if (!t)
        return t.takeError();
      return *t - *now;
    };
    auto ms = [](double seconds) {
      std::string text;
      llvm::raw_string_ostream(text) << llvm::format("%+.4f", seconds * 1e3) << " ms";
      return text;
    };
    if (current.tp[k]) {
      auto d = delta(0);
      if (!d)
        return modelError(d.takeError());
      line += findTensorParallel(k, current.tp[k])->text + " (uncompressing it alone: " + ms(*d) + ")";
    } else if (tpOptions[k].empty()) {
      line += tpSites[k].forward ? "none (no stateless candidate serves it within the error budget: the recomputed "
                                   "forward must decode the same value)"
                                 : "none (no candidate serves it within the error budget)";
    } else {
      std::optional<std::pair<double, std::string>> best;
      for (const TensorParallelOption &option : tpOptions[k]) {
        auto d = delta(option.index + 1);
        if (!d)
          return modelError(d.takeError());
        if (!best || *d < best->first)
          best = {*d, option.text};
      }
      line += "none (the best candidate, " + best->second + ", alone: " + ms(best->first) +
              (best->first < 0 ? ", less than auto-min-gain)" : ", no saving)");
    }
    summary.tensorParallelSites.push_back(line);
  }
  for (size_t k = 0; k < tpSites.size(); ++k)
    if (current.tp[k])
      tensorParallel.push_back({tpSites[k].layer, tpSites[k].role, tpSites[k].forward,
                                findTensorParallel(k, current.tp[k])->codec,
                                !tpSites[k].forward && options.tpErrorFeedback});

  for (int64_t s = 1; s < chunks; ++s)
    for (int64_t i = 0; i < m; ++i)
      if (current.send[s][i])
        plan.backwardSend(s, i) = findSend(s, i, current.send[s][i])->codec;
  for (int64_t s = 0; s + 1 < chunks; ++s)
    for (int64_t i = 0; i < m; ++i)
      if (current.fwd[s][i])
        plan.forwardSend(s, i) = findForward(s, i, current.fwd[s][i])->codec;
  plan.forwardErrorFeedback = false;
  plan.fusedEmbedding = current.fe;
  int64_t scRank = 0;
  for (int64_t s = 0; s < pp; ++s) {
    plan.dpAllReduce[s] = current.dp[s] > 0;
    scRank = current.dp[s] > 0 ? current.dp[s] : scRank;
    if (current.dp[s] < 0)
      for (const std::string &key : dpKeys[s].at(current.dp[s]))
        plan.dpCodecs[key] = options.dpCodecs[-current.dp[s] - 1];
  }
  plan.scRank = scRank ? scRank : plan.scRank;
  plan.backwardErrorFeedback = current.bwdEf;
  return success();
}

llvm::json::Value mlir::ptrain::autoSummaryToJSON(const AutoSummary &summary, llvm::ArrayRef<AutoDecision> decisions) {
  namespace json = llvm::json;
  auto finite = [](double x) -> json::Value { return std::isfinite(x) ? json::Value(x) : json::Value(nullptr); };
  json::Array seeds, moves, sites;
  for (auto [n, seed] : llvm::enumerate(summary.seeds))
    seeds.push_back(json::Object{
        {"name", seed.first},
        {"seconds", seed.second < 0 ? json::Value(nullptr) : json::Value(seed.second)},
        {"quality_cost", n < summary.seedQualityCosts.size() ? finite(summary.seedQualityCosts[n]) : json::Value(0.0)}});
  for (const AutoDecision &d : decisions)
    moves.push_back(json::Object{{"edge", d.edge},
                                 {"codec", d.codec},
                                 {"saved_s", d.savedSeconds},
                                 {"iteration_s", d.iterationSeconds},
                                 {"quality_cost", finite(d.qualityCost)},
                                 {"total_quality_cost", finite(d.totalQualityCost)},
                                 {"error_source", d.errorSource}});
  for (const std::string &site : summary.tensorParallelSites)
    sites.push_back(site);
  json::Array figures;
  for (const AutoQualityFigure &f : summary.qualityFigures)
    figures.push_back(json::Object{{"site", f.site},
                                   {"codec", f.codec},
                                   {"error_feedback", f.errorFeedback},
                                   {"error", f.error ? json::Value(*f.error) : json::Value(nullptr)},
                                   {"source", f.measured ? "measured" : "proxy"},
                                   {"quality_cost", finite(f.qualityCost)}});
  return json::Object{
      {"uncompressed_s", summary.uncompressedSeconds},
      {"final_s", summary.finalSeconds},
      {"speedup", summary.finalSeconds > 0 ? summary.uncompressedSeconds / summary.finalSeconds : 0.0},
      {"quality_budget", finite(summary.qualityBudget)},
      {"final_quality_cost", finite(summary.finalQualityCost)},
      {"seeds", std::move(seeds)},
      {"start", summary.start < summary.seeds.size() ? summary.seeds[summary.start].first : std::string()},
      {"moves", std::move(moves)},
      {"tp_sites", std::move(sites)},
      {"codec_errors", summary.codecErrorsFile.empty() ? json::Value(nullptr) : json::Value(summary.codecErrorsFile)},
      {"send_quality_figures", std::move(figures)}};
}
