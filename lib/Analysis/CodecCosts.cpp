//===- CodecCosts.cpp - FLOPs and bytes of codec kernels ------------*- C++ -*-===//
//
// See CodecCosts.h and docs/TimingModel.md ("Codec kernels").
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/CodecCosts.h"

#include "mlir/AsmParser/AsmParser.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <tuple>

using namespace mlir;
using namespace mlir::ptrain;

namespace {
constexpr double kF32 = 4; // bytes per element of the f32 tensors the codecs read and write

CodecPhase gemm(double n, double k, double m) {
  // C (n x m) = A (n x k) B (k x m): 2 n k m FLOPs, A, B read and C written once.
  return {{2 * n * k * m, kF32 * (n * k + k * m + n * m)}, true};
}

CodecPhase pass(double flops, double bytes) { return {{flops, bytes}, false}; }

/// The PowerSGD phases of the runtime (PowerSGD.h) on an n x m matrix at rank r.
struct PowerSGDPhases {
  std::vector<CodecPhase> p, q, decode, residual;
};

PowerSGDPhases powerSGDPhases(double n, double m, double r, bool errorFeedback) {
  PowerSGDPhases ph;
  double nm = n * m;
  if (errorFeedback) // M = g + e, written into the residual buffer
    ph.p.push_back(pass(nm, 3 * kF32 * nm));
  ph.p.push_back(gemm(n, m, r)); // P = M Q
  // Modified Gram-Schmidt of P: for column j, j dot products and axpys of length n; P stays in cache.
  ph.q.push_back(pass(2 * n * r * r, 2 * kF32 * n * r));
  ph.q.push_back(gemm(m, n, r));      // Q = M^T P
  ph.decode.push_back(gemm(n, r, m)); // P Q^T
  if (errorFeedback) {
    CodecPhase e = gemm(n, r, m); // e = M - P Q^T (a GEMM with beta = 1 over the residual)
    e.cost.bytes += kF32 * nm;
    ph.residual.push_back(e);
  }
  return ph;
}

void append(std::vector<CodecPhase> &to, const std::vector<CodecPhase> &from) {
  to.insert(to.end(), from.begin(), from.end());
}
} // namespace

CodecWork mlir::ptrain::getCodecWork(CodecAttrInterface codec, RankedTensorType type, bool errorFeedback) {
  CodecWork work;
  double numel = type.getNumElements();
  work.tensorBytes = getTensorBytes(type);
  for (Type t : codec.getCodeTypes(type))
    work.codeBytes += getTensorBytes(t);
  // The memory-bound pattern: encode reads g (and e, writing e back) and writes the codes; decode reads the
  // codes and writes the tensor.
  double encodeBytes = (errorFeedback ? 3 : 1) * kF32 * numel + work.codeBytes;
  double decodeBytes = work.codeBytes + kF32 * numel;
  llvm::TypeSwitch<Attribute>(codec)
      .Case([&](PowerSGDAttr a) {
        auto [n, m] = *MatrixViewAttr::getMatrixShape(a.getView(), type, nullptr);
        double r = a.getRank();
        if ((n + m) * r >= static_cast<double>(n) * m) { // the exact path: the codes carry M
          work.encode.push_back(pass(errorFeedback ? numel : 0, encodeBytes));
          work.decode.push_back(pass(0, decodeBytes));
          return;
        }
        PowerSGDPhases ph = powerSGDPhases(n, m, r, errorFeedback);
        append(work.encode, ph.p);
        append(work.encode, ph.q);
        append(work.encode, ph.residual);
        append(work.decode, ph.decode);
      })
      .Case([&](TopKAttr) {
        // Radix select: a histogram pass and a candidate pass over |g| before the selecting pass.
        work.encode.push_back(pass(3 * numel, encodeBytes + 2 * kF32 * numel));
        work.decode.push_back(pass(0, decodeBytes));
      })
      .Case([&](TahQuantAttr a) {
        // cpu/codecs/TahQuant.cpp, two passes (docs/TimingModel.md "Codec kernels"). Pass 1: v = g + e and the
        // tile entropies, 8 FLOPs per element (|x|, the sum, the divide, a log counted as 4, the multiply-add).
        // Pass 2: pivot search (2), the Walsh-Hadamard butterflies and normalization (log2 G + 1, priced for
        // every tile: the worst case), min/max (2) and quantization (3); with error feedback the tile's decode
        // (log2 G + 3) and e = v - decode (1). Decode: unpack and u s + z (3) and the inverse rotation
        // (log2 G + 1, every tile). The selection (nth_element over N / G tiles) is below one FLOP per element.
        const double lg = std::log2(static_cast<double>(a.getTileSize()));
        work.encode.push_back(pass((errorFeedback ? 9 : 8) * numel, (errorFeedback ? 3 : 1) * kF32 * numel));
        work.encode.push_back(pass((lg + 8 + (errorFeedback ? lg + 4 : 0)) * numel,
                                   (errorFeedback ? 2 : 1) * kF32 * numel + work.codeBytes));
        work.decode.push_back(pass((lg + 4) * numel, decodeBytes));
      })
      .Case([&](LinearAEAttr a) {
        auto [n, m] = *MatrixViewAttr::getMatrixShape(a.getView(), type, nullptr);
        work.encode.push_back(gemm(n, m, a.getDim()));
        work.decode.push_back(gemm(n, a.getDim(), m));
        if (errorFeedback)
          work.encode.push_back(pass(2 * numel, 3 * kF32 * numel));
      })
      .Default([&](Attribute) { // rand-k, quantization, casts: one elementwise pass each way
        work.encode.push_back(pass(2 * numel, encodeBytes));
        work.decode.push_back(pass(numel, decodeBytes));
      });
  if (isHalfFloat(type.getElementType())) {
    // A 16-bit input (--ptrain-widen-half-codecs): the exact widen before the f32 kernel (2 bytes read, 4
    // written per element) and the rounding of its result after the decode; the values the codec keeps 16-bit
    // (top-k, rand-k) are rounded after the encode and widened before the decode, and with error feedback the
    // residual gets their rounding back (a difference, a scatter and an add over the tensor).
    work.encode.insert(work.encode.begin(), pass(0, 6 * numel));
    work.decode.push_back(pass(numel, 6 * numel));
    for (auto [narrow, wide] : llvm::zip(codec.getCodeTypes(type), codec.getCodeTypes(getCodecComputeType(type)))) {
      if (narrow == wide)
        continue;
      double n = cast<RankedTensorType>(narrow).getNumElements();
      work.encode.push_back(pass(n, 6 * n));
      work.decode.insert(work.decode.begin(), pass(0, 6 * n));
      if (errorFeedback)
        work.encode.push_back(pass(2 * n + numel, 14 * n + 3 * kF32 * numel));
    }
  }
  return work;
}

DataParallelPowerSGDWork mlir::ptrain::getDataParallelPowerSGDWork(int64_t n, int64_t m, int64_t rank,
                                                                   bool errorFeedback) {
  DataParallelPowerSGDWork work;
  double nm = static_cast<double>(n) * m;
  work.tensorBytes = kF32 * nm;
  if ((n + m) * static_cast<double>(rank) >= nm) {
    work.exact = true;
    work.firstBytes = kF32 * nm;
    work.phaseP = {pass(0, 2 * kF32 * nm)};
    work.finish = {pass(0, 2 * kF32 * nm)};
    return work;
  }
  PowerSGDPhases ph = powerSGDPhases(n, m, rank, errorFeedback);
  work.phaseP = ph.p;
  work.phaseQ = ph.q;
  work.finish = ph.decode;
  append(work.finish, ph.residual);
  work.firstBytes = kF32 * n * rank;
  work.secondBytes = kF32 * m * rank;
  return work;
}

llvm::Expected<double> mlir::ptrain::getCodecSeconds(llvm::ArrayRef<CodecPhase> phases, const ClusterSpec &cluster) {
  double seconds = 0;
  for (const CodecPhase &p : phases) {
    auto peak = cluster.getPeakFlops("f32", p.matmul);
    if (!peak)
      return peak.takeError();
    seconds += std::max(p.cost.flops / *peak, p.cost.bytes / cluster.memoryBandwidth) / cluster.efficiency;
  }
  return seconds;
}

CodecCollective mlir::ptrain::ringAllReduce(double bytes, int64_t n) {
  if (n <= 1)
    return {0, 0, bytes};
  return {2.0 * (n - 1), 2.0 * (n - 1) / n * bytes, bytes, /*allReduce=*/true};
}

CodecCollective mlir::ptrain::ringReduceScatterAllGather(double bytes, int64_t n) {
  CodecCollective c = ringAllReduce(bytes, n);
  c.allReduce = false;
  return c;
}

double mlir::ptrain::getCollectiveSeconds(const CodecCollective &c, const LinkCost &link, int64_t n, double scale) {
  if (c.allReduce)
    return link.allReduce(scale * c.bytes, n);
  if (c.allGather && link.hasAllGatherTable(n))
    return link.allGather(scale * c.bytes, n);
  if (c.allToAll && link.hasAllToAllTable(n))
    return link.allToAll(scale * c.bytes, n);
  return link.messages(c.latencies, scale * c.sentBytes);
}

llvm::Expected<DataParallelCodecWork>
mlir::ptrain::getDataParallelCodecWork(CodecAttrInterface codec, RankedTensorType type, int64_t n, bool errorFeedback) {
  DataParallelCodecWork work;
  double numel = type.getNumElements(), size = std::max<int64_t>(n, 1);
  // (n-1) latencies and (n-1) x `each` bytes: an all-gather in which every rank contributes `each` bytes.
  auto allGather = [&](double each) {
    CodecCollective c{size - 1, (size - 1) * each, each};
    c.allGather = true;
    return c;
  };
  if (auto powerSGD = dyn_cast<PowerSGDAttr>(codec)) {
    auto [rows, cols] = *MatrixViewAttr::getMatrixShape(powerSGD.getView(), type, nullptr);
    int64_t r = std::min({static_cast<int64_t>(powerSGD.getRank()), rows, cols});
    DataParallelPowerSGDWork w = getDataParallelPowerSGDWork(rows, cols, r, errorFeedback);
    work.phaseP = w.phaseP;
    work.phaseQ = w.phaseQ;
    work.finish = w.finish;
    work.exact = w.exact;
    work.first.push_back(ringAllReduce(w.firstBytes, n));
    if (!w.exact)
      work.second.push_back(ringAllReduce(w.secondBytes, n));
    return work;
  }
  if (isa<LinearAEAttr>(codec))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the linear autoencoder has no compressed all-reduce (dp codec)");
  CodecWork w = getCodecWork(codec, type, errorFeedback);
  work.phaseP = w.encode;
  if (isa<RandKAttr>(codec) && !isHalfFloat(type.getElementType())) {
    work.first.push_back(ringAllReduce(w.codeBytes, n));
    work.finish = w.decode;
  } else if (isa<RandKAttr>(codec)) {
    // 16-bit values (a 16-bit TP site, value_type): all-gathered (MPI has no 16-bit sum), each rank's k values
    // widened and added in fp32 in rank order, then decoded once (cpu/CompressedCollectives.cpp).
    const double k = cast<RankedTensorType>(codec.getCodeTypes(type).front()).getNumElements();
    work.first.push_back(allGather(w.codeBytes));
    work.finish.push_back(pass((size - 1) * k, size * w.codeBytes + kF32 * k));
    append(work.finish, w.decode);
  } else if (isa<CastAttr>(codec)) {
    CodecCollective toAll{size - 1, (size - 1) / size * w.codeBytes, w.codeBytes};
    toAll.allToAll = true;
    work.first.push_back(toAll);
    work.phaseQ.push_back(pass(numel, w.codeBytes + kF32 * numel / size));
    work.second.push_back(allGather(kF32 * numel / size));
    work.finish.push_back(pass(0, 2 * kF32 * numel));
  } else { // top-k, quantization: gathered, each rank's code decoded and added
    work.first.push_back(allGather(w.codeBytes));
    for (int64_t r = 0; r < size; ++r)
      append(work.finish, w.decode);
  }
  return work;
}

DataParallelCodecWork mlir::ptrain::getZeroReduceScatterCodecWork(CodecAttrInterface codec, RankedTensorType chunk,
                                                                  int64_t n, bool errorFeedback) {
  DataParallelCodecWork work;
  const double size = std::max<int64_t>(n, 1);
  CodecWork w = getCodecWork(codec, chunk, errorFeedback);
  for (int64_t r = 0; r < n; ++r) {
    append(work.phaseP, w.encode);
    append(work.finish, w.decode);
  }
  // The runtime's MPI_Ialltoall of every chunk's codes: each rank sends size x codeBytes in all.
  CodecCollective toAll{size - 1, (size - 1) * w.codeBytes, size * w.codeBytes};
  toAll.allToAll = true;
  work.first.push_back(toAll);
  return work;
}

llvm::Expected<CompressedAllReduceCost>
mlir::ptrain::getCompressedAllReduceCost(CodecAttrInterface codec, RankedTensorType type, int64_t n, const LinkCost &link,
                                         const ClusterSpec &cluster, bool errorFeedback) {
  llvm::Expected<DataParallelCodecWork> work = getDataParallelCodecWork(codec, type, n, errorFeedback);
  if (!work)
    return work.takeError();
  CompressedAllReduceCost cost;
  double calibration = getCodecCalibration(codec, type, errorFeedback, cluster).both;
  for (std::vector<CodecPhase> *phases : {&work->phaseP, &work->phaseQ, &work->finish})
    scaleCodecPhases(*phases, calibration);
  for (const std::vector<CodecPhase> *phases : {&work->phaseP, &work->phaseQ, &work->finish}) {
    llvm::Expected<double> seconds = getCodecSeconds(*phases, cluster);
    if (!seconds)
      return seconds.takeError();
    cost.codecSeconds += *seconds;
  }
  cost.seconds = cost.codecSeconds;
  for (const std::vector<CodecCollective> *rounds : {&work->first, &work->second})
    for (const CodecCollective &c : *rounds) {
      cost.seconds += getCollectiveSeconds(c, link, n);
      cost.sentBytes += c.sentBytes;
    }
  return cost;
}

/// The codec kind of an attribute's text: "#ptrain.powersgd<rank = 4>" -> "powersgd".
static llvm::StringRef codecKind(llvm::StringRef text) {
  text.consume_front("#ptrain.");
  return text.take_until([](char c) { return c == '<'; });
}

CodecCalibration mlir::ptrain::getCodecCalibration(CodecAttrInterface codec, RankedTensorType type, bool errorFeedback,
                                                   const ClusterSpec &cluster) {
  CodecCalibration result;
  if (cluster.codecKernels.empty() || !codec || !type || !type.hasStaticShape())
    return result;
  std::string text;
  llvm::raw_string_ostream(text) << Attribute(codec);
  llvm::StringRef kind = codecKind(text);
  const double numel = type.getNumElements();
  const CodecKernelTime *best = nullptr;
  CodecAttrInterface bestCodec;
  RankedTensorType bestType;
  std::tuple<int, int, double> bestScore;
  for (const CodecKernelTime &k : cluster.codecKernels) {
    if (codecKind(k.codec) != kind)
      continue;
    auto attr = dyn_cast_or_null<CodecAttrInterface>(parseAttribute(k.codec, codec.getContext()));
    if (!attr)
      continue;
    auto entryType = RankedTensorType::get(k.shape, Float32Type::get(codec.getContext()));
    if (failed(attr.verifyForType([] { return InFlightDiagnostic(); }, entryType)))
      continue;
    std::tuple<int, int, double> score{k.codec != text, k.errorFeedback != errorFeedback,
                                       std::fabs(std::log(entryType.getNumElements() / numel))};
    if (!best || score < bestScore) {
      best = &k;
      bestScore = score;
      bestCodec = attr;
      bestType = entryType;
    }
  }
  if (!best)
    return result;
  CodecWork work = getCodecWork(bestCodec, bestType, best->errorFeedback);
  auto encode = getCodecSeconds(work.encode, cluster), decode = getCodecSeconds(work.decode, cluster);
  if (!encode || !decode || *encode <= 0 || *decode <= 0) {
    llvm::consumeError(encode.takeError());
    llvm::consumeError(decode.takeError());
    return result;
  }
  result.encode = best->encodeSeconds / *encode;
  result.decode = best->decodeSeconds / *decode;
  result.both = (best->encodeSeconds + best->decodeSeconds) / (*encode + *decode);
  result.calibrated = true;
  return result;
}

void mlir::ptrain::scaleCodecPhases(std::vector<CodecPhase> &phases, double factor) {
  for (CodecPhase &p : phases) {
    p.cost.flops *= factor;
    p.cost.bytes *= factor;
  }
}
