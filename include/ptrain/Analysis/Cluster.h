//===- Cluster.h - the cluster description of the timing model ---*- C++ -*-===//
//
// The machine a plan is timed on (DESIGN decision 11): nodes, GPUs per node, per-GPU peak FLOP/s per dtype,
// memory bandwidth and capacity, intra- and inter-node links, and how the axes of the process grid are laid
// out over the ranks. Read from a JSON file whose schema is documented in docs/TimingModel.md; shipped
// files are in clusters/.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_CLUSTER_H
#define PTRAIN_ANALYSIS_CLUSTER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlir::ptrain {

/// One point of a link's message-size table: a message of `bytes` bytes takes `seconds` one way (measured by
/// ptrain-calibrate's ping-pong: half the median round trip).
struct MessageTime {
  double bytes = 0, seconds = 0;
};

/// One kind of link, per direction.
struct LinkSpec {
  /// Bytes per second in one direction (intra-node: per GPU; inter-node: per node, all NICs together).
  double bandwidth = 0;
  /// Seconds per message (the alpha of alpha-beta), > 0 not required (0 is allowed).
  double latency = 0;
  /// Optional size-dependent message times (`messages` in the file), bytes strictly increasing: when given, a
  /// message is priced by interpolating this table (LinkCost.h) instead of latency + bytes / bandwidth.
  std::vector<MessageTime> messages;
  /// Optional (`duplex_messages`): the one-way time of a message while the opposite direction carries one of the
  /// same size at the same time, as in every round of a collective (each rank sends and receives at once);
  /// collectives are priced from it where given, else from `messages`.
  std::vector<MessageTime> duplexMessages;
  /// `half_duplex` (optional, default false): the two directions share one rate, so transfers in opposite
  /// directions go one at a time (ptrain-calibrate sets it where a message both ways at once takes 1.5x or more
  /// the one-way time at its largest size).
  bool halfDuplex = false;
  /// `cpu_overhead` (optional, schema version 2): {per_message_s, per_byte_s}, both >= 0. The seconds a message
  /// of b bytes takes from the compute stream of each of its two endpoints, per_message_s + b per_byte_s, beyond
  /// its time on the link: LogP's overhead o, "the length of time that a processor is engaged in the transmission
  /// or reception of each message; during this time, the processor cannot perform other operations" (Culler et
  /// al., "LogP: towards a realistic model of parallel computation", PPoPP 1993, sec. 2), here with a per-byte
  /// term (the copies and the network stack's work on the same cores). ptrain-calibrate measures it as the time
  /// a message adds to the sender's compute it overlaps with (docs/TimingModel.md, "The per-message overhead").
  /// 0 and 0 without the field.
  double overheadPerMessage = 0, overheadPerByte = 0;
  /// `eager_limit_bytes` (optional, schema version 2): an integer >= 1, the largest message the MPI library
  /// sends at once (eagerly). A larger message moves its first eager_limit_bytes at once and the rest by the
  /// rendezvous protocol, which progresses only inside MPI calls: without an asynchronous progress thread the
  /// rest moves once the sender, busy with its next compute step, enters MPI again (TimingPlan.h). Source:
  /// OpenMPI's `btl_tcp_eager_limit` (65536 B in OpenMPI 4.1, `ompi_info --param btl tcp --level 9`; the ob1 PML
  /// sends the first fragment with the match header and the rest after the receiver's ACK). NCCL has no such
  /// stall (its proxy thread progresses every transfer): leave it out for GPU clusters. 0 (none) without the
  /// field: every message moves at once, as before.
  double eagerLimitBytes = 0;
  /// `crossing_slowdown` (optional, schema version 2): a number >= 1, the factor by which a point-to-point
  /// transfer moves slower while a transfer in the opposite direction between the same two ranks is in flight
  /// (a transfer's seconds on the link during the overlap count 1 / crossing_slowdown each). Source: TCP over a
  /// rate-shaped link carries the opposite flow's ACKs behind its own data queue, so two flows crossing share
  /// more than their own direction (the ACK-compression effect, Zhang, Shenker and Clark, "Observations on the
  /// dynamics of a congestion control algorithm: the effects of two-way traffic", SIGCOMM 1991, sec. 4);
  /// ptrain-calibrate --hosts writes both ways at once over one way at the plan's largest pipeline send
  /// (docs/TimingModel.md, "Crossing sends"). The pipeline simulation applies it (TimingPlan.h); collectives use `duplex_messages` instead. 1 (no
  /// slowdown, as before) without the field.
  double crossingSlowdown = 1;
  /// `all_reduces` (optional, schema version 3): the measured time of one whole all-reduce by the bytes of each
  /// rank's buffer, [{bytes, seconds}, ...] (bytes integers >= 1 strictly increasing, seconds > 0), over
  /// `collective_ranks` ranks (`collectiveRanks`, an integer >= 2, required with the table). An all-reduce over
  /// that many ranks on this link is priced from the table (LinkCost::allReduce), CPU included: the table is the
  /// collective round itself, not messages plus `cpu_overhead`. ptrain-calibrate --hosts measures it as the
  /// median of MPI_Iallreduce (in place, f32 sum, as the CPU target's runtime calls it) + MPI_Wait at the plan's
  /// all-reduce sizes, to its end on the slowest rank (until branch clu11 on rank 0's clock, which missed the
  /// broadcast half of a 2-rank all-reduce), fitted non-decreasing (fitMessageTimes); an empty table: every
  /// all-reduce priced from its messages, as before.
  std::vector<MessageTime> allReduces;
  /// `all_gathers` (optional, schema version 3): the same form for one whole all-gather by the bytes each rank
  /// contributes, over `collective_ranks` ranks (ptrain-calibrate: MPI_Iallgather + MPI_Wait, to the slowest
  /// rank's end, at the sizes the
  /// compressed collectives gather: top-k's and quantization's codes, casts' fp32 chunks); prices those rounds
  /// (LinkCost::allGather) instead of messages + `cpu_overhead`.
  std::vector<MessageTime> allGathers;
  /// `all_to_alls` (optional, schema version 4): the same form for one whole all-to-all by the bytes of each
  /// rank's send buffer (bytes / n to each rank), over `collective_ranks` ranks (ptrain-calibrate: MPI_Ialltoall
  /// of MPI_BYTE + MPI_Wait, to the slowest rank's end, at the sizes the cast codec's first round sends: the
  /// 16-bit codes of the all-reduced tensors and TP sites); prices those rounds (LinkCost::allToAll) instead of
  /// messages + `cpu_overhead`.
  std::vector<MessageTime> allToAlls;
  /// `collective_ranks` (schema version 3, required with any of the tables): the ranks the tables were measured
  /// over.
  int64_t collectiveRanks = 0;
};

/// One codec kernel measured by ptrain-calibrate (docs/TimingModel.md, "Calibration"): the codec attribute
/// as text, the f32 tensor shape it encoded, whether the encode updated an error-feedback residual, and the
/// best encode and decode seconds on the calibrated machine.
struct CodecKernelTime {
  std::string codec;
  std::vector<int64_t> shape;
  bool errorFeedback = false;
  double encodeSeconds = 0, decodeSeconds = 0;
};

/// The newest cluster-file schema version this build reads (`version`, docs/TimingModel.md): 1, the schema
/// before the field existed (files without `version`); 2 adds the links' `cpu_overhead`,
/// `eager_limit_bytes` and `crossing_slowdown`; 3 adds the links' measured `all_reduces`, `all_gathers` and
/// `collective_ranks`; 4 adds the links' measured `all_to_alls`.
constexpr int64_t kClusterSchemaVersion = 4;

/// A parsed and checked cluster description.
struct ClusterSpec {
  std::string name;
  /// The file's schema version (`version`, 1 when absent), at most kClusterSchemaVersion.
  int64_t version = 1;
  int64_t nodes = 0;
  int64_t gpusPerNode = 0;
  std::string gpuName;
  /// Peak FLOP/s per dtype key ("f32", "tf32", "f16", "bf16", "f64", ...).
  llvm::StringMap<double> peakFlops;
  /// The peak_flops key used by f32 matmuls (e.g. "tf32" where the framework runs f32 GEMMs on TF32 tensor
  /// cores); "f32" by default.
  std::string f32MatmulDtype = "f32";
  /// Device memory bandwidth (bytes/s) and capacity (bytes).
  double memoryBandwidth = 0;
  double memoryCapacity = 0;
  /// Fraction of the roofline an op reaches: op time = max(FLOPs / peak, bytes / bandwidth) / efficiency.
  double efficiency = 1;
  LinkSpec intraNode, interNode;
  /// Grid axes from the innermost (neighbouring ranks, same node) to the outermost. Grid axes not listed
  /// come after, in the grid's order. Default: tp, dp, pp (Megatron-LM's rank order).
  std::vector<std::string> axisOrder = {"tp", "dp", "pp"};
  /// How an all-reduce runs (`all_reduce_algorithm`): false ("ring", the default) NCCL's ring, 2(n-1) messages
  /// of bytes / n; true ("binomial") a binomial-tree reduce then broadcast of the whole buffer, 2 ceil(log2 n)
  /// messages of all the bytes one after the other, which is what the CPU target's MPI_Iallreduce with
  /// MPI_IN_PLACE runs under OpenMPI (libnbc, ompi/mca/coll/libnbc/nbc_iallreduce.c: binomial whenever the
  /// buffer is in place or p < 4); ptrain-calibrate writes "binomial".
  bool binomialAllReduce = false;
  /// The measured codec kernels of a calibrated cluster file (`calibration.codecs`); empty otherwise.
  std::vector<CodecKernelTime> codecKernels;

  /// Peak FLOP/s for results of element type `dtype` ("f32", "bf16", ...); `matmul` selects
  /// f32MatmulDtype for f32. Fails naming the missing field gpu.peak_flops.<key>.
  llvm::Expected<double> getPeakFlops(llvm::StringRef dtype, bool matmul) const;
};

/// Parses a cluster description. Errors name the field (`gpu.memory_bandwidth: must be > 0`, `nodes:
/// missing`); unknown fields are errors too, except `description` and `sources` (free-form).
llvm::Expected<ClusterSpec> parseCluster(const llvm::json::Value &json);
/// Reads and parses the file at `path`; errors are prefixed with the path. With `json`, also returns the
/// file's JSON value there.
llvm::Expected<ClusterSpec> loadCluster(llvm::StringRef path, llvm::json::Value *json = nullptr);

/// Where the ranks of a process grid sit on a cluster.
class Placement {
public:
  /// `axes`: the grid's (name, size) pairs in the grid's order. Fails when the grid has more ranks than the
  /// cluster has GPUs (naming both counts), or a name in the cluster's axis_order appears twice.
  static llvm::Expected<Placement> create(const ClusterSpec &cluster,
                                          llvm::ArrayRef<std::pair<std::string, int64_t>> axes);

  /// Size of axis `name`; 1 when the grid has no such axis.
  int64_t getAxisSize(llvm::StringRef name) const;
  int64_t getNumRanks() const { return numRanks; }
  /// The node of the rank with the given coordinate per axis (in the grid's axis order).
  int64_t getNode(llvm::ArrayRef<int64_t> coords) const;
  /// True when some pair of ranks that differ only in the coordinates of `axes` sits on different nodes.
  bool crossesNodes(llvm::ArrayRef<std::string> axes) const;
  /// Largest number of ranks on one node that share their coordinate on axis `axis` (the GPUs of a node that
  /// run the same pipeline stage and so use the node's NICs at the same time).
  int64_t getMaxRanksPerNodeWithSame(llvm::StringRef axis) const;

private:
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides; // linear rank = sum coords[i] * strides[i]
  int64_t gpusPerNode = 1;
  int64_t numRanks = 1;
  void forEachRank(llvm::function_ref<void(llvm::ArrayRef<int64_t>)> fn) const;
};

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_CLUSTER_H
