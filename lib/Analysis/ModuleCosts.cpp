//===- ModuleCosts.cpp - per-stage costs of a scheduled module ------*- C++ -*-===//
//
// See ModuleCosts.h and docs/TimingModel.md.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/ModuleCosts.h"

#include "ptrain/Analysis/CodecCosts.h"
#include "ptrain/Analysis/DeadOps.h"
#include "ptrain/Analysis/ElementwiseChains.h"
#include "ptrain/Analysis/FoldedClipScale.h"
#include "ptrain/Analysis/MemoryPlan.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainSubgroup.h"
#include "ptrain/Plan/CompressTensorParallel.h"
#include "ptrain/Plan/CompressionPlan.h"
#include "ptrain/Plan/DataParallelBuckets.h"
#include "ptrain/Plan/ParameterCasts.h"
#include "ptrain/Transforms/GradientClipping.h"
#include "ptrain/Transforms/MixedPrecision.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::ptrain;

static llvm::Error costError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

double mlir::ptrain::allReduceSeconds(double bytes, int64_t n, double bandwidth, double latency) {
  return LinkCost(LinkSpec{bandwidth, latency, {}}).allReduce(bytes, n);
}

double mlir::ptrain::reduceScatterSeconds(double bytes, int64_t n, double bandwidth, double latency) {
  return LinkCost(LinkSpec{bandwidth, latency, {}}).reduceScatter(bytes, n);
}

namespace {
/// Time and FLOPs of functions on one device of the cluster (before the division by tp).
class FunctionCosts {
public:
  /// `parameterCastsOnce`: a bf16 or fp16 pipeline, whose lowering casts each parameter once per step
  /// (hoistParameterCasts, ParameterCasts.h): the stage functions' parameter casts (and the weight transposes only
  /// they read) cost nothing per call; perStepParameterCasts prices them once.
  FunctionCosts(SymbolTable &symbols, const ClusterSpec &cluster, bool parameterCastsOnce = false)
      : symbols(symbols), cluster(cluster), parameterCastsOnce(parameterCastsOnce) {}

  /// The ops of `fn` that the once-per-step cast moves out: each parameter cast's slice, less the reads and
  /// transposes that something else of `fn` reads too.
  llvm::DenseSet<Operation *> hoistedOps(func::FuncOp fn) {
    llvm::DenseSet<Operation *> hoisted;
    if (!parameterCastsOnce)
      return hoisted;
    fn.walk([&](CastOp cast) {
      if (isParameterCast(cast, symbols))
        for (Operation *op : getParameterCastSlice(cast))
          hoisted.insert(op);
    });
    for (bool changed = true; changed;) {
      changed = false;
      for (Operation *op : llvm::to_vector(hoisted))
        if (llvm::any_of(op->getUsers(), [&](Operation *user) { return !hoisted.contains(user); }) &&
            !isa<CastOp>(op)) {
          hoisted.erase(op);
          changed = true;
        }
    }
    return hoisted;
  }

  /// Seconds of the once-per-step parameter casts of the stage functions `fns` (one per getParameterCastKey, as
  /// the lowering shares them), 0 unless parameterCastsOnce.
  double perStepParameterCasts(ArrayRef<func::FuncOp> fns) {
    double seconds = 0;
    llvm::StringSet<> seen;
    for (func::FuncOp fn : fns)
      for (Operation *op : hoistedOps(fn)) {
        if (!seen.insert(getParameterCastKey(op->getResult(0))).second)
          continue;
        // (W^T)^T: the lowering reads W (hoistParameterCasts), no transpose.
        if (auto outer = dyn_cast<TransposeOp>(op))
          if (auto inner = outer.getInput().getDefiningOp<TransposeOp>(); inner && isInverseTranspose(outer, inner))
            continue;
        OpCost cost = getOpCost(op);
        seconds += cost.bytes / cluster.memoryBandwidth / cluster.efficiency;
      }
    return seconds;
  }

  struct Cost {
    double seconds = 0, flops = 0;
  };

  llvm::Expected<Cost> get(func::FuncOp fn) {
    if (auto it = cache.find(fn); it != cache.end())
      return it->second;
    Cost total;
    llvm::Error error = llvm::Error::success();
    // The chains --ptrain-outline-elementwise marked run as one generated kernel each (docs/GeneratedKernels.md):
    // priced once, at their first op, by the kernel's traffic (inputs read and outputs written once) and the
    // ops' FLOPs; their other ops cost nothing.
    llvm::DenseMap<Operation *, ElementwiseChain> chainAt;
    llvm::DenseSet<Operation *> inChain;
    const llvm::DenseSet<Operation *> hoisted = hoistedOps(fn);
    if (!fn.isExternal() && fn.getBody().hasOneBlock()) {
      SmallVector<Operation *> body;
      for (Operation &op : fn.getBody().front())
        body.push_back(&op);
      DeadOps deadOps(body);
      auto dead = [&](Operation *op) { return deadOps.isDead(op); };
      for (size_t i = 0; i < body.size(); ++i)
        if (SmallVector<Operation *> members = markedChainAt(body, i, dead); !members.empty()) {
          inChain.insert(members.begin(), members.end());
          chainAt[members.front()] = describeChain(members, dead);
          i = llvm::find(body, members.back()) - body.begin();
        }
    }
    fn.walk([&](Operation *op) {
      if (error)
        return WalkResult::interrupt();
      if (inChain.contains(op)) {
        auto chain = chainAt.find(op);
        if (chain == chainAt.end())
          return WalkResult::advance();
        double flops = 0;
        for (Operation *member : chain->second.ops)
          flops += getOpCost(member).flops;
        auto peak = cluster.getPeakFlops(dtypeOf(op), false);
        if (!peak) {
          error = peak.takeError();
          return WalkResult::interrupt();
        }
        total.seconds +=
            std::max(flops / *peak, chain->second.fusedBytes() / cluster.memoryBandwidth) / cluster.efficiency;
        total.flops += flops;
        return WalkResult::advance();
      }
      if (auto call = dyn_cast<func::CallOp>(op)) {
        if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee())) {
          auto c = get(callee);
          if (!c) {
            error = c.takeError();
            return WalkResult::interrupt();
          }
          total.seconds += c->seconds;
          total.flops += c->flops;
        }
        return WalkResult::advance();
      }
      // The clip scale's mul an AdamW kernel folds in (FoldedClipScale.h) is no pass of its own: the update's
      // kernel reads the unscaled gradient and the scale where the runtime's reads the scaled one, the same
      // bytes, so the mul costs nothing.
      if (auto mul = dyn_cast<BinaryOp>(op); mul && isFoldedIntoAdamWKernel(mul))
        return WalkResult::advance();
      if (hoisted.contains(op)) // priced once per step (perStepParameterCasts)
        return WalkResult::advance();
      OpCost cost = getOpCost(op);
      if (cost.flops == 0 && cost.bytes == 0)
        return WalkResult::advance();
      auto peak = cluster.getPeakFlops(dtypeOf(op), isa<MatmulOp>(op));
      if (!peak) {
        error = peak.takeError();
        return WalkResult::interrupt();
      }
      total.seconds += std::max(cost.flops / *peak, cost.bytes / cluster.memoryBandwidth) / cluster.efficiency;
      total.flops += cost.flops;
      return WalkResult::advance();
    });
    if (error)
      return std::move(error);
    cache[fn] = total;
    return total;
  }

private:
  /// The dtype key of an op: its first float result's (or operand's) element type; "f32" otherwise.
  static std::string dtypeOf(Operation *op) {
    auto name = [](Type t) -> std::string {
      auto tensor = dyn_cast<RankedTensorType>(t);
      if (!tensor || !isa<FloatType>(tensor.getElementType()))
        return "";
      std::string s;
      llvm::raw_string_ostream os(s);
      tensor.getElementType().print(os);
      return s;
    };
    // A GEMM runs at its operands' rate: bf16 (or f16) operands accumulated in f32 (`ptrain.matmul {accumulate =
    // f32}`, --precision bf16 or fp16) at the cluster's bf16 (f16) peak (the tensor cores' figure, e.g. 989.5
    // TFLOP/s on an H200 against 67 in fp32), not at the f32 peak of its result. Other ops at their result's type.
    ValueRange operands = op->getOperands(), results = op->getResults();
    bool gemm = isa<MatmulOp>(op);
    for (ValueRange values : {gemm ? operands : results, gemm ? results : operands})
      for (Value v : values)
        if (std::string s = name(v.getType()); !s.empty())
          return s;
    return "f32";
  }

  SymbolTable &symbols;
  const ClusterSpec &cluster;
  bool parameterCastsOnce;
  llvm::DenseMap<Operation *, Cost> cache;
};
} // namespace

/// The state symbols of `kinds` that `fn` (and its callees) read or write, each once over the calls that
/// share `seen`.
static void collectStates(func::FuncOp fn, SymbolTable &symbols, llvm::StringSet<> &seen, std::vector<StateOp> &states,
                          llvm::ArrayRef<StateKind> kinds, llvm::DenseSet<Operation *> &visited) {
  if (!visited.insert(fn).second)
    return;
  fn.walk([&](Operation *op) {
    FlatSymbolRefAttr ref;
    if (auto read = dyn_cast<StateReadOp>(op))
      ref = read.getStateAttr();
    else if (auto write = dyn_cast<StateWriteOp>(op))
      ref = write.getStateAttr();
    else if (auto call = dyn_cast<func::CallOp>(op)) {
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        collectStates(callee, symbols, seen, states, kinds, visited);
      return;
    }
    if (!ref)
      return;
    auto state = symbols.lookup<StateOp>(ref.getValue());
    if (!state || !llvm::is_contained(kinds, state.getKind()) || !seen.insert(ref.getValue()).second)
      return;
    states.push_back(state);
  });
}

/// Per tied sync (the k-th sum over [pp] of every optimizer step that is not the global norm): the number of
/// stages that hold its parameter, i.e. whose input is the gradient read (the others contribute zeros).
/// Fused embedding sync reduces over exactly these stages x dp (a subgroup of pp, CompressDataParallel.h).
static std::vector<int64_t> tiedHolderCounts(SymbolTable &symbols, int64_t p) {
  std::vector<int64_t> counts;
  for (int64_t s = 0; s < p; ++s) {
    auto opt = symbols.lookup<func::FuncOp>("stage" + std::to_string(s) + "_optimizer_step");
    if (!opt)
      continue;
    size_t k = 0;
    opt.walk([&](AllReduceStartOp ar) {
      if (ar->hasAttr(kGlobalNormAttr) ||
          !llvm::equal(ar.getGridAxes().getAsValueRange<StringAttr>(), llvm::ArrayRef<StringRef>{"pp"}))
        return;
      if (counts.size() <= k)
        counts.resize(k + 1, 0);
      counts[k++] += ar.getInput().getDefiningOp<StateReadOp>() ? 1 : 0;
    });
  }
  return counts;
}

static double bytesOf(llvm::ArrayRef<StateOp> states) {
  double bytes = 0;
  for (StateOp state : states)
    bytes += getTensorBytes(state.getTensorType());
  return bytes;
}

/// The TP shard of a parameter: Megatron splits the larger dimension of a matrix (column-parallel QKV and
/// MLP-up, row-parallel projections, the vocabulary of the embedding) and 1-D tensors by tp.
static RankedTensorType tpShard(RankedTensorType type, int64_t tp) {
  SmallVector<int64_t> shape(type.getShape());
  if (shape.empty() || tp <= 1)
    return type;
  auto largest = std::max_element(shape.begin(), shape.end());
  *largest = (*largest + tp - 1) / tp;
  return RankedTensorType::get(shape, type.getElementType());
}

namespace {
/// The link the costs use per GPU: intra-node, or inter-node with the node's NIC shared by `sharers` GPUs
/// (each message priced by its size, LinkCost.h).
struct Links {
  const ClusterSpec &cluster;
  int64_t sharers;
  LinkCost get(bool inter) const {
    return inter ? LinkCost(cluster.interNode, sharers, cluster.binomialAllReduce)
                 : LinkCost(cluster.intraNode, 1, cluster.binomialAllReduce);
  }
};
} // namespace

/// The compressed sends of `plan` into costs.stages[c].compressedBackward (the gradient virtual stage c sends
/// to c - 1) and compressedForward (the activation c sends to c + 1), each send with its own codec (the
/// policy's or an override's); the lowering compresses activations in training steps only, which is what the
/// model times. Without virtual stages c is the stage.
///
/// In a bf16 or fp16 step (`halfMessages`) the codec reads the 16-bit message (docs/Compression.md, "Codecs on
/// 16-bit traffic"): its codes are those of the 16-bit type (top-k's and rand-k's values 2 bytes) and its
/// kernels include the widen (getCodecWork); a cast codec there sends the plain 16-bit message (the lowering's
/// rule), priced as the uncompressed send.
static llvm::Error addCompressedSends(ModuleTimingModel &model, const CompressionPlan &plan, SymbolTable &symbols,
                                      ArrayRef<FlatSymbolRefAttr> stageRefs, const ClusterSpec &cluster,
                                      const Links &links, bool ppInter, FloatType halfMessages) {
  const LinkCost pp = links.get(ppInter);
  const int64_t chunks = stageRefs.size();
  for (bool forward : {false, true})
    for (int64_t s = forward ? 0 : 1; s < (forward ? chunks - 1 : chunks); ++s) {
      auto fwd = symbols.lookup<func::FuncOp>(stageRefs[s].getValue());
      auto type = dyn_cast<RankedTensorType>(forward ? fwd.getResultTypes()[0] : fwd.getArgumentTypes()[0]);
      if (type && halfMessages && type.getElementType().isF32())
        type = type.clone(halfMessages);
      for (int64_t i = 0; i < model.microBatches; ++i) {
        CodecAttrInterface codec = forward ? plan.forwardCodecOf(s, i) : plan.backwardCodecOf(s, i);
        if (!codec || (type && isHalfFloat(type.getElementType()) && isa<CastAttr>(codec)))
          continue;
        if (!type || failed(codec.verifyForType([] { return InFlightDiagnostic(); }, type)))
          return costError("ptrain.compression: the " + llvm::Twine(forward ? "forward" : "backward") +
                           "-send codec cannot encode " + (model.virtualStages > 1 ? "virtual " : "") + "stage " +
                           llvm::Twine(s) + "'s " + (forward ? "activation" : "gradient"));
        bool ef = forward ? plan.forwardErrorFeedback : plan.backwardErrorFeedback;
        CodecWork work = getCodecWork(codec, type, ef);
        // A calibrated cluster prices the kernels at this machine's measured speed (CodecCalibration).
        CodecCalibration calibration = getCodecCalibration(codec, type, ef, cluster);
        scaleCodecPhases(work.encode, calibration.encode);
        scaleCodecPhases(work.decode, calibration.decode);
        auto encode = getCodecSeconds(work.encode, cluster);
        if (!encode)
          return encode.takeError();
        auto decode = getCodecSeconds(work.decode, cluster);
        if (!decode)
          return decode.takeError();
        CompressedTransfer t;
        t.encodeSeconds = *encode;
        t.decodeSeconds = *decode;
        // One message per code tensor (LowerToRuntime's sendCompressible), each priced by its size.
        // The eager parts: each code tensor's first eager-limit bytes (all of a smaller one) move at once, the
        // rest of every larger one waits for the sender's next MPI call; no stall where none is larger.
        double seconds = 0, overhead = 0, eager = 0;
        bool stalls = false;
        for (Type code : codec.getCodeTypes(type)) {
          double bytes = getTensorBytes(code), part = pp.eagerSeconds(bytes);
          seconds += pp.message(bytes);
          overhead += pp.overhead(bytes);
          stalls |= part >= 0;
          eager += part >= 0 ? part : pp.message(bytes);
        }
        t.codes = {seconds, work.codeBytes, ppInter};
        t.codes.cpuOverhead = overhead;
        t.codes.eagerSeconds = stalls ? eager : -1;
        t.codes.crossingSlowdown = pp.crossingSlowdown();
        llvm::raw_string_ostream(t.codec) << Attribute(codec);
        (forward ? model.costs.stages[s].compressedForward : model.costs.stages[s].compressedBackward)[i] = t;
      }
    }
  return llvm::Error::success();
}

/// The gradient all-reduces over dp of rank `s` as the lowering runs them (docs/TimingModel.md, "Data
/// parallelism"): one ring all-reduce per bucket of its optimizer step `opt` (the TP shard: bytes / tp);
/// with fused embedding sync the tied gradients leave their buckets; a bucket holding a gradient with a dp
/// codec (SC's PowerSGD or a `dp_codecs` override, dataParallelCodecOf) becomes one collective per gradient
/// (compressDataParallelAllReduces): the exact ones join the first round, the compressed ones add their
/// codec phases (getDataParallelCodecWork; PowerSGD on the TP shard, the other codecs on the full gradient
/// scaled by 1 / tp) and rounds.
static llvm::Error addDataParallel(ModuleTimingModel &model, int64_t s, func::FuncOp opt, SymbolTable &symbols,
                                   const CompressionPlan *plan, const ClusterSpec &cluster, const Links &links,
                                   bool dpInter) {
  const LinkCost dpLink = links.get(dpInter);
  const int64_t n = model.dp;
  const double tp = model.tpShard;
  const int64_t shardTp = model.tpShard > 1 ? model.tp : 1; // tpShard's tp for a whole matrix's shard shape
  llvm::StringSet<> tied;
  if (plan && plan->fusedEmbedding)
    opt.walk([&](AllReduceStartOp ar) {
      auto axes = ar.getGridAxes().getAsValueRange<StringAttr>();
      if (llvm::equal(axes, llvm::ArrayRef<StringRef>{"pp"}))
        if (auto read = ar.getInput().getDefiningOp<StateReadOp>())
          tied.insert(read.getState());
    });
  // A round with its bytes scaled by `scale` (1 / tp for a gradient's TP shard); an all-reduce round (a plain
  // all-reduce, PowerSGD's P and Q, rand-k's values) is timed by the cluster's algorithm (LinkCost::allReduce:
  // ring, or binomial on the CPU target) with the ring's traffic in the byte counts.
  auto addRound = [&](CommCost &to, const CodecCollective &c, double scale) {
    to.seconds += getCollectiveSeconds(c, dpLink, n, scale);
    to.bytes += scale * c.bytes;
    to.sentBytes = std::max(0.0, to.sentBytes) + scale * c.sentBytes;
    to.interNode = dpInter;
  };
  auto addAllReduce = [&](CommCost &to, double bytes) { addRound(to, ringAllReduce(bytes, n), 1); };
  RankCosts &rc = model.costs.ranks[s];
  CompressedAllReduce ca;
  std::vector<CodecPhase> phases[3];
  std::vector<std::string> codecNames;
  bool compressed = false;
  struct Gradient {
    StateReadOp read;
    CodecAttrInterface codec;
    bool override;
  };
  // Gradients reduced one by one, each compressed with its codec (PowerSGD on the TP shard, the other codecs on
  // the full gradient scaled by 1 / tp) or exactly, in the compressed dp reduction.
  auto addGradients = [&](ArrayRef<Gradient> grads) -> llvm::Error {
    for (const Gradient &g : grads) {
      StateReadOp read = g.read;
      CodecAttrInterface codec = g.codec;
      auto type = cast<RankedTensorType>(read.getType());
      if (!codec) {
        addAllReduce(ca.first, getTensorBytes(type) / tp);
        ++ca.exact;
        continue;
      }
      bool powerSGD = isa<PowerSGDAttr>(codec);
      auto work = getDataParallelCodecWork(codec, powerSGD ? tpShard(type, shardTp) : type, n, plan->scErrorFeedback);
      if (!work)
        return costError("stage " + llvm::Twine(s) + ", gradient @" + read.getState() + ": " +
                         llvm::toString(work.takeError()));
      // The kernels scale by the shard and by the codec's calibration (measured / modelled kernel time); the
      // rounds by the shard only: the calibration is a kernel's, not the link's.
      const double shard = powerSGD ? 1 : 1 / tp;
      const double scale =
          shard *
          getCodecCalibration(codec, powerSGD ? tpShard(type, shardTp) : type, plan->scErrorFeedback, cluster).both;
      for (auto [to, from] : {std::make_pair(&phases[0], &work->phaseP), std::make_pair(&phases[1], &work->phaseQ),
                              std::make_pair(&phases[2], &work->finish)})
        for (CodecPhase ph : *from) {
          ph.cost.flops *= scale;
          ph.cost.bytes *= scale;
          to->push_back(ph);
        }
      for (const CodecCollective &c : work->first)
        addRound(ca.first, c, shard);
      for (const CodecCollective &c : work->second)
        addRound(ca.second, c, shard);
      (work->exact ? ca.exact : ca.compressed) += 1;
      std::string name;
      llvm::raw_string_ostream(name) << Attribute(codec);
      if ((!powerSGD || g.override) && !llvm::is_contained(codecNames, name))
        codecNames.push_back(name);
    }
    return llvm::Error::success();
  };
  // ZeRO-1 (--ptrain-build-training-step zero=1): each bucket is a reduce-scatter over dp and, after the sharded
  // AdamW, an all-gather of the same padded size. A ring reduce-scatter and a ring all-gather each move
  // (n - 1) / n of the bucket in n - 1 steps: together exactly a ring all-reduce (Patarasuk & Yuan, JPDC 2009;
  // Rajbhandari et al., SC'20, sec. 7.1: P_os has the communication volume of plain data parallelism).
  // A bucket whose gradients have a codec in the plan (quantization: docs/DistributedOptimizer.md,
  // "Compression") is priced as ptrain_compressed_reduce_scatter_start runs it (getZeroReduceScatterCodecWork)
  // plus the uncompressed ring all-gather of the updated shards, in the compressed dp reduction; a bucket of
  // PowerSGD gradients (ZeroBucketReduction::perGradient) as its gradients' all-reduces (addGradients) plus the
  // same all-gather.
  for (Operation *bucket : zeroBuckets(opt)) {
    auto type = cast<RankedTensorType>(bucket->getOperand(0).getType());
    const double bytes = getTensorBytes(type) / tp;
    CodecAttrInterface codec;
    if (auto c = dyn_cast<CompressedReduceScatterStartOp>(bucket)) {
      codec = c.getCodec();
    } else if (plan) {
      SmallVector<StateReadOp> reads = zeroBucketReads(bucket);
      FailureOr<ZeroBucketReduction> planned =
          zeroBucketReduction(opt->getParentOfType<ModuleOp>(), *plan, s, reads,
                              [&] { return bucket->emitError("timing model: "); });
      if (failed(planned))
        return costError("stage " + llvm::Twine(s) + ": a ZeRO-1 bucket mixes dp codecs");
      if (planned->perGradient) {
        // PowerSGD: every gradient all-reduced alone (CompressDataParallel.cpp, allReduceZeroBucket), then the
        // all-gather of the updated shards.
        compressed = true;
        SmallVector<Gradient> grads;
        for (auto [read, c] : llvm::zip(reads, planned->codecs)) {
          if (tied.contains(read.getState())) // reduced by the fused embedding sync already
            continue;
          auto state = symbols.lookup<StateOp>(read.getState());
          grads.push_back({read, c, state && plan->dpCodecs.count(state.getKey().str())});
        }
        if (llvm::Error e = addGradients(grads))
          return e;
        addRound(ca.first, {static_cast<double>(n - 1), (n - 1) * bytes / n, bytes / n}, 1);
        continue;
      }
      codec = planned->flatCodec;
    }
    if (!codec) {
      addRound(rc.dataParallel, ringReduceScatterAllGather(bytes, n), 1);
      ++rc.dataParallelBuckets;
      continue;
    }
    compressed = true;
    const bool ef = plan ? plan->scErrorFeedback : !cast<CompressedReduceScatterStartOp>(bucket).getState().empty();
    auto chunk = RankedTensorType::get({type.getNumElements() / n}, type.getElementType());
    DataParallelCodecWork work = getZeroReduceScatterCodecWork(codec, chunk, n, ef);
    double scale = getCodecCalibration(codec, chunk, ef, cluster).both / tp;
    for (auto [to, from] : {std::make_pair(&phases[0], &work.phaseP), std::make_pair(&phases[2], &work.finish)})
      for (CodecPhase ph : *from) {
        ph.cost.flops *= scale;
        ph.cost.bytes *= scale;
        to->push_back(ph);
      }
    for (const CodecCollective &c : work.first)
      addRound(ca.first, c, 1 / tp);
    // The ring all-gather of the updated shards: each rank hands bytes / n and sends (n - 1) / n of the bucket
    // (the runtime's counters count what a rank hands MPI, as for the codes).
    addRound(ca.first, {static_cast<double>(n - 1), (n - 1) * bytes / n, bytes / n}, 1);
    ++ca.compressed;
    std::string name;
    llvm::raw_string_ostream(name) << Attribute(codec);
    if (!llvm::is_contained(codecNames, name))
      codecNames.push_back(name);
  }
  for (const SmallVector<StateReadOp> &bucket : dataParallelBuckets(opt)) {
    SmallVector<Gradient> grads;
    for (StateReadOp read : bucket) {
      if (tied.contains(read.getState()))
        continue;
      auto state = symbols.lookup<StateOp>(read.getState());
      std::string key = state ? state.getKey().str() : read.getState().str();
      auto type = cast<RankedTensorType>(read.getType());
      grads.push_back({read, plan ? dataParallelCodecOf(*plan, s, key, type) : CodecAttrInterface(),
                       plan && plan->dpCodecs.count(key)});
    }
    if (grads.empty())
      continue;
    if (llvm::none_of(grads, [](const Gradient &g) { return bool(g.codec); })) {
      double bytes = 0;
      for (Gradient &g : grads)
        bytes += getTensorBytes(g.read.getType());
      addAllReduce(rc.dataParallel, bytes / tp);
      ++rc.dataParallelBuckets;
      continue;
    }
    compressed = true;
    if (llvm::Error e = addGradients(grads))
      return e;
  }
  if (!compressed)
    return llvm::Error::success();
  // The exact buckets of a compressed reduction go in its first round.
  if (rc.dataParallel.bytes > 0) {
    ca.first.seconds += rc.dataParallel.seconds;
    ca.first.bytes += rc.dataParallel.bytes;
    ca.first.sentBytes = std::max(0.0, ca.first.sentBytes) + rc.dataParallel.sentBytes;
    ca.first.interNode = dpInter;
  }
  for (auto [ph, out] : {std::make_pair(&phases[0], &ca.phasePSeconds), std::make_pair(&phases[1], &ca.phaseQSeconds),
                         std::make_pair(&phases[2], &ca.finishSeconds)}) {
    auto seconds = getCodecSeconds(*ph, cluster);
    if (!seconds)
      return seconds.takeError();
    *out = *seconds;
  }
  if (plan && s < static_cast<int64_t>(plan->dpAllReduce.size()) && plan->dpAllReduce[s])
    codecNames.insert(codecNames.begin(),
                      "#ptrain.powersgd<rank = " + std::to_string(plan->scRank) + "> (clamped to min(n, m))");
  ca.codec = llvm::join(codecNames, ", ");
  rc.compressedDataParallel = ca;
  return llvm::Error::success();
}

llvm::Expected<ModuleTimingModel> mlir::ptrain::buildModuleTimingModel(ModuleOp module, const ClusterSpec &cluster,
                                                                       bool applyCompression, bool parameterCastsOnce) {
  ModuleTimingModel model;
  PipelineAttr pipeline = getPipeline(module);
  if (!pipeline)
    return costError("the module has no ptrain.pipeline (run --ptrain-split-stages and "
                     "--ptrain-build-training-step)");
  ArrayRef<FlatSymbolRefAttr> stageRefs = pipeline.getStages();
  ScheduleAttr schedule = getSchedule(module);
  if (!schedule)
    return costError("the module has no ptrain.schedule table (run --ptrain-schedule)");
  ArrayAttr rows = schedule.getTable();
  // pp x virtual_stages stage functions (#ptrain.pipeline C3), one table row per rank (#ptrain.schedule C8).
  const int64_t v = pipeline.getVirtualStages(), p = pipeline.getPp();
  model.pp = p;
  model.virtualStages = v;
  model.costs.virtualStages = v;
  model.scheduleKind = schedule.getKind().str();
  const FloatType halfMessages = getMessageHalfType(module);
  model.microBatches = schedule.getMicroBatches();
  if (static_cast<int64_t>(rows.size()) != p)
    return costError("ptrain.schedule has " + llvm::Twine(rows.size()) + " rows for " + llvm::Twine(p) + " stages");

  GridOp grid;
  for (auto g : module.getOps<GridOp>())
    if (g.getAxisIndex("pp") && g.getAxisSize("pp") == p)
      grid = g;
  if (!grid)
    return costError("the module has no ptrain.grid with an axis pp of size " + llvm::Twine(p));
  std::vector<std::pair<std::string, int64_t>> axes;
  for (auto [name, size] : llvm::zip(grid.getAxisNames(), grid.getShape()))
    axes.push_back({cast<StringAttr>(name).str(), size});
  auto placement = Placement::create(cluster, axes);
  if (!placement)
    return placement.takeError();
  model.dp = placement->getAxisSize("dp");
  model.tp = placement->getAxisSize("tp");

  // Bandwidth per GPU of each link kind.
  Links links{cluster, std::max<int64_t>(1, placement->getMaxRanksPerNodeWithSame("pp"))};
  auto link = [&](bool inter) { return links.get(inter); };
  bool ppInter = placement->crossesNodes({"pp"});
  bool dpInter = placement->crossesNodes({"dp"});
  bool tpInter = placement->crossesNodes({"tp"});
  // The node of each stage's first GPU (link contention between stages sharing a node).
  for (int64_t s = 0; s < p; ++s) {
    std::vector<int64_t> coords;
    for (const auto &[name, size] : axes)
      coords.push_back(name == "pp" ? s : 0);
    model.costs.rankNodes.push_back(placement->getNode(coords));
  }
  model.costs.halfDuplex = cluster.interNode.halfDuplex;

  // Compression decisions of --ptrain-compress.
  std::optional<CompressionPlan> plan;
  if (applyCompression && getCompression(module)) {
    FailureOr<std::optional<CompressionPlan>> read =
        readCompressionPlan(module, p, model.microBatches, "the timing model");
    if (failed(read) || !*read)
      return costError("malformed ptrain.compression");
    plan = std::move(*read);
    model.compressionPolicy = plan->policy;
  }
  // mcbench's TP site: the compressed tensor-parallel all-reduces and where they are.
  std::vector<TensorParallelCodec> tpCodecs;
  std::vector<TensorParallelSite> tpSites;
  if (plan)
    tpCodecs = readTensorParallelRecord(module);
  if (model.tp > 1)
    tpSites = collectTensorParallelSites(module);
  // A module sharded by --ptrain-shard-tp has one rank's shapes already; a whole one is divided by tp.
  model.tpShard = tpSites.empty() ? static_cast<double>(model.tp) : 1.0;
  const double tp = model.tpShard;
  // Fused embedding sync reduces the tied gradients once over dp x (the stages holding them)
  // (CompressDataParallel.h); without dp over the holders alone.
  const bool fusedEmbedding = plan && plan->fusedEmbedding;
  // The bytes of one member's buffer of a tp all-reduce site as it travels: 2 bytes an element where a bf16 or
  // fp16 step sums 16-bit values (getTensorParallelWireType, the lowering's rule).
  auto tpWireBytes = [&](TPAllReduceOp op) {
    auto type = cast<RankedTensorType>(op.getType());
    return getTensorBytes(type.clone(getTensorParallelWireType(op, module)));
  };

  SymbolTable symbols(module);
  // The once-per-step parameter cast exists only in a 16-bit pipeline lowered with parameter-casts=once.
  FunctionCosts costs(symbols, cluster, /*parameterCastsOnce=*/halfMessages && parameterCastsOnce);
  model.costs.memoryCapacity = cluster.memoryCapacity;
  model.costs.stages.resize(p * v);
  model.costs.ranks.resize(p);
  model.costs.table.resize(p);
  model.stages.resize(p);
  std::vector<llvm::StringSet<>> seenParams(p), seenStates(p);
  std::vector<llvm::DenseSet<Operation *>> visitedParams(p), visitedStates(p);
  std::vector<std::vector<StateOp>> params(p), states(p);
  std::vector<double> inputBytes(p, 0);
  for (int64_t vs = 0; vs < p * v; ++vs) {
    int64_t s = vs % p;
    StageCosts &c = model.costs.stages[vs];
    StageDetails &d = model.stages[s];
    bool last = vs == p * v - 1;
    auto fwd = symbols.lookup<func::FuncOp>(stageRefs[vs].getValue());
    std::string bwdName = "stage" + std::to_string(vs) + (last ? "_forward_backward" : "_backward");
    auto bwd = symbols.lookup<func::FuncOp>(bwdName);
    if (!fwd || !bwd)
      return costError("stage " + llvm::Twine(vs) + ": missing @" + (!fwd ? stageRefs[vs].getValue().str() : bwdName) +
                       " (run --ptrain-build-training-step)");
    if (vs < p)
      d.forwardFunction = fwd.getSymName().str();
    auto fc = costs.get(fwd);
    if (!fc)
      return fc.takeError();
    auto bc = costs.get(bwd);
    if (!bc)
      return bc.takeError();
    d.forwardFlops += fc->flops;
    d.backwardFlops += bc->flops;

    // Tensor parallelism, analytically: compute / tp plus Megatron's activation all-reduces per layer.
    int64_t layers = 0;
    double residualBytes = 0;
    fwd.walk([&](Operation *op) {
      if (isa<SoftmaxOp>(op))
        ++layers;
      if (auto ln = dyn_cast<LayerNormOp>(op); ln && residualBytes == 0) {
        // Megatron's activation all-reduces move the residual stream, in 16 bits under precision=bf16 or fp16.
        auto residual = cast<RankedTensorType>(ln.getInput().getType());
        if (halfMessages && residual.getElementType().isF32())
          residual = residual.clone(halfMessages);
        residualBytes = getTensorBytes(residual);
      }
    });
    d.layers += layers;
    const LinkCost tpLink = link(tpInter);
    double tpAllReduce = tpLink.allReduce(residualBytes, model.tp);
    double tpForwardSeconds = 2 * layers * tpAllReduce, tpBackwardSeconds = 4 * layers * tpAllReduce;
    double busBytes = 2.0 * (model.tp - 1) / model.tp * residualBytes;
    double tpForwardBytes = 2 * layers * busBytes, tpBackwardBytes = 4 * layers * busBytes;
    // A step sharded by --ptrain-shard-tp has its sites in the IR: those are priced, whatever the layer count
    // (a stage whose layers are not one softmax each would otherwise be priced none, and a compressed site's
    // saving would make its time negative). Megatron's layers give the same count, 2 and 4 per layer.
    if (llvm::any_of(tpSites, [&](const TensorParallelSite &site) {
          Operation *fn = site.op->getParentOp();
          return fn == fwd.getOperation() || fn == bwd.getOperation();
        })) {
      tpForwardSeconds = tpBackwardSeconds = tpForwardBytes = tpBackwardBytes = 0;
      for (const TensorParallelSite &site : tpSites) {
        Operation *fn = site.op->getParentOp();
        if (fn != fwd.getOperation() && fn != bwd.getOperation())
          continue;
        double bytes = tpWireBytes(site.op);
        (fn == fwd.getOperation() ? tpForwardSeconds : tpBackwardSeconds) +=
            tpLink.allReduce(bytes, model.tp);
        (fn == fwd.getOperation() ? tpForwardBytes : tpBackwardBytes) += 2.0 * (model.tp - 1) / model.tp * bytes;
      }
    }
    d.tpForwardSeconds += tpForwardSeconds / v;
    d.tpBackwardSeconds += tpBackwardSeconds / v;
    if (model.tp > 1) {
      d.tpForwardBytes += tpForwardBytes / v;
      d.tpBackwardBytes += tpBackwardBytes / v;
      d.tpInterNode = tpInter;
    }
    // mcbench's TP site: each compressed tp all-reduce of the forward (and of the forward the backward
    // recomputes) and of f's gradients replaces one plain all-reduce (CompressTensorParallel.h).
    for (const TensorParallelSite &site : tpSites) {
      Operation *fn = site.op->getParentOp();
      bool inForward = fn == fwd.getOperation(), inBackward = fn == bwd.getOperation();
      auto codec = llvm::find_if(tpCodecs, [&](const TensorParallelCodec &t) {
        return t.layer == site.layer && t.role == site.role && t.forward == site.forward;
      });
      if ((!inForward && !inBackward) || codec == tpCodecs.end() || model.tp < 2)
        continue;
      // A cast codec on a 16-bit step's site leaves the 16-bit all-reduce (CompressTensorParallel.cpp).
      if (halfMessages && isa<CastAttr>(codec->codec))
        continue;
      // A 16-bit site codes its widened value: the codes of the f32 type, except top-k's and rand-k's values,
      // which it sends as 16 bits (CompressedAllReduceStartOp C8, value_type): priced on the 16-bit type.
      auto type = cast<RankedTensorType>(site.op->getResult(0).getType());
      if (halfMessages && isa<TopKAttr, RandKAttr>(codec->codec))
        type = type.clone(halfMessages);
      auto cost = getCompressedAllReduceCost(codec->codec, type, model.tp, tpLink, cluster, codec->errorFeedback);
      if (!cost)
        return costError("stage " + llvm::Twine(vs) + ", tp all-reduce " + site.role + " of layer " +
                         llvm::Twine(site.layer) + ": " + llvm::toString(cost.takeError()));
      double bytes = tpWireBytes(site.op); // the plain all-reduce the codec replaces (16-bit under bf16 / fp16)
      double saved = tpLink.allReduce(bytes, model.tp) - cost->seconds;
      double savedBytes = 2.0 * (model.tp - 1) / model.tp * bytes - cost->sentBytes;
      (inForward ? tpForwardSeconds : tpBackwardSeconds) -= saved;
      (inForward ? d.tpForwardSeconds : d.tpBackwardSeconds) -= saved / v;
      (inForward ? d.tpForwardBytes : d.tpBackwardBytes) -= savedBytes / v;
      std::string codecText;
      llvm::raw_string_ostream(codecText) << Attribute(codec->codec);
      model.tpSavings.push_back({vs, site.layer, site.role, site.forward, inBackward, saved, savedBytes, codecText});
    }
    c.forward = fc->seconds / tp + tpForwardSeconds;
    if (last)
      c.forwardBackward = bc->seconds / tp + tpBackwardSeconds;
    else
      c.backward = bc->seconds / tp + tpBackwardSeconds;

    // Pipeline transfers: every TP rank sends the whole (replicated) boundary tensor, in bf16 or f16 when the step
    // was built with precision=bf16 or fp16 (2 bytes an element; the lowering casts around the send and receive).
    const LinkCost ppLink = link(ppInter);
    auto messageBytes = [&](Type type) {
      auto tensor = cast<RankedTensorType>(type);
      if (halfMessages && isa<FloatType>(tensor.getElementType()))
        tensor = tensor.clone(halfMessages);
      return getTensorBytes(tensor);
    };
    if (!last) {
      double bytes = messageBytes(fwd.getResultTypes()[0]);
      c.sendForward = {ppLink.message(bytes), bytes, ppInter};
      c.sendForward.cpuOverhead = ppLink.overhead(bytes);
      c.sendForward.eagerSeconds = ppLink.eagerSeconds(bytes);
      c.sendForward.crossingSlowdown = ppLink.crossingSlowdown();
    }
    if (vs > 0) {
      double bytes = messageBytes(fwd.getArgumentTypes()[0]);
      c.sendBackward = {ppLink.message(bytes), bytes, ppInter};
      c.sendBackward.cpuOverhead = ppLink.overhead(bytes);
      c.sendBackward.eagerSeconds = ppLink.eagerSeconds(bytes);
      c.sendBackward.crossingSlowdown = ppLink.crossingSlowdown();
    }
    // Per micro-batch in flight: the stage input, and the forward output, whose send is waited at B<i>.
    if (vs == s && fwd.getNumArguments() > 0)
      inputBytes[s] = getTensorBytes(fwd.getArgumentTypes()[0]) + (last ? 0 : getTensorBytes(fwd.getResultTypes()[0]));

    // The rank's parameters (for dp) and states (for memory), each counted once over its chunks.
    collectStates(fwd, symbols, seenParams[s], params[s], {StateKind::Parameter}, visitedParams[s]);
    for (func::FuncOp fn : {fwd, bwd})
      collectStates(fn, symbols, seenStates[s], states[s],
                    {StateKind::Parameter, StateKind::Gradient, StateKind::OptimizerMoment}, visitedStates[s]);
    // The working set: the most bytes live at once in one recomputing backward (the memory plan's liveness).
    d.workingBytes = std::max(d.workingBytes, static_cast<double>(functionLiveBytes(bwd)) / tp);
  }

  for (int64_t s = 0; s < p; ++s) {
    RankCosts &rc = model.costs.ranks[s];
    StageDetails &d = model.stages[s];
    std::string optName = "stage" + std::to_string(s) + "_optimizer_step";
    auto opt = symbols.lookup<func::FuncOp>(optName);
    if (!opt)
      return costError("stage " + llvm::Twine(s) + ": missing @" + optName + " (run --ptrain-build-training-step)");
    auto oc = costs.get(opt);
    if (!oc)
      return oc.takeError();
    rc.optimizer = oc->seconds / tp;
    // The 16-bit parameter copies of the rank's stage functions, cast once at the step's start (bf16, fp16).
    SmallVector<func::FuncOp> stageFunctions;
    for (int64_t vs = s; vs < p * v; vs += p) {
      stageFunctions.push_back(symbols.lookup<func::FuncOp>(stageRefs[vs].getValue()));
      stageFunctions.push_back(symbols.lookup<func::FuncOp>("stage" + std::to_string(vs) +
                                                            (vs == p * v - 1 ? "_forward_backward" : "_backward")));
    }
    rc.optimizer += costs.perStepParameterCasts(stageFunctions) / tp;

    // Data parallelism: the stage's parameter gradients (its TP shard), one all-reduce per bucket.
    d.parameterBytes = bytesOf(params[s]) / tp;
    if (model.dp > 1)
      if (llvm::Error e = addDataParallel(model, s, opt, symbols, plan ? &*plan : nullptr, cluster, links, dpInter))
        return std::move(e);

    // The tied-parameter all-reduces of the optimizer step: every stage joins the same ones, so stage 0's
    // give the collective's size and time. Fused embedding sync: over the holders x dp only (a subgroup of pp
    // at pp > 2, the whole axis at pp = 2); a lowered subgroup all-reduce over its members.
    size_t tiedIndex = 0;
    const std::vector<int64_t> holders =
        fusedEmbedding && s == 0 ? tiedHolderCounts(symbols, p) : std::vector<int64_t>();
    if (s == 0)
      opt.walk([&](AllReduceStartOp ar) {
        auto g = symbols.lookup<GridOp>(ar.getGrid());
        if (!g)
          return;
        int64_t n = g.getGroupSize(ar.getGridAxes());
        if (std::optional<Subgroup> group = getSubgroup(ar))
          n = n / g.getAxisSize(group->axis) * static_cast<int64_t>(group->members.size());
        std::vector<std::string> arAxes;
        for (Attribute a : ar.getGridAxes())
          arAxes.push_back(cast<StringAttr>(a).str());
        if (arAxes == std::vector<std::string>{"dp"})
          return; // the dp gradient all-reduce, modelled above
        if (fusedEmbedding && arAxes == std::vector<std::string>{"pp"} && !ar->hasAttr(kGlobalNormAttr)) {
          if (grid.getAxisIndex("dp"))
            arAxes = {"dp", "pp"};
          const size_t k = tiedIndex++;
          n = (k < holders.size() ? holders[k] : n) * model.dp;
        }
        bool inter = placement->crossesNodes(arAxes);
        double bytes = getTensorBytes(ar.getInput().getType()) / tp;
        model.costs.tied.bytes += bytes;
        model.costs.tied.seconds += link(inter).allReduce(bytes, n);
        model.costs.tied.sentBytes =
            std::max(0.0, model.costs.tied.sentBytes) + (n > 1 ? 2.0 * (n - 1) / n * bytes : 0.0);
        model.costs.tied.interNode |= inter;
      });

    // Memory.
    collectStates(opt, symbols, seenStates[s], states[s],
                  {StateKind::Parameter, StateKind::Gradient, StateKind::OptimizerMoment}, visitedStates[s]);
    d.stateBytes = bytesOf(states[s]) / tp;
    int64_t inFlight = 0;
    for (Attribute entry : cast<ArrayAttr>(rows[s])) {
      auto str = dyn_cast<StringAttr>(entry);
      auto step = str ? ScheduleStep::parse(str.getValue()) : std::nullopt;
      if (!step)
        return costError("stage " + llvm::Twine(s) + ": malformed schedule entry " +
                         (str ? "'" + str.str() + "'" : std::string("(not a string)")));
      model.costs.table[s].push_back(*step);
      if (step->kind == ScheduleStep::Forward)
        d.inFlight = std::max(d.inFlight, ++inFlight);
      else if (step->kind == ScheduleStep::Backward)
        --inFlight;
      else if (step->kind == ScheduleStep::ForwardBackward)
        d.inFlight = std::max<int64_t>(d.inFlight, 1);
    }
    d.activationBytes = d.inFlight * inputBytes[s];
    rc.peakMemory = d.stateBytes + d.activationBytes + d.workingBytes;
  }

  // The loss all-reduce at the end of every rank's train step: the f32 mean loss over dp x pp
  // (LowerToRuntime.cpp).
  {
    std::vector<std::string> lossAxes = {"pp"};
    if (grid.getAxisIndex("dp"))
      lossAxes.insert(lossAxes.begin(), "dp");
    int64_t n = model.dp * p;
    if (n > 1) {
      bool inter = placement->crossesNodes(lossAxes);
      model.costs.loss = {link(inter).allReduce(4, n), 4, inter, 2.0 * (n - 1) / n * 4};
    }
  }

  if (plan)
    if (llvm::Error e = addCompressedSends(model, *plan, symbols, stageRefs, cluster, links, ppInter, halfMessages))
      return std::move(e);
  return model;
}
