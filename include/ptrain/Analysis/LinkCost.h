//===- LinkCost.h - the time of a message on a link, by size -----*- C++ -*-===//
//
// How the timing model prices communication on one link kind (docs/TimingModel.md, "Messages"): a message of
// b bytes takes latency + b / bandwidth (the alpha-beta model; Hockney, "The communication challenge for MPP",
// Parallel Computing 20(3), 1994), or, where the cluster file gives the link a measured message-size table
// (`messages`, written by ptrain-calibrate's ping-pong sweep), the table's piecewise-linear interpolation.
// Collectives are sequences of such messages (NCCL's ring: an all-reduce is 2(n-1) messages of bytes / n).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_LINKCOST_H
#define PTRAIN_ANALYSIS_LINKCOST_H

#include "ptrain/Analysis/Cluster.h"

#include <cstdint>
#include <vector>

namespace mlir::ptrain {

/// Prices messages on one link kind for one GPU.
class LinkCost {
public:
  LinkCost() = default;
  /// `sharers` GPUs of a node use the link at the same time (the node's NIC shared fairly): each of their
  /// messages of b bytes ends when one message of sharers x b bytes would (with alpha-beta: latency +
  /// b / (bandwidth / sharers)).
  /// `binomial`: all-reduces run as a binomial reduce + broadcast (ClusterSpec::binomialAllReduce).
  explicit LinkCost(const LinkSpec &spec, double sharers = 1, bool binomial = false)
      : spec(spec), sharers(sharers < 1 ? 1 : sharers), binomial(binomial) {}

  /// Seconds of one message of `bytes` bytes, one way. Without a table: latency + bytes / bandwidth. With a
  /// table (x_i bytes, y_i seconds), for b = sharers x bytes: below x_0 the line from (0, latency) to
  /// (x_0, y_0); between two entries their line; above the last entry y_last + (b - x_last) / bandwidth.
  /// `duplex`: the other direction carries a message of the same size at the same time (a collective's round):
  /// priced from the link's duplex table where it has one, else as a lone message.
  double message(double bytes, bool duplex = false) const;
  /// Seconds a message of `bytes` bytes takes from each endpoint's compute stream beyond its link time (the
  /// link's `cpu_overhead`, LogP's o: per_message_s + bytes x per_byte_s; 0 without the field). The timing model
  /// charges it to the sender's producing step and the receiver's consuming step of a pipeline send
  /// (PipelinePlan.h), and twice per round (a send and a receive) to a collective's time.
  double overhead(double bytes) const { return spec.overheadPerMessage + bytes * spec.overheadPerByte; }
  /// Whether a message of `bytes` bytes goes by MPI's rendezvous protocol: the link has `eager_limit_bytes` and
  /// the message is at least that large. The limit counts the MPI's own header (OpenMPI: "Maximum size (in
  /// bytes, including header) of 'short' messages", `ompi_info --param btl tcp --level 9`; ob1 sends eagerly
  /// only `size <= btl_eager_limit - sizeof(mca_pml_ob1_hdr_t)`, `mca_pml_ob1_send_request_start_btl` in
  /// pml_ob1_sendreq.h), so a message of exactly the limit's size is a rendezvous one. (The few dozen sizes
  /// just under the limit that the header also pushes over it are rare and taken as eager.)
  bool isRendezvous(double bytes) const { return spec.eagerLimitBytes > 0 && bytes >= spec.eagerLimitBytes; }
  /// Seconds the first eager_limit_bytes of a message of `bytes` bytes take (message(eager limit)), the part
  /// that moves at once; -1 where the whole message moves at once (no `eager_limit_bytes`, or !isRendezvous).
  /// The rest, message(bytes) minus this (nothing but the header's few bytes for a message of the limit's
  /// size), waits for the sender's next MPI call (TimingPlan.h).
  double eagerSeconds(double bytes) const { return isRendezvous(bytes) ? message(spec.eagerLimitBytes) : -1; }
  /// The link's `crossing_slowdown` (>= 1; 1 without the field): how much slower a point-to-point transfer
  /// moves while one crosses it in the opposite direction (TimingPlan.h).
  double crossingSlowdown() const { return spec.crossingSlowdown; }
  /// Seconds of `messages` rounds of a collective in sequence carrying `sentBytes` bytes together (sentBytes /
  /// messages each; each rank sends one and receives one per round, so duplex, and pays the overhead of both);
  /// `messages` <= 0: the bytes at the bandwidth alone.
  double messages(double messages, double sentBytes) const;
  /// NCCL ring all-reduce of `bytes` per rank over n ranks: 2(n-1) messages of bytes / n (2(n-1)/n of the
  /// bytes sent; nccl-tests doc/PERFORMANCE.md); binomial: 2 ceil(log2 n) lone messages of all the bytes, one
  /// after the other (reduce up the tree, broadcast down), each with the sender's and the receiver's overhead;
  /// 0 when n <= 1. Where the link has a measured all-reduce table (`all_reduces`) over n ranks: for b =
  /// sharers x bytes, the table's time of b (piecewise-linear between entries; below the first entry its time;
  /// above the last the last time plus what the message rule above adds from the last size to b): the measured
  /// round already holds its CPU time, so no `cpu_overhead` is added.
  double allReduce(double bytes, int64_t n) const;
  /// An all-gather in which each of n ranks contributes `bytes`: where the link has a measured all-gather table
  /// (`all_gathers`) over n ranks, its time of sharers x bytes, interpolated as allReduce() interpolates its
  /// table (no `cpu_overhead` added); else n-1 messages of `bytes` (each with its overhead), as
  /// messages(n - 1, (n - 1) bytes). 0 when n <= 1.
  double allGather(double bytes, int64_t n) const;
  /// An all-to-all in which each of n ranks sends `bytes` in all (bytes / n to each rank, MPI_Ialltoall's
  /// sendcount x n): where the link has a measured all-to-all table (`all_to_alls`, schema version 4) over n
  /// ranks, its time of sharers x bytes, interpolated as allReduce() interpolates its table (no `cpu_overhead`
  /// added); else n-1 messages of bytes / n (each with its overhead), as messages(n - 1, (n - 1) / n bytes).
  /// 0 when n <= 1.
  double allToAll(double bytes, int64_t n) const;
  /// Whether allToAll() over n ranks is priced from the measured table.
  bool hasAllToAllTable(int64_t n) const { return n > 1 && !spec.allToAlls.empty() && n == spec.collectiveRanks; }
  /// Whether allGather() over n ranks is priced from the measured table.
  bool hasAllGatherTable(int64_t n) const { return n > 1 && !spec.allGathers.empty() && n == spec.collectiveRanks; }
  /// Ring reduce-scatter or all-gather: n-1 messages of bytes / n; 0 when n <= 1.
  double reduceScatter(double bytes, int64_t n) const;
  /// Bytes per second one GPU gets at large sizes (bandwidth / sharers).
  double bandwidth() const { return spec.bandwidth / sharers; }
  bool isSizeDependent() const { return !spec.messages.empty() || !spec.duplexMessages.empty(); }

private:
  /// allReduce() from messages (and their overhead), without the measured table.
  double allReduceFromMessages(double bytes, int64_t n) const;

  LinkSpec spec;
  double sharers = 1;
  bool binomial = false;
};

/// The message-size table ptrain-calibrate writes from its ping-pong medians: entries sorted by size, equal
/// sizes averaged, then the least-squares non-decreasing fit of the times (isotonic regression by the
/// pool-adjacent-violators algorithm; Ayer et al., Ann. Math. Statist. 26(4), 1955; Barlow et al.,
/// "Statistical Inference under Order Restrictions", 1972, ch. 1): on a FIFO link a message is never faster
/// than a shorter one, so a smaller median above a larger size is noise. Sizes must be >= 1 byte, times > 0.
std::vector<MessageTime> fitMessageTimes(std::vector<MessageTime> samples);

/// A link's per-message CPU overhead (LinkSpec::overheadPerMessage, overheadPerByte) fitted to measured
/// (bytes, seconds) samples, as ptrain-calibrate writes `cpu_overhead`: the ordinary least-squares line
/// seconds = a + b x bytes; where that gives b < 0 (overhead not growing with size: noise), b = 0 and a = the
/// mean; where it gives a < 0, the least-squares line through the origin (a = 0, b = sum(x y) / sum(x^2));
/// negative samples count as measured (noise around 0), the result is never negative. No samples: {0, 0}.
struct CpuOverhead {
  double perMessage = 0, perByte = 0;
};
CpuOverhead fitCpuOverhead(const std::vector<MessageTime> &samples);

/// The overhead samples fitCpuOverhead is given (ptrain-calibrate): those of the plan's sizes, below
/// `pingpongBytes` (the rate measurement's size, larger than anything the plan sends), that MPI sends eagerly,
/// below `eagerLimitBytes` (LinkCost::isRendezvous; 0: no limit known, all of them). Above it a sender's
/// MPI_Wait also waits for the receiver's clear-to-send, link time the timing model prices as the rendezvous
/// stall: the 65,536 B sample of bench/cluster's quiet run at 401.7 Mbit/s (2026-12-07 23:24, OpenMPI's 64 KiB
/// limit, header included) waited 0.98 ms, set the fitted slope alone (6.97 ns/B, 10 ms of the uncompressed
/// plan's 114.5 ms prediction) while every eager size's sample was within 0.03 ms of 0.
std::vector<MessageTime> eagerOverheadSamples(const std::vector<MessageTime> &samples, double pingpongBytes,
                                              double eagerLimitBytes);

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_LINKCOST_H
