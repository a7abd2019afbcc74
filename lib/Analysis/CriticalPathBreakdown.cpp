//===- CriticalPathBreakdown.cpp - the critical path's seconds by kind ----*- C++ -*-===//
//
// breakDownCriticalPath (CriticalPathBreakdown.h).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/CriticalPathBreakdown.h"

#include <algorithm>

using namespace mlir::ptrain;

double CriticalPathBreakdown::total() const {
  double sum = compute + codecKernels + cpuOverhead;
  for (const Link &l : links)
    sum += l.seconds + l.crossing;
  for (const Collective &c : collectives)
    sum += c.seconds;
  return sum;
}

namespace {
/// The entry named `name` of `entries`, appended where missing.
template <typename T> T &entry(std::vector<T> &entries, const std::string &name) {
  for (T &e : entries)
    if (e.name == name)
      return e;
  entries.push_back(T{});
  entries.back().name = name;
  return entries.back();
}

/// A collective's kind: its name without the stage or micro-batch detail but the dp all-reduce's stage.
std::string collectiveKind(const PlanStep &s) {
  if (s.category == PlanStep::Loss)
    return "loss all-reduce";
  if (s.category == PlanStep::Tied)
    return "tied all-reduce";
  if (s.category == PlanStep::DataParallel)
    return "dp all-reduce stage " + std::to_string(s.stage);
  return s.name;
}
} // namespace

CriticalPathBreakdown mlir::ptrain::breakDownCriticalPath(const Plan &plan, const Timeline &timeline) {
  CriticalPathBreakdown out;
  double prevEnd = 0;
  for (int id : timeline.criticalPath) {
    const PlanStep &s = plan.steps[id];
    const double seconds = std::max(0.0, timeline.end[id] - prevEnd);
    prevEnd = std::max(prevEnd, timeline.end[id]);
    if (s.kind == PlanStep::Compute) {
      const double overhead = std::min(seconds, std::max(0.0, s.cpuOverhead));
      out.cpuOverhead += overhead;
      const bool codec =
          s.category == PlanStep::Encode || s.category == PlanStep::Decode || s.category == PlanStep::DataParallelCodec;
      (codec ? out.codecKernels : out.compute) += seconds - overhead;
    } else if (s.kind == PlanStep::Transfer) {
      CriticalPathBreakdown::Link &l =
          entry(out.links, std::to_string(s.ranks.front()) + "->" + std::to_string(s.ranks.back()));
      double crossing =
          id < static_cast<int>(timeline.crossing.size()) ? std::min(seconds, timeline.crossing[id]) : 0.0;
      if (crossing <= 1e-9 * seconds) // the fluid's rounding (TimingPlan.cpp), not a crossing
        crossing = 0;
      ++l.transfers;
      l.crossing += crossing;
      l.seconds += seconds - crossing;
    } else {
      CriticalPathBreakdown::Collective &c = entry(out.collectives, collectiveKind(s));
      ++c.count;
      c.seconds += seconds;
    }
  }
  return out;
}
