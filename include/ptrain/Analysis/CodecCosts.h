//===- CodecCosts.h - FLOPs and bytes of codec kernels --------------*- C++ -*-===//
//
// The work of the codec kernels the lowering puts on a rank's compute stream (DESIGN decision 6,
// docs/TimingModel.md "Codec kernels"), counted from what the runtime's kernels do (lib/Runtime/cpu/codecs):
//
// * PowerSGD on the n x m matrix view, rank r (Vogels et al., "PowerSGD", NeurIPS 2019, Algorithm 1; the
//   runtime's phases in lib/Runtime/cpu/codecs/PowerSGD.h): phase P (error feedback M = g + e, then P = M Q:
//   2 n m r FLOPs), phase Q (modified Gram-Schmidt of P, 2 n r^2 FLOPs, then Q = M^T P: 2 n m r), finish
//   (the decode P Q^T: 2 n m r; with error feedback the residual e = M - P Q^T: another 2 n m r). Exact path
//   ((n + m) r >= n m, 1-D tensors included): the codes carry M, one copy each way.
// * top-k, rand-k, quantization, casts: memory-bound passes; encode reads g (and with error feedback e,
//   writing e) and writes the code, decode reads the code and writes the tensor (the byte counts of
//   bench/codecs); top-k reads its input twice more (histogram and candidate passes of the radix select).
// * linear autoencoder: the GEMMs X W_e (2 n m dim) and code W_d (2 n dim m).
//
// Seconds follow the op-time rule: max(FLOPs / peak, bytes / memory bandwidth) / efficiency, GEMM phases at
// the cluster's f32 matmul peak, elementwise ones at the f32 peak.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_ANALYSIS_CODECCOSTS_H
#define PTRAIN_ANALYSIS_CODECCOSTS_H

#include "ptrain/Analysis/Cluster.h"
#include "ptrain/Analysis/LinkCost.h"
#include "ptrain/Dialect/PTrain/IR/PTrainAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainCost.h"

#include "mlir/IR/BuiltinTypes.h"

namespace mlir::ptrain {

/// Work of one codec kernel phase: GEMM-like (matmul peak) or elementwise.
struct CodecPhase {
  OpCost cost;
  bool matmul = false;
};

/// Encoding and decoding one tensor, and the bytes of its codes.
struct CodecWork {
  /// On the sender (encode, with error feedback when asked) and on the receiver (decode).
  std::vector<CodecPhase> encode, decode;
  /// Bytes of all code tensors (what goes on the wire) and of the tensor itself.
  double codeBytes = 0, tensorBytes = 0;
};

/// The work of `codec` on a tensor of `type` (the codec must accept the type: verifyForType). A bf16 or f16
/// `type` (a 16-bit plan's message, docs/Compression.md "Codecs on 16-bit traffic") adds the widen before the
/// encode, the rounding after the decode and the 16-bit values' rounding and residual fix-up
/// (--ptrain-widen-half-codecs); its code bytes are those of the 16-bit type (top-k's values 2 bytes each).
CodecWork getCodecWork(CodecAttrInterface codec, RankedTensorType type, bool errorFeedback);

/// Data-parallel PowerSGD of one n x m gradient at rank r (the runtime's compressed all-reduce, Optimus-CC
/// section 4.4): phase P before the all-reduce of P, phase Q between it and the all-reduce of Q, the
/// finish after it. On the exact path only `firstBytes` is set (one all-reduce of M) and the phases are
/// copies.
struct DataParallelPowerSGDWork {
  std::vector<CodecPhase> phaseP, phaseQ, finish;
  double firstBytes = 0, secondBytes = 0, tensorBytes = 0;
  bool exact = false;
};
DataParallelPowerSGDWork getDataParallelPowerSGDWork(int64_t n, int64_t m, int64_t rank, bool errorFeedback);

/// One collective round of a compressed dp all-reduce over n ranks: it pays `latencies` message latencies and
/// each rank sends `sentBytes` (time = latencies x latency + sentBytes / bandwidth). `bytes` is the data per
/// rank it reduces or contributes (for reports). `allReduce`: the round is an all-reduce of `bytes` per rank
/// (the runtime's MPI_Iallreduce / ncclAllReduce), so it is timed by the cluster's all-reduce algorithm
/// (LinkCost::allReduce: ring, or OpenMPI's in-place binomial on the CPU target), not as `latencies` messages.
struct CodecCollective {
  double latencies = 0, sentBytes = 0, bytes = 0;
  bool allReduce = false;
  /// An all-gather in which every rank contributes `bytes` ((n-1) latencies, (n-1) `bytes` sent), timed by
  /// LinkCost::allGather (the link's measured `all_gathers` where it has them).
  bool allGather = false;
  /// An all-to-all in which every rank sends `bytes` in all (the cast codec's first round and ZeRO-1's compressed
  /// reduce-scatter, both MPI_Ialltoall), timed by LinkCost::allToAll (the link's measured `all_to_alls` where it
  /// has them).
  bool allToAll = false;
};
/// An all-reduce of `bytes` per rank, with a ring's traffic: 2(n-1) latencies, 2(n-1)/n of the bytes sent.
CodecCollective ringAllReduce(double bytes, int64_t n);
/// A ring reduce-scatter then ring all-gather of `bytes` per rank (ZeRO-1's uncompressed bucket): the traffic
/// of ringAllReduce, timed as its 2(n-1) messages whatever the cluster's all-reduce algorithm.
CodecCollective ringReduceScatterAllGather(double bytes, int64_t n);
/// Seconds of round `c` with its bytes scaled by `scale` (a TP shard's 1 / tp) on `link` over n ranks: an
/// all-reduce round by LinkCost::allReduce, an all-gather round by LinkCost::allGather where the link has its
/// table, an all-to-all round by LinkCost::allToAll where the link has its table, any other as
/// LinkCost::messages(latencies, sentBytes).
double getCollectiveSeconds(const CodecCollective &c, const LinkCost &link, int64_t n, double scale = 1);

/// The compressed dp all-reduce of one gradient with `codec` over n ranks, as the runtime's
/// ptrain_compressed_all_reduce_start runs it (lib/Runtime/cpu/CompressedCollectives.cpp): phase P before the
/// first round, phase Q between the rounds, finish after the last round.
/// * PowerSGD (rank clamped to min(rank, n_rows, m)): getDataParallelPowerSGDWork; rounds: all-reduce of P
///   (the exact path: of M), all-reduce of Q.
/// * rand-k: encode; all-reduce of the k values; decode. On a bf16 / f16 `type` (a 16-bit TP site: its values
///   are sent as 16 bits, `ptrain.compressed_all_reduce_start` C8) the values are all-gathered instead ((n-1)
///   latencies, (n-1) x the code bytes), added in fp32 (n k reads) and decoded once; top-k's codes are those
///   of the 16-bit type (2-byte values).
/// * casts: encode; all-to-all of the 16-bit chunks ((n-1) latencies, (n-1)/n of the codes); the fp32 sum
///   of this rank's chunk (reads the n chunks, writes 4 N / n bytes); all-gather of the fp32 chunks ((n-1)
///   latencies, (n-1) x 4 N / n bytes); a copy into the output.
/// * top-k and quantization: encode; all-gather of the codes ((n-1) latencies, (n-1) x the code bytes);
///   n decodes (one per rank's code, summed).
/// The linear autoencoder has no compressed all-reduce in the runtime: an error.
struct DataParallelCodecWork {
  std::vector<CodecPhase> phaseP, phaseQ, finish;
  std::vector<CodecCollective> first, second;
  /// PowerSGD's exact path ((n + m) r >= n m): one all-reduce of M.
  bool exact = false;
};
llvm::Expected<DataParallelCodecWork> getDataParallelCodecWork(CodecAttrInterface codec, RankedTensorType type,
                                                               int64_t n, bool errorFeedback);

/// ZeRO-1's compressed bucket reduce-scatter of a gathered codec over n ranks (`chunk`: the elements each rank
/// keeps), as ptrain_compressed_reduce_scatter_start runs it (docs/DistributedOptimizer.md, "Compression"): phase
/// P encodes the n chunks (with error feedback), one all-to-all round sends (n - 1) chunk codes per rank in
/// n - 1 messages, the finish decodes the n codes of this rank's chunk and adds them.
DataParallelCodecWork getZeroReduceScatterCodecWork(CodecAttrInterface codec, RankedTensorType chunk, int64_t n,
                                                   bool errorFeedback);

/// Seconds of `phases` on one device of `cluster` (the op-time rule above). Fails naming a missing peak.
llvm::Expected<double> getCodecSeconds(llvm::ArrayRef<CodecPhase> phases, const ClusterSpec &cluster);

/// The calibration of a codec's kernels (docs/TimingModel.md, "Calibration"): measured / modelled seconds of
/// the encode and of the decode, from the cluster's `calibration.codecs` entry nearest to (`codec`, `type`,
/// `errorFeedback`): an entry of the same codec kind (the attribute's mnemonic) is required; among those, the
/// same attribute text first, then the same error feedback, then the element count nearest in ratio. The
/// modelled seconds of the entry are getCodecWork + getCodecSeconds at the entry's own codec and shape, so a
/// calibrated kernel at a measured shape is priced at its measured time and other shapes scale with the
/// roofline. Without an entry of that kind (or an uncalibrated cluster) both ratios are 1 and `calibrated`
/// is false: the roofline alone (the documented fallback).
struct CodecCalibration {
  double encode = 1, decode = 1;
  bool calibrated = false;
  /// The measured encode + decode over the modelled encode + decode: for phases that mix both (the dp and tp
  /// compressed all-reduces).
  double both = 1;
};
CodecCalibration getCodecCalibration(CodecAttrInterface codec, RankedTensorType type, bool errorFeedback,
                                     const ClusterSpec &cluster);
/// Multiplies every phase's FLOPs and bytes by `factor` (so its getCodecSeconds scales by it).
void scaleCodecPhases(std::vector<CodecPhase> &phases, double factor);

/// One compressed all-reduce of `type` over n ranks (getDataParallelCodecWork's phases and rounds, with the
/// residual's add and update when `errorFeedback`) on `link`: the codec phases by getCodecSeconds plus, per round,
/// `latencies` messages carrying its sent bytes (LinkCost::messages; alpha-beta: latencies x latency + sent bytes /
/// bandwidth). mcbench's TP site prices
/// each compressed tensor-parallel all-reduce with it: summable codes (rand-k, casts, PowerSGD) reduced in compressed
/// form, top-k and quantization all-gathered and decoded n times (docs/TimingModel.md, "Tensor parallelism").
/// The codec phases are scaled by getCodecCalibration's `both`.
struct CompressedAllReduceCost {
  double seconds = 0, codecSeconds = 0, sentBytes = 0;
};
llvm::Expected<CompressedAllReduceCost> getCompressedAllReduceCost(CodecAttrInterface codec, RankedTensorType type,
                                                                   int64_t n, const LinkCost &link,
                                                                   const ClusterSpec &cluster,
                                                                   bool errorFeedback = false);

} // namespace mlir::ptrain

#endif // PTRAIN_ANALYSIS_CODECCOSTS_H
