//===- PlanReport.cpp - the plan report, its JSON and the Perfetto trace -*- C++ -*-===//
//
// TimingAnalysis::printReport, toJSON and toTrace (docs/TimingModel.md, "The report").
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/TimingAnalysis.h"

#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::ptrain;
namespace json = llvm::json;

namespace {
/// Bytes one GPU of a stage sends per iteration, split by link kind.
struct Traffic {
  double intra = 0, inter = 0;
  void add(double bytes, bool interNode) { (interNode ? inter : intra) += bytes; }
};

std::vector<Traffic> trafficPerStage(const ModuleTimingModel &model, const Plan &plan) {
  std::vector<Traffic> traffic(model.pp);
  for (const PlanStep &s : plan.steps) {
    if (s.kind == PlanStep::Transfer) {
      traffic[s.ranks.front()].add(s.bytes, s.interNode);
    } else if (s.kind == PlanStep::Collective) {
      // Ring all-reduce: each GPU sends 2(n-1)/n of the data; n is not in the plan, so count the data once
      // per direction of the ring as NCCL's bus bandwidth does: bytes x 2(n-1)/n with n = dp or pp.
      int64_t n = s.category == PlanStep::DataParallel ? model.dp : model.pp;
      double bus = n > 1 ? 2.0 * (n - 1) / n * s.bytes : 0;
      for (int r : s.ranks)
        traffic[r].add(bus, s.interNode);
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
} // namespace

void TimingAnalysis::printReport(llvm::raw_ostream &os) const {
  const Timeline &t = timeline;
  auto ms = [](double s) { return llvm::format("%10.3f", s * 1e3); };
  os << "=== ptrain plan report ===\n";
  os << "cluster " << cluster.name << ": " << cluster.nodes << " nodes x " << cluster.gpusPerNode << " "
     << cluster.gpuName << "\n";
  os << "grid dp=" << model.dp << " tp=" << model.tp << " pp=" << model.pp << ", schedule " << model.scheduleKind
     << ", " << model.microBatches << " micro-batches\n";
  os << "iteration time " << llvm::format("%.3f", t.iterationTime * 1e3) << " ms, bubble "
     << llvm::format("%.4f", t.bubble) << " (bubble time / ideal time; (p-1)/m = "
     << llvm::format("%.4f", model.microBatches ? (model.pp - 1.0) / model.microBatches : 0.0) << ")\n";
  os << "\ntime split per stage (ms)\n";
  os << "stage    compute  exposed-comm   bubble/idle   F step     B step\n";
  for (int64_t s = 0; s < model.pp; ++s) {
    const StageCosts &c = model.costs.stages[s];
    os << llvm::format("%5d", static_cast<int>(s)) << " " << ms(t.computeTime[s]) << "   " << ms(t.exposedCommTime[s])
       << "    " << ms(t.idleTime[s]) << " " << ms(c.forward) << " "
       << ms(s + 1 == model.pp ? c.forwardBackward : c.backward) << "\n";
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
  for (int64_t s = 0; s < model.pp; ++s)
    if (int id = index.dataParallelSteps[s]; id >= 0)
      os << "  stage " << s << " dp all-reduce " << fmtBytes(plan.steps[id].bytes) << ": "
         << llvm::format("%.3f", plan.steps[id].duration * 1e3) << " ms, slack "
         << llvm::format("%.3f", t.slack[id] * 1e3) << " ms\n";

  os << "\nmemory per device (capacity " << fmtBytes(cluster.memoryCapacity) << ")\n";
  os << "stage            states       activations           working              peak\n";
  for (int64_t s = 0; s < model.pp; ++s) {
    const StageDetails &d = model.stages[s];
    double peak = model.costs.stages[s].peakMemory;
    os << llvm::format("%5d", static_cast<int>(s)) << llvm::format("%18s", fmtBytes(d.stateBytes).c_str())
       << llvm::format("%18s", fmtBytes(d.activationBytes).c_str())
       << llvm::format("%18s", fmtBytes(d.workingBytes).c_str()) << llvm::format("%18s", fmtBytes(peak).c_str())
       << (peak > cluster.memoryCapacity ? "  EXCEEDS CAPACITY" : "") << "\n";
  }
}

json::Value TimingAnalysis::toJSON() const {
  const Timeline &t = timeline;
  std::vector<Traffic> traffic = trafficPerStage(model, plan);
  json::Array stages;
  for (int64_t s = 0; s < model.pp; ++s) {
    const StageDetails &d = model.stages[s];
    const StageCosts &c = model.costs.stages[s];
    json::Object stage{{"stage", s},
                       {"layers", d.layers},
                       {"forward_s", c.forward},
                       {"backward_s", s + 1 == model.pp ? c.forwardBackward : c.backward},
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
  return json::Object{{"cluster", cluster.name},
                      {"grid", json::Object{{"dp", model.dp}, {"tp", model.tp}, {"pp", model.pp}}},
                      {"schedule", model.scheduleKind},
                      {"micro_batches", model.microBatches},
                      {"iteration_time_s", t.iterationTime},
                      {"bubble", t.bubble},
                      {"stages", std::move(stages)},
                      {"critical_path", std::move(path)},
                      {"critical_backward_sends", std::move(sends)},
                      {"critical_dp_all_reduces", std::move(dpCritical)},
                      {"steps", std::move(steps)}};
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
