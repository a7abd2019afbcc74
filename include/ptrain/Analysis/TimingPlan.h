//===- TimingPlan.h - plan of timed steps and its event simulation -*- C++ -*-===//
//
// The timing model of DESIGN decision 6 on a plain C++ plan, independent of the IR so that tests build
// synthetic plans (docs/TimingModel.md):
//
// * every rank has a compute stream and a communication stream, each running its steps in order;
// * a compute step starts when the previous step of its stream has ended and its dependencies have ended;
// * a point-to-point transfer starts when both sides have posted (its dependencies, which include the
//   sender's producing step and the receiver's step before the consumer, have ended) and every link
//   resource it uses is free (by default its link direction src -> dst; a plan may name shared resources
//   instead, such as a node's NIC); transfers ready on one resource go in order of readiness;
// * a transfer with an eager part (PlanStep::eagerSeconds >= 0, a message over the MPI library's eager limit;
//   LinkSpec::eagerLimitBytes) moves that part at once and the rest only once the sender is inside MPI: when
//   the sender's compute stream is running a step at the transfer's start (one starting then included), the
//   rest starts at the later of the eager part's end and that step's end (the sender's next MPI call), so the
//   transfer ends at max(start + eagerSeconds, that end) + duration - eagerSeconds (the rendezvous stall,
//   docs/TimingModel.md); a sender that is idle (waiting inside MPI) moves it all at once;
// * crossing sends (PlanStep::crossingSlowdown = k > 1, the link's `crossing_slowdown`): the transfers in
//   flight between two ranks share the link by processor sharing between its two directions. A transfer moves
//   at rate 1 (its duration d is seconds at full rate), or 1/k while a transfer in the opposite direction
//   between the same two ranks moves; both directions are re-rated, the one in flight included: every
//   transfer's end is re-predicted when one starts (a finish at the end of its fluid work, its dependents and
//   link released at that end). Two sends of d seconds starting together both end at k d; a send of d_1
//   starting at 0, crossed from t < d_1 by one of d_2 that ends first (d_2 <= (d_1 - t)), ends at
//   d_1 + (k - 1) d_2, and the crossing one at t + k d_2 (docs/TimingModel.md, "Crossing sends"). A transfer
//   paused by the rendezvous stall moves no data, so it slows nothing meanwhile; the stall's eager part is
//   the moved seconds, slowed or not;
// * a collective starts when all members have posted: it is at the head of every member's communication
//   stream and its dependencies have ended.
//
// After simulate(): start and end of every step, the iteration time, each step's slack (how much its
// duration can grow before the iteration time grows, with the order on every stream and link fixed) and the
// critical steps (slack 0).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_TIMINGPLAN_H
#define PTRAIN_ANALYSIS_TIMINGPLAN_H

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::ptrain {

/// One timed step of a plan.
struct PlanStep {
  enum Kind { Compute, Transfer, Collective };
  /// What the step is, for reports and tests.
  /// Encode / Decode: codec kernels of a compressed transfer; DataParallelCodec: the compute phases of a
  /// compressed dp all-reduce; Loss: the all-reduce of the mean loss over dp x pp after the optimizer step.
  enum Category {
    Forward,
    Backward,
    ForwardBackward,
    Optimizer,
    SendForward,
    SendBackward,
    DataParallel,
    Tied,
    Encode,
    Decode,
    DataParallelCodec,
    Loss
  };

  Kind kind = Compute;
  Category category = Forward;
  /// Compute: {rank}; Transfer: {src, dst}; Collective: its members (the ranks whose comm stream it uses).
  std::vector<int> ranks;
  /// Seconds.
  double duration = 0;
  /// Steps that must end before this one can start (indices into Plan::steps).
  std::vector<int> deps;
  /// Transfers: the shared link resources (ids >= 0, e.g. a node's NIC egress and the peer node's ingress)
  /// the transfer occupies; empty: its own link direction src -> dst.
  std::vector<int> links;
  /// Transfers: seconds of the part that moves at once when the message is larger than the link's eager
  /// limit (LinkCost::eagerSeconds); the rest (duration - eagerSeconds) waits for the sender's next MPI call
  /// (see the file comment). < 0: the whole message moves at once.
  double eagerSeconds = -1;
  /// Transfers: the link's crossing slowdown (LinkSpec::crossingSlowdown, >= 1): while a transfer in the
  /// opposite direction between the same two ranks is in flight, this one's seconds on the link count
  /// 1 / crossingSlowdown each (see the file comment). 1: no slowdown.
  double crossingSlowdown = 1;
  /// Report data: name ("F3", "send F3 0->1", "dp all-reduce"), bytes moved per rank (communication),
  /// whether the traffic crosses nodes, the schedule position (stage, index in the stage's table row, -1
  /// when the step is not a table entry) and the micro-batch (-1 if none).
  std::string name;
  double bytes = 0;
  /// Collectives: bytes each member sends on the wire (a ring all-reduce 2(n-1)/n of `bytes`, an all-gather
  /// (n-1) x its per-rank part); < 0: not given (reports use 2(n-1)/n of `bytes` with n = dp or pp).
  double sentBytes = -1;
  bool interNode = false;
  /// Compute steps: seconds of `duration` that are the per-message CPU overhead of adjacent pipeline sends
  /// (CommCost::cpuOverhead, LogP's o, added by PipelinePlan.cpp); report data (CriticalPathBreakdown.h).
  double cpuOverhead = 0;
  int stage = -1;
  int tableIndex = -1;
  int microBatch = -1;
};

/// A plan: steps, the stream order per rank, and memory per rank.
struct Plan {
  int numRanks = 0;
  std::vector<PlanStep> steps;
  /// Per rank, the compute steps and the collectives (communication stream) in stream order.
  std::vector<std::vector<int>> computeOrder, commOrder;
  /// Per rank: peak device memory in bytes (see PlanBuilder.h for what is counted); capacity of one device.
  std::vector<double> peakMemory;
  double memoryCapacity = 0;

  /// Appends a step and, for compute steps and collectives, puts it at the end of its streams. Returns its
  /// index.
  int add(PlanStep step);
};

/// The result of simulating a plan.
struct Timeline {
  std::vector<double> start, end, slack;
  /// Per step: seconds a transfer's rest waited for its sender's compute step beyond its eager part (end -
  /// start - duration; the rendezvous stall); 0 for every other step.
  std::vector<double> stall;
  /// Per step: seconds a transfer lost to crossing sends (PlanStep::crossingSlowdown); 0 for every other step.
  std::vector<double> crossing;
  std::vector<bool> critical;
  /// Seconds from the first start (0) to the last end.
  double iterationTime = 0;
  /// One critical path, first step to last (a chain of steps each starting when its predecessor ends).
  std::vector<int> criticalPath;
  /// Bubble: (end of the last F/B/FB step on any rank - the largest per-rank F/B/FB busy time) / that busy
  /// time, codec kernels of compressed transfers counted as busy. (p - 1) / m for 1F1B and GPipe with
  /// uniform stages and free communication, (p - 1) / (v m) for interleaved 1F1B with v chunks.
  double bubble = 0;
  /// Per rank, seconds over [0, iterationTime]: compute busy, compute idle while waiting for a transfer or a
  /// collective it depends on (exposed communication), other idle time (bubble).
  std::vector<double> computeTime, exposedCommTime, idleTime;
  /// Number of events processed (steps scheduled plus stale queue entries), for the benchmark.
  int64_t events = 0;
};

/// Simulates `plan`. Fails (returns false, with `error` set) when the plan deadlocks: some step can never
/// start (a dependency cycle through the stream orders), naming the first such step.
bool simulate(const Plan &plan, Timeline &out, std::string &error);

/// Prints every step: name, ranks, start, end, slack and duration in microseconds (and a transfer's stall
/// and crossing slowdown where it has them), and a `*` for critical steps.
void printTimeline(const Plan &plan, const Timeline &timeline, llvm::raw_ostream &os);

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_TIMINGPLAN_H
