//===- CodecCostsTest.cpp - FLOPs and bytes of the codec kernels -----------===//
//
// The counts of CodecCosts.h against the formulas of docs/TimingModel.md ("Codec kernels"): PowerSGD's GEMMs
// and Gram-Schmidt, its exact path, the memory-bound passes of the elementwise codecs, and data-parallel
// PowerSGD's message sizes; the compressed dp all-reduce of every codec as the runtime runs it.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/CodecCosts.h"
#include "ptrain/Dialect/PTrain/IR/PTrainDialect.h"

#include <cmath>

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {

double flops(llvm::ArrayRef<CodecPhase> phases) {
  double f = 0;
  for (const CodecPhase &p : phases)
    f += p.cost.flops;
  return f;
}

class CodecCostsTest : public ::testing::Test {
protected:
  CodecCostsTest() { context.loadDialect<PTrainDialect>(); }
  MLIRContext context;
};

TEST_F(CodecCostsTest, PowerSGDCountsItsGemmsAndGramSchmidt) {
  // An activation gradient of 8 x 1024 x 1920 (n = 8192, m = 1920) at rank 16.
  double n = 8192, m = 1920, r = 16;
  auto type = RankedTensorType::get({8, 1024, 1920}, Float32Type::get(&context));
  auto codec = cast<CodecAttrInterface>(PowerSGDAttr::get(&context, 16, BoolAttr(), MatrixViewAttr()));
  CodecWork ef = getCodecWork(codec, type, /*errorFeedback=*/true);
  // P = M Q, Q = M^T P and the residual's P Q^T: 3 x 2 n m r; Gram-Schmidt 2 n r^2; M = g + e: n m.
  EXPECT_DOUBLE_EQ(flops(ef.encode), 3 * 2 * n * m * r + 2 * n * r * r + n * m);
  EXPECT_DOUBLE_EQ(flops(ef.decode), 2 * n * m * r);
  EXPECT_DOUBLE_EQ(ef.codeBytes, 4 * r * (n + m));
  EXPECT_DOUBLE_EQ(ef.tensorBytes, 4 * n * m);
  CodecWork plain = getCodecWork(codec, type, /*errorFeedback=*/false);
  EXPECT_DOUBLE_EQ(flops(plain.encode), 2 * 2 * n * m * r + 2 * n * r * r);
  // On an A100 (fp32 19.5 TFLOP/s, 1.555 TB/s, efficiency 0.5) every phase is memory-bound (the skinny GEMMs
  // do about r / 2 = 8 FLOP per byte, below 19.5 / 1.555 = 12.5): the time is the bytes at half the bandwidth.
  ClusterSpec cluster;
  cluster.peakFlops["f32"] = 19.5e12;
  cluster.memoryBandwidth = 1.555e12;
  cluster.efficiency = 0.5;
  double bytes = 0;
  for (const CodecPhase &p : ef.encode)
    bytes += p.cost.bytes;
  double seconds = cantFail(getCodecSeconds(ef.encode, cluster));
  EXPECT_NEAR(seconds, bytes / (1.555e12 * 0.5), 1e-12 * seconds);
  // With TF32-free but slow matmuls (1 TFLOP/s) the GEMMs become compute-bound and take longer.
  cluster.peakFlops["f32"] = 1e12;
  EXPECT_GT(cantFail(getCodecSeconds(ef.encode, cluster)), 2 * seconds);
}

TEST_F(CodecCostsTest, PowerSGDExactPathIsACopy) {
  // 4 x 4 at rank 2: (4 + 4) 2 >= 16, the codes carry the matrix.
  auto type = RankedTensorType::get({4, 4}, Float32Type::get(&context));
  auto codec = cast<CodecAttrInterface>(PowerSGDAttr::get(&context, 2, BoolAttr(), MatrixViewAttr()));
  CodecWork w = getCodecWork(codec, type, false);
  EXPECT_DOUBLE_EQ(flops(w.encode), 0);
  ASSERT_EQ(w.encode.size(), 1u);
  EXPECT_FALSE(w.encode[0].matmul);
  DataParallelPowerSGDWork dp = getDataParallelPowerSGDWork(4, 4, 2, true);
  EXPECT_TRUE(dp.exact);
  EXPECT_DOUBLE_EQ(dp.firstBytes, 64);
  EXPECT_DOUBLE_EQ(dp.secondBytes, 0);
  // 1-D: n = 1, rank 1: (1 + m) >= m.
  EXPECT_TRUE(getDataParallelPowerSGDWork(1, 1920, 1, true).exact);
}

TEST_F(CodecCostsTest, DataParallelPowerSGDSendsPThenQ) {
  DataParallelPowerSGDWork w = getDataParallelPowerSGDWork(1920, 5760, 128, true);
  EXPECT_FALSE(w.exact);
  EXPECT_DOUBLE_EQ(w.firstBytes, 4.0 * 1920 * 128);
  EXPECT_DOUBLE_EQ(w.secondBytes, 4.0 * 5760 * 128);
  EXPECT_DOUBLE_EQ(flops(w.phaseP), 1920.0 * 5760 + 2.0 * 1920 * 5760 * 128);
  EXPECT_DOUBLE_EQ(flops(w.finish), 2 * 2.0 * 1920 * 5760 * 128);
}

TEST_F(CodecCostsTest, ElementwiseCodecsAreMemoryPasses) {
  auto f32 = Float32Type::get(&context);
  auto type = RankedTensorType::get({1024, 256}, f32);
  double numel = 1024 * 256;
  // bf16 cast with error feedback: reads g and e, writes e (12 B) and the 2-byte code; decode 2 + 4 B.
  auto cast16 = cast<CodecAttrInterface>(CastAttr::get(&context, BFloat16Type::get(&context)));
  CodecWork c = getCodecWork(cast16, type, true);
  EXPECT_DOUBLE_EQ(c.codeBytes, 2 * numel);
  EXPECT_DOUBLE_EQ(c.encode[0].cost.bytes, 14 * numel);
  EXPECT_DOUBLE_EQ(c.decode[0].cost.bytes, 6 * numel);
  // top-k 1%: values and int32 indices; two more reads of the input for the radix select.
  auto topk = cast<CodecAttrInterface>(TopKAttr::get(&context, 0, FloatAttr::get(Float64Type::get(&context), 0.01)));
  CodecWork t = getCodecWork(topk, type, false);
  double k = std::ceil(0.01 * numel);
  EXPECT_DOUBLE_EQ(t.codeBytes, 8 * k);
  EXPECT_DOUBLE_EQ(t.encode[0].cost.bytes, 4 * numel + 8 * k + 8 * numel);
}

// A bf16 input (docs/Compression.md, "Codecs on 16-bit traffic"; --ptrain-widen-half-codecs): top-k's values are
// 2 bytes; the encode starts with the widen (2 bytes read, 4 written an element) and ends with the values' rounding
// and, with error feedback, the residual's fix-up (difference, scatter, add); the decode widens the values first and
// rounds the result last. The f32 kernel's own phases are those of the f32 tensor.
TEST_F(CodecCostsTest, SixteenBitInputsPayForTheWidenAndSendTwoByteValues) {
  auto f32 = RankedTensorType::get({1024, 256}, Float32Type::get(&context));
  auto bf16 = RankedTensorType::get({1024, 256}, BFloat16Type::get(&context));
  double numel = 1024 * 256;
  auto topk = cast<CodecAttrInterface>(TopKAttr::get(&context, 0, FloatAttr::get(Float64Type::get(&context), 0.01)));
  double k = std::ceil(0.01 * numel);
  CodecWork wide = getCodecWork(topk, f32, true), half = getCodecWork(topk, bf16, true);
  EXPECT_DOUBLE_EQ(half.codeBytes, 6 * k);
  EXPECT_DOUBLE_EQ(half.tensorBytes, 2 * numel);
  ASSERT_EQ(half.encode.size(), wide.encode.size() + 3);
  EXPECT_DOUBLE_EQ(half.encode[0].cost.bytes, 6 * numel);                                // the widen
  EXPECT_DOUBLE_EQ(half.encode[2].cost.bytes, 6 * k);                                    // the rounding
  EXPECT_DOUBLE_EQ(half.encode[3].cost.bytes, 14 * k + 12 * numel);                      // the fix-up
  ASSERT_EQ(half.decode.size(), wide.decode.size() + 2);
  EXPECT_DOUBLE_EQ(half.decode.front().cost.bytes, 6 * k);                               // the values widened
  EXPECT_DOUBLE_EQ(half.decode.back().cost.bytes, 6 * numel);                            // the result rounded
  // Quantization: the same codes, the widen and the rounding only.
  auto quant = cast<CodecAttrInterface>(QuantAttr::get(&context, 8, QuantGranularity::Tensor, 0, nullptr, nullptr));
  CodecWork q32 = getCodecWork(quant, f32, true), q16 = getCodecWork(quant, bf16, true);
  EXPECT_DOUBLE_EQ(q16.codeBytes, q32.codeBytes);
  EXPECT_EQ(q16.encode.size(), q32.encode.size() + 1);
  EXPECT_EQ(q16.decode.size(), q32.decode.size() + 1);
}

// TAH-Quant's wire bytes are exact: 4 x 64 x 128 at 64-element tiles is T = 512 tiles, H = round(0.8 T) = 410 at 4
// bits and 102 at 3: 64 (410 x 4 + 102 x 3) / 8 = 15568 packed bytes + 512 x (4 + 4 + 1) = 20176 bytes. The
// kernel time coefficients are those of docs/TimingModel.md: 8 + (log2 64 + 8) FLOPs per element to encode,
// log2 64 + 4 to decode; 4 + 4 bytes per element read plus the codes.
TEST_F(CodecCostsTest, TahQuantBytesAreTheCodes) {
  auto type = RankedTensorType::get({4, 64, 128}, Float32Type::get(&context));
  const double numel = 4 * 64 * 128;
  auto codec = cast<CodecAttrInterface>(parseAttribute("#ptrain.tahquant<>", &context));
  CodecWork w = getCodecWork(codec, type, false);
  EXPECT_DOUBLE_EQ(w.codeBytes, 20176);
  EXPECT_DOUBLE_EQ(w.tensorBytes, 4 * numel);
  ASSERT_EQ(w.encode.size(), 2u);
  EXPECT_DOUBLE_EQ(w.encode[0].cost.flops + w.encode[1].cost.flops, (8 + 6 + 8) * numel);
  EXPECT_DOUBLE_EQ(w.encode[0].cost.bytes + w.encode[1].cost.bytes, 8 * numel + 20176);
  ASSERT_EQ(w.decode.size(), 1u);
  EXPECT_DOUBLE_EQ(w.decode[0].cost.flops, 10 * numel);
  EXPECT_DOUBLE_EQ(w.decode[0].cost.bytes, 20176 + 4 * numel);
  // With error feedback: g + e (12 B and one more FLOP per element), the residual pass (8 B, log2 G + 4 FLOPs).
  CodecWork ef = getCodecWork(codec, type, true);
  EXPECT_DOUBLE_EQ(ef.encode[0].cost.flops + ef.encode[1].cost.flops, (9 + 6 + 8 + 10) * numel);
  EXPECT_DOUBLE_EQ(ef.encode[0].cost.bytes + ef.encode[1].cost.bytes, 20 * numel + 20176);
}

TEST_F(CodecCostsTest, DataParallelCodecsFollowTheRuntimesRounds) {
  auto type = RankedTensorType::get({1024, 256}, Float32Type::get(&context));
  double numel = 1024 * 256;
  auto codec = [&](const char *text) { return cast<CodecAttrInterface>(parseAttribute(text, &context)); };
  auto sent = [](const std::vector<CodecCollective> &round) {
    double s = 0;
    for (const CodecCollective &c : round)
      s += c.sentBytes;
    return s;
  };
  // rand-k over 4 ranks: one ring all-reduce of the k values (6 latencies, 2 x 3/4 of 4 k bytes); encode
  // before it, decode after it.
  auto randk = getDataParallelCodecWork(codec("#ptrain.randk<k = 1000, seed = 1>"), type, 4, true);
  ASSERT_TRUE(static_cast<bool>(randk));
  ASSERT_EQ(randk->first.size(), 1u);
  EXPECT_DOUBLE_EQ(randk->first[0].latencies, 6);
  EXPECT_DOUBLE_EQ(randk->first[0].sentBytes, 1.5 * 4000);
  EXPECT_TRUE(randk->second.empty());
  EXPECT_EQ(randk->phaseP.size(), 1u);
  EXPECT_EQ(randk->finish.size(), 1u);
  // rand-k with bf16 values (a 16-bit TP site, value_type = bf16): all-gathered like the runtime (3 latencies,
  // 3 x the 2 k code bytes), the 4 ranks' values added in fp32, then one decode.
  auto randk16 = getDataParallelCodecWork(codec("#ptrain.randk<k = 1000, seed = 1>"),
                                          RankedTensorType::get({1024, 256}, BFloat16Type::get(&context)), 4, true);
  ASSERT_TRUE(static_cast<bool>(randk16));
  ASSERT_EQ(randk16->first.size(), 1u);
  EXPECT_TRUE(randk16->first[0].allGather);
  EXPECT_DOUBLE_EQ(randk16->first[0].latencies, 3);
  EXPECT_DOUBLE_EQ(randk16->first[0].sentBytes, 3 * 2000);
  ASSERT_FALSE(randk16->finish.empty());
  EXPECT_DOUBLE_EQ(randk16->finish[0].cost.bytes, 4 * 2000 + 4 * 1000);
  // bf16 cast over 4 ranks: all-to-all of the 2-byte codes (3 latencies, 3/4 of 2 N), the fp32 sum of this
  // rank's chunk, all-gather of the 4 N / 4 fp32 chunks (3 latencies, 3 x N bytes), a copy of 4 N.
  auto cast16 = getDataParallelCodecWork(codec("#ptrain.cast<bf16>"), type, 4, false);
  ASSERT_TRUE(static_cast<bool>(cast16));
  EXPECT_DOUBLE_EQ(cast16->first[0].latencies, 3);
  EXPECT_DOUBLE_EQ(sent(cast16->first), 0.75 * 2 * numel);
  EXPECT_DOUBLE_EQ(cast16->second[0].latencies, 3);
  EXPECT_DOUBLE_EQ(sent(cast16->second), 3 * numel);
  EXPECT_DOUBLE_EQ(cast16->phaseQ[0].cost.bytes, 2 * numel + numel);
  EXPECT_DOUBLE_EQ(cast16->finish[0].cost.bytes, 8 * numel);
  // 8-bit quantization over 4 ranks: all-gather of the codes (3 latencies, 3 x the code bytes), then 4
  // decodes (every rank's code), each reading the code and writing 4 N bytes.
  auto quant = getDataParallelCodecWork(codec("#ptrain.quant<bits = 8>"), type, 4, true);
  ASSERT_TRUE(static_cast<bool>(quant));
  double code = getCodecWork(codec("#ptrain.quant<bits = 8>"), type, true).codeBytes;
  EXPECT_DOUBLE_EQ(quant->first[0].latencies, 3);
  EXPECT_DOUBLE_EQ(sent(quant->first), 3 * code);
  ASSERT_EQ(quant->finish.size(), 4u);
  EXPECT_DOUBLE_EQ(quant->finish[3].cost.bytes, code + 4 * numel);
  // PowerSGD: the rank clamps to the matrix; two all-reduces of P (n x r) and Q (m x r).
  auto psgd = getDataParallelCodecWork(codec("#ptrain.powersgd<rank = 16>"), type, 2, true);
  ASSERT_TRUE(static_cast<bool>(psgd));
  EXPECT_DOUBLE_EQ(psgd->first[0].sentBytes, 4.0 * 1024 * 16);
  EXPECT_DOUBLE_EQ(psgd->second[0].sentBytes, 4.0 * 256 * 16);
  EXPECT_DOUBLE_EQ(psgd->second[0].latencies, 2);
  // The linear autoencoder has no compressed all-reduce in the runtime.
  auto ae = getDataParallelCodecWork(codec("#ptrain.linear_ae<dim = 8>"), type, 2, true);
  ASSERT_FALSE(static_cast<bool>(ae));
  EXPECT_NE(llvm::toString(ae.takeError()).find("linear autoencoder"), std::string::npos);
}

// mcbench's TP site prices a compressed tp all-reduce as the codec phases at the op-time rule plus each
// round's latencies and sent bytes on the link: 8-bit quantization gathered over 2 ranks (1 latency, the
// code bytes once; 1 encode and 2 decodes), and rand-k (one ring all-reduce of the k values: 2 latencies,
// 2 x 1/2 of 4 k bytes).
TEST_F(CodecCostsTest, CompressedAllReduceCostOfTheTensorParallelSite) {
  auto type = RankedTensorType::get({4, 64, 128}, Float32Type::get(&context));
  auto codec = [&](const char *text) { return cast<CodecAttrInterface>(parseAttribute(text, &context)); };
  ClusterSpec cluster;
  cluster.peakFlops["f32"] = 67e12;
  cluster.memoryBandwidth = 4.8e12;
  cluster.efficiency = 0.5;
  const double bw = 1e9, lat = 3e-6;
  CodecAttrInterface quant = codec("#ptrain.quant<bits = 8>");
  auto q = getCompressedAllReduceCost(quant, type, 2, LinkCost(LinkSpec{bw, lat, {}}), cluster);
  ASSERT_TRUE(static_cast<bool>(q));
  auto work = cantFail(getDataParallelCodecWork(quant, type, 2, false));
  double phases = cantFail(getCodecSeconds(work.phaseP, cluster)) + cantFail(getCodecSeconds(work.finish, cluster));
  double code = getCodecWork(quant, type, false).codeBytes;
  EXPECT_DOUBLE_EQ(q->sentBytes, code);
  EXPECT_DOUBLE_EQ(q->codecSeconds, phases);
  EXPECT_NEAR(q->seconds, phases + lat + code / bw, 1e-15);
  // Cheaper than the fp32 ring all-reduce of the same tensor on this slow link (2 latencies, 4 N bytes).
  EXPECT_LT(q->seconds, 2 * lat + 4.0 * 4 * 64 * 128 / bw);
  auto r = getCompressedAllReduceCost(codec("#ptrain.randk<k = 1000, seed = 1>"), type, 2, LinkCost(LinkSpec{bw, lat, {}}), cluster);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_DOUBLE_EQ(r->sentBytes, 4000);
  EXPECT_NEAR(r->seconds - r->codecSeconds, 2 * lat + 4000 / bw, 1e-15);
  // The linear autoencoder has no compressed all-reduce: the error comes through.
  auto ae = getCompressedAllReduceCost(codec("#ptrain.linear_ae<dim = 8>"), type, 2, LinkCost(LinkSpec{bw, lat, {}}), cluster);
  ASSERT_FALSE(static_cast<bool>(ae));
  EXPECT_NE(llvm::toString(ae.takeError()).find("linear autoencoder"), std::string::npos);
}

// The all-reduce rounds of a compressed all-reduce (PowerSGD's P and Q, rand-k's values) are timed by the
// cluster's all-reduce algorithm, as the plain all-reduce they replace: a ring (NCCL), or on the CPU target
// OpenMPI's in-place binomial reduce + broadcast (ClusterSpec::binomialAllReduce), two whole-buffer messages at
// n = 2. A ring reduce-scatter + all-gather (ZeRO-1's plain bucket) is never a binomial all-reduce.
TEST_F(CodecCostsTest, AllReduceRoundsFollowTheClustersAlgorithm) {
  auto type = RankedTensorType::get({1024, 256}, Float32Type::get(&context));
  auto psgd = cast<CodecAttrInterface>(parseAttribute("#ptrain.powersgd<rank = 16>", &context));
  ClusterSpec cluster;
  cluster.peakFlops["f32"] = 1e11;
  cluster.memoryBandwidth = 2e10;
  cluster.efficiency = 1;
  const double bw = 1.25e8, lat = 1e-5, p = 4.0 * 1024 * 16, q = 4.0 * 256 * 16;
  LinkCost ring(LinkSpec{bw, lat, {}}), binomial(LinkSpec{bw, lat, {}}, 1, /*binomial=*/true);
  auto r = getCompressedAllReduceCost(psgd, type, 2, ring, cluster);
  auto b = getCompressedAllReduceCost(psgd, type, 2, binomial, cluster);
  ASSERT_TRUE(r && b);
  EXPECT_NEAR(r->seconds - r->codecSeconds, 2 * (lat + p / 2 / bw) + 2 * (lat + q / 2 / bw), 1e-12);
  EXPECT_NEAR(b->seconds - b->codecSeconds, 2 * (lat + p / bw) + 2 * (lat + q / bw), 1e-12);
  EXPECT_DOUBLE_EQ(r->codecSeconds, b->codecSeconds);
  EXPECT_DOUBLE_EQ(r->sentBytes, b->sentBytes);
  CodecCollective all = ringAllReduce(p, 2), rsag = ringReduceScatterAllGather(p, 2);
  EXPECT_TRUE(all.allReduce);
  EXPECT_FALSE(rsag.allReduce);
  EXPECT_DOUBLE_EQ(getCollectiveSeconds(all, binomial, 2), binomial.allReduce(p, 2));
  EXPECT_DOUBLE_EQ(getCollectiveSeconds(rsag, binomial, 2), ring.messages(2, p));
  EXPECT_DOUBLE_EQ(getCollectiveSeconds(all, binomial, 2, 0.5), binomial.allReduce(p / 2, 2));
}

// A compressed collective's all-gather round (8-bit quantization over 2 ranks: the runtime's MPI_Iallgather of
// the codes) is priced from the link's measured all-gather table where it has one over 2 ranks
// (LinkCost::allGather), and from messages (n - 1 of the codes, each with its overhead) where not.
TEST_F(CodecCostsTest, AllGatherRoundsUseTheMeasuredTable) {
  auto type = RankedTensorType::get({64, 64}, Float32Type::get(&context));
  auto quant = cast<CodecAttrInterface>(parseAttribute("#ptrain.quant<bits = 8>", &context));
  auto work = getDataParallelCodecWork(quant, type, 2, /*errorFeedback=*/false);
  ASSERT_TRUE(static_cast<bool>(work)) << llvm::toString(work.takeError());
  ASSERT_EQ(work->first.size(), 1u);
  const CodecCollective &gather = work->first.front();
  EXPECT_TRUE(gather.allGather);
  EXPECT_FALSE(gather.allReduce);
  LinkSpec spec{1.25e8, 1e-5, {}};
  spec.overheadPerMessage = 1e-4;
  LinkCost plain(spec, 1, /*binomial=*/true);
  EXPECT_DOUBLE_EQ(getCollectiveSeconds(gather, plain, 2), plain.messages(1, gather.bytes));
  EXPECT_DOUBLE_EQ(getCollectiveSeconds(gather, plain, 2), 1e-5 + gather.bytes / 1.25e8 + 2e-4);
  spec.allGathers = {{1, 2e-5}, {1 << 20, 3e-3}};
  spec.collectiveRanks = 2;
  LinkCost measured(spec, 1, /*binomial=*/true);
  EXPECT_DOUBLE_EQ(getCollectiveSeconds(gather, measured, 2),
                   2e-5 + (3e-3 - 2e-5) * (gather.bytes - 1) / ((1 << 20) - 1));
  // Over 3 ranks the 2-rank table does not apply.
  auto three = getDataParallelCodecWork(quant, type, 3, /*errorFeedback=*/false);
  ASSERT_TRUE(static_cast<bool>(three));
  EXPECT_DOUBLE_EQ(getCollectiveSeconds(three->first.front(), measured, 3),
                   measured.messages(2, 2 * three->first.front().bytes));
}

TEST_F(CodecCostsTest, CastAllToAllUsesTheMeasuredTable) {
  // The cast codec's compressed all-reduce: an all-to-all of its 16-bit codes (MPI_Ialltoall: each rank sends
  // half of its 64 x 64 x 2 = 8,192 B to the other), then an all-gather of fp32 chunks. Without a table: one
  // message of 4,096 B with its overhead; with the link's `all_to_alls` (schema version 4): the table's time
  // of the 8,192 B each rank sends; the all-gather keeps its own rule.
  auto type = RankedTensorType::get({64, 64}, Float32Type::get(&context));
  auto bf16 = cast<CodecAttrInterface>(parseAttribute("#ptrain.cast<bf16>", &context));
  auto work = getDataParallelCodecWork(bf16, type, 2, /*errorFeedback=*/false);
  ASSERT_TRUE(static_cast<bool>(work)) << llvm::toString(work.takeError());
  ASSERT_EQ(work->first.size(), 1u);
  const CodecCollective &toAll = work->first.front();
  EXPECT_TRUE(toAll.allToAll);
  EXPECT_FALSE(toAll.allGather || toAll.allReduce);
  EXPECT_DOUBLE_EQ(toAll.bytes, 8192);
  LinkSpec spec{1.25e8, 1e-5, {}};
  spec.overheadPerMessage = 1e-4;
  LinkCost plain(spec, 1, /*binomial=*/true);
  EXPECT_DOUBLE_EQ(getCollectiveSeconds(toAll, plain, 2), 1e-5 + 4096 / 1.25e8 + 2e-4);
  spec.allToAlls = {{1024, 2e-5}, {16384, 1e-4}};
  spec.collectiveRanks = 2;
  LinkCost measured(spec, 1, /*binomial=*/true);
  EXPECT_DOUBLE_EQ(getCollectiveSeconds(toAll, measured, 2), 2e-5 + 8e-5 * (8192 - 1024) / (16384 - 1024));
  // The all-gather round has no table here: from messages, as before.
  ASSERT_EQ(work->second.size(), 1u);
  EXPECT_DOUBLE_EQ(getCollectiveSeconds(work->second.front(), measured, 2), plain.messages(1, 8192));
  // Over 3 ranks the 2-rank table does not apply: 2 messages of a third of the codes each.
  auto three = getDataParallelCodecWork(bf16, type, 3, /*errorFeedback=*/false);
  ASSERT_TRUE(static_cast<bool>(three));
  EXPECT_DOUBLE_EQ(getCollectiveSeconds(three->first.front(), measured, 3), measured.messages(2, 2.0 / 3 * 8192));
  // ZeRO-1's compressed reduce-scatter is an all-to-all of every chunk's codes too (the runtime's MPI_Ialltoall):
  // over 2 ranks each rank sends both chunks' codes (2 x an 8-bit quantized chunk's code bytes), priced from the
  // same table; without it, one message of half of them.
  auto chunk = RankedTensorType::get({2048}, Float32Type::get(&context));
  auto quant = cast<CodecAttrInterface>(parseAttribute("#ptrain.quant<bits = 8>", &context));
  DataParallelCodecWork zero = getZeroReduceScatterCodecWork(quant, chunk, 2, /*errorFeedback=*/true);
  ASSERT_EQ(zero.first.size(), 1u);
  const CodecCollective &scatter = zero.first.front();
  EXPECT_TRUE(scatter.allToAll);
  EXPECT_DOUBLE_EQ(scatter.bytes, 2 * getCodecWork(quant, chunk, true).codeBytes);
  EXPECT_DOUBLE_EQ(getCollectiveSeconds(scatter, measured, 2), measured.allToAll(scatter.bytes, 2));
  EXPECT_NE(getCollectiveSeconds(scatter, measured, 2), plain.messages(1, scatter.bytes / 2));
  EXPECT_DOUBLE_EQ(getCollectiveSeconds(scatter, plain, 2), plain.messages(1, scatter.bytes / 2));
}

} // namespace
