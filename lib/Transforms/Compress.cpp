//===- Compress.cpp - compression decisions (Optimus-CC, MCBench) ----*- C++ -*-===//
//
// --ptrain-compress: see the pass description in Passes.td and docs/Compression.md. Decides, from the
// schedule and the critical-path flags, which pipeline sends (with which codec) and which stages'
// data-parallel all-reduces are compressed, applies the per-edge override file, and records it as
// `ptrain.compression`; --ptrain-lower-to-runtime materializes it.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/Passes.h"

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "ptrain/Plan/CompressTensorParallel.h"
#include "ptrain/Plan/CompressionPlan.h"
#include "ptrain/Plan/ScheduleTable.h"
#include "ptrain/Transforms/AutoCandidates.h"
#include "ptrain/Transforms/CodecErrors.h"
#include "ptrain/Transforms/CompressAuto.h"
#include "ptrain/Transforms/CompressDataParallel.h"
#include "ptrain/Transforms/CompressionConfig.h"
#include "ptrain/Transforms/GradientClipping.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <tuple>

#define DEBUG_TYPE "ptrain-compress"

namespace mlir::ptrain {
#define GEN_PASS_DEF_COMPRESSPASS
#include "ptrain/Transforms/Passes.h.inc"
} // namespace mlir::ptrain

using namespace mlir;
using namespace mlir::ptrain;

namespace {
/// The switches of the Optimus-CC rule (the policy's options; policy=auto seeds its search with variants).
struct OptimusCCRule {
  bool cb = true, lep = true, fe = true, sc = true, scAll = false;
  std::string cbSends = "cooldown";
  int64_t cbRank = 16, scRank = 128;
};

struct CompressPass : public ptrain::impl::CompressPassBase<CompressPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  InFlightDiagnostic error(const Twine &message) {
    return emitError(getOperation().getLoc()) << "--ptrain-compress: " << message;
  }
  /// Reads the edges the plan can compress: schedule rows, send types, dp gradients.
  LogicalResult readEdges(ModuleOp module, int64_t pp, int64_t v, int64_t m, ArrayAttr table, CompressionEdges &edges);
  LogicalResult optimusCC(ModuleOp module, const CompressionEdges &edges, ArrayAttr sendCritical, ScheduleAttr schedule,
                          const OptimusCCRule &rule, CompressionPlan &plan);
  LogicalResult mcbench(const CompressionEdges &edges, CompressionPlan &plan);
  /// mcbench's TP site: the `tp_all_reduces` record entry from tp-fwd-codec, tp-bwd-codec, tp-skip-layers.
  FailureOr<ArrayAttr> tensorParallelSites(ModuleOp module);
  LogicalResult autoSearch(ModuleOp module, const CompressionEdges &edges, ArrayAttr sendCritical,
                           ScheduleAttr schedule, CompressionPlan &plan);
  /// The TP sites policy=auto compresses (its `tp_all_reduces`).
  std::vector<TensorParallelCodec> autoTensorParallel;
};
} // namespace

LogicalResult CompressPass::readEdges(ModuleOp module, int64_t pp, int64_t v, int64_t m, ArrayAttr table,
                                      CompressionEdges &edges) {
  edges.pp = pp;
  edges.v = v;
  edges.m = m;
  for (auto grid : module.getOps<GridOp>())
    if (grid.getAxisIndex("pp") && grid.getAxisIndex("dp"))
      edges.dp = grid.getAxisSize("dp");
  const int64_t chunks = pp * v;
  edges.forwardTypes.assign(chunks, RankedTensorType());
  edges.backwardTypes.assign(chunks, RankedTensorType());
  edges.gradients.resize(pp);
  for (int64_t s = 0; s < pp; ++s) {
    auto row = dyn_cast<ArrayAttr>(table[s]);
    if (!row) {
      error("ptrain.schedule: row ") << s << " of table is not an array";
      return failure();
    }
    edges.steps.emplace_back();
    for (Attribute stepAttr : row) {
      auto text = dyn_cast<StringAttr>(stepAttr);
      std::optional<ScheduleStep> step = text ? ScheduleStep::parse(text.getValue()) : std::nullopt;
      if (!step || (step->kind != ScheduleStep::Optimizer &&
                    (step->microBatch < 0 || step->microBatch >= m || step->chunk < 0 || step->chunk >= v))) {
        error("ptrain.schedule: stage ") << s << ": malformed step " << stepAttr;
        return failure();
      }
      edges.steps.back().push_back(text.getValue().str());
    }
    if (edges.dp < 2)
      continue;
    if (auto opt = module.lookupSymbol<func::FuncOp>("stage" + std::to_string(s) + "_optimizer_step"))
      for (StateReadOp read : dataParallelGradientReads(opt))
        if (auto state = module.lookupSymbol<StateOp>(read.getState()))
          edges.gradients[s].push_back({state.getKey().str(), state.getTensorType()});
  }
  // The send types per virtual stage (the stage without virtual stages).
  for (int64_t c = 0; c < chunks; ++c) {
    auto forward = module.lookupSymbol<func::FuncOp>("forward_stage" + std::to_string(c));
    if (!forward || forward.getNumArguments() != 1 || forward.getNumResults() != 1) {
      error("@forward_stage") << c << " must take one argument and return one result";
      return failure();
    }
    auto staticType = [](Type t) {
      auto type = dyn_cast<RankedTensorType>(t);
      return type && type.hasStaticShape() ? type : RankedTensorType();
    };
    if (c > 0 && !(edges.backwardTypes[c] = staticType(forward.getArgumentTypes()[0]))) {
      error("@forward_stage") << c << " must take one statically shaped activation";
      return failure();
    }
    if (c + 1 < chunks && !(edges.forwardTypes[c] = staticType(forward.getResultTypes()[0]))) {
      error("@forward_stage") << c << " must return one statically shaped activation";
      return failure();
    }
  }
  return success();
}

/// FE needs a tied parameter, whose sync is an all-reduce over [pp] in an optimizer step, and data parallelism
/// (to fuse with) or stages that do not hold it (pp > 2: the sync then runs over the holders only).
static bool canFuseEmbeddingSync(ModuleOp module, const CompressionEdges &edges) {
  bool tiedSync = false;
  module.walk([&](AllReduceStartOp op) {
    auto fn = op->getParentOfType<func::FuncOp>();
    tiedSync |= fn && fn.getSymName().ends_with("_optimizer_step") && !op->hasAttr(kGlobalNormAttr) &&
                llvm::equal(op.getGridAxes().getAsValueRange<StringAttr>(), ArrayRef<StringRef>{"pp"});
  });
  return (edges.dp > 1 || edges.pp > 2) && tiedSync;
}

LogicalResult CompressPass::optimusCC(ModuleOp module, const CompressionEdges &edges, ArrayAttr sendCritical,
                                      ScheduleAttr schedule, const OptimusCCRule &rule, CompressionPlan &plan) {
  const int64_t pp = edges.pp, m = edges.m;
  const std::string &cbSends = rule.cbSends;
  if (rule.cbRank < 1 || rule.scRank < 1) {
    error("cb-rank and sc-rank must be >= 1, got cb-rank = ") << rule.cbRank << ", sc-rank = " << rule.scRank;
    return failure();
  }
  if (cbSends != "cooldown" && cbSends != "critical" && cbSends != "all") {
    error("unknown cb-sends '") << cbSends << "' (known: cooldown, critical, all)";
    return failure();
  }
  plan.backwardErrorFeedback = rule.lep;
  const int64_t v = edges.v;
  if (rule.cb && pp > 1) {
    plan.backwardCodec = PowerSGDAttr::get(module.getContext(), rule.cbRank, BoolAttr(), MatrixViewAttr());
    // Rank too large: an error, not a clamp, since the user asked for this rank on this link.
    for (int64_t c = 1; c < pp * v; ++c)
      if (failed(plan.backwardCodec.verifyForType([&] { return error("cb-rank: "); }, edges.backwardTypes[c])))
        return failure();
    for (int64_t s = 0; s < pp; ++s) {
      auto flags = dyn_cast<ArrayAttr>(sendCritical[s]);
      if (!flags || flags.size() != edges.steps[s].size()) {
        error("ptrain.schedule: row ") << s << " of table and send_critical differ in length";
        return failure();
      }
      // Interleaved: the rank's cool-down read off its row, the backward steps from its last forward on (the
      // last steady-state backward and every cool-down backward, Optimus-CC section 4.1; docs/Compression.md
      // "Interleaved schedules"). Without virtual stages that is the last min(P - s, M) micro-batches.
      int64_t lastForward = 0;
      for (auto [n, text] : llvm::enumerate(edges.steps[s]))
        if (ScheduleStep step = *ScheduleStep::parse(text);
            step.kind == ScheduleStep::Forward || step.kind == ScheduleStep::ForwardBackward)
          lastForward = n;
      for (auto [n, text, flagAttr] : llvm::enumerate(edges.steps[s], flags)) {
        ScheduleStep step = *ScheduleStep::parse(text);
        const int64_t c = step.chunk * pp + s;
        if ((step.kind != ScheduleStep::Backward && step.kind != ScheduleStep::ForwardBackward) || c == 0)
          continue;
        bool critical = isa<BoolAttr>(flagAttr) && cast<BoolAttr>(flagAttr).getValue();
        bool cooldown = v > 1 ? static_cast<int64_t>(n) >= lastForward : step.microBatch >= m - std::min(pp - s, m);
        if (cbSends == "all" || (cbSends == "critical" && critical) || (cbSends == "cooldown" && cooldown))
          plan.backwardSend(c, step.microBatch) = plan.backwardCodec;
      }
    }
  }
  plan.scRank = rule.scRank;
  if (rule.sc) {
    ArrayAttr dpCritical = schedule.getDpAllReduceCritical();
    for (int64_t s = 0; s < pp && dpCritical; ++s) {
      auto flag = s < static_cast<int64_t>(dpCritical.size()) ? dyn_cast<BoolAttr>(dpCritical[s]) : BoolAttr();
      plan.dpAllReduce[s] = rule.scAll || (flag && flag.getValue());
    }
  }
  plan.fusedEmbedding = rule.fe && canFuseEmbeddingSync(module, edges);
  return success();
}

LogicalResult CompressPass::mcbench(const CompressionEdges &edges, CompressionPlan &plan) {
  if (skipStages < 0) {
    error("skip-stages must be >= 0, got ") << skipStages.getValue();
    return failure();
  }
  if (skipStages > 0 && skipStages >= edges.pp * edges.v - 1) {
    // Skipping every boundary compresses nothing: a mistake, not a plan (`policy=none` says that).
    error("skip-stages=") << skipStages.getValue() << " leaves no pipeline boundary to compress: the plan has "
                          << edges.pp * edges.v << (edges.v > 1 ? " virtual stages" : " stages")
                          << ", so skip-stages must be below " << edges.pp * edges.v - 1;
    return failure();
  }
  MLIRContext *context = &getContext();
  auto parse = [&](StringRef option, StringRef spec) {
    return parseCodecSpec(context, spec, option, [&] { return error(""); });
  };
  FailureOr<CodecAttrInterface> fwd = parse("fwd-codec", fwdCodec), bwd = parse("bwd-codec", bwdCodec),
                                dp = parse("dp-codec", dpCodec);
  if (failed(fwd) || failed(bwd) || failed(dp))
    return failure();
  // dp-codec: every dp gradient reduction, through the record's per-gradient dp_codecs.
  if (*dp && edges.dp < 2) {
    error("dp-codec=") << dpCodec.getValue() << " compresses the data-parallel gradient reductions, but dp = "
                       << edges.dp;
    return failure();
  }
  if (*dp)
    for (const auto &stageGrads : edges.gradients)
      for (const auto &[key, type] : stageGrads) {
        if (failed(checkCodecForEdge(*dp, type, "the dp reduction of '" + key + "' (dp-codec)",
                                     [&] { return error(""); })))
          return failure();
        plan.dpCodecs[key] = *dp;
      }
  plan.forwardCodec = *fwd;
  plan.backwardCodec = *bwd;
  plan.forwardErrorFeedback = plan.backwardErrorFeedback = errorFeedback;
  plan.skipStages = skipStages;
  const int64_t chunks = edges.pp * edges.v;
  const char *stageWord = edges.v > 1 ? "virtual stage " : "stage ";
  for (int64_t s = 0; s < chunks; ++s) {
    // The boundary after (virtual) stage b carries F sends of b and B sends of b + 1; the first `skip-stages`
    // boundaries stay uncompressed.
    bool forward = *fwd && s + 1 < chunks && s >= skipStages;
    bool backward = *bwd && s > 0 && s - 1 >= skipStages;
    if (forward && failed(checkCodecForEdge(*fwd, edges.forwardTypes[s],
                                            "the forward sends of " + Twine(stageWord) + Twine(s) + " (fwd-codec)",
                                            [&] { return error(""); })))
      return failure();
    if (backward && failed(checkCodecForEdge(*bwd, edges.backwardTypes[s],
                                             "the backward sends of " + Twine(stageWord) + Twine(s) + " (bwd-codec)",
                                             [&] { return error(""); })))
      return failure();
    for (int64_t i = 0; i < edges.m; ++i) {
      if (forward)
        plan.forwardSend(s, i) = *fwd;
      if (backward)
        plan.backwardSend(s, i) = *bwd;
    }
  }
  return success();
}

/// Writes auto's explanation (autoSummaryToJSON) to `path` through llvm::writeToOutput (a temporary file
/// renamed into place), so that a failed write leaves no partial file.
static LogicalResult writeAutoReport(ModuleOp module, StringRef path, const AutoSummary &summary,
                                     ArrayRef<AutoDecision> decisions) {
  llvm::Error written = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
    os << llvm::formatv("{0:2}", autoSummaryToJSON(summary, decisions)) << "\n";
    return llvm::Error::success();
  });
  if (written)
    return emitError(module.getLoc()) << "--ptrain-compress: auto-report: cannot write '" << path
                                      << "': " << llvm::toString(std::move(written));
  return success();
}

LogicalResult CompressPass::autoSearch(ModuleOp module, const CompressionEdges &edges, ArrayAttr sendCritical,
                                       ScheduleAttr schedule, CompressionPlan &plan) {
  AutoSearchOptions options;
  options.ranks.assign(autoRanks.begin(), autoRanks.end());
  if (options.ranks.empty())
    options.ranks.assign(getDefaultPowerSGDRanks().begin(), getDefaultPowerSGDRanks().end());
  for (int64_t r : options.ranks)
    if (r < 1)
      return error("auto-ranks must be >= 1, got ") << r, failure();
  if (!(autoMinGain >= 0))
    return error("auto-min-gain must be >= 0, got ") << autoMinGain.getValue(), failure();
  if (!(autoErrorBudget > 0 && autoErrorBudget <= 1))
    return error("auto-error-budget must be in (0, 1], got ") << autoErrorBudget.getValue(), failure();
  if (autoMaxPicks < 1)
    return error("auto-max-picks must be >= 1, got ") << autoMaxPicks.getValue(), failure();
  if (!(autoQualityBudget >= 0))
    return error("auto-quality-budget must be >= 0 (inf: no limit), got ") << autoQualityBudget.getValue(), failure();
  options.qualityBudget = autoQualityBudget;
  // auto-codec-errors: read and checked against this model and pipeline before the search.
  std::optional<MeasuredCodecErrors> measured;
  if (!autoCodecErrors.empty()) {
    auto read = readCodecErrors(module.getContext(), autoCodecErrors);
    if (!read)
      return error("auto-codec-errors: ") << llvm::toString(read.takeError()), failure();
    if (llvm::Error mismatch = checkCodecErrorsForPlan(*read, module, edges))
      return error("auto-codec-errors: ") << llvm::toString(std::move(mismatch)), failure();
    measured = std::move(*read);
    options.measuredErrors = &*measured;
  }
  options.minGain = autoMinGain;
  options.errorBudget = autoErrorBudget;
  options.maxPicks = autoMaxPicks;
  // The backward, forward and TP candidates: codec specs separated by ';' (a spec's own parameters use ','),
  // 'default' (the candidate table, AutoCandidates.h) or 'none'.
  auto parseCandidates = [&](StringRef option, StringRef text, StringRef what,
                             std::vector<CodecAttrInterface> &out) -> LogicalResult {
    std::string table;
    if (text.trim() == "none")
      return success();
    if (text.trim() == "default") {
      table = getDefaultCandidateSpecs(what == "backward" ? CandidateSite::BackwardSend
                                       : what == "forward" ? CandidateSite::ForwardSend
                                       : what == "dp"      ? CandidateSite::DataParallel
                                                           : CandidateSite::TensorParallel);
      text = table;
    }
    SmallVector<StringRef> specs;
    text.split(specs, ';', -1, /*KeepEmpty=*/false);
    for (StringRef spec : specs) {
      FailureOr<CodecAttrInterface> codec = parseCodecSpec(&getContext(), spec, option, [&] { return error(""); });
      if (failed(codec))
        return failure();
      if (!*codec)
        return error(option) << ": 'none' inside a list is not a codec (" << option << "=none alone: no " << what
                             << " candidates)",
               failure();
      if (isa<PowerSGDAttr>(*codec) && (what == "backward" || what == "dp"))
        return error(option) << ": PowerSGD's ranks are auto-ranks", failure();
      if (isa<LinearAEAttr>(*codec) && what == "dp")
        return error(option) << ": the linear autoencoder has no compressed all-reduce (it is a pipeline-boundary "
                                "layer: --ptrain-insert-linear-ae)",
               failure();
      if (isa<LinearAEAttr>(*codec) && what == "tp")
        return error(option) << ": the linear autoencoder needs trainable parameters, which --ptrain-compress "
                                "does not add on tensor-parallel all-reduces",
               failure();
      out.push_back(*codec);
    }
    return success();
  };
  bool tpSitesInModule = !uniqueTensorParallelSites(module).empty();
  // ZeRO-1 (a reduce-scatter over [dp]: docs/DistributedOptimizer.md): the dp codecs the search may try are
  // PowerSGD's (each gradient all-reduced compressed alone); the other dp codecs would give a bucket gradients
  // with and without a codec, which its flat reduce-scatter cannot run.
  bool zero = false;
  module.walk([&](ReduceScatterStartOp) { zero = true; });
  if (zero && autoDpCodecs != "default" && autoDpCodecs != "none")
    return error("auto-dp-codecs=" + autoDpCodecs.getValue() +
                 ": under ZeRO-1 auto searches PowerSGD only on the "
                 "data-parallel gradients (give auto-dp-codecs=none, or quantize the buckets with policy=mcbench "
                 "dp-codec=quant:...,granularity=block)"),
           failure();
  if (failed(parseCandidates("auto-backward-codecs", autoBackwardCodecs, "backward", options.backwardCodecs)) ||
      failed(parseCandidates("auto-forward-codecs", autoForwardCodecs, "forward", options.forwardCodecs)) ||
      failed(parseCandidates("auto-tp-codecs", tpSitesInModule || autoTpCodecs != "default" ? StringRef(autoTpCodecs.getValue()) : StringRef("none"),
                             "tp", options.tpCodecs)) ||
      failed(parseCandidates("auto-dp-codecs",
                             (edges.dp > 1 && !zero) || autoDpCodecs != "default"
                                 ? StringRef(autoDpCodecs.getValue())
                                 : StringRef("none"),
                             "dp", options.dpCodecs)))
    return failure();
  if (!options.tpCodecs.empty() && !tpSitesInModule)
    return error("auto-tp-codecs: the module has no tensor-parallel all-reduce of a row-parallel linear or of f's "
                 "gradient (run --ptrain-raise and --ptrain-shard-tp with tp > 1 before --ptrain-split-stages)"),
           failure();
  options.tpErrorFeedback = tpErrorFeedback;
  options.fusedEmbedding = canFuseEmbeddingSync(module, edges);
  // The seeds: the Optimus-CC rule (CB on the cool-down sends and SC on the critical stages), and the same
  // with CB on the critical sends and on every backward send, each with FE where it applies.
  std::vector<AutoSeed> seeds;
  int64_t smallest = OptimusCCRule().cbRank;
  for (int64_t c = 1; c < edges.pp * edges.v; ++c)
    if (auto nm = MatrixViewAttr::getMatrixShape(MatrixViewAttr(), edges.backwardTypes[c], nullptr); succeeded(nm))
      smallest = std::min({smallest, nm->first, nm->second});
  for (const char *sends : {"cooldown", "critical", "all"}) {
    OptimusCCRule rule;
    rule.cbSends = sends;
    rule.cbRank = smallest; // the rule's 16, clamped so that every link can take it (the search clamps per link)
    AutoSeed seed;
    seed.name = std::string("optimus-cc") + (rule.cbSends == "cooldown" ? "" : " cb-sends=" + rule.cbSends);
    seed.plan = plan;
    if (failed(optimusCC(module, edges, sendCritical, schedule, rule, seed.plan)))
      return failure();
    seeds.push_back(std::move(seed));
  }
  // The mcbench seed: bench/cluster's hand policy (every forward send 8-bit quantized, every backward send
  // top-k 10%, no error feedback; with pp = 2 no boundary skipped), where the candidates include its codecs.
  {
    MLIRContext *context = &getContext();
    auto quant = parseCodecSpec(context, "quant:bits=8", "mcbench seed", [&] { return error(""); });
    auto topk = parseCodecSpec(context, "topk:ratio=0.1", "mcbench seed", [&] { return error(""); });
    if (failed(quant) || failed(topk))
      return failure();
    AutoSeed seed;
    seed.name = "mcbench fwd-codec=quant:bits=8 bwd-codec=topk:ratio=0.1";
    seed.plan = plan;
    seed.plan.backwardErrorFeedback = seed.plan.forwardErrorFeedback = false;
    for (int64_t c = 0; c < edges.pp * edges.v; ++c)
      for (int64_t i = 0; i < edges.m; ++i) {
        if (c + 1 < edges.pp * edges.v && edges.forwardTypes[c] &&
            succeeded((*quant).verifyForType([] { return InFlightDiagnostic(); }, edges.forwardTypes[c])))
          seed.plan.forwardSend(c, i) = *quant;
        if (c > 0 && edges.backwardTypes[c] &&
            succeeded((*topk).verifyForType([] { return InFlightDiagnostic(); }, edges.backwardTypes[c])))
          seed.plan.backwardSend(c, i) = *topk;
      }
    seeds.push_back(std::move(seed));
  }
  std::vector<AutoDecision> decisions;
  AutoSummary summary;
  summary.codecErrorsFile = autoCodecErrors;
  if (failed(searchAutoCompression(module, edges, options, seeds, plan, autoTensorParallel, decisions, summary,
                                   [&] { return error(""); })))
    return failure();
  auto ms = [](double seconds) {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%.3f", seconds * 1e3) << " ms";
    return text;
  };
  auto percent = [](double fraction) {
    if (std::isinf(fraction))
      return std::string("ruled out by the literature (QualityModel.h)");
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%.3f", fraction * 100) << "%";
    return text;
  };
  {
    InFlightDiagnostic remark = emitRemark(module.getLoc());
    remark << "--ptrain-compress policy=auto: seeds";
    for (auto [n, seed] : llvm::enumerate(summary.seeds)) {
      remark << (n ? ", " : " ") << seed.first << " "
             << (seed.second < 0 ? std::string("(not expressible with the candidates)") : ms(seed.second));
      if (seed.second >= 0 && n > 0)
        remark << " quality " << percent(summary.seedQualityCosts[n])
               << (summary.seedQualityCosts[n] > summary.qualityBudget ? " (over the budget)" : "");
    }
    remark << "; starting from " << summary.seeds[summary.start].first;
  }
  for (auto [n, d] : llvm::enumerate(decisions))
    emitRemark(module.getLoc()) << "--ptrain-compress policy=auto: move " << n + 1 << ": " << d.edge << " -> "
                                << d.codec << ", saves " << ms(d.savedSeconds) << " (iteration "
                                << ms(d.iterationSeconds) << "), quality cost " << (d.qualityCost < 0 ? "" : "+")
                                << percent(d.qualityCost) << " (plan " << percent(d.totalQualityCost) << "; "
                                << (d.errorSource == "none" ? std::string("no codec error")
                                                            : d.errorSource + " error") << ")";
  for (const std::string &site : summary.tensorParallelSites)
    emitRemark(module.getLoc()) << "--ptrain-compress policy=auto: " << site;
  // The comparison with the paper's rule (the first seed after none).
  double rule = summary.seeds.size() > 1 ? summary.seeds[1].second : -1;
  emitRemark(module.getLoc()) << "--ptrain-compress policy=auto: " << decisions.size() << " moves, modelled iteration "
                              << ms(summary.uncompressedSeconds) << " uncompressed, " << ms(summary.finalSeconds)
                              << " with auto ("
                              << llvm::formatv("{0:F4}", summary.uncompressedSeconds / summary.finalSeconds).str()
                              << "x), " << summary.seeds[1].first << " "
                              << (rule < 0
                                      ? std::string("not expressible")
                                      : ms(rule) + " (" +
                                            llvm::formatv("{0:F4}", summary.uncompressedSeconds / rule).str() + "x)")
                              << "; predicted quality cost " << percent(summary.finalQualityCost) << " (budget "
                              << (std::isinf(summary.qualityBudget) ? std::string("none")
                                                                    : percent(summary.qualityBudget))
                              << ")";
  numAutoPicks += decisions.size();
  if (!autoReport.empty() && failed(writeAutoReport(module, autoReport, summary, decisions)))
    return failure();
  return success();
}

void CompressPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (policy != "optimus-cc" && policy != "mcbench" && policy != "none" && policy != "auto") {
    error("unknown policy '") << policy.getValue() << "' (known: optimus-cc, mcbench, none, auto)";
    return signalPassFailure();
  }
  if (getCompression(module)) {
    error("the module already has ptrain.compression (compressed twice?)");
    return signalPassFailure();
  }
  PipelineAttr pipeline = getPipeline(module);
  ScheduleAttr schedule = getSchedule(module);
  if (!pipeline || !schedule) {
    error("no ptrain.pipeline or ptrain.schedule attribute; run --ptrain-split-stages, "
          "--ptrain-build-training-step and --ptrain-schedule first");
    return signalPassFailure();
  }
  if (!pipeline.getMicroBatches()) {
    error("ptrain.pipeline has no training step (micro_batches); run --ptrain-build-training-step first");
    return signalPassFailure();
  }
  // One table row per rank, the pipeline's virtual stages (#ptrain.schedule C8); send_critical has the table's
  // shape (C4).
  const int64_t pp = pipeline.getPp(), m = *pipeline.getMicroBatches(), v = pipeline.getVirtualStages();
  ArrayAttr table = schedule.getTable();
  ArrayAttr sendCritical = schedule.getSendCritical();
  if (!sendCritical) {
    error("ptrain.schedule has no critical-path information; run --ptrain-critical-path first");
    return signalPassFailure();
  }
  // Options of one policy given to another would be ignored silently: an error instead.
  bool mcbenchOptions = fwdCodec != "none" || bwdCodec != "none" || dpCodec != "none" || skipStages != 0 ||
                        errorFeedback ||
                        tpFwdCodec != "none" || tpBwdCodec != "none" || tpSkipLayers != 0;
  bool optimusOptions = !cb || cbSends != "cooldown" || cbRank != 16 || !lep || !fe || !sc || scAll || scRank != 128;
  bool autoOptions = !autoRanks.empty() || autoMinGain != 0.001 || autoErrorBudget != 1.0 || autoMaxPicks != 256 ||
                     autoBackwardCodecs != "default" || autoForwardCodecs != "default" || autoTpCodecs != "default" ||
                     autoDpCodecs != "default" ||
                     autoQualityBudget != 0.02 || !autoReport.empty() || !autoCodecErrors.empty();
  if (policy != "auto" && autoOptions) {
    error("policy=") << policy.getValue()
                     << " does not take auto-ranks, auto-min-gain, auto-error-budget, auto-max-picks, "
                        "auto-backward-codecs, auto-forward-codecs, auto-tp-codecs, auto-dp-codecs, "
                        "auto-quality-budget, auto-report or auto-codec-errors "
                        "(policy=auto)";
    return signalPassFailure();
  }
  if (policy != "mcbench" && policy != "auto" && !tpErrorFeedback) {
    error("policy=") << policy.getValue() << " does not take tp-error-feedback (policy=mcbench or auto)";
    return signalPassFailure();
  }
  if ((policy != "mcbench" && mcbenchOptions) || (policy != "optimus-cc" && optimusOptions)) {
    error("policy=") << policy.getValue() << " does not take "
                     << (policy != "mcbench" && mcbenchOptions
                             ? "fwd-codec, bwd-codec, dp-codec, skip-stages, error-feedback, tp-fwd-codec, tp-bwd-codec or "
                               "tp-skip-layers (policy=mcbench)"
                             : "cb, cb-sends, cb-rank, lep, fe, sc, sc-all or sc-rank (policy=optimus-cc)");
    return signalPassFailure();
  }
  CompressionEdges edges;
  if (failed(readEdges(module, pp, v, m, table, edges)))
    return signalPassFailure();

  CompressionPlan plan;
  plan.policy = policy.getValue();
  plan.scRank = scRank.getValue();
  plan.scErrorFeedback = scErrorFeedback;
  plan.virtualStages = v;
  plan.backwardSends.assign(pp, std::vector<CodecAttrInterface>(v * m));
  plan.forwardSends.assign(pp, std::vector<CodecAttrInterface>(v * m));
  plan.dpAllReduce.assign(pp, false);
  OptimusCCRule rule;
  rule.cb = cb;
  rule.lep = lep;
  rule.fe = fe;
  rule.sc = sc;
  rule.scAll = scAll;
  rule.cbSends = cbSends.getValue();
  rule.cbRank = cbRank.getValue();
  rule.scRank = scRank.getValue();
  if (policy == "optimus-cc" && failed(optimusCC(module, edges, sendCritical, schedule, rule, plan)))
    return signalPassFailure();
  if (policy == "mcbench" && failed(mcbench(edges, plan)))
    return signalPassFailure();
  if (policy == "none")
    plan.backwardErrorFeedback = false;
  if (policy == "auto" && failed(autoSearch(module, edges, sendCritical, schedule, plan)))
    return signalPassFailure();
  if (!overrides.empty()) {
    int64_t count = 0;
    if (failed(applyCompressionOverrides(
            overrides, edges, plan, &getContext(), [&] { return error(""); }, count)))
      return signalPassFailure();
    numOverridden += count;
  }
  for (const auto *rows : {&plan.backwardSends, &plan.forwardSends})
    for (const std::vector<CodecAttrInterface> &row : *rows)
      numCompressedSends += llvm::count_if(row, [](CodecAttrInterface c) { return bool(c); });
  numCompressedStages += llvm::count(plan.dpAllReduce, true);
  // A policy that finds nothing to compress on this plan (optimus-cc on a tensor-parallel-only grid, mcbench
  // without codecs for its edges) compiled an uncompressed step without a word.
  // (Counted here: pass statistics are not collected in a build without LLVM statistics.)
  bool tpSites = (policy == "mcbench" && (tpFwdCodec != "none" || tpBwdCodec != "none")) ||
                 (policy == "auto" && !autoTensorParallel.empty());
  bool anySend = false;
  for (const auto *rows : {&plan.backwardSends, &plan.forwardSends})
    for (const std::vector<CodecAttrInterface> &row : *rows)
      anySend |= llvm::any_of(row, [](CodecAttrInterface c) { return bool(c); });
  bool mcbenchWithoutCodecs = policy == "mcbench" && fwdCodec == "none" && bwdCodec == "none" && dpCodec == "none" &&
                              tpFwdCodec == "none" && tpBwdCodec == "none";
  if (policy != "none" && policy != "auto" && !anySend && !llvm::is_contained(plan.dpAllReduce, true) &&
      !plan.fusedEmbedding && plan.dpCodecs.empty() && !tpSites) {
    if (mcbenchWithoutCodecs)
      emitWarning(module.getLoc())
          << "--ptrain-compress: policy=mcbench compresses nothing: its codecs fwd-codec, bwd-codec, tp-fwd-codec "
             "and tp-bwd-codec are all 'none' (the default); name one, e.g. fwd-codec=quant:bits=8 "
             "bwd-codec=topk:ratio=0.1 (ptrain-compile --compress-options)";
    else
      emitWarning(module.getLoc()) << "--ptrain-compress: policy=" << policy.getValue()
                                   << " compresses nothing on this plan (no pipeline send, data-parallel all-reduce "
                                      "or tensor-parallel site it applies to)";
  }
  CompressionAttr record = plan.toAttr(&getContext());
  if (policy == "mcbench" && (tpFwdCodec != "none" || tpBwdCodec != "none")) {
    FailureOr<ArrayAttr> tp = tensorParallelSites(module);
    if (failed(tp))
      return signalPassFailure();
    record = record.withTensorParallel(*tp, tpSkipLayers);
  }
  if (policy == "auto" && !autoTensorParallel.empty()) {
    record = record.withTensorParallel(tensorParallelRecord(&getContext(), autoTensorParallel), 0);
    numCompressedTPSites += autoTensorParallel.size();
  }
  setCompression(module, record);
}

FailureOr<ArrayAttr> CompressPass::tensorParallelSites(ModuleOp module) {
  if (tpSkipLayers < 0)
    return error("tp-skip-layers must be >= 0, got ") << tpSkipLayers.getValue(), failure();
  auto parse = [&](StringRef option, StringRef spec) {
    return parseCodecSpec(&getContext(), spec, option, [&] { return error(""); });
  };
  FailureOr<CodecAttrInterface> fwd = parse("tp-fwd-codec", tpFwdCodec), bwd = parse("tp-bwd-codec", tpBwdCodec);
  if (failed(fwd) || failed(bwd))
    return failure();
  FailureOr<std::vector<TensorParallelCodec>> codecs =
      planTensorParallelCompression(module, *fwd, *bwd, tpSkipLayers, tpErrorFeedback, [&] { return error(""); });
  if (failed(codecs))
    return failure();
  numCompressedTPSites += codecs->size();
  return tensorParallelRecord(&getContext(), *codecs);
}
