//===- ptrain-calibrate.cpp - measure this machine for the timing model ---===//
//
// ptrain-calibrate (docs/TimingModel.md, "Calibration"; issue 25) measures, on this machine and at the
// shapes of a compiled plan (its step.mlir):
//  - f32 GEMM throughput: every distinct ptrain.matmul shape through ptrain_gemm_f32 (the kernel the CPU
//    target calls), best of --repeats; the plan's rate = its FLOPs / its GEMM seconds (each shape weighted
//    by how often the plan runs it). A plan built with --precision bf16 or fp16 (docs/MixedPrecision.md)
//    also has GEMMs with 16-bit operands: those shapes are measured again through ptrain_gemm_bf16 /
//    ptrain_gemm_f16, and their rate, weighted the same way, is gpu.peak_flops.bf16 / .f16 (the timing
//    model prices a 16-bit GEMM at it);
//  - memory bandwidth: bytes read + written per second by a 64 MiB copy, best of --repeats;
//  - every codec kernel of auto's candidates (AutoCandidates.h: the table's codecs and PowerSGD at the
//    default ranks) on every distinct tensor the plan sends between stages (ptrain.send_start) or
//    all-reduces (ptrain.all_reduce_start, the largest --max-reduce-shapes; every tensor-parallel site,
//    ptrain.tp_all_reduce), in fp32 (a 16-bit plan's bf16 /
//    f16 messages as the fp32 value a codec on that link compresses): encode (with and without an
//    error-feedback residual) and decode through the runtime's ptrain_codec_encode / ptrain_codec_decode,
//    best of --repeats;
//  - with --hosts A,B: the link between A and B by an MPI ping-pong (this tool under mpirun -np 2 in its
//    --pingpong mode) over a sweep of message sizes: 1 byte, the sizes the plan sends (every boundary tensor
//    sent between stages, every candidate codec's code tensors of it, the messages of its all-reduces, dp
//    and tensor-parallel: the ring's bytes / n and the whole tensor, which OpenMPI's binomial sends) and
//    --pingpong-bytes; one-way time = half the median round trip of each size. latency = the
//    1-byte time, rate = --pingpong-bytes / its time, and the message-size table `messages` = the monotone
//    least-squares fit of the one-way times (fitMessageTimes, LinkCost.h), which the timing model
//    interpolates to price each message by its size; and per size the time a message adds to compute it
//    overlaps with on each rank (messageOverhead), whose sender's figures fitted as a line (fitCpuOverhead) are
//    the link's `cpu_overhead` (LogP's o; schema version 2); and the MPI's eager limit, read from its
//    configuration (readEagerLimit: OpenMPI's btl_tcp_eager_limit), as the link's `eager_limit_bytes` (the
//    rendezvous stall, TimingPlan.h; schema version 2); and the link's `crossing_slowdown` (crossing sends,
//    TimingPlan.h; schema version 2): the both-ways-at-once time over the one-way time at --pingpong-bytes
//    (where the link's rate bounds a transfer), at least 1, where the plan has pipeline sends (its samples in
//    calibration.link.crossing_source); and every all-reduce size of the plan (ptrain.all_reduce_start and
//    ptrain.tp_all_reduce, bytes per rank) timed whole as the runtime runs it (MPI_Iallreduce in place on f32,
//    MPI_Wait; the median of --pingpong-reps), fitted monotone into the link's `all_reduces` over
//    `collective_ranks` = 2 (the collective round measured as itself; schema version 3).
// It writes a cluster file (the schema the timing model reads, docs/TimingModel.md): --base's fields (or a
// one-node, one-core description), gpu.peak_flops.f32 (and .bf16 / .f16) and gpu.memory_bandwidth set to the
// measured rates,
// inter_node to the ping-pong's (with --hosts), and `calibration` with the figures, the codec kernel times
// and their provenance (machine, CPU model, ISA, date, command).
//
//   ptrain-calibrate PLAN (a folder with step.mlir, or an .mlir file) -o CLUSTER.json [--base FILE]
//       [--repeats 5] [--efficiency 1] [--nodes 2] [--max-reduce-shapes 4]
//       [--hosts A,B [--mpirun-args ARGS] [--pingpong-bytes 1048576] [--pingpong-reps 10] [--link-only]]
//
// --link-only (with --hosts and --base, a calibrated file) measures the link alone and keeps --base's other
// figures (re-measuring a link whose rate changed). Errors (exit 1) name the file or option, and every option
// is checked before anything is measured or written: a value out of range (--pingpong-bytes 0, --nodes 0, ...),
// --hosts not two names, --mpirun-args or --link-only without --hosts, an unreadable or invalid --base, an
// output folder that does not exist; then an unreadable plan, a plan without ptrain.matmul, a failing kernel
// (the runtime's message), a ping-pong that does not run.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/Cluster.h"
#include "ptrain/Analysis/LinkCost.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Interpreter/Kernels.h"
#include "ptrain/Runtime/ptrain_runtime.h"
#include "ptrain/Tools/Registration.h"
#include "ptrain/Transforms/AutoCandidates.h"
#include "ptrain/Transforms/CompressionConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <random>
#include <sys/utsname.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::ptrain;
namespace cl = llvm::cl;
namespace json = llvm::json;

static cl::OptionCategory calibrateOptions("ptrain-calibrate options");

static cl::opt<std::string> planPath(cl::Positional, cl::desc("<plan folder or step.mlir>"), cl::init(""), cl::cat(calibrateOptions));
static cl::opt<std::string> outputPath("o", cl::desc("the cluster file to write"), cl::init(""), cl::cat(calibrateOptions));
static cl::opt<std::string> basePath("base", cl::desc("cluster file whose other fields the output keeps"),
                                     cl::init(""), cl::cat(calibrateOptions));
static cl::opt<int> repeats("repeats", cl::desc("timed repeats per kernel (the best is kept)"), cl::init(5), cl::cat(calibrateOptions));
static cl::opt<double> efficiency("efficiency", cl::desc("gpu.efficiency of the output (default 1: the "
                                                         "measured rates are achieved ones)"),
                                  cl::init(1.0), cl::cat(calibrateOptions));
static cl::opt<std::string> hosts("hosts", cl::desc("A,B: measure the link between two MPI hosts"), cl::init(""), cl::cat(calibrateOptions));
static cl::opt<std::string> mpirunArgs("mpirun-args", cl::desc("extra mpirun options for --hosts"), cl::init(""), cl::cat(calibrateOptions));
static cl::opt<int> pingpongBytes("pingpong-bytes", cl::desc("message size of the rate measurement (bytes, "
                                                             "1 to 1 GiB; the sweep's largest size)"),
                                  cl::init(1 << 20), cl::cat(calibrateOptions));
static cl::opt<int> pingpongReps("pingpong-reps", cl::desc("timed round trips per message size (the median is "
                                                           "kept; 1 to 1000)"),
                                 cl::init(10), cl::cat(calibrateOptions));
static cl::opt<bool> linkOnly("link-only", cl::desc("with --hosts and --base: measure the link only, keep "
                                                    "--base's other figures"),
                              cl::init(false), cl::cat(calibrateOptions));
static cl::opt<std::string> pingpongSizes("pingpong-sizes", cl::desc("(internal) the sweep's sizes, comma-separated"),
                                          cl::Hidden, cl::init(""), cl::cat(calibrateOptions));
static cl::opt<std::string>
    allReduceSizes("all-reduce-sizes", cl::desc("(internal) the all-reduce sizes (bytes per rank), comma-separated"),
                   cl::Hidden, cl::init(""), cl::cat(calibrateOptions));
static cl::opt<std::string>
    allGatherSizes("all-gather-sizes", cl::desc("(internal) the all-gather sizes (bytes per rank), comma-separated"),
                   cl::Hidden, cl::init(""), cl::cat(calibrateOptions));
static cl::opt<std::string>
    allToAllSizes("all-to-all-sizes",
                  cl::desc("(internal) the all-to-all sizes (bytes each rank sends), comma-separated"), cl::Hidden,
                  cl::init(""), cl::cat(calibrateOptions));
static cl::opt<int> maxReduceShapes("max-reduce-shapes", cl::desc("largest all-reduced tensors measured"),
                                    cl::init(4), cl::cat(calibrateOptions));
static cl::opt<int> numNodes("nodes", cl::desc("nodes of the output without --base (one core each)"),
                             cl::init(2), cl::cat(calibrateOptions));
static cl::opt<bool> pingpongMode("pingpong", cl::desc("(internal) run one side of the ping-pong under mpirun"),
                                  cl::Hidden, cl::init(false), cl::cat(calibrateOptions));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "ptrain-calibrate: error: " << message << "\n";
  return 1;
}

using Clock = std::chrono::steady_clock;
template <typename F> static double best(F &&f) {
  double t = 1e30;
  for (int r = 0; r < std::max(1, repeats.getValue()); ++r) {
    auto t0 = Clock::now();
    f();
    t = std::min(t, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return t;
}

static std::vector<float> randomFloats(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

//===--- The link: MPI ping-pong ------------------------------------------===//

/// The median seconds of `reps` exchanges of `bytes` between ranks 0 and 1 after two warm-up ones: a round trip,
/// or with `duplex` both ranks sending to each other at once (MPI_Sendrecv, until both messages have arrived:
/// the one-way time of a message while the other direction carries one of the same size, a collective's round).
static double medianExchange(int rank, std::vector<char> &buf, std::vector<char> &recv, int bytes, int reps,
                             bool duplex) {
  std::vector<double> t;
  for (int i = -2; i < reps; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (duplex) {
      MPI_Sendrecv(buf.data(), bytes, MPI_BYTE, 1 - rank, 1, recv.data(), bytes, MPI_BYTE, 1 - rank, 1,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Barrier(MPI_COMM_WORLD);
    } else if (rank == 0) {
      MPI_Send(buf.data(), bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf.data(), bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf.data(), bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
    if (i >= 0)
      t.push_back(MPI_Wtime() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// `iterations` passes of in-cache floating-point work over 4 KiB (no memory traffic, no system calls): the
/// stand-in for a step's compute in the overhead measurement. Returns a value that depends on the work.
static float spin(int64_t iterations) {
  static float x[1024];
  for (int64_t it = 0; it < iterations; ++it)
    for (float &v : x)
      v = v * 0.999f + 0.001f;
  return x[iterations % 1024];
}

/// The seconds a message of `bytes` (rank 0 -> rank 1) adds to the compute it overlaps with, per rank, as the
/// generated code overlaps them: the sender posts MPI_Isend, computes, then waits; the receiver posts MPI_Irecv,
/// computes, then waits (docs/TimingModel.md, "The per-message overhead"). The compute lasts about twice the
/// message's one-way time `oneWay` (at least 1 ms), long enough for a transfer that progresses in the background
/// to end inside it, so what remains is the CPU the message costs the rank (LogP's o) and, on the receiver, any
/// part of the transfer that only progresses inside MPI calls (so the fit takes the sender's). Median of `reps`
/// overlapped runs minus the median of `reps` runs of the compute alone, interleaved; may be slightly negative
/// (noise).
static double messageOverhead(int rank, std::vector<char> &buf, int bytes, double oneWay, double perIteration,
                              int reps) {
  const int64_t iterations = std::max<int64_t>(1, static_cast<int64_t>(std::max(2 * oneWay, 1e-3) / perIteration));
  std::vector<double> alone, overlapped;
  float sink = 0;
  // Each timed run starts after a quarter of the compute untimed: on the 2-vCPU VM of bench/cluster the first
  // ~0.3 ms after leaving MPI_Barrier run at half speed (measured: 1.8 ms against 0.9 ms for the same work; the
  // vCPU waking from the barrier's wait), which would otherwise count as overhead of whichever run comes first.
  for (int i = -1; i < reps; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    sink += spin(iterations / 4);
    double t0 = MPI_Wtime();
    sink += spin(iterations);
    double a = MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD);
    sink += spin(iterations / 4);
    MPI_Request request;
    t0 = MPI_Wtime();
    if (rank == 0)
      MPI_Isend(buf.data(), bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &request);
    else
      MPI_Irecv(buf.data(), bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &request);
    sink += spin(iterations);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    double o = MPI_Wtime() - t0;
    if (i >= 0) {
      alone.push_back(a);
      overlapped.push_back(o);
    }
  }
  std::sort(alone.begin(), alone.end());
  std::sort(overlapped.begin(), overlapped.end());
  return overlapped[overlapped.size() / 2] - alone[alone.size() / 2] + (sink == -1.0f ? 1e-30 : 0.0);
}

/// The seconds from the barrier `t0` (this rank's MPI_Wtime right after it) to the end of a collective on the
/// slowest rank: each rank's own time, the largest of them (MPI_Allreduce MAX, after the timed call). A
/// collective ends when every member has its result, which is what the timing model prices (a collective step
/// of TimingPlan.h); rank 0's clock alone missed the broadcast half of OpenMPI's 2-rank in-place
/// MPI_Iallreduce: at 20 Mbit/s on bench/cluster's link rank 0's wait ended one 128 KiB message before rank 1's
/// (88 against 141 ms, loaded, 2026-12-08), so the quiet run's `all_reduces` priced the tied all-reduce at
/// 58.2 ms instead of about 115 and every plan of it came out 50 ms too fast (bench/README.md, issue 25).
static double slowestRankSeconds(double t0) {
  double mine = MPI_Wtime() - t0, slowest = mine;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/// The median over `reps` runs of one collective that `start` posts (its request) and MPI_Wait completes, each
/// run after a barrier and timed until the collective has ended on every rank (slowestRankSeconds); `after` runs
/// after each (untimed).
static double medianCollective(
    int reps, llvm::function_ref<void(MPI_Request *)> start, llvm::function_ref<void()> after = [] {}) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Request request;
    start(&request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    t.push_back(slowestRankSeconds(t0));
    after();
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// The median seconds of one all-reduce of `bytes` bytes per rank as the CPU target's runtime runs it
/// (`ptrain_all_reduce_start` / `ptrain_compressed_all_reduce_start`: MPI_Iallreduce in place on f32 with
/// MPI_SUM, then MPI_Wait), over `reps` runs each started after a barrier, until it has ended on every rank
/// (slowestRankSeconds); every rank takes part. `bytes` is rounded up to whole floats.
static double medianAllReduce(std::vector<float> &buf, int bytes, int reps) {
  int count = std::max(1, (bytes + 3) / 4);
  return medianCollective(
      reps,
      [&](MPI_Request *request) {
        MPI_Iallreduce(MPI_IN_PLACE, buf.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, request);
      },
      // Keep the values finite over the repeats (each all-reduce doubles them).
      [&] { std::fill(buf.begin(), buf.begin() + count, 1.0f); });
}

/// The median seconds of one all-to-all in which each of the 2 ranks sends `bytes` bytes in all (bytes / 2 to each
/// rank, itself included), as the runtime's cast codec runs its first round (MPI_Ialltoall of MPI_BYTE, then
/// MPI_Wait), over `reps` runs each after a barrier, until it has ended on every rank (slowestRankSeconds). `bytes`
/// is rounded up to an even count.
static double medianAllToAll(std::vector<char> &buf, std::vector<char> &received, int bytes, int reps) {
  int each = std::max(1, (bytes + 1) / 2);
  return medianCollective(reps, [&](MPI_Request *request) {
    MPI_Ialltoall(buf.data(), each, MPI_BYTE, received.data(), each, MPI_BYTE, MPI_COMM_WORLD, request);
  });
}

/// The median seconds of one all-gather in which each rank contributes `bytes` bytes, as the runtime's
/// compressed collectives run it (MPI_Iallgather of MPI_BYTE, then MPI_Wait), over `reps` runs each after a
/// barrier, until it has ended on every rank (slowestRankSeconds).
static double medianAllGather(std::vector<char> &buf, std::vector<char> &gathered, int bytes, int reps) {
  return medianCollective(reps, [&](MPI_Request *request) {
    MPI_Iallgather(buf.data(), bytes, MPI_BYTE, gathered.data(), bytes, MPI_BYTE, MPI_COMM_WORLD, request);
  });
}

/// The byte counts of an internal comma-separated size list (`option` names it in the error rank 0 prints);
/// false on an entry that is not an integer >= 1.
static bool parseSizes(llvm::StringRef list, llvm::StringRef option, int rank, std::vector<int> &out) {
  llvm::SmallVector<llvm::StringRef> parts;
  list.split(parts, ',', -1, false);
  for (llvm::StringRef part : parts) {
    int bytes = 0;
    if (part.getAsInteger(10, bytes) || bytes < 1) {
      if (rank == 0)
        llvm::errs() << "ptrain-calibrate --pingpong: bad " << option << " entry '" << part << "'\n";
      return false;
    }
    out.push_back(bytes);
  }
  return true;
}

static int runPingpong() {
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0)
      llvm::errs() << "ptrain-calibrate --pingpong: needs exactly 2 ranks, got " << size << "\n";
    MPI_Finalize();
    return 1;
  }
  std::vector<int> sizes, reduceSizes, gatherSizes, toAllSizes;
  if (!parseSizes(pingpongSizes, "--pingpong-sizes", rank, sizes) ||
      !parseSizes(allReduceSizes, "--all-reduce-sizes", rank, reduceSizes) ||
      !parseSizes(allGatherSizes, "--all-gather-sizes", rank, gatherSizes) ||
      !parseSizes(allToAllSizes, "--all-to-all-sizes", rank, toAllSizes)) {
    MPI_Finalize();
    return 1;
  }
  int largest = pingpongBytes;
  for (int b : sizes)
    largest = std::max(largest, b);
  std::vector<char> buf(largest, 1), recv(largest, 0);
  const int reps = std::max(1, pingpongReps.getValue());
  if (!llvm::is_contained(sizes, pingpongBytes.getValue()))
    sizes.push_back(pingpongBytes);
  double small = medianExchange(rank, buf, recv, 1, 2 * reps, /*duplex=*/false);
  double large = 0;
  // The compute stand-in's seconds per pass (the median of 11 runs of 200 passes), for the overhead runs.
  std::vector<double> passes;
  float sink = 0;
  for (int i = 0; i < 11; ++i) {
    double t0 = MPI_Wtime();
    sink += spin(200);
    passes.push_back((MPI_Wtime() - t0) / 200);
  }
  std::sort(passes.begin(), passes.end());
  double perIteration = std::max(1e-9, passes[passes.size() / 2]) + (sink == -1.0f ? 1e-30 : 0.0);
  MPI_Bcast(&perIteration, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  // The all-reduces at the plan's sizes (the link's `all_reduces`, Cluster.h).
  json::Array reduceSamples;
  {
    int largestReduce = 4;
    for (int b : reduceSizes)
      largestReduce = std::max(largestReduce, b);
    std::vector<float> reduceBuf((largestReduce + 3) / 4, 1.0f);
    for (int bytes : reduceSizes)
      reduceSamples.push_back(json::Object{{"bytes", bytes}, {"seconds", medianAllReduce(reduceBuf, bytes, reps)}});
  }
  // The all-gathers of the compressed collectives' codes at the plan's sizes (the link's `all_gathers`).
  json::Array gatherSamples;
  {
    int largestGather = 1;
    for (int b : gatherSizes)
      largestGather = std::max(largestGather, b);
    std::vector<char> gatherBuf(largestGather, 1), gathered(2 * static_cast<size_t>(largestGather), 0);
    for (int bytes : gatherSizes)
      gatherSamples.push_back(
          json::Object{{"bytes", bytes}, {"seconds", medianAllGather(gatherBuf, gathered, bytes, reps)}});
  }
  // The all-to-alls of the cast codec's first round at the plan's sizes (the link's `all_to_alls`).
  json::Array toAllSamples;
  {
    int largestToAll = 2;
    for (int b : toAllSizes)
      largestToAll = std::max(largestToAll, b + 1);
    std::vector<char> toAllBuf(largestToAll, 1), received(largestToAll, 0);
    for (int bytes : toAllSizes)
      toAllSamples.push_back(
          json::Object{{"bytes", bytes}, {"seconds", medianAllToAll(toAllBuf, received, bytes, reps)}});
  }
  json::Array samples;
  for (int bytes : sizes) {
    double roundTrip = medianExchange(rank, buf, recv, bytes, reps, /*duplex=*/false);
    if (bytes == pingpongBytes)
      large = roundTrip;
    double duplex = medianExchange(rank, buf, recv, bytes, reps, /*duplex=*/true);
    // The overhead on each side: rank 1's figure comes to rank 0.
    double overhead[2] = {messageOverhead(rank, buf, bytes, roundTrip / 2, perIteration, reps), 0};
    if (rank == 1)
      MPI_Send(&overhead[0], 1, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
    else
      MPI_Recv(&overhead[1], 1, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    samples.push_back(json::Object{{"bytes", bytes},
                                   {"seconds", roundTrip / 2},
                                   {"duplex_seconds", duplex},
                                   {"send_overhead_s", overhead[0]},
                                   {"recv_overhead_s", overhead[1]}});
  }
  if (rank == 0)
  {
    json::Object result;
    result["latency_s"] = small / 2;
    result["rate_bytes_per_s"] = pingpongBytes / (large / 2);
    result["bytes"] = pingpongBytes.getValue();
    result["large_one_way_s"] = large / 2;
    result["round_trips"] = reps;
    result["samples"] = std::move(samples);
    result["all_reduce_samples"] = std::move(reduceSamples);
    result["all_gather_samples"] = std::move(gatherSamples);
    result["all_to_all_samples"] = std::move(toAllSamples);
    llvm::outs() << json::Value(std::move(result)) << "\n";
  }
  MPI_Finalize();
  return 0;
}

/// Runs this binary's --pingpong under mpirun on `hosts` over the message sizes `sizes`; the JSON line of rank 0.
static llvm::Expected<json::Value> measureLink(const char *argv0, const std::vector<int64_t> &sizes,
                                               const std::set<int64_t> &reduceSizes,
                                               const std::set<int64_t> &gatherSizes,
                                               const std::set<int64_t> &toAllSizes) {
  std::string self = llvm::sys::fs::getMainExecutable(argv0, reinterpret_cast<void *>(&measureLink));
  auto mpirun = llvm::sys::findProgramByName("mpirun");
  if (!mpirun)
    return llvm::createStringError(mpirun.getError(), "--hosts: mpirun not found");
  llvm::SmallString<128> out;
  llvm::sys::fs::createTemporaryFile("ptrain-calibrate-pingpong", "json", out);
  std::vector<std::string> args = {*mpirun, "-np", "2", "--host", hosts};
  llvm::SmallVector<llvm::StringRef> extra;
  llvm::StringRef(mpirunArgs).split(extra, ' ', -1, false);
  for (llvm::StringRef a : extra)
    args.push_back(a.str());
  std::string sizeList;
  for (int64_t b : sizes)
    sizeList += (sizeList.empty() ? "" : ",") + std::to_string(b);
  args.insert(args.end(), {self, "--pingpong", "--pingpong-bytes=" + std::to_string(pingpongBytes.getValue()),
                           "--pingpong-reps=" + std::to_string(pingpongReps.getValue()),
                           "--pingpong-sizes=" + sizeList});
  if (!reduceSizes.empty()) {
    std::string reduceList;
    for (int64_t b : reduceSizes)
      reduceList += (reduceList.empty() ? "" : ",") + std::to_string(b);
    args.push_back("--all-reduce-sizes=" + reduceList);
  }
  if (!gatherSizes.empty()) {
    std::string gatherList;
    for (int64_t b : gatherSizes)
      gatherList += (gatherList.empty() ? "" : ",") + std::to_string(b);
    args.push_back("--all-gather-sizes=" + gatherList);
  }
  if (!toAllSizes.empty()) {
    std::string toAllList;
    for (int64_t b : toAllSizes)
      toAllList += (toAllList.empty() ? "" : ",") + std::to_string(b);
    args.push_back("--all-to-all-sizes=" + toAllList);
  }
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(out), std::nullopt};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(*mpirun, refs, std::nullopt, redirects, 0, 0, &error);
  auto text = llvm::MemoryBuffer::getFile(out);
  llvm::sys::fs::remove(out);
  if (rc != 0 || !text)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--hosts " + hosts + ": the ping-pong under mpirun failed (exit " +
                                       std::to_string(rc) + ")" + (error.empty() ? "" : ": " + error));
  llvm::SmallVector<llvm::StringRef> lines;
  (*text)->getBuffer().split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines)
    if (line.starts_with("{"))
      return json::parse(line);
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "--hosts " + hosts + ": no result line");
}

/// The collective samples `key` ([{bytes, seconds}], bytes >= 1, seconds > 0) of the ping-pong's result into
/// `samples` (for the fit) and `raw` (kept in calibration.link); false on a bad entry; none: true, nothing added.
static bool readCollectiveSamples(const json::Object &result, llvm::StringRef key, std::vector<MessageTime> &samples,
                                  json::Array &raw) {
  const json::Array *entries = result.getArray(key);
  if (!entries)
    return true;
  for (const json::Value &e : *entries) {
    const json::Object *m = e.getAsObject();
    auto bytes = m ? m->getNumber("bytes") : std::nullopt;
    auto secs = m ? m->getNumber("seconds") : std::nullopt;
    if (!bytes || !secs || *bytes < 1 || *secs <= 0)
      return false;
    samples.push_back({*bytes, *secs});
    raw.push_back(json::Object{{"bytes", static_cast<int64_t>(*bytes)}, {"seconds", *secs}});
  }
  return true;
}

/// The eager limit of the MPI the ping-pong runs (the link's `eager_limit_bytes`, Cluster.h): OpenMPI's TCP BTL
/// `btl_tcp_eager_limit`, from `--mca btl_tcp_eager_limit N` in --mpirun-args where given, else from
/// `ompi_info --parsable --param btl tcp --level 9` (which reads OMPI_MCA_* from the environment as mpirun does;
/// 65536 B by default in OpenMPI 4.1). Read, not measured: the receiver's wait in the overhead sweep jumps past
/// it (bench/README.md, "The per-message overhead": 0.04 ms at 64 KiB, 0.26 ms at 128 KiB at 1 Gbit/s), but
/// the sweep has only the plan's sizes, too few to place the jump. Returns {0, why} where neither says (another
/// MPI, no TCP BTL): the field is then not written.
static std::pair<int64_t, std::string> readEagerLimit() {
  llvm::SmallVector<llvm::StringRef> args;
  llvm::StringRef(mpirunArgs).split(args, ' ', -1, false);
  for (size_t i = 0; i + 2 < args.size(); ++i) {
    int64_t bytes = 0;
    if ((args[i] == "--mca" || args[i] == "-mca") && args[i + 1] == "btl_tcp_eager_limit" &&
        !args[i + 2].getAsInteger(10, bytes) && bytes >= 1)
      return {bytes, "--mpirun-args: --mca btl_tcp_eager_limit"};
  }
  auto ompiInfo = llvm::sys::findProgramByName("ompi_info");
  if (!ompiInfo)
    return {0, "no ompi_info on PATH (not OpenMPI): no eager limit written"};
  llvm::SmallString<128> out;
  if (llvm::sys::fs::createTemporaryFile("ptrain-calibrate-ompi-info", "txt", out))
    return {0, "cannot create a temporary file for ompi_info"};
  llvm::StringRef refs[] = {*ompiInfo, "--parsable", "--param", "btl", "tcp", "--level", "9"};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(out), llvm::StringRef("")};
  int rc = llvm::sys::ExecuteAndWait(*ompiInfo, refs, std::nullopt, redirects);
  auto text = llvm::MemoryBuffer::getFile(out);
  llvm::sys::fs::remove(out);
  if (rc != 0 || !text)
    return {0, "ompi_info failed (exit " + std::to_string(rc) + "): no eager limit written"};
  llvm::SmallVector<llvm::StringRef> lines;
  (*text)->getBuffer().split(lines, '\n', -1, false);
  const llvm::StringRef key = "mca:btl:tcp:param:btl_tcp_eager_limit:value:";
  for (llvm::StringRef line : lines) {
    int64_t bytes = 0;
    if (line.consume_front(key) && !line.trim().getAsInteger(10, bytes) && bytes >= 1)
      return {bytes, "ompi_info --parsable --param btl tcp --level 9: btl_tcp_eager_limit"};
  }
  return {0, "ompi_info lists no btl_tcp_eager_limit (no TCP BTL): no eager limit written"};
}

//===--- Provenance --------------------------------------------------------===//

static std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (llvm::StringRef(line).starts_with("model name"))
      return llvm::StringRef(line).split(':').second.trim().str();
  return "unknown";
}

static std::string isaName() {
  const char *name = nullptr;
  if (ptrain_cpu_isa(&name) != PTRAIN_OK || !name)
    return "unknown";
  return name;
}

static std::string nowUtc() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

//===--- Main --------------------------------------------------------------===//

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  std::string command;
  for (int i = 0; i < argc; ++i)
    command += (i ? " " : "") + std::string(argv[i]);
  cl::HideUnrelatedOptions(calibrateOptions);
  cl::ParseCommandLineOptions(argc, argv, "ptrain-calibrate: measure this machine for the timing model\n");
  if (pingpongMode)
    return runPingpong();
  // Every option is checked before anything is measured or written.
  if (planPath.empty() || outputPath.empty())
    return fail("usage: ptrain-calibrate PLAN -o CLUSTER.json (PLAN: a plan folder or its step.mlir)");
  if (repeats < 1 || repeats > 1000)
    return fail("--repeats " + llvm::Twine(repeats.getValue()) + ": must be between 1 and 1000");
  if (!(efficiency > 0 && efficiency <= 1))
    return fail("--efficiency " + std::to_string(efficiency.getValue()) + ": must be in (0, 1]");
  if (numNodes < 1)
    return fail("--nodes " + llvm::Twine(numNodes.getValue()) + ": must be at least 1");
  if (maxReduceShapes < 0)
    return fail("--max-reduce-shapes " + llvm::Twine(maxReduceShapes.getValue()) + ": must be >= 0");
  if (pingpongBytes < 1 || pingpongBytes > (1 << 30))
    return fail("--pingpong-bytes " + llvm::Twine(pingpongBytes.getValue()) +
                ": must be between 1 and 1073741824 (1 GiB)");
  if (pingpongReps < 1 || pingpongReps > 1000)
    return fail("--pingpong-reps " + llvm::Twine(pingpongReps.getValue()) + ": must be between 1 and 1000");
  if (!hosts.empty()) {
    auto [a, b] = llvm::StringRef(hosts).split(',');
    if (a.trim().empty() || b.trim().empty() || b.contains(','))
      return fail("--hosts '" + hosts + "': must be two host names A,B");
  } else if (!mpirunArgs.empty()) {
    return fail("--mpirun-args: only with --hosts (the ping-pong is the only thing run under mpirun)");
  }
  if (linkOnly && (hosts.empty() || basePath.empty()))
    return fail("--link-only: needs --hosts (the link to measure) and --base (the calibrated file whose other "
                "figures are kept)");
  {
    llvm::SmallString<256> dir(outputPath.getValue());
    llvm::sys::path::remove_filename(dir);
    if (!dir.empty() && !llvm::sys::fs::is_directory(dir))
      return fail("-o " + outputPath + ": folder '" + dir + "' does not exist");
    if (llvm::sys::fs::is_directory(outputPath.getValue()))
      return fail("-o " + outputPath + ": is a folder, not a file");
  }
  // --base: read and checked now (a cluster file the timing model reads), kept for the output.
  std::optional<json::Value> base;
  if (!basePath.empty()) {
    auto buffer = llvm::MemoryBuffer::getFile(basePath);
    if (!buffer)
      return fail("--base " + basePath + ": " + buffer.getError().message());
    auto parsed = json::parse((*buffer)->getBuffer());
    if (!parsed)
      return fail("--base " + basePath + ": " + llvm::toString(parsed.takeError()));
    if (auto checked = parseCluster(*parsed); !checked)
      return fail("--base " + basePath + ": " + llvm::toString(checked.takeError()));
    if (linkOnly && !parsed->getAsObject()->getObject("calibration"))
      return fail("--link-only: --base " + basePath + " has no calibration (run ptrain-calibrate without "
                  "--link-only first)");
    base = std::move(*parsed);
  }
  std::string file = planPath;
  if (llvm::sys::fs::is_directory(file))
    file = (llvm::Twine(file) + "/step.mlir").str();

  DialectRegistry registry;
  registerPTrainDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  std::string includeError;
  if (sourceMgr.AddIncludeFile(file, llvm::SMLoc(), includeError) == 0)
    return fail("cannot read '" + file + "'");
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("cannot parse '" + file + "'");

  // The plan's shapes.
  std::map<std::vector<int64_t>, int64_t> gemms; // {batch, m, n, k} -> count
  // The same shapes with 16-bit operands, per element type: "bf16" / "f16" -> {batch, m, n, k} -> count.
  std::map<std::string, std::map<std::vector<int64_t>, int64_t>> halfGemms;
  // tpSites: the tensors of the tensor-parallel all-reduces (Megatron's g, `ptrain.tp_all_reduce`), where
  // mcbench's and auto's TP-site codecs run.
  std::map<std::vector<int64_t>, RankedTensorType> sends, reduces, tpSites;
  // The message sizes the plan sends (the link sweep): boundary tensors, and the messages of all-reduces (a
  // ring's bytes / n; OpenMPI's in-place binomial, the CPU target's algorithm, sends the whole buffer).
  std::set<int64_t> messageSizes;
  // The largest pipeline send (the size at which crossing sends are measured, `crossing_slowdown`).
  int64_t largestSend = 0;
  // The bytes per rank of every all-reduce of the plan (dp buckets, tied, loss, TP sites), measured whole as
  // the link's `all_reduces` (the ping-pong runs 2 ranks, so the table prices all-reduces over 2 ranks).
  std::set<int64_t> allReduceBytes;
  std::map<int64_t, RankedTensorType> zeroChunks; // ZeRO-1 reduce-scatter chunks over 2 ranks, by elements
  SymbolTable symbols(*module);
  module->walk([&](Operation *op) {
    if (auto send = dyn_cast<SendStartOp>(op))
      if (auto t = dyn_cast<RankedTensorType>(send.getInput().getType()); t && t.hasStaticShape())
      {
        messageSizes.insert(static_cast<int64_t>(getTensorBytes(t)));
        largestSend = std::max(largestSend, static_cast<int64_t>(getTensorBytes(t)));
      }
    if (auto ar = dyn_cast<AllReduceStartOp>(op)) {
      auto t = dyn_cast<RankedTensorType>(ar.getInput().getType());
      auto grid = symbols.lookup<GridOp>(ar.getGrid());
      int64_t n = grid ? grid.getGroupSize(ar.getGridAxes()) : 1;
      if (t && t.hasStaticShape() && n > 1) {
        messageSizes.insert(std::max<int64_t>(1, static_cast<int64_t>(getTensorBytes(t)) / n));
        messageSizes.insert(static_cast<int64_t>(getTensorBytes(t)));
        allReduceBytes.insert(std::max<int64_t>(1, static_cast<int64_t>(getTensorBytes(t))));
      }
    }
    // ZeRO-1's reduce-scatter over 2 ranks: compressed, an all-to-all of each chunk's codes (CodecCosts.h
    // getZeroReduceScatterCodecWork), timed for the link's `all_to_alls` below.
    if (auto rs = dyn_cast<ReduceScatterStartOp>(op)) {
      auto t = dyn_cast<RankedTensorType>(rs.getInput().getType());
      auto grid = symbols.lookup<GridOp>(rs.getGrid());
      int64_t n = grid ? grid.getGroupSize(rs.getGridAxes()) : 1;
      if (t && t.hasStaticShape() && n == 2 && t.getNumElements() >= 2 * n)
        zeroChunks[t.getNumElements() / n] =
            RankedTensorType::get({t.getNumElements() / n}, Float32Type::get(op->getContext()));
    }
    if (auto tp = dyn_cast<TPAllReduceOp>(op)) {
      auto t = dyn_cast<RankedTensorType>(tp.getInput().getType());
      auto grid = symbols.lookup<GridOp>(tp.getGrid());
      int64_t n = grid && grid.getAxisIndex(tp.getAxis()) ? grid.getAxisSize(tp.getAxis()) : 1;
      if (t && t.hasStaticShape() && n > 1 && t.getNumElements() > 1) {
        messageSizes.insert(std::max<int64_t>(1, static_cast<int64_t>(getTensorBytes(t)) / n));
        messageSizes.insert(static_cast<int64_t>(getTensorBytes(t)));
        allReduceBytes.insert(static_cast<int64_t>(getTensorBytes(t)));
        tpSites[t.getShape().vec()] = RankedTensorType::get(t.getShape(), Float32Type::get(op->getContext()));
      }
    }
    if (auto mm = dyn_cast<MatmulOp>(op)) {
      auto a = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
      auto c = dyn_cast<RankedTensorType>(op->getResult(0).getType());
      if (!a || !c || !a.hasStaticShape() || !c.hasStaticShape() || c.getRank() < 2 || a.getRank() < 2)
        return;
      int64_t m = c.getDimSize(c.getRank() - 2), n = c.getDimSize(c.getRank() - 1);
      int64_t k = a.getDimSize(a.getRank() - 1), batch = c.getNumElements() / (m * n);
      ++gemms[{batch, m, n, k}];
      if (Type e = a.getElementType(); e.isBF16() || e.isF16())
        ++halfGemms[e.isBF16() ? "bf16" : "f16"][{batch, m, n, k}];
      return;
    }
    llvm::StringRef name = op->getName().getStringRef();
    // A 16-bit plan sends its uncompressed messages as bf16 / f16, but a codec on that link compresses the
    // fp32 value (docs/MixedPrecision.md): the codec kernels are timed on the fp32 tensor of the same shape.
    if ((name == "ptrain.send_start" || name == "ptrain.all_reduce_start") && op->getNumOperands() > 0)
      if (auto t = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
          t && t.hasStaticShape() && (t.getElementType().isF32() || t.getElementType().isBF16() ||
                                      t.getElementType().isF16()) && t.getNumElements() > 1)
        (name == "ptrain.send_start" ? sends : reduces)[t.getShape().vec()] =
            RankedTensorType::get(t.getShape(), Float32Type::get(op->getContext()));
  });
  if (gemms.empty())
    return fail("'" + file + "' has no ptrain.matmul: give a compiled training step (a plan folder's step.mlir)");

  // GEMM throughput at the plan's shapes.
  json::Array gemmShapes;
  double flops = 0, seconds = 0;
  for (const auto &[shape, count] : gemms) {
    if (linkOnly)
      break;
    int64_t batch = shape[0], m = shape[1], n = shape[2], k = shape[3];
    std::vector<float> a = randomFloats(batch * m * k, 1), b = randomFloats(k * n, 2), c(batch * m * n);
    ptrain_status_t st = PTRAIN_OK;
    double t = best([&] {
      st = ptrain_gemm_f32(0, 0, batch, m, n, k, 1.0f, a.data(), m * k, b.data(), 0, 0.0f, c.data(), m * n);
    });
    if (st != PTRAIN_OK)
      return fail(llvm::Twine("ptrain_gemm_f32: ") + ptrain_last_error());
    double f = 2.0 * batch * m * n * k;
    flops += f * count;
    seconds += t * count;
    gemmShapes.push_back(json::Object{{"batch", batch}, {"m", m}, {"n", n}, {"k", k}, {"count", count},
                                      {"seconds", t}, {"flops_per_s", f / t}});
  }
  const double gemmRate = linkOnly ? 0 : flops / seconds;

  // 16-bit GEMM throughput at the plan's 16-bit shapes (operands as uint16_t bits, fp32 C).
  std::map<std::string, double> halfRates; // "bf16" / "f16" -> FLOP/s
  for (const auto &[dtype, shapes] : halfGemms) {
    if (linkOnly)
      break;
    auto gemm = dtype == "bf16" ? ptrain_gemm_bf16 : ptrain_gemm_f16;
    double halfFlops = 0, halfSeconds = 0;
    for (const auto &[shape, count] : shapes) {
      int64_t batch = shape[0], m = shape[1], n = shape[2], k = shape[3];
      std::vector<float> a32 = randomFloats(batch * m * k, 1), b32 = randomFloats(k * n, 2);
      std::vector<uint16_t> a(a32.size()), b(b32.size());
      auto cast = dtype == "bf16" ? ptrain_cast_f32_bf16 : ptrain_cast_f32_f16;
      ptrain_status_t st = cast(a32.data(), static_cast<int64_t>(a32.size()), a.data());
      if (st == PTRAIN_OK)
        st = cast(b32.data(), static_cast<int64_t>(b32.size()), b.data());
      if (st != PTRAIN_OK)
        return fail("ptrain_cast_f32_" + dtype + ": " + ptrain_last_error());
      std::vector<float> c(batch * m * n);
      double t = best([&] { st = gemm(0, 0, batch, m, n, k, 1.0f, a.data(), m * k, b.data(), 0, 0.0f, c.data(), m * n); });
      if (st != PTRAIN_OK)
        return fail("ptrain_gemm_" + dtype + ": " + ptrain_last_error());
      double f = 2.0 * batch * m * n * k;
      halfFlops += f * count;
      halfSeconds += t * count;
      gemmShapes.push_back(json::Object{{"dtype", dtype}, {"batch", batch}, {"m", m}, {"n", n}, {"k", k},
                                        {"count", count}, {"seconds", t}, {"flops_per_s", f / t}});
    }
    halfRates[dtype] = halfFlops / halfSeconds;
  }

  // Memory bandwidth: a 64 MiB copy (read + write).
  double bandwidth = 0;
  if (!linkOnly) {
    const size_t copyBytes = size_t(64) << 20;
    std::vector<char> src(copyBytes, 1), dst(copyBytes, 0);
    double copy = best([&] { std::memcpy(dst.data(), src.data(), copyBytes); });
    bandwidth = 2.0 * copyBytes / copy;
  }

  // Codec kernels on the plan's sent and all-reduced tensors (pipeline sends, TP sites, the largest dp ones).
  // Appends the tensor types of a shape -> type map that `to` does not hold yet.
  auto addTypes = [](std::vector<RankedTensorType> &to, const std::map<std::vector<int64_t>, RankedTensorType> &from) {
    for (const auto &[shape, type] : from)
      if (!llvm::is_contained(to, type))
        to.push_back(type);
  };
  std::vector<RankedTensorType> shapes;
  addTypes(shapes, sends);
  addTypes(shapes, tpSites);
  std::vector<RankedTensorType> largest;
  for (const auto &[s, t] : reduces)
    largest.push_back(t);
  llvm::sort(largest, [](RankedTensorType x, RankedTensorType y) { return x.getNumElements() > y.getNumElements(); });
  for (size_t i = 0; i < largest.size() && static_cast<int>(i) < maxReduceShapes; ++i)
    if (!llvm::is_contained(shapes, largest[i]))
      shapes.push_back(largest[i]);
  std::vector<CodecAttrInterface> codecs;
  for (const CodecCandidate &c : getCodecCandidates()) {
    auto codec = parseCodecSpec(&context, c.spec, "the candidate table", [&] { return emitError(module->getLoc()); });
    if (failed(codec))
      return 1;
    codecs.push_back(*codec);
  }
  // The all-gathers of the compressed collectives over 2 ranks (CodecCosts.h getDataParallelCodecWork: top-k's,
  // quantization's and TAH-Quant's codes gathered whole; casts' fp32 chunks of 4 N / 2 bytes), for every
  // candidate codec on every TP site and all-reduced tensor: the link's `all_gathers` (schema version 3).
  std::set<int64_t> allGatherBytes;
  // The casts' first round, an all-to-all of their 16-bit codes (each rank sends all of them, half to the other):
  // the link's `all_to_alls` (schema version 4).
  std::set<int64_t> allToAllBytes;
  {
    std::vector<RankedTensorType> collectiveTypes;
    addTypes(collectiveTypes, tpSites);
    addTypes(collectiveTypes, reduces);
    for (RankedTensorType type : collectiveTypes)
      for (CodecAttrInterface codec : codecs) {
        if (isa<PowerSGDAttr, RandKAttr, LinearAEAttr>(codec) ||
            failed(codec.verifyForType([] { return InFlightDiagnostic(); }, type)))
          continue;
        if (isa<CastAttr>(codec)) {
          allGatherBytes.insert(std::max<int64_t>(1, 4 * type.getNumElements() / 2));
          int64_t codes = 0;
          for (Type code : codec.getCodeTypes(type))
            codes += static_cast<int64_t>(getTensorBytes(code));
          allToAllBytes.insert(std::max<int64_t>(2, codes));
          continue;
        }
        int64_t bytes = 0;
        for (Type code : codec.getCodeTypes(type))
          bytes += static_cast<int64_t>(getTensorBytes(code));
        allGatherBytes.insert(std::max<int64_t>(1, bytes));
      }
    // ZeRO-1's compressed reduce-scatter: each rank sends both chunks' codes (2 x the chunk's code bytes).
    for (const auto &[numel, chunk] : zeroChunks)
      for (CodecAttrInterface codec : codecs) {
        if (isa<PowerSGDAttr, LinearAEAttr>(codec) ||
            failed(codec.verifyForType([] { return InFlightDiagnostic(); }, chunk)))
          continue;
        int64_t bytes = 0;
        for (Type code : codec.getCodeTypes(chunk))
          bytes += static_cast<int64_t>(getTensorBytes(code));
        allToAllBytes.insert(std::max<int64_t>(2, 2 * bytes));
      }
  }
  json::Array codecTimes;
  for (RankedTensorType type : shapes) {
    std::vector<CodecAttrInterface> here = codecs;
    auto nm = MatrixViewAttr::getMatrixShape(MatrixViewAttr(), type, nullptr);
    for (int64_t r : getDefaultPowerSGDRanks())
      if (succeeded(nm) && r < std::min(nm->first, nm->second))
        here.push_back(PowerSGDAttr::get(&context, r, BoolAttr(), MatrixViewAttr()));
    const int64_t numel = type.getNumElements();
    std::vector<float> g = randomFloats(numel, 3), out(numel);
    for (CodecAttrInterface codec : here) {
      if (failed(codec.verifyForType([] { return InFlightDiagnostic(); }, type)))
        continue;
      // Each code tensor is one message of a compressed send (LowerToRuntime's sendCompressible).
      for (Type code : codec.getCodeTypes(type))
        messageSizes.insert(std::max<int64_t>(1, static_cast<int64_t>(getTensorBytes(code))));
      if (linkOnly)
        continue;
      auto d = interp::getCodecDescriptor(codec, type);
      if (!d)
        return fail("codec descriptor: " + llvm::toString(d.takeError()));
      int64_t bytes = 0;
      if (ptrain_codec_code_bytes(&*d, &bytes) != PTRAIN_OK)
        return fail(llvm::Twine("ptrain_codec_code_bytes: ") + ptrain_last_error());
      std::vector<unsigned char> code(bytes);
      std::vector<float> state = randomFloats(d->kind == PTRAIN_CODEC_POWERSGD ? d->cols * d->rank : 1, 4);
      int64_t counter = 0;
      void *statePtr = d->kind == PTRAIN_CODEC_POWERSGD && d->warm_start ? static_cast<void *>(state.data())
                       : d->kind == PTRAIN_CODEC_RANDK                   ? static_cast<void *>(&counter)
                                                                        : nullptr;
      for (bool ef : {true, false}) {
        std::vector<float> residual(numel, 0.0f);
        ptrain_status_t st = PTRAIN_OK;
        double enc = best([&] {
          st = ptrain_codec_encode(&*d, g.data(), ef ? residual.data() : nullptr, statePtr, code.data());
        });
        if (st != PTRAIN_OK)
          return fail(llvm::Twine("ptrain_codec_encode: ") + ptrain_last_error());
        double dec = best([&] { st = ptrain_codec_decode(&*d, code.data(), statePtr, out.data()); });
        if (st != PTRAIN_OK)
          return fail(llvm::Twine("ptrain_codec_decode: ") + ptrain_last_error());
        std::string text;
        llvm::raw_string_ostream(text) << Attribute(codec);
        codecTimes.push_back(json::Object{{"codec", text},
                                          {"shape", json::Array(type.getShape())},
                                          {"error_feedback", ef},
                                          {"encode_s", enc},
                                          {"decode_s", dec}});
      }
    }
  }

  std::optional<json::Value> link;
  std::vector<int64_t> sweep;
  if (!hosts.empty()) {
    // The sweep: the plan's sizes up to --pingpong-bytes (a size within 5% of the previous one adds nothing),
    // then --pingpong-bytes itself.
    for (int64_t b : messageSizes)
      if (b > 1 && b < pingpongBytes && (sweep.empty() || b > sweep.back() * 1.05))
        sweep.push_back(b);
    sweep.push_back(pingpongBytes);
    auto measured = measureLink(argv[0], sweep, allReduceBytes, allGatherBytes, allToAllBytes);
    if (!measured)
      return fail(llvm::toString(measured.takeError()));
    link = std::move(*measured);
  }

  // The cluster file: the base's fields with the measured ones.
  json::Value root = base ? std::move(*base) : json::Object{
      {"name", "calibrated"},
      {"description", "ptrain-calibrate: nodes of one CPU core of this machine each"},
      {"nodes", std::max(1, numNodes.getValue())},
      {"gpus_per_node", 1},
      {"gpu", json::Object{{"name", "cpu-core"}, {"memory_capacity", 8e9}}},
      {"intra_node", json::Object{{"bandwidth", bandwidth}, {"latency", 1e-6}}},
      {"inter_node", json::Object{{"bandwidth", bandwidth}, {"latency", 1e-6}}},
      {"axis_order", json::Array{"tp", "dp", "pp"}}};
  json::Object &o = *root.getAsObject();
  json::Object *gpu = o.getObject("gpu");
  if (!linkOnly) {
    json::Object peak;
    if (json::Object *old = gpu->getObject("peak_flops"))
      peak = *old;
    peak["f32"] = gemmRate;
    for (const auto &[dtype, rate] : halfRates)
      peak[dtype] = rate;
    (*gpu)["peak_flops"] = std::move(peak);
    (*gpu)["f32_matmul_dtype"] = "f32";
    (*gpu)["memory_bandwidth"] = bandwidth;
    (*gpu)["efficiency"] = efficiency.getValue();
  }
  const size_t numCodecTimes = codecTimes.size();
  json::Object fresh{
      {"provenance", json::Object{{"machine", [] {
                                     struct utsname u;
                                     return uname(&u) == 0 ? std::string(u.nodename) + " (" + u.machine + ")"
                                                           : std::string("unknown");
                                   }()},
                                  {"cpu_model", cpuModel()},
                                  {"isa", isaName()},
                                  {"date", nowUtc()},
                                  {"command", command},
                                  {"plan", file}}},
      {"gemm_flops", gemmRate},
      {"memory_bandwidth", bandwidth},
      {"gemm_shapes", std::move(gemmShapes)},
      {"codecs", std::move(codecTimes)}};
  // --link-only keeps the base's calibration (its GEMM, memory and codec figures) with a new link and
  // provenance.
  json::Object calibration = linkOnly ? *o.getObject("calibration") : std::move(fresh);
  if (linkOnly)
    calibration["provenance"] = std::move(*fresh.get("provenance"));
  if (link) {
    const json::Object *l = link->getAsObject();
    auto rate = l ? l->getNumber("rate_bytes_per_s") : std::nullopt;
    auto latency = l ? l->getNumber("latency_s") : std::nullopt;
    const json::Array *measured = l ? l->getArray("samples") : nullptr;
    if (!rate || !latency || !measured)
      return fail("--hosts: the ping-pong's result has no rate_bytes_per_s / latency_s / samples");
    // The table: the 1-byte time, each swept size's, the large message's; fitted monotone (LinkCost.h).
    // The duplex table (both directions at once, a collective's round) starts at the first swept size.
    std::vector<MessageTime> samples = {{1, *latency}}, duplexSamples, overheadSamples;
    json::Array raw, duplexRaw, overheadRaw;
    for (const json::Value &e : *measured) {
      const json::Object *m = e.getAsObject();
      auto bytes = m ? m->getNumber("bytes") : std::nullopt;
      auto secs = m ? m->getNumber("seconds") : std::nullopt;
      auto duplex = m ? m->getNumber("duplex_seconds") : std::nullopt;
      if (!bytes || !secs || !duplex || *bytes < 1 || *secs <= 0 || *duplex <= 0)
        return fail("--hosts: a bad ping-pong sample");
      auto sendOverhead = m->getNumber("send_overhead_s"), recvOverhead = m->getNumber("recv_overhead_s");
      if (!sendOverhead || !recvOverhead)
        return fail("--hosts: a ping-pong sample without its overhead");
      samples.push_back({*bytes, *secs});
      duplexSamples.push_back({*bytes, *duplex});
      // LogP's o is the sender's figure: its MPI_Wait ends once the kernel holds the data, so what it adds to the
      // compute is the CPU the message costs. The receiver's also holds the part of the transfer that only
      // progresses inside MPI calls (a rendezvous message's rest, over OpenMPI's 64 KiB TCP eager limit) and,
      // on a slow link, the link time the model already prices (20 Mbit/s: 167 ms at 128 KiB, three times the
      // one-way time), so it is kept for people, not fitted. LogP charges the same o at both ends.
      overheadSamples.push_back({*bytes, *sendOverhead});
      overheadRaw.push_back(json::Object{{"bytes", static_cast<int64_t>(*bytes)},
                                         {"send_s", *sendOverhead},
                                         {"recv_s", *recvOverhead}});
      raw.push_back(json::Object{{"bytes", static_cast<int64_t>(*bytes)}, {"seconds", *secs}});
      duplexRaw.push_back(json::Object{{"bytes", static_cast<int64_t>(*bytes)}, {"seconds", *duplex}});
    }
    auto toJson = [](const std::vector<MessageTime> &fit) {
      json::Array table;
      for (const MessageTime &m : fit)
        table.push_back(json::Object{{"bytes", static_cast<int64_t>(m.bytes)}, {"seconds", m.seconds}});
      return table;
    };
    json::Array table = toJson(fitMessageTimes(samples)), duplexTable = toJson(fitMessageTimes(duplexSamples));
    // Half duplex where both ways at once take 1.5x or more the one-way time at the largest size (a full-duplex
    // link: about 1x; one shared rate: 2x).
    const bool halfDuplex = duplexSamples.back().seconds >= 1.5 * samples.back().seconds;
    // The overhead is fitted over the plan's own sizes (the sweep below --pingpong-bytes) up to the MPI's eager
    // limit where there are two or more: the rate measurement's --pingpong-bytes message (1 MiB by default) is
    // larger than anything the plan sends, and above the eager limit a send's time inside MPI includes the
    // rendezvous wait for the link (a transfer that progresses only inside MPI calls), which the timing model
    // prices as the rendezvous stall (eager_limit_bytes): on a slow link those sizes would set the per-byte
    // slope alone (20 Mbit/s, tp = 2: 14 ms of "overhead" on a 128 KiB all-reduce message; bench/README.md).
    const std::pair<int64_t, std::string> eager = readEagerLimit();
    const int64_t eagerLimit = eager.first;
    std::vector<MessageTime> planSizes =
        eagerOverheadSamples(overheadSamples, pingpongBytes, eagerLimit > 0 ? eagerLimit : 0);
    // A slope needs sizes a few KiB apart: fitted to a 2- and a 4-byte sample (a dp plan's loss and counters,
    // all else above the eager limit) 0.15 ms of noise became 34 us per byte, 115 s for a 3.3 MB bucket. Sizes
    // closer than kOverheadSpanBytes give the mean as a per-message constant.
    constexpr double kOverheadSpanBytes = 4096;
    double lo = 0, hi = 0;
    for (size_t i = 0; i < planSizes.size(); ++i) {
      lo = i ? std::min(lo, planSizes[i].bytes) : planSizes[i].bytes;
      hi = i ? std::max(hi, planSizes[i].bytes) : planSizes[i].bytes;
    }
    CpuOverhead overhead;
    if (planSizes.size() >= 2 && hi - lo >= kOverheadSpanBytes) {
      overhead = fitCpuOverhead(planSizes);
    } else if (!planSizes.empty()) {
      double mean = 0;
      for (const MessageTime &m : planSizes)
        mean += m.seconds / planSizes.size();
      overhead = {std::max(0.0, mean), 0};
    } else {
      overhead = fitCpuOverhead(overheadSamples);
    }
    json::Object cpuOverhead{{"per_message_s", overhead.perMessage}, {"per_byte_s", overhead.perByte}};
    json::Object cpuOverheadRaw = cpuOverhead;
    cpuOverheadRaw["samples"] = std::move(overheadRaw);
    cpuOverheadRaw["fit"] = "per size: the median of (MPI_Isend or MPI_Irecv, compute of about twice the one-way "
                            "time, MPI_Wait) minus the median of the compute alone, interleaved; the sender's "
                            "(the receiver's send_s / recv_s kept for people); least-squares line over the plan's "
                            "sizes below --pingpong-bytes "
                            "and below the eager limit, header included (their mean where they span under 4 KiB), "
                            "clamped >= 0 (fitCpuOverhead, LinkCost.h)";
    o["inter_node"] = json::Object{{"bandwidth", *rate},
                                   {"latency", *latency},
                                   {"messages", json::Array(table)},
                                   {"duplex_messages", json::Array(duplexTable)},
                                   {"half_duplex", halfDuplex},
                                   {"cpu_overhead", std::move(cpuOverhead)}};
    // Crossing sends (schema version 2): both ways at once against one way at the rate measurement's size
    // (--pingpong-bytes, the sweep's largest), at least 1. crossing_slowdown is how the link's rate is shared
    // between its two directions, so it is measured where the link's rate bounds the transfer. At the plan's
    // sizes it need not: on bench/cluster's 1 Gbit/s link a 128 KiB message fits tbf's burst and takes half its
    // time at the rate (0.55 ms one way), and both ways at once take 2x (1.09 ms: the two copies on each rank's
    // core), which the pipeline's sends did not see (the quiet run of 2026-12-07 20:33 predicted the uncompressed
    // plan +2.1% with k = 1 and +4.6% with that 1.99; bench/README.md "Collective rounds and exact crossing"); at
    // 1 MiB the same link gave 1.12, and 20 Mbit/s 1.08 at 128 KiB and 1.09 at 1 MiB. (Before: the largest swept
    // size up to the plan's largest pipeline send.)
    json::Value crossingSource = nullptr;
    if (largestSend > 0 && samples.size() >= 2 && !duplexSamples.empty()) {
      const MessageTime &one = samples.back(), &both = duplexSamples.back();
      double k = std::max(1.0, both.seconds / one.seconds);
      (*o.getObject("inter_node"))["crossing_slowdown"] = k;
      crossingSource = json::Object{
          {"bytes", static_cast<int64_t>(one.bytes)},
          {"one_way_s", one.seconds},
          {"both_ways_s", both.seconds},
          {"fit", "both ways at once (the median MPI_Sendrecv) / one way (half the median round trip) at "
                  "--pingpong-bytes (the rate measurement: where the link's rate bounds the transfer), at least 1; "
                  "written where the plan has pipeline sends"}};
    }
    // The collective rounds (schema version 3): each all-reduce of the plan timed whole (MPI_Iallreduce + MPI_Wait
    // at its size over the two ranks), fitted non-decreasing; the timing model prices 2-rank all-reduces from it
    // instead of messages + cpu_overhead.
    json::Array reduceRaw, gatherRaw, toAllRaw;
    std::vector<MessageTime> reduceSamples, gatherSamples, toAllSamples;
    if (!readCollectiveSamples(*l, "all_reduce_samples", reduceSamples, reduceRaw))
      return fail("--hosts: a bad all-reduce sample");
    if (!readCollectiveSamples(*l, "all_gather_samples", gatherSamples, gatherRaw))
      return fail("--hosts: a bad all-gather sample");
    if (!readCollectiveSamples(*l, "all_to_all_samples", toAllSamples, toAllRaw))
      return fail("--hosts: a bad all-to-all sample");
    json::Value toAllTable = nullptr;
    if (!toAllSamples.empty())
      toAllTable = toJson(fitMessageTimes(toAllSamples));
    json::Value gatherTable = nullptr;
    if (!gatherSamples.empty())
      gatherTable = toJson(fitMessageTimes(gatherSamples));
    json::Value reduceTable = nullptr;
    if (!reduceSamples.empty()) {
      reduceTable = toJson(fitMessageTimes(reduceSamples));
      (*o.getObject("inter_node"))["all_reduces"] = reduceTable;
    }
    if (!gatherSamples.empty())
      (*o.getObject("inter_node"))["all_gathers"] = gatherTable;
    if (!toAllSamples.empty())
      (*o.getObject("inter_node"))["all_to_alls"] = toAllTable;
    const bool anyTable = !reduceSamples.empty() || !gatherSamples.empty() || !toAllSamples.empty();
    if (anyTable)
      (*o.getObject("inter_node"))["collective_ranks"] = 2;
    // The rendezvous stall's threshold (schema version 2), read from the MPI's configuration.
    const std::string &eagerSource = eager.second;
    if (eagerLimit > 0)
      (*o.getObject("inter_node"))["eager_limit_bytes"] = eagerLimit;
    calibration["link"] = json::Object{
        {"bandwidth", *rate},
        {"latency", *latency},
        {"messages", std::move(table)},
        {"duplex_messages", std::move(duplexTable)},
        {"half_duplex", halfDuplex},
        {"cpu_overhead", std::move(cpuOverheadRaw)},
        {"eager_limit_source", eagerSource},
        {"crossing_source", std::move(crossingSource)},
        {"all_reduce_samples", std::move(reduceRaw)},
        {"all_gather_samples", std::move(gatherRaw)},
        {"all_to_all_samples", std::move(toAllRaw)},
        {"all_reduce_fit", "per all-reduce size of the plan (bytes per rank): the median of MPI_Iallreduce (in place, "
                           "f32 sum, as the runtime) + MPI_Wait over 2 ranks, each after a barrier, to its end on the "
                           "slowest rank (the largest of the ranks' own times); monotone least "
                           "squares (pool adjacent violators); all_gathers the same of MPI_Iallgather at the sizes the "
                           "compressed collectives gather (top-k, quantization codes; casts' fp32 chunks); "
                           "all_to_alls the same of MPI_Ialltoall at the casts' 16-bit codes (bytes each rank sends)"},
        {"samples", std::move(raw)},
        {"duplex_samples", std::move(duplexRaw)},
        {"round_trips", pingpongReps.getValue()},
        {"fit", "one-way time = half the median round trip per size (duplex: the median MPI_Sendrecv of that size "
                "both ways at once); monotone least squares (pool adjacent violators); priced by piecewise-linear "
                "interpolation, above the largest size at bandwidth"}};
    json::Object &calibrated = *calibration.getObject("link");
    if (!reduceSamples.empty())
      calibrated["all_reduces"] = std::move(reduceTable);
    if (!gatherSamples.empty())
      calibrated["all_gathers"] = std::move(gatherTable);
    if (!toAllSamples.empty())
      calibrated["all_to_alls"] = std::move(toAllTable);
    if (anyTable)
      calibrated["collective_ranks"] = 2;
  }
  o["calibration"] = std::move(calibration);
  // cpu_overhead is schema version 2, all_reduces 3 and all_to_alls 4 (Cluster.h kClusterSchemaVersion); a link-less
  // file stays readable as 1 but is written as the newest too, so that a later --link-only on it needs no change of
  // version.
  o["version"] = kClusterSchemaVersion;
  // The CPU target's all-reduce is MPI_Iallreduce in place, which OpenMPI's libnbc runs as a binomial reduce +
  // broadcast (ClusterSpec::binomialAllReduce).
  o["all_reduce_algorithm"] = "binomial";
  if (json::Object *sources = o.getObject("sources"))
    (*sources)["calibration"] = "ptrain-calibrate (see calibration.provenance)";

  // The output must be a cluster file the timing model reads.
  if (auto checked = parseCluster(root); !checked)
    return fail("the written cluster file would not parse: " + llvm::toString(checked.takeError()));
  std::error_code ec;
  llvm::raw_fd_ostream os(outputPath, ec);
  if (ec)
    return fail("-o " + outputPath + ": " + ec.message());
  os << llvm::formatv("{0:2}", root) << "\n";
  llvm::outs() << "ptrain-calibrate: " << file << ": ";
  if (!linkOnly)
    llvm::outs() << "f32 GEMM " << llvm::format("%.2f", gemmRate / 1e9) << " GFLOP/s over " << gemms.size()
                 << " shapes";
  for (const auto &[dtype, rate] : halfRates)
    llvm::outs() << ", " << dtype << " GEMM " << llvm::format("%.2f", rate / 1e9) << " GFLOP/s over "
                 << halfGemms[dtype].size() << " shapes";
  if (!linkOnly)
    llvm::outs() << ", memory " << llvm::format("%.2f", bandwidth / 1e9) << " GB/s, " << numCodecTimes
                 << " codec kernel timings on " << shapes.size() << " tensors";
  if (link)
    llvm::outs() << (linkOnly ? "" : ", ") << "link "
                 << llvm::format("%.1f", o.getObject("inter_node")->getNumber("bandwidth").value_or(0) * 8 / 1e6)
                 << " Mbit/s, " << sweep.size() + 1 << " message sizes";
  llvm::outs() << " -> " << outputPath << "\n";
  return 0;
}
