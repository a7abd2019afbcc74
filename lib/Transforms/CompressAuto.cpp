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

#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::ptrain;

double mlir::ptrain::estimatePowerSGDError(int64_t n, int64_t m, int64_t r) {
  int64_t k = std::min(n, m);
  return r >= k ? 0.0 : std::sqrt(1.0 - static_cast<double>(r) / static_cast<double>(k));
}

namespace {
/// One codec a backward send can take, with its modelled cost.
struct SendOption {
  int64_t rank = 0;
  CodecAttrInterface codec;
  CompressedTransfer transfer;
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
                                                  CompressionPlan &plan, std::vector<AutoDecision> &decisions,
                                                  AutoSummary &summary,
                                                  llvm::function_ref<InFlightDiagnostic()> emitError) {
  const int64_t pp = edges.pp, m = edges.m;
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
  if (base->virtualStages != 1) {
    emitError() << "policy=auto: virtual stages are not modelled with compression";
    return failure();
  }

  // Probe models: per rank, every edge within the error budget compressed at that rank (clamped to
  // min(n, m); a clamp that repeats a smaller option's rank is dropped).
  MLIRContext *context = module.getContext();
  std::vector<int64_t> ranks = options.ranks;
  llvm::sort(ranks);
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::vector<std::vector<std::vector<SendOption>>> sendOptions(pp, std::vector<std::vector<SendOption>>(m));
  std::vector<std::map<int64_t, CompressedAllReduce>> dpOptions(pp);
  for (int64_t r : ranks) {
    CompressionPlan probe;
    probe.policy = "auto";
    probe.backwardSends.assign(pp, std::vector<CodecAttrInterface>(m));
    probe.forwardSends.assign(pp, std::vector<CodecAttrInterface>(m));
    probe.dpAllReduce.assign(pp, false);
    probe.scRank = r;
    std::vector<int64_t> stageRank(pp, 0);
    bool any = false;
    for (int64_t s = 1; s < pp; ++s) {
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
        probe.backwardSends[s][i] = codec;
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
    module->setAttr("ptrain.compression", probe.toAttr(context));
    auto model = buildModuleTimingModel(module, *cluster, /*applyCompression=*/true);
    module->removeAttr("ptrain.compression");
    if (!model)
      return modelError(model.takeError());
    for (int64_t s = 1; s < pp; ++s)
      for (int64_t i = 0; i < m && stageRank[s]; ++i)
        if (auto it = model->costs.stages[s].compressedBackward.find(i);
            it != model->costs.stages[s].compressedBackward.end())
          sendOptions[s][i].push_back({stageRank[s], probe.backwardSends[s][i], it->second});
    for (int64_t s = 0; s < pp; ++s)
      if (probe.dpAllReduce[s] && model->costs.ranks[s].compressedDataParallel)
        dpOptions[s][r] = *model->costs.ranks[s].compressedDataParallel;
  }

  // The search state: per (stage, micro-batch) the rank of the backward send's option and per stage the
  // requested rank of its dp all-reduce; 0 = uncompressed. The record has one sc_rank, so every compressed
  // dp all-reduce has the same requested rank.
  struct State {
    std::vector<std::vector<int64_t>> send;
    std::vector<int64_t> dp;
    bool operator==(const State &o) const { return send == o.send && dp == o.dp; }
  };
  auto findSend = [&](int64_t s, int64_t i, int64_t rank) -> const SendOption * {
    for (const SendOption &option : sendOptions[s][i])
      if (option.rank == rank)
        return &option;
    return nullptr;
  };
  auto costsOf = [&](const State &state) {
    PipelineCosts costs = base->costs;
    for (int64_t s = 1; s < pp; ++s)
      for (int64_t i = 0; i < m; ++i)
        if (state.send[s][i])
          costs.stages[s].compressedBackward[i] = findSend(s, i, state.send[s][i])->transfer;
    for (int64_t s = 0; s < pp; ++s)
      if (state.dp[s])
        costs.ranks[s].compressedDataParallel = dpOptions[s].at(state.dp[s]);
    return costs;
  };
  auto timeOf = [&](const State &state) { return iterationSeconds(costsOf(state)); };
  // The option of a requested rank on a send: the largest option rank <= it (its clamp to min(n, m)), else
  // the smallest option (the requested rank is beyond the error budget); 0 when the send has no option.
  auto sendRankFor = [&](int64_t s, int64_t i, int64_t requested) -> int64_t {
    int64_t rank = 0;
    for (const SendOption &option : sendOptions[s][i])
      if (option.rank <= requested)
        rank = option.rank;
    return rank ? rank : (sendOptions[s][i].empty() ? 0 : sendOptions[s][i].front().rank);
  };
  // The candidate rank nearest `rank` (ties: the smaller), for mapping a seed's ranks.
  auto nearestRank = [&](int64_t rank) {
    int64_t best = ranks.front();
    for (int64_t r : ranks)
      if (std::llabs(r - rank) < std::llabs(best - rank))
        best = r;
    return best;
  };

  const State empty{std::vector<std::vector<int64_t>>(pp, std::vector<int64_t>(m, 0)), std::vector<int64_t>(pp, 0)};
  State current = empty;
  auto now = timeOf(current);
  if (!now)
    return modelError(now.takeError());
  summary.uncompressedSeconds = *now;
  summary.seeds.push_back({"none", *now});
  summary.start = 0;
  for (const AutoSeed &seed : seeds) {
    State state = empty;
    bool expressible = true;
    for (int64_t s = 1; s < pp && s < static_cast<int64_t>(seed.plan.backwardSends.size()); ++s)
      for (int64_t i = 0; i < m; ++i)
        if (isa_and_nonnull<PowerSGDAttr>(seed.plan.backwardSends[s][i])) {
          // The rule's rank at the nearest candidate, clamped to min(n, m) as the probes clamp it.
          auto nm = MatrixViewAttr::getMatrixShape(MatrixViewAttr(), edges.backwardTypes[s], nullptr);
          int64_t rank = succeeded(nm) ? std::min({nearestRank(seed.cbRank), nm->first, nm->second}) : 0;
          state.send[s][i] = findSend(s, i, rank) ? rank : 0;
          expressible &= state.send[s][i] != 0;
        } else if (seed.plan.backwardSends[s][i]) {
          expressible = false;
        }
    for (int64_t s = 0; s < pp && s < static_cast<int64_t>(seed.plan.dpAllReduce.size()); ++s)
      if (seed.plan.dpAllReduce[s]) {
        state.dp[s] = nearestRank(seed.plan.scRank);
        expressible &= dpOptions[s].count(state.dp[s]) != 0;
      }
    // A seed whose ranks are not candidates runs at the nearest ones: the name says so.
    std::string name = seed.name;
    for (auto [what, rank] : {std::pair<const char *, int64_t>{"CB", seed.cbRank}, {"SC", seed.plan.scRank}})
      if (nearestRank(rank) != rank)
        name += std::string(" (") + what + " at rank " + std::to_string(nearestRank(rank)) + ")";
    if (!expressible) {
      summary.seeds.push_back({name, -1});
      continue;
    }
    auto t = timeOf(state);
    if (!t)
      return modelError(t.takeError());
    summary.seeds.push_back({name, *t});
    if (*t < *now) {
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
    return rank ? findSend(s, i, rank)->transfer.codec : "none";
  };
  auto moves = [&](const State &from) {
    std::vector<Move> out;
    // The codec state (PowerSGD's warm-start Q) is keyed by the link, so the compressed sends of a link
    // share one rank: a move that would mix ranks on a link is not a candidate.
    auto oneRankPerLink = [&](const State &state) {
      for (int64_t s = 1; s < pp; ++s) {
        int64_t rank = 0;
        for (int64_t r : state.send[s])
          if (r && rank && r != rank)
            return false;
          else
            rank = r ? r : rank;
      }
      return true;
    };
    auto add = [&](State state, std::string edge, std::string codec) {
      if (!(state == from) && oneRankPerLink(state))
        out.push_back({std::move(state), std::move(edge), std::move(codec)});
    };
    std::vector<int64_t> requested(ranks.rbegin(), ranks.rend());
    requested.push_back(0);
    int64_t scRank = 0;
    for (int64_t r : from.dp)
      scRank = r ? r : scRank;
    int64_t compressedStages = llvm::count_if(from.dp, [](int64_t r) { return r != 0; });
    for (int64_t s = 0; s < pp; ++s)
      for (int64_t r : requested) {
        // One stage at another rank only when it is the only compressed one (one sc_rank).
        if ((r && !dpOptions[s].count(r)) || (r && scRank && r != scRank && !(compressedStages == 1 && from.dp[s])))
          continue;
        State state = from;
        state.dp[s] = r;
        add(state, "dp all-reduce stage " + std::to_string(s), r ? dpOptions[s].at(r).codec : "none");
      }
    for (int64_t r : requested) {
      State state = from;
      bool possible = true;
      for (int64_t s = 0; s < pp; ++s) {
        state.dp[s] = dpOptions[s].count(r) ? r : 0;
        possible &= !r || dpOptions[s].count(r) || dpOptions[s].empty();
      }
      if (possible && edges.dp > 1)
        add(state, "every dp all-reduce",
            r ? "#ptrain.powersgd<rank = " + std::to_string(r) + "> (clamped per gradient)" : "none");
    }
    auto stageName = [&](int64_t s, int64_t i) {
      return "backward send stage " + std::to_string(s) + " " + (s == pp - 1 ? "FB" : "B") + std::to_string(i);
    };
    for (int64_t s = 1; s < pp; ++s)
      for (int64_t i = 0; i < m; ++i) {
        for (auto it = sendOptions[s][i].rbegin(); it != sendOptions[s][i].rend(); ++it) {
          State state = from;
          state.send[s][i] = it->rank;
          add(state, stageName(s, i), it->transfer.codec);
        }
        State state = from;
        state.send[s][i] = 0;
        add(state, stageName(s, i), "none");
      }
    // Group moves: every send of a set at the requested rank (each send's clamp), or uncompressed.
    auto group = [&](std::string edge, auto member) {
      for (int64_t r : requested) {
        State state = from;
        std::string codec = r ? "" : "none";
        for (int64_t s = 1; s < pp; ++s)
          for (int64_t i = 0; i < m; ++i)
            if (member(s, i) && (!r || !sendOptions[s][i].empty())) {
              state.send[s][i] = r ? sendRankFor(s, i, r) : 0;
              if (codec.empty())
                codec = sendCodec(s, i, state.send[s][i]);
            }
        if (!codec.empty())
          add(state, edge, codec + (r && pp > 2 ? " (clamped per link)" : ""));
      }
      // The compressed sends of the set at another rank (the uncompressed ones stay so).
      for (int64_t r : requested) {
        State state = from;
        std::string codec;
        for (int64_t s = 1; s < pp && r; ++s)
          for (int64_t i = 0; i < m; ++i)
            if (member(s, i) && from.send[s][i]) {
              state.send[s][i] = sendRankFor(s, i, r);
              if (codec.empty())
                codec = sendCodec(s, i, state.send[s][i]);
            }
        if (!codec.empty())
          add(state, edge + " (the compressed ones)", codec + (pp > 2 ? " (clamped per link)" : ""));
      }
    };
    for (int64_t l = 1; l < pp; ++l)
      group("backward sends of link " + std::to_string(l) + " -> " + std::to_string(l - 1),
            [&](int64_t s, int64_t) { return s == l; });
    for (int64_t k = 0; k < m && pp > 2; ++k)
      group("backward sends of micro-batch " + std::to_string(k), [&](int64_t, int64_t i) { return i == k; });
    if (m > 1)
      group("every backward send", [](int64_t, int64_t) { return true; });
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
    current = best->state;
    decisions.push_back({best->edge, best->codec, *now - bestTime, bestTime});
    *now = bestTime;
  }
  summary.finalSeconds = *now;

  for (int64_t s = 1; s < pp; ++s)
    for (int64_t i = 0; i < m; ++i)
      if (current.send[s][i])
        plan.backwardSends[s][i] = findSend(s, i, current.send[s][i])->codec;
  int64_t scRank = 0;
  for (int64_t s = 0; s < pp; ++s) {
    plan.dpAllReduce[s] = current.dp[s] != 0;
    scRank = current.dp[s] ? current.dp[s] : scRank;
  }
  plan.scRank = scRank ? scRank : plan.scRank;
  plan.backwardErrorFeedback = true;
  return success();
}
