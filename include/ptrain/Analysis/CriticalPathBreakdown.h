//===- CriticalPathBreakdown.h - the critical path's seconds by kind ----*- C++ -*-===//
//
// What the simulated iteration (TimingPlan.h) spends its time on, read off one critical path: compute, codec
// kernels, the per-message CPU overhead charged to compute steps, the seconds of each pipeline link direction
// (the transfers' link time and what crossing sends added) and each collective. The report prints it
// (docs/TimingModel.md, "The report": "critical path by kind"), so that a prediction that misses a measured
// iteration shows which term carries the difference.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_CRITICALPATHBREAKDOWN_H
#define PTRAIN_ANALYSIS_CRITICALPATHBREAKDOWN_H

#include "ptrain/Analysis/TimingPlan.h"

#include <string>
#include <vector>

namespace mlir::ptrain {

/// Seconds of the critical path by kind; the parts sum to the iteration time.
///
/// Each step of the path counts the seconds from its predecessor's end to its own end (the first step from 0),
/// so the parts telescope to Timeline::iterationTime: a stalled transfer (the rendezvous stall) counts only its
/// rest after the sender's step, which the path runs through and counts as that step's. A compute step's
/// seconds split into its PlanStep::cpuOverhead (the adjacent transfers' LogP o) and the rest; a transfer's
/// into the seconds crossing sends added (Timeline::crossing, at most its counted seconds) and the rest, its
/// link time.
struct CriticalPathBreakdown {
  /// Forward, backward, fused forward-backward and optimizer steps, without their CPU overhead.
  double compute = 0;
  /// Encode and decode steps of compressed transfers, the compute phases of compressed dp all-reduces.
  double codecKernels = 0;
  /// The per-message CPU overhead of pipeline sends charged to critical compute steps (`cpu_overhead`).
  double cpuOverhead = 0;
  /// One pipeline link direction ("0->1").
  struct Link {
    std::string name;
    /// Critical transfers on it, their link seconds, and the seconds crossing sends added to them.
    int transfers = 0;
    double seconds = 0, crossing = 0;
  };
  /// In first-use order along the path.
  std::vector<Link> links;
  /// One kind of collective ("tied all-reduce", "loss all-reduce", "dp all-reduce stage 0"): critical
  /// instances and their seconds, in first-use order along the path.
  struct Collective {
    std::string name;
    int count = 0;
    double seconds = 0;
  };
  std::vector<Collective> collectives;

  /// The sum of every part: the iteration time.
  double total() const;
};

/// Breaks down `timeline.criticalPath` (simulate()'s result for `plan`).
CriticalPathBreakdown breakDownCriticalPath(const Plan &plan, const Timeline &timeline);

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_CRITICALPATHBREAKDOWN_H
