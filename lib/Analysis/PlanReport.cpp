//===- PlanReport.cpp - the plan report, its JSON and the Perfetto trace -*- C++ -*-===//
//
// TimingAnalysis::printReport, toJSON and toTrace (docs/TimingModel.md, "The report").
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/CriticalPathBreakdown.h"
#include "ptrain/Analysis/TimingAnalysis.h"

#include "llvm/Support/Format.h"

#include <array>

using namespace mlir;
using namespace mlir::ptrain;
namespace json = llvm::json;

namespace {
/// Bytes one GPU of a stage sends per iteration, split by link kind.
struct Traffic {
  double intra = 0, inter = 0;
  void add(double bytes, bool interNode) { (interNode ? inter : intra) += bytes; }
};

/// Bytes one member of a collective sends: the plan's figure, else a ring all-reduce's 2(n-1)/n of the data
/// with n = dp (dp all-reduces) or pp.
double sentBytes(const ModuleTimingModel &model, const PlanStep &s) {
  if (s.sentBytes >= 0)
    return s.sentBytes;
  int64_t n = s.category == PlanStep::DataParallel ? model.dp : model.pp;
  return n > 1 ? 2.0 * (n - 1) / n * s.bytes : 0;
}

std::vector<Traffic> trafficPerStage(const ModuleTimingModel &model, const Plan &plan) {
  std::vector<Traffic> traffic(model.pp);
  for (const PlanStep &s : plan.steps) {
    if (s.kind == PlanStep::Transfer) {
      traffic[s.ranks.front()].add(s.bytes, s.interNode);
    } else if (s.kind == PlanStep::Collective) {
      for (int r : s.ranks)
        traffic[r].add(sentBytes(model, s), s.interNode);
    } else if (s.kind == PlanStep::Compute) {
      const StageDetails &d = model.stages[s.stage];
      if (s.category == PlanStep::Forward)
        traffic[s.stage].add(d.tpForwardBytes, d.tpInterNode);
      else if (s.category == PlanStep::Backward || s.category == PlanStep::ForwardBackward)
        traffic[s.stage].add(d.tpBackwardBytes, d.tpInterNode);
    }
  }
  return traffic;
}

/// Bytes one GPU sends per iteration on each link of the plan (collectives at the ring's 2(n-1)/n), by a
/// readable link name, in first-use order.
std::vector<std::pair<std::string, double>> linkTraffic(const ModuleTimingModel &model, const Plan &plan) {
  std::vector<std::pair<std::string, double>> links;
  auto add = [&](std::string name, double bytes) {
    for (auto &[n, b] : links)
      if (n == name) {
        b += bytes;
        return;
      }
    links.push_back({std::move(name), bytes});
  };
  for (const PlanStep &s : plan.steps) {
    if (s.kind == PlanStep::Transfer) {
      std::string dir = std::to_string(s.ranks[0]) + "->" + std::to_string(s.ranks[1]);
      add((s.category == PlanStep::SendForward ? "activations " : "gradients ") + dir, s.bytes);
    } else if (s.kind == PlanStep::Collective) {
      bool dp = s.category == PlanStep::DataParallel;
      add(dp                             ? "dp all-reduce stage " + std::to_string(s.stage)
          : s.category == PlanStep::Loss ? "loss all-reduce"
                                         : "tied all-reduce",
          sentBytes(model, s));
    }
  }
  return links;
}

/// Sum over the rank's chunks of the forward and of the backward (or fused FB) step time.
std::pair<double, double> rankStepTimes(const ModuleTimingModel &model, int64_t s) {
  double f = 0, b = 0;
  for (int64_t k = 0; k < model.virtualStages; ++k) {
    const StageCosts &c = model.costs.stages[k * model.pp + s];
    f += c.forward;
    b += c.backward + c.forwardBackward;
  }
  return {f, b};
}

std::string stepLabel(const PlanStep &s) {
  if (s.kind == PlanStep::Compute)
    return s.name + "@" + std::to_string(s.stage);
  return s.name;
}

std::string fmtBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.2f %s", bytes, units[u]);
  return s;
}
/// The critical path by kind (CriticalPathBreakdown.h): ms and share of the iteration per part.
void printBreakdown(const CriticalPathBreakdown &b, double iteration, llvm::raw_ostream &os) {
  os << "\ncritical path by kind (ms, share of the iteration)\n";
  auto row = [&](const std::string &what, double seconds) {
    os << "  " << llvm::format("%-34s", what.c_str()) << llvm::format("%10.3f", seconds * 1e3)
       << llvm::format("%8.1f%%", iteration > 0 ? 100 * seconds / iteration : 0.0) << "\n";
  };
  row("compute", b.compute);
  row("codec kernels", b.codecKernels);
  row("cpu overhead of sends", b.cpuOverhead);
  for (const CriticalPathBreakdown::Link &l : b.links) {
    row("sends " + l.name + " (" + std::to_string(l.transfers) + ")", l.seconds);
    if (l.crossing > 1e-9 * iteration)
      row("sends " + l.name + ": crossing", l.crossing);
  }
  for (const CriticalPathBreakdown::Collective &c : b.collectives)
    row(c.name + " (" + std::to_string(c.count) + ")", c.seconds);
}

json::Value breakdownToJSON(const CriticalPathBreakdown &b) {
  json::Array links, collectives;
  for (const CriticalPathBreakdown::Link &l : b.links)
    links.push_back(
        json::Object{{"link", l.name}, {"transfers", l.transfers}, {"seconds", l.seconds}, {"crossing_s", l.crossing}});
  for (const CriticalPathBreakdown::Collective &c : b.collectives)
    collectives.push_back(json::Object{{"name", c.name}, {"count", c.count}, {"seconds", c.seconds}});
  return json::Object{{"compute_s", b.compute},
                      {"codec_kernels_s", b.codecKernels},
                      {"cpu_overhead_s", b.cpuOverhead},
                      {"sends", std::move(links)},
                      {"collectives", std::move(collectives)}};
}
} // namespace

void TimingAnalysis::printReport(llvm::raw_ostream &os) const {
  const Timeline &t = timeline;
  auto ms = [](double s) { return llvm::format("%10.3f", s * 1e3); };
  os << "=== ptrain plan report ===\n";
  os << "cluster " << cluster.name << ": " << cluster.nodes << " nodes x " << cluster.gpusPerNode << " "
     << cluster.gpuName << "\n";
  os << "grid dp=" << model.dp << " tp=" << model.tp << " pp=" << model.pp << ", schedule " << model.scheduleKind
     << ", " << model.microBatches << " micro-batches";
  if (model.virtualStages > 1)
    os << ", " << model.virtualStages << " virtual stages per stage";
  os << "\n";
  double idealBubble = model.microBatches ? (model.pp - 1.0) / (model.virtualStages * model.microBatches) : 0.0;
  os << "iteration time " << llvm::format("%.3f", t.iterationTime * 1e3) << " ms, bubble "
     << llvm::format("%.4f", t.bubble) << " (bubble time / ideal time; (p-1)/"
     << (model.virtualStages > 1 ? "(v m)" : "m") << " = " << llvm::format("%.4f", idealBubble) << ")\n";
  os << "\ntime split per stage (ms)\n";
  os << "stage    compute  exposed-comm   bubble/idle   F step     B step\n";
  for (int64_t s = 0; s < model.pp; ++s) {
    auto [f, b] = rankStepTimes(model, s);
    os << llvm::format("%5d", static_cast<int>(s)) << " " << ms(t.computeTime[s]) << "   " << ms(t.exposedCommTime[s])
       << "    " << ms(t.idleTime[s]) << " " << ms(f) << " " << ms(b) << "\n";
  }
  os << "\nbytes sent per iteration by one GPU of each stage\n";
  os << "stage        intra-node        inter-node\n";
  std::vector<Traffic> traffic = trafficPerStage(model, plan);
  Traffic total;
  for (int64_t s = 0; s < model.pp; ++s) {
    os << llvm::format("%5d", static_cast<int>(s)) << llvm::format("%18s", fmtBytes(traffic[s].intra).c_str())
       << llvm::format("%18s", fmtBytes(traffic[s].inter).c_str()) << "\n";
    total.intra += traffic[s].intra;
    total.inter += traffic[s].inter;
  }
  os << "total" << llvm::format("%18s", fmtBytes(total.intra).c_str())
     << llvm::format("%18s", fmtBytes(total.inter).c_str()) << "\n";

  os << "\ncritical path (" << t.criticalPath.size() << " steps):";
  for (int id : t.criticalPath)
    os << " " << stepLabel(plan.steps[id]);
  os << "\ncritical backward sends:";
  bool any = false;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].category == PlanStep::SendBackward && t.critical[i]) {
      os << " [" << plan.steps[i].name << "]";
      any = true;
    }
  os << (any ? "" : " none") << "\ncritical dp all-reduces (stages):";
  any = false;
  for (int64_t s = 0; s < model.pp; ++s)
    if (index.dataParallelSteps[s] >= 0 && t.critical[index.dataParallelSteps[s]]) {
      os << " " << s;
      any = true;
    }
  os << (any ? "" : " none") << "\n";
  for (int64_t s = 0; s < model.pp; ++s) {
    int id = index.dataParallelSteps[s];
    if (id < 0)
      continue;
    // A compressed one: both all-reduces, and the time from its first phase's start to its last one's end.
    const std::vector<int> &phases = index.dataParallelPhases[s];
    double bytes = phases.empty() ? plan.steps[id].bytes : plan.steps[phases[1]].bytes + plan.steps[phases[3]].bytes;
    double seconds = phases.empty() ? plan.steps[id].duration : t.end[phases.back()] - t.start[phases.front()];
    os << "  stage " << s << " dp all-reduce " << fmtBytes(bytes) << (phases.empty() ? "" : " (PowerSGD P and Q)")
       << ": " << llvm::format("%.3f", seconds * 1e3) << " ms, slack " << llvm::format("%.3f", t.slack[id] * 1e3)
       << " ms\n";
  }
  printBreakdown(breakDownCriticalPath(plan, t), t.iterationTime, os);

  os << "\nmemory per device (capacity " << fmtBytes(cluster.memoryCapacity) << ")\n";
  os << "stage            states       activations           working              peak\n";
  for (int64_t s = 0; s < model.pp; ++s) {
    const StageDetails &d = model.stages[s];
    double peak = model.costs.ranks[s].peakMemory;
    os << llvm::format("%5d", static_cast<int>(s)) << llvm::format("%18s", fmtBytes(d.stateBytes).c_str())
       << llvm::format("%18s", fmtBytes(d.activationBytes).c_str())
       << llvm::format("%18s", fmtBytes(d.workingBytes).c_str()) << llvm::format("%18s", fmtBytes(peak).c_str())
       << (peak > cluster.memoryCapacity ? "  EXCEEDS CAPACITY" : "") << "\n";
  }
  if (baseline)
    printCompression(os);
}

json::Value TimingAnalysis::toJSON() const {
  const Timeline &t = timeline;
  std::vector<Traffic> traffic = trafficPerStage(model, plan);
  json::Array stages;
  for (int64_t s = 0; s < model.pp; ++s) {
    const StageDetails &d = model.stages[s];
    const RankCosts &c = model.costs.ranks[s];
    auto [f, b] = rankStepTimes(model, s);
    json::Object stage{{"stage", s},
                       {"layers", d.layers},
                       {"forward_s", f},
                       {"backward_s", b},
                       {"optimizer_s", c.optimizer},
                       {"compute_s", t.computeTime[s]},
                       {"exposed_comm_s", t.exposedCommTime[s]},
                       {"idle_s", t.idleTime[s]},
                       {"intra_node_bytes", traffic[s].intra},
                       {"inter_node_bytes", traffic[s].inter},
                       {"memory", json::Object{{"states_bytes", d.stateBytes},
                                               {"activations_bytes", d.activationBytes},
                                               {"working_bytes", d.workingBytes},
                                               {"peak_bytes", c.peakMemory},
                                               {"fits", c.peakMemory <= cluster.memoryCapacity}}}};
    if (int id = index.dataParallelSteps[s]; id >= 0)
      stage["dp_all_reduce"] = json::Object{{"bytes", plan.steps[id].bytes},
                                            {"seconds", plan.steps[id].duration},
                                            {"slack_s", t.slack[id]},
                                            {"critical", static_cast<bool>(t.critical[id])}};
    stages.push_back(std::move(stage));
  }
  json::Array path, sends, steps;
  for (int id : t.criticalPath)
    path.push_back(stepLabel(plan.steps[id]));
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep &s = plan.steps[i];
    if (s.category == PlanStep::SendBackward && t.critical[i])
      sends.push_back(s.name);
    json::Array ranks;
    for (int r : s.ranks)
      ranks.push_back(r);
    steps.push_back(json::Object{{"name", s.name},
                                 {"ranks", std::move(ranks)},
                                 {"start_s", t.start[i]},
                                 {"end_s", t.end[i]},
                                 {"slack_s", t.slack[i]},
                                 {"critical", static_cast<bool>(t.critical[i])}});
  }
  json::Array dpCritical;
  for (int64_t s = 0; s < model.pp; ++s)
    if (index.dataParallelSteps[s] >= 0 && t.critical[index.dataParallelSteps[s]])
      dpCritical.push_back(s);
  json::Object report{{"cluster", cluster.name},
                      {"grid", json::Object{{"dp", model.dp}, {"tp", model.tp}, {"pp", model.pp}}},
                      {"schedule", model.scheduleKind},
                      {"virtual_stages", model.virtualStages},
                      {"micro_batches", model.microBatches},
                      {"iteration_time_s", t.iterationTime},
                      {"bubble", t.bubble},
                      {"stages", std::move(stages)},
                      {"critical_path", std::move(path)},
                      {"critical_path_breakdown", breakdownToJSON(breakDownCriticalPath(plan, t))},
                      {"critical_backward_sends", std::move(sends)},
                      {"critical_dp_all_reduces", std::move(dpCritical)},
                      {"steps", std::move(steps)}};
  if (baseline)
    report["compression"] = compressionToJSON();
  return report;
}

json::Value TimingAnalysis::toTrace() const {
  // Chrome trace event format (the JSON ui.perfetto.dev and chrome://tracing open): complete events ("X")
  // in microseconds; process = stage rank, thread = stream.
  enum { ComputeTid = 0, CommTid = 1, SendNextTid = 2, SendPrevTid = 3 };
  json::Array events;
  for (int64_t s = 0; s < model.pp; ++s) {
    events.push_back(
        json::Object{{"name", "process_name"},
                     {"ph", "M"},
                     {"pid", s},
                     {"args", json::Object{{"name", "stage " + std::to_string(s) + " (one of " +
                                                        std::to_string(model.dp * model.tp) + " dp x tp ranks)"}}}});
    const char *names[] = {"compute stream", "comm stream (collectives)", "sends to next stage",
                           "sends to previous stage"};
    for (int tid = 0; tid < 4; ++tid)
      events.push_back(json::Object{{"name", "thread_name"},
                                    {"ph", "M"},
                                    {"pid", s},
                                    {"tid", tid},
                                    {"args", json::Object{{"name", names[tid]}}}});
  }
  auto add = [&](int id, int64_t pid, int tid) {
    const PlanStep &s = plan.steps[id];
    events.push_back(json::Object{{"name", s.name},
                                  {"cat", s.kind == PlanStep::Compute ? "compute" : "comm"},
                                  {"ph", "X"},
                                  {"ts", timeline.start[id] * 1e6},
                                  {"dur", s.duration * 1e6},
                                  {"pid", pid},
                                  {"tid", tid},
                                  {"args", json::Object{{"slack_us", timeline.slack[id] * 1e6},
                                                        {"critical", static_cast<bool>(timeline.critical[id])},
                                                        {"bytes", s.bytes}}}});
  };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep &s = plan.steps[i];
    if (s.kind == PlanStep::Compute)
      add(i, s.ranks.front(), ComputeTid);
    else if (s.kind == PlanStep::Collective)
      for (int r : s.ranks)
        add(i, r, CommTid);
    else
      add(i, s.ranks[0], s.ranks[1] > s.ranks[0] ? SendNextTid : SendPrevTid);
  }
  return json::Object{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

namespace {
/// One compressed edge of the plan: its transfer (or first dp all-reduce) in the compressed plan and in
/// the baseline.
struct CompressedEdge {
  std::string name, kind, codec;
  int64_t stage = -1, microBatch = -1;
  double bytesBefore = 0, bytesAfter = 0, encode = 0, decode = 0, commBefore = 0, commAfter = 0;
  int step = -1;
};

std::vector<CompressedEdge> compressedEdges(const ModuleTimingModel &model, const Plan &plan,
                                            const PipelinePlanIndex &index, const TimingAnalysis::Baseline &base) {
  std::vector<CompressedEdge> edges;
  for (int64_t s = 0; s < model.pp; ++s) {
    for (size_t i = 0; i < model.costs.table[s].size(); ++i) {
      const ScheduleStep &e = model.costs.table[s][i];
      // The sends of the entry's virtual stage (its model chunk on rank s).
      const StageCosts &sc = model.costs.stages[std::max<int64_t>(e.chunk, 0) * model.pp + s];
      bool isB = e.kind == ScheduleStep::Backward || e.kind == ScheduleStep::ForwardBackward;
      const auto &sends = isB ? sc.compressedBackward : sc.compressedForward;
      auto it = sends.find(e.microBatch);
      if (e.kind == ScheduleStep::Optimizer || it == sends.end() || index.sendSteps[s][i] < 0)
        continue;
      CompressedEdge edge;
      edge.step = index.sendSteps[s][i];
      edge.name = plan.steps[edge.step].name;
      edge.kind = isB ? "backward_send" : "forward_send";
      edge.codec = it->second.codec;
      edge.stage = s;
      edge.microBatch = e.microBatch;
      const PlanStep &before = base.plan.steps[base.index.sendSteps[s][i]];
      edge.bytesBefore = before.bytes;
      edge.commBefore = before.duration;
      edge.bytesAfter = it->second.codes.bytes;
      edge.commAfter = it->second.codes.seconds;
      edge.encode = it->second.encodeSeconds;
      edge.decode = it->second.decodeSeconds;
      edges.push_back(edge);
    }
    const RankCosts &rc = model.costs.ranks[s];
    if (!rc.compressedDataParallel || base.index.dataParallelSteps[s] < 0)
      continue;
    const CompressedAllReduce &ca = *rc.compressedDataParallel;
    CompressedEdge edge;
    edge.step = index.dataParallelSteps[s];
    edge.name = "dp all-reduce stage " + std::to_string(s);
    edge.kind = "dp_all_reduce";
    edge.codec =
        ca.codec + " on " + std::to_string(ca.compressed) + " gradients, " + std::to_string(ca.exact) + " exact";
    edge.stage = s;
    const PlanStep &before = base.plan.steps[base.index.dataParallelSteps[s]];
    edge.bytesBefore = before.bytes;
    edge.commBefore = before.duration;
    edge.bytesAfter = ca.first.bytes + ca.second.bytes;
    edge.commAfter = ca.first.seconds + ca.second.seconds;
    edge.encode = ca.phasePSeconds + ca.phaseQSeconds;
    edge.decode = ca.finishSeconds;
    edges.push_back(edge);
  }
  return edges;
}

/// Per rank: seconds of encode, decode and dp codec steps.
std::vector<std::array<double, 3>> codecSeconds(const ModuleTimingModel &model, const Plan &plan) {
  std::vector<std::array<double, 3>> out(model.pp, {0, 0, 0});
  for (const PlanStep &s : plan.steps) {
    int k = s.category == PlanStep::Encode              ? 0
            : s.category == PlanStep::Decode            ? 1
            : s.category == PlanStep::DataParallelCodec ? 2
                                                        : -1;
    if (k >= 0)
      out[s.ranks.front()][k] += s.duration;
  }
  return out;
}
} // namespace

void TimingAnalysis::printCompression(llvm::raw_ostream &os) const {
  const Baseline &base = *baseline;
  double before = base.timeline.iterationTime, after = timeline.iterationTime;
  os << "\ncompression (policy " << model.compressionPolicy << "): iteration time "
     << llvm::format("%.3f", before * 1e3) << " ms uncompressed, " << llvm::format("%.3f", after * 1e3)
     << " ms compressed, modelled speedup " << llvm::format("%.4f", after > 0 ? before / after : 0.0) << "x\n";
  os << "bytes sent per iteration by one GPU, per link\n";
  os << "link                               before             after\n";
  auto beforeLinks = linkTraffic(base.model, base.plan), afterLinks = linkTraffic(model, plan);
  for (auto &[name, bytes] : beforeLinks) {
    double a = 0;
    for (auto &[n, b] : afterLinks)
      if (n == name)
        a = b;
    os << llvm::format("%-26s", name.c_str()) << llvm::format("%16s", fmtBytes(bytes).c_str())
       << llvm::format("%18s", fmtBytes(a).c_str()) << "\n";
  }
  os << "codec kernel time per iteration (ms, compute stream)\n";
  os << "stage     encode     decode   dp codec\n";
  auto codec = codecSeconds(model, plan);
  for (int64_t s = 0; s < model.pp; ++s)
    os << llvm::format("%5d", static_cast<int>(s))
       << llvm::format(" %10.3f %10.3f %10.3f", codec[s][0] * 1e3, codec[s][1] * 1e3, codec[s][2] * 1e3) << "\n";
  std::vector<CompressedEdge> edges = compressedEdges(model, plan, index, base);
  os << "compressed edges (" << edges.size() << ")\n";
  for (const CompressedEdge &e : edges)
    os << "  " << e.name << ": " << e.codec << ", " << fmtBytes(e.bytesBefore) << " -> " << fmtBytes(e.bytesAfter)
       << ", comm " << llvm::format("%.3f", e.commBefore * 1e3) << " -> " << llvm::format("%.3f", e.commAfter * 1e3)
       << " ms, encode " << llvm::format("%.3f", e.encode * 1e3) << " ms, decode "
       << llvm::format("%.3f", e.decode * 1e3) << " ms, slack " << llvm::format("%.3f", timeline.slack[e.step] * 1e3)
       << " ms" << (timeline.critical[e.step] ? " (critical)" : "") << "\n";
}

json::Value TimingAnalysis::compressionToJSON() const {
  const Baseline &base = *baseline;
  json::Array links, codec, decisions;
  auto afterLinks = linkTraffic(model, plan);
  for (auto &[name, bytes] : linkTraffic(base.model, base.plan)) {
    double a = 0;
    for (auto &[n, b] : afterLinks)
      if (n == name)
        a = b;
    links.push_back(json::Object{{"link", name}, {"bytes_before", bytes}, {"bytes_after", a}});
  }
  auto seconds = codecSeconds(model, plan);
  for (int64_t s = 0; s < model.pp; ++s)
    codec.push_back(json::Object{
        {"stage", s}, {"encode_s", seconds[s][0]}, {"decode_s", seconds[s][1]}, {"dp_codec_s", seconds[s][2]}});
  for (const CompressedEdge &e : compressedEdges(model, plan, index, base)) {
    json::Object d{{"edge", e.name},
                   {"kind", e.kind},
                   {"stage", e.stage},
                   {"codec", e.codec},
                   {"bytes_before", e.bytesBefore},
                   {"bytes_after", e.bytesAfter},
                   {"comm_before_s", e.commBefore},
                   {"comm_after_s", e.commAfter},
                   {"encode_s", e.encode},
                   {"decode_s", e.decode},
                   {"slack_s", timeline.slack[e.step]},
                   {"critical", static_cast<bool>(timeline.critical[e.step])}};
    if (e.microBatch >= 0)
      d["micro_batch"] = e.microBatch;
    decisions.push_back(std::move(d));
  }
  double before = base.timeline.iterationTime, after = timeline.iterationTime;
  return json::Object{{"policy", model.compressionPolicy}, {"iteration_time_uncompressed_s", before},
                      {"iteration_time_s", after},         {"speedup", after > 0 ? before / after : 0.0},
                      {"links", std::move(links)},         {"codec_seconds", std::move(codec)},
                      {"decisions", std::move(decisions)}};
}
