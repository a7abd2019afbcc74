//===- PipelinePlan.h - a timed plan from pipeline schedule tables -*- C++ -*-===//
//
// Builds the Plan (TimingPlan.h) of one training iteration from the schedule table and per-stage costs in
// seconds, following what --ptrain-lower-to-runtime generates (docs/TrainingStep.md, DESIGN decision 6):
//
// * one rank per pipeline stage stands for all its data- and tensor-parallel replicas (SPMD: they run the
//   same steps at the same time; the costs already account for their sharing of links);
// * with V virtual stages per rank (interleaved 1F1B) the table names the rank's chunk k; chunk k of rank s
//   is virtual stage c = k P + s (Narayanan et al., SC'21, sec. 2.2.2), and transfers go between virtual
//   stages c and c + 1, i.e. from rank c mod P to rank (c + 1) mod P (the last rank's chunk k sends to the
//   first rank's chunk k + 1);
// * F<i> of virtual stage c > 0 needs micro-batch i's activation from c - 1; that transfer starts when c - 1
//   has finished F<i> and the receiving rank has finished the step before F<i> (it posts its receive then);
// * B<i> / FB<i> of c < P V - 1 needs the gradient from c + 1 (sent by its B<i> or FB<i>) and the end of its
//   own F<i> send (the lowering waits on it there);
// * a transfer's crossing slowdown (CommCost::crossingSlowdown) goes to its plan step: it moves slower while
//   the opposite send between the same two ranks is in flight (TimingPlan.h);
// * a transfer's CPU overhead (CommCost::cpuOverhead, LogP's o) lengthens the sender's producing step and the
//   receiver's consuming step (the encode and the decode of a compressed one);
// * a compressed send (gradient or activation) has an encode step on the sender's compute stream right after
//   the producing step (the transfer starts after it) and a decode step on the receiver's compute stream
//   right before the consuming step (after the transfer); the transfer carries the codes;
// * after its last backward and once every send of the rank has ended (the lowering waits on the pending
//   sends before it calls the optimizer step, which posts the dp all-reduces), a rank all-reduces its
//   gradients over dp on its communication stream, one NCCL all-reduce per bucket (or, when some gradients
//   have dp codecs: the codec phases on the compute stream around one or two rounds of collectives); then
//   every rank joins the tied-parameter all-reduce (over pp, or dp x pp with fused embedding sync); the
//   optimizer step O runs after both; after O every rank joins the all-reduce of the loss over dp x pp;
// * link contention: transfers between ranks on different nodes occupy the sending node's NIC egress and the
//   receiving node's ingress (`rankNodes`), so transfers of different stages sharing a node go one at a time;
//   without `rankNodes`, each link direction between two ranks is its own resource.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_PIPELINEPLAN_H
#define PTRAIN_ANALYSIS_PIPELINEPLAN_H

#include "ptrain/Analysis/TimingPlan.h"
#include "ptrain/Plan/ScheduleTable.h"

#include "llvm/Support/Error.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::ptrain {

/// A transfer or collective: seconds it takes, bytes each rank sends, whether it crosses nodes.
struct CommCost {
  double seconds = 0;
  double bytes = 0;
  bool interNode = false;
  /// Collectives: bytes each member sends on the wire (PlanStep::sentBytes); < 0: not given.
  double sentBytes = -1;
  /// Point-to-point transfers: seconds the message takes from each endpoint's compute stream (the link's
  /// cpu_overhead, LinkCost::overhead; LogP's o), charged to the sender's producing step (its encode when
  /// compressed) and the receiver's consuming step (its decode when compressed). Collectives include theirs in
  /// `seconds`.
  double cpuOverhead = 0;
  /// Point-to-point transfers over the link's eager limit: seconds of the part that moves at once
  /// (LinkCost::eagerSeconds, PlanStep::eagerSeconds); < 0: the whole message moves at once.
  double eagerSeconds = -1;
  /// Point-to-point transfers: the link's `crossing_slowdown` (PlanStep::crossingSlowdown); 1: none.
  double crossingSlowdown = 1;
};

/// A compressed point-to-point message: codec kernels on the sender's and the receiver's compute streams
/// and the transfer of the codes.
struct CompressedTransfer {
  double encodeSeconds = 0, decodeSeconds = 0;
  CommCost codes;
  /// The codec, for reports (e.g. "#ptrain.powersgd<rank = 16>").
  std::string codec;
};

/// A rank's data-parallel gradient reduction with codecs on some gradients (Optimus-CC's selective stage
/// compression with PowerSGD, or per-gradient dp codecs): seconds of the phases on the compute stream (P:
/// PowerSGD's P = M Q and every other codec's encode; Q: PowerSGD's Q = M^T orth(P) and the casts' fp32
/// chunk sums; finish: the decodes) and the two rounds of collectives (the first also carries the exact
/// buckets and gradients).
struct CompressedAllReduce {
  double phasePSeconds = 0, phaseQSeconds = 0, finishSeconds = 0;
  CommCost first, second;
  /// Gradients compressed and reduced exactly (1-D, or (n + m) r >= n m).
  int64_t compressed = 0, exact = 0;
  std::string codec;
};

/// Costs of one (virtual) stage, per micro-batch where it applies, in seconds.
struct StageCosts {
  double forward = 0;
  /// Backward of a stage c < P V - 1 (with activation recomputation: includes the recomputed forward).
  double backward = 0;
  /// The last stage's fused forward, loss and backward.
  double forwardBackward = 0;
  /// Activation to c + 1 and gradient to c - 1.
  CommCost sendForward, sendBackward;
  /// Micro-batches whose gradient send to c - 1 (activation send to c + 1) is compressed, replacing
  /// sendBackward (sendForward) for them.
  std::map<int64_t, CompressedTransfer> compressedBackward, compressedForward;
};

/// Costs of one rank (pipeline stage with all its chunks).
struct RankCosts {
  double optimizer = 0;
  /// The rank's gradient all-reduces over dp (all its buckets, one after the other); none when bytes == 0.
  CommCost dataParallel;
  /// NCCL all-reduces the dp reduction consists of (buckets), for reports.
  int64_t dataParallelBuckets = 0;
  /// When set, the dp all-reduce is compressed (replacing dataParallel).
  std::optional<CompressedAllReduce> compressedDataParallel;
  /// Peak device memory (bytes).
  double peakMemory = 0;
};

struct PipelineCosts {
  /// Model chunks per rank (1 unless interleaved).
  int64_t virtualStages = 1;
  /// Per virtual stage c = k P + s: P V entries.
  std::vector<StageCosts> stages;
  /// Per rank: P entries.
  std::vector<RankCosts> ranks;
  /// Per rank, the table row (docs/TrainingStep.md).
  std::vector<std::vector<ScheduleStep>> table;
  /// The tied-parameter all-reduce over pp (dp x pp with fused embedding sync) before the optimizer step;
  /// none when bytes == 0.
  CommCost tied;
  /// The all-reduce of the loss over dp x pp after the optimizer step; none when bytes == 0.
  CommCost loss;
  double memoryCapacity = 0;
  /// Per rank, the node holding its (first) GPU; empty: no NIC sharing between ranks is modelled.
  std::vector<int64_t> rankNodes;
  /// The inter-node link is half duplex (the cluster's `inter_node.half_duplex`): a node's egress and ingress
  /// are one resource, so transfers crossing between two nodes in opposite directions go one at a time.
  bool halfDuplex = false;
};

/// Where the plan steps of the table went.
struct PipelinePlanIndex {
  /// [rank][table index] -> the compute step.
  std::vector<std::vector<int>> tableSteps;
  /// [rank][table index] -> the transfer the entry sends (activation of F<i>, gradient of B<i>/FB<i>), -1.
  std::vector<std::vector<int>> sendSteps;
  /// [rank][table index] -> the encode step of the entry's compressed send, -1.
  std::vector<std::vector<int>> encodeSteps;
  /// [rank] -> the dp all-reduce (compressed: its first all-reduce), -1.
  std::vector<int> dataParallelSteps;
  /// [rank] -> the steps of the compressed dp all-reduce (phase P, all-reduce P, phase Q, all-reduce Q,
  /// finish); empty when not compressed.
  std::vector<std::vector<int>> dataParallelPhases;
  /// The tied-parameter all-reduce, -1.
  int tiedStep = -1;
  /// The loss all-reduce, -1.
  int lossStep = -1;
};

/// Builds the plan. Fails when the table does not have one row per rank, the stage costs are not P V
/// entries, a micro-batch is out of range or appears twice for a chunk, or a stage's forward (backward) has
/// no matching entry on its neighbour.
llvm::Expected<Plan> buildPipelinePlan(const PipelineCosts &costs, PipelinePlanIndex &index);

/// Costs for executing `table` (P rows, `v` model chunks per rank) with the same `forward`, `backward` and
/// fused `forwardBackward` time on every virtual stage, free communication, free optimizer steps and no dp
/// or tied all-reduce: the unit costs of --ptrain-schedule's deadlock check and --ptrain-print-schedule.
PipelineCosts getUniformPipelineCosts(const ScheduleTableRows &table, int64_t v, double forward, double backward,
                                      double forwardBackward);

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_PIPELINEPLAN_H
