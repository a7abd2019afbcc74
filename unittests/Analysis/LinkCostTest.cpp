//===- LinkCostTest.cpp - message prices by size and the size-table fit ---===//

#include "ptrain/Analysis/LinkCost.h"

#include "gtest/gtest.h"

#include <optional>

using namespace mlir::ptrain;

namespace {

ClusterSpec parse(const std::string &interNode, std::string *error = nullptr) {
  std::string text = R"({"nodes": 2, "gpus_per_node": 1,
    "gpu": {"peak_flops": {"f32": 1e10}, "memory_bandwidth": 1e10, "memory_capacity": 1e9, "efficiency": 1},
    "intra_node": {"bandwidth": 1e10, "latency": 1e-6}, "inter_node": )" +
                     interNode + "}";
  auto value = llvm::json::parse(text);
  EXPECT_TRUE(static_cast<bool>(value));
  auto cluster = parseCluster(*value);
  if (!cluster) {
    std::string message = llvm::toString(cluster.takeError());
    if (error)
      *error = message;
    else
      ADD_FAILURE() << message;
    return {};
  }
  return *cluster;
}

// The 20 Mbit/s emulated link of bench/cluster, shaped like the ping-pong sweep found it (2026-12-07): small
// messages cost more than alpha-beta says (TCP through tc tbf), the large ones the rate.
const char *kTable = R"({"bandwidth": 2.5e6, "latency": 1e-4, "messages": [
  {"bytes": 1000, "seconds": 2e-3}, {"bytes": 10000, "seconds": 6e-3}, {"bytes": 100000, "seconds": 4.2e-2}]})";

// Without a table: latency + bytes / bandwidth, the NCCL ring factors, NIC sharing as bandwidth / sharers.
TEST(LinkCostTest, WithoutATableItIsAlphaBeta) {
  LinkCost link(LinkSpec{1e9, 1e-5, {}});
  EXPECT_FALSE(link.isSizeDependent());
  EXPECT_DOUBLE_EQ(link.message(1e6), 1e-5 + 1e-3);
  EXPECT_DOUBLE_EQ(link.allReduce(1e6, 4), 6 * 1e-5 + 1.5e6 / 1e9);
  EXPECT_DOUBLE_EQ(link.reduceScatter(1e6, 4), 3 * 1e-5 + 0.75e6 / 1e9);
  EXPECT_DOUBLE_EQ(link.allReduce(1e6, 1), 0);
  LinkCost shared(LinkSpec{1e9, 1e-5, {}}, 4);
  EXPECT_DOUBLE_EQ(shared.message(1e6), 1e-5 + 4e-3);
  EXPECT_DOUBLE_EQ(shared.bandwidth(), 2.5e8);
}

// With a table: interpolated between entries, from (0, latency) below the first, at the bandwidth above the last.
TEST(LinkCostTest, TableIsInterpolated) {
  ClusterSpec c = parse(kTable);
  LinkCost link(c.interNode);
  ASSERT_TRUE(link.isSizeDependent());
  EXPECT_DOUBLE_EQ(link.message(1000), 2e-3);
  EXPECT_DOUBLE_EQ(link.message(10000), 6e-3);
  EXPECT_DOUBLE_EQ(link.message(5500), 4e-3);
  EXPECT_DOUBLE_EQ(link.message(500), 1e-4 + 0.5 * (2e-3 - 1e-4));
  EXPECT_DOUBLE_EQ(link.message(200000), 4.2e-2 + 1e5 / 2.5e6);
  // Size matters: a 10 kB message costs 6 ms where alpha-beta with the same figures says 4.1 ms, and a ring
  // all-reduce is priced at the size of its messages (bytes / n), not its total.
  EXPECT_NEAR(LinkCost(LinkSpec{2.5e6, 1e-4, {}}).message(10000), 4.1e-3, 1e-12);
  EXPECT_DOUBLE_EQ(link.allReduce(40000, 4), 6 * link.message(10000));
  EXPECT_DOUBLE_EQ(link.messages(3, 30000), 3 * 6e-3);
  // Two GPUs sharing the NIC: each message ends when one of twice its size would.
  EXPECT_DOUBLE_EQ(LinkCost(c.interNode, 2).message(5000), 6e-3);
}

// A duplex table prices the rounds of collectives (each rank sends and receives at once); lone messages keep
// the one-way table; without a duplex table collectives use the one-way one.
TEST(LinkCostTest, CollectivesUseTheDuplexTable) {
  ClusterSpec c = parse(R"({"bandwidth": 2.5e6, "latency": 1e-4,
    "messages": [{"bytes": 10000, "seconds": 6e-3}],
    "duplex_messages": [{"bytes": 10000, "seconds": 9e-3}]})");
  LinkCost link(c.interNode);
  EXPECT_DOUBLE_EQ(link.message(10000), 6e-3);
  EXPECT_DOUBLE_EQ(link.message(10000, /*duplex=*/true), 9e-3);
  EXPECT_DOUBLE_EQ(link.allReduce(20000, 2), 2 * 9e-3);
  EXPECT_DOUBLE_EQ(link.reduceScatter(20000, 2), 9e-3);
  EXPECT_DOUBLE_EQ(LinkCost(parse(kTable).interNode).allReduce(20000, 2), 2 * 6e-3);
}

// all_reduce_algorithm "binomial" (the CPU target's MPI_Iallreduce in place under OpenMPI's libnbc): a reduce
// up a binomial tree and a broadcast down it, 2 ceil(log2 n) lone messages of the whole buffer.
TEST(LinkCostTest, BinomialAllReduceSendsTheWholeBufferUpAndDown) {
  ClusterSpec c = parse(kTable);
  EXPECT_FALSE(c.binomialAllReduce);
  LinkCost binomial(c.interNode, 1, /*binomial=*/true);
  EXPECT_DOUBLE_EQ(binomial.allReduce(10000, 2), 2 * 6e-3);
  EXPECT_DOUBLE_EQ(binomial.allReduce(10000, 3), 4 * 6e-3);
  EXPECT_DOUBLE_EQ(binomial.allReduce(10000, 4), 4 * 6e-3);
  EXPECT_DOUBLE_EQ(binomial.allReduce(10000, 1), 0);
  // The ring on the same link: 2 messages of 5,000 B.
  EXPECT_DOUBLE_EQ(LinkCost(c.interNode).allReduce(10000, 2), 2 * LinkCost(c.interNode).message(5000));
  std::string text = R"({"nodes": 1, "gpus_per_node": 1, "all_reduce_algorithm": "tree",
    "gpu": {"peak_flops": {"f32": 1e10}, "memory_bandwidth": 1e10, "memory_capacity": 1e9, "efficiency": 1},
    "intra_node": {"bandwidth": 1e10, "latency": 1e-6}, "inter_node": {"bandwidth": 1e9, "latency": 0}})";
  auto bad = parseCluster(*llvm::json::parse(text));
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()), "all_reduce_algorithm: must be \"ring\" or \"binomial\", got 'tree'");
}

// The fit: sorted, equal sizes averaged, non-decreasing (pool adjacent violators).
TEST(LinkCostTest, FitIsMonotoneLeastSquares) {
  std::vector<MessageTime> fit =
      fitMessageTimes({{100000, 4e-2}, {1000, 2e-3}, {10000, 3e-3}, {30000, 1e-3}, {10000, 5e-3}});
  ASSERT_EQ(fit.size(), 4u);
  EXPECT_DOUBLE_EQ(fit[0].bytes, 1000);
  EXPECT_DOUBLE_EQ(fit[0].seconds, 2e-3);
  // 10000 (mean 4e-3 of two samples) and 30000 (1e-3) violate the order: pooled to (2 x 4e-3 + 1e-3) / 3.
  EXPECT_DOUBLE_EQ(fit[1].bytes, 10000);
  EXPECT_DOUBLE_EQ(fit[1].seconds, 3e-3);
  EXPECT_DOUBLE_EQ(fit[2].bytes, 30000);
  EXPECT_DOUBLE_EQ(fit[2].seconds, 3e-3);
  EXPECT_DOUBLE_EQ(fit[3].seconds, 4e-2);
  for (size_t i = 1; i < fit.size(); ++i)
    EXPECT_LE(fit[i - 1].seconds, fit[i].seconds);
  // An already monotone table is unchanged.
  std::vector<MessageTime> same = fitMessageTimes({{1, 1e-4}, {2, 2e-4}});
  EXPECT_DOUBLE_EQ(same[1].seconds, 2e-4);
}

// The schema: `messages` is optional (older files without it are read, priced by alpha-beta), each entry
// {bytes >= 1 integer, seconds > 0}, sizes strictly increasing, nothing else.
TEST(LinkCostTest, SchemaErrorsNameTheField) {
  EXPECT_TRUE(parse(R"({"bandwidth": 1e9, "latency": 1e-5})").interNode.messages.empty());
  EXPECT_FALSE(parse(R"({"bandwidth": 1e9, "latency": 1e-5})").interNode.halfDuplex);
  EXPECT_TRUE(parse(R"({"bandwidth": 1e9, "latency": 1e-5, "half_duplex": true})").interNode.halfDuplex);
  std::string duplexError;
  parse(R"({"bandwidth": 1e9, "latency": 1e-5, "half_duplex": 1})", &duplexError);
  EXPECT_EQ(duplexError, "inter_node.half_duplex: must be true or false");
  std::string error;
  parse(R"({"bandwidth": 1e9, "latency": 0, "messages": [{"bytes": 10, "seconds": 1e-3}, {"bytes": 10,
            "seconds": 2e-3}]})",
        &error);
  EXPECT_EQ(error, "inter_node.messages[1].bytes: must be larger than the previous entry's (10): sizes strictly "
                   "increasing");
  parse(R"({"bandwidth": 1e9, "latency": 0, "messages": [{"bytes": 10, "seconds": 0}]})", &error);
  EXPECT_EQ(error, "inter_node.messages[0].seconds: must be > 0, got 0.000000");
  parse(R"({"bandwidth": 1e9, "latency": 0, "messages": [{"bytes": 0.5, "seconds": 1}]})", &error);
  EXPECT_EQ(error, "inter_node.messages[0].bytes: must be an integer >= 1");
  parse(R"({"bandwidth": 1e9, "latency": 0, "messages": [{"bytes": 1, "seconds": 1, "rate": 2}]})", &error);
  EXPECT_EQ(error, "inter_node.messages[0].rate: unknown field");
  parse(R"({"bandwidth": 1e9, "latency": 0, "messages": []})", &error);
  EXPECT_EQ(error, "inter_node.messages: must be a non-empty array of {bytes, seconds}");
}

// The per-message CPU overhead (LogP's o, `cpu_overhead`): a least-squares line over the measured sizes,
// clamped >= 0, and priced per message; collectives pay a send's and a receive's per round.
TEST(LinkCostTest, CpuOverheadIsFittedAndPriced) {
  // On a line: 1e-5 s + 2e-8 s/B exactly.
  CpuOverhead line = fitCpuOverhead({{1000, 3e-5}, {2000, 5e-5}, {3000, 7e-5}});
  EXPECT_NEAR(line.perMessage, 1e-5, 1e-15);
  EXPECT_NEAR(line.perByte, 2e-8, 1e-20);
  // Falling with size (noise): no per-byte term, the mean per message.
  CpuOverhead flat = fitCpuOverhead({{1000, 4e-5}, {3000, 2e-5}});
  EXPECT_DOUBLE_EQ(flat.perByte, 0);
  EXPECT_DOUBLE_EQ(flat.perMessage, 3e-5);
  // A negative intercept (OLS: -2e-6 + 3e-9 x): the line through the origin, sum(x y) / sum(x^2) =
  // (1e-3 + 8e-3) / (1e6 + 4e6) = 1.8e-9 s/B.
  CpuOverhead origin = fitCpuOverhead({{1000, 1e-6}, {2000, 4e-6}});
  EXPECT_DOUBLE_EQ(origin.perMessage, 0);
  EXPECT_NEAR(origin.perByte, 1.8e-9, 1e-21);
  // Nothing measured or all below zero: no overhead.
  EXPECT_DOUBLE_EQ(fitCpuOverhead({}).perMessage, 0);
  CpuOverhead negative = fitCpuOverhead({{1000, -1e-6}, {2000, -1e-6}});
  EXPECT_DOUBLE_EQ(negative.perMessage, 0);
  EXPECT_DOUBLE_EQ(negative.perByte, 0);

  // The samples fitted: the plan's sizes below --pingpong-bytes and below the eager limit. bench/cluster's
  // quiet run at 401.7 Mbit/s (2026-12-07 23:24): every eager size within 0.03 ms of 0, the 65,536 B
  // (rendezvous under OpenMPI's 64 KiB limit, header included) 0.98 ms; with it the fit was 6.97 ns/B.
  std::vector<MessageTime> quiet = {{8192, 2.3666e-5},     {13108, 1.38e-5},       {16384, 3.0785e-5},
                                    {32768, -3.386e-5},    {39324, -3.15368e-4},   {65536, 9.83839e-4},
                                    {131072, 1.018782e-3}, {1048576, -1.016007e-3}};
  std::vector<MessageTime> eager = eagerOverheadSamples(quiet, 1048576, 65536);
  ASSERT_EQ(eager.size(), 5u);
  EXPECT_EQ(eager.back().bytes, 39324);
  EXPECT_DOUBLE_EQ(fitCpuOverhead(eager).perByte, 0); // falling: noise around 0, not a slope
  EXPECT_NEAR(fitCpuOverhead(eagerOverheadSamples(quiet, 1048576, 65537)).perByte, 6.97e-9, 0.5e-9)
      << "the 65,536 B rendezvous sample sets the slope";
  EXPECT_EQ(eagerOverheadSamples(quiet, 1048576, 0).size(), 7u); // no limit known: all below --pingpong-bytes

  LinkSpec spec{1e9, 1e-5, {}};
  spec.overheadPerMessage = 1e-5;
  spec.overheadPerByte = 2e-8;
  LinkCost link(spec);
  // The link time is unchanged; the overhead is separate: 1e-5 + 1000 x 2e-8 = 3e-5 s.
  EXPECT_DOUBLE_EQ(link.message(1000), 1e-5 + 1e-6);
  EXPECT_DOUBLE_EQ(link.overhead(1000), 3e-5);
  // Ring all-reduce of 1e6 B over 4: 6 rounds of 250,000 B, each 1e-5 + 2.5e-4 on the link and 2 x (1e-5 +
  // 5e-3) of overhead: 6 x 0.01028 = 0.06168 s.
  EXPECT_NEAR(link.allReduce(1e6, 4), 0.06168, 1e-12);
  // Binomial over 2: the whole buffer up and down, each 1e-5 + 1e-3 + 2 x (1e-5 + 2e-2).
  EXPECT_NEAR(LinkCost(spec, 1, /*binomial=*/true).allReduce(1e6, 2), 2 * (1.01e-3 + 4.002e-2), 1e-12);
  // Without the field: no overhead.
  EXPECT_DOUBLE_EQ(LinkCost(LinkSpec{1e9, 1e-5, {}}).overhead(1e6), 0);
}

/// A two-node cluster file with `top` (e.g. `"version": 2, `) before its fields and `interNode` (e.g.
/// `, "cpu_overhead": {...}`) appended to its inter_node link, parsed: `describe` of the cluster, or the error.
std::string parseWithInterNode(const std::string &top, const std::string &interNode,
                               llvm::function_ref<std::string(const ClusterSpec &)> describe) {
  std::string text = "{" + top + R"("nodes": 2, "gpus_per_node": 1,
    "gpu": {"peak_flops": {"f32": 1e10}, "memory_bandwidth": 1e10, "memory_capacity": 1e9, "efficiency": 1},
    "intra_node": {"bandwidth": 1e10, "latency": 1e-6},
    "inter_node": {"bandwidth": 1e9, "latency": 1e-5)" + interNode + "}}";
  auto value = llvm::json::parse(text);
  EXPECT_TRUE(static_cast<bool>(value)) << text;
  if (!value)
    return llvm::toString(value.takeError());
  auto cluster = parseCluster(*value);
  if (!cluster)
    return llvm::toString(cluster.takeError());
  return describe(*cluster);
}

/// The error for a schema-version-2 field `field` in a file without "version".
std::string needsVersion2(const std::string &field) {
  return field + ": needs \"version\": 2 at the top of the file (the field is new in schema version 2; this file "
                 "is version 1)";
}

// The schema: `cpu_overhead` {per_message_s >= 0, per_byte_s >= 0} needs "version": 2; a version above the
// newest this build reads is an error, as is one that is not an integer >= 1.
TEST(LinkCostTest, CpuOverheadSchemaIsVersioned) {
  auto parseVersioned = [](const std::string &version, const std::string &overhead) {
    return parseWithInterNode(version, overhead, [](const ClusterSpec &cluster) {
      return "ok " + std::to_string(cluster.version) + " " + std::to_string(cluster.interNode.overheadPerMessage) +
             " " + std::to_string(cluster.interNode.overheadPerByte * 1e9);
    });
  };
  const std::string ok = R"(, "cpu_overhead": {"per_message_s": 2e-5, "per_byte_s": 3e-9})";
  EXPECT_EQ(parseVersioned(R"("version": 2, )", ok), "ok 2 0.000020 3.000000");
  EXPECT_EQ(parseVersioned("", ""), "ok 1 0.000000 0.000000");
  EXPECT_EQ(parseVersioned(R"("version": 1, )", ""), "ok 1 0.000000 0.000000");
  EXPECT_EQ(parseVersioned("", ok), needsVersion2("inter_node.cpu_overhead"));
  EXPECT_EQ(parseVersioned(R"("version": 3, )", ok), "ok 3 0.000020 3.000000");
  EXPECT_EQ(parseVersioned(R"("version": 4, )", ok), "ok 4 0.000020 3.000000");
  EXPECT_EQ(parseVersioned(R"("version": 5, )", ""),
            "version: is 5, but this ptrain reads cluster files up to version 4");
  EXPECT_EQ(parseVersioned(R"("version": "2", )", ""), "version: must be an integer >= 1");
  EXPECT_EQ(parseVersioned(R"("version": 2, )", R"(, "cpu_overhead": {"per_message_s": -1e-6, "per_byte_s": 0})"),
            "inter_node.cpu_overhead.per_message_s: must be >= 0, got -0.000001");
  EXPECT_EQ(parseVersioned(R"("version": 2, )", R"(, "cpu_overhead": {"per_message_s": 0})"),
            "inter_node.cpu_overhead.per_byte_s: missing");
  EXPECT_EQ(parseVersioned(R"("version": 2, )", R"(, "cpu_overhead": 1e-5)"),
            "inter_node.cpu_overhead: must be an object {per_message_s, per_byte_s}");
  EXPECT_EQ(parseVersioned(R"("version": 2, )",
                           R"(, "cpu_overhead": {"per_message_s": 0, "per_byte_s": 0, "per_round_s": 1})"),
            "inter_node.cpu_overhead.per_round_s: unknown field");
}

// The eager limit (`eager_limit_bytes`, schema version 2): a message over it has an eager part, priced as a
// message of the limit's size; one at or below it moves at once (-1).
TEST(LinkCostTest, EagerLimitSplitsLargeMessages) {
  LinkSpec spec{1e9, 1e-5, {}};
  spec.eagerLimitBytes = 65536;
  LinkCost link(spec);
  EXPECT_DOUBLE_EQ(link.eagerSeconds(131072), 1e-5 + 65536 / 1e9);
  // The limit counts MPI's header: a message of exactly its size is a rendezvous one (all of it but the
  // header's bytes in the eager part), one byte less moves at once.
  EXPECT_TRUE(link.isRendezvous(65536));
  EXPECT_DOUBLE_EQ(link.eagerSeconds(65536), 1e-5 + 65536 / 1e9);
  EXPECT_FALSE(link.isRendezvous(65535));
  EXPECT_DOUBLE_EQ(link.eagerSeconds(65535), -1);
  EXPECT_DOUBLE_EQ(link.eagerSeconds(100), -1);
  // Without the field nothing is split.
  EXPECT_DOUBLE_EQ(LinkCost(LinkSpec{1e9, 1e-5, {}}).eagerSeconds(1e9), -1);

  auto parseEager = [](const std::string &version, const std::string &field) {
    return parseWithInterNode(version, field, [](const ClusterSpec &cluster) {
      return "ok " + std::to_string(static_cast<int64_t>(cluster.interNode.eagerLimitBytes)) + " " +
             std::to_string(static_cast<int64_t>(cluster.intraNode.eagerLimitBytes));
    });
  };
  EXPECT_EQ(parseEager(R"("version": 2, )", R"(, "eager_limit_bytes": 65536)"), "ok 65536 0");
  EXPECT_EQ(parseEager("", ""), "ok 0 0");
  EXPECT_EQ(parseEager("", R"(, "eager_limit_bytes": 65536)"),
            needsVersion2("inter_node.eager_limit_bytes"));
  EXPECT_EQ(parseEager(R"("version": 2, )", R"(, "eager_limit_bytes": 0)"),
            "inter_node.eager_limit_bytes: must be an integer >= 1");
  EXPECT_EQ(parseEager(R"("version": 2, )", R"(, "eager_limit_bytes": 65536.5)"),
            "inter_node.eager_limit_bytes: must be an integer >= 1");
  EXPECT_EQ(parseEager(R"("version": 2, )", R"(, "eager_limit_bytes": "64k")"),
            "inter_node.eager_limit_bytes: must be an integer >= 1");
}

// Crossing sends (`crossing_slowdown`, schema version 2): a number >= 1, 1 without the field; LinkCost and the
// pipeline costs pass it on to the simulation (TimingPlanTest's CrossingSendsMoveSlowerWhileBothAreInFlight).
TEST(LinkCostTest, CrossingSlowdownIsAFactorOfAtLeastOne) {
  auto parseCrossing = [](const std::string &version, const std::string &field) {
    return parseWithInterNode(version, field, [](const ClusterSpec &cluster) {
      return "ok " + std::to_string(LinkCost(cluster.interNode).crossingSlowdown()) + " " +
             std::to_string(cluster.intraNode.crossingSlowdown);
    });
  };
  EXPECT_EQ(parseCrossing(R"("version": 2, )", R"(, "crossing_slowdown": 1.07)"), "ok 1.070000 1.000000");
  EXPECT_EQ(parseCrossing(R"("version": 2, )", R"(, "crossing_slowdown": 1)"), "ok 1.000000 1.000000");
  EXPECT_EQ(parseCrossing("", ""), "ok 1.000000 1.000000");
  EXPECT_EQ(parseCrossing("", R"(, "crossing_slowdown": 1.07)"),
            needsVersion2("inter_node.crossing_slowdown"));
  EXPECT_EQ(parseCrossing(R"("version": 2, )", R"(, "crossing_slowdown": 0.9)"),
            "inter_node.crossing_slowdown: must be >= 1 (the factor by which a transfer slows while one crosses it), "
            "got 0.900000");
  EXPECT_EQ(parseCrossing(R"("version": 2, )", R"(, "crossing_slowdown": "7%")"),
            "inter_node.crossing_slowdown: must be a number");
}

// The measured collective round (`all_reduces` over `collective_ranks`, schema version 3): an all-reduce over that
// many ranks is the table's time, interpolated, with no cpu_overhead added (the measurement holds the CPU); other
// group sizes stay priced from messages. By hand on the 20 Mbit/s table (kTable) with o = 1 ms + 10 ns/B:
// from messages, binomial over 2 ranks, 10,000 B: 2 x (6 ms + 2 x (1 ms + 0.1 ms)) = 16.4 ms. From the table
// {(4 B, 1 ms), (10,000 B, 9 ms), (100,000 B, 50 ms)}: 10,000 B 9 ms; 55,000 B halfway, 29.5 ms; 2 B (below
// the first entry) 1 ms; 200,000 B: 50 ms + what messages add from 100,000 to 200,000 B, 2 x (100,000 B at
// 2.5 MB/s = 40 ms + 2 x 1 ms of overhead per byte) = 50 + 84 = 134 ms; over 3 ranks: messages (4 x 8.2 ms).
// Two GPUs sharing the NIC: 5,000 B each price as one 10,000 B all-reduce, 9 ms.
/// A version-3 two-node cluster whose inter_node link is kTable's messages with cpu_overhead 1 ms + 10 ns/B and
/// `tables` (e.g. `"all_reduces": [...], "collective_ranks": 2`) appended, parsed (the test fails on an error).
ClusterSpec parseMeasured(const std::string &tables) {
  const std::string text = R"({"version": 3, "nodes": 2, "gpus_per_node": 1,
    "gpu": {"peak_flops": {"f32": 1e10}, "memory_bandwidth": 1e10, "memory_capacity": 1e9, "efficiency": 1},
    "intra_node": {"bandwidth": 1e10, "latency": 1e-6},
    "inter_node": {"bandwidth": 2.5e6, "latency": 1e-4, "messages": [
      {"bytes": 1000, "seconds": 2e-3}, {"bytes": 10000, "seconds": 6e-3}, {"bytes": 100000, "seconds": 4.2e-2}],
      "cpu_overhead": {"per_message_s": 1e-3, "per_byte_s": 1e-8}, )" +
                           tables + "}}";
  auto value = llvm::json::parse(text);
  EXPECT_TRUE(static_cast<bool>(value)) << text;
  if (!value) {
    llvm::consumeError(value.takeError());
    return {};
  }
  auto cluster = parseCluster(*value);
  if (!cluster) {
    ADD_FAILURE() << llvm::toString(cluster.takeError());
    return {};
  }
  return *cluster;
}

TEST(LinkCostTest, AllReduceRoundsAreMeasuredWhole) {
  auto cluster = std::optional<ClusterSpec>(parseMeasured(R"("all_reduces": [{"bytes": 4, "seconds": 1e-3},
    {"bytes": 10000, "seconds": 9e-3}, {"bytes": 100000, "seconds": 5e-2}], "collective_ranks": 2)"));
  EXPECT_EQ(cluster->interNode.collectiveRanks, 2);
  LinkCost measured(cluster->interNode, 1, /*binomial=*/true);
  EXPECT_DOUBLE_EQ(measured.allReduce(10000, 2), 9e-3);
  EXPECT_DOUBLE_EQ(measured.allReduce(55000, 2), 29.5e-3);
  EXPECT_DOUBLE_EQ(measured.allReduce(2, 2), 1e-3);
  EXPECT_NEAR(measured.allReduce(200000, 2), 134e-3, 1e-12);
  EXPECT_DOUBLE_EQ(measured.allReduce(10000, 1), 0);
  EXPECT_NEAR(measured.allReduce(10000, 3), 4 * 8.2e-3, 1e-12);
  EXPECT_DOUBLE_EQ(LinkCost(cluster->interNode, 2, /*binomial=*/true).allReduce(5000, 2), 9e-3);
  // Without the table, the same link prices the round from its messages and their overhead.
  LinkSpec plain = cluster->interNode;
  plain.allReduces.clear();
  EXPECT_NEAR(LinkCost(plain, 1, /*binomial=*/true).allReduce(10000, 2), 16.4e-3, 1e-12);

  // The schema: version 3, ranks >= 2 and only with the table, the table's form as `messages`.
  auto parseReduces = [](const std::string &version, const std::string &field) {
    return parseWithInterNode(version, field, [](const ClusterSpec &cluster) {
      return "ok " + std::to_string(cluster.interNode.allReduces.size()) + " " +
             std::to_string(cluster.interNode.collectiveRanks);
    });
  };
  const std::string ok = R"(, "all_reduces": [{"bytes": 4, "seconds": 1e-4}], "collective_ranks": 2)";
  EXPECT_EQ(parseReduces(R"("version": 3, )", ok), "ok 1 2");
  EXPECT_EQ(parseReduces("", ""), "ok 0 0");
  EXPECT_EQ(parseReduces(R"("version": 2, )", ok),
            "inter_node.all_reduces: needs \"version\": 3 at the top of the file (the field is new in schema "
            "version 3; this file is version 2)");
  EXPECT_EQ(parseReduces(R"("version": 3, )", R"(, "all_reduces": [{"bytes": 4, "seconds": 1e-4}])"),
            "inter_node.all_reduces: needs collective_ranks (the number of ranks the collectives were measured "
            "over)");
  EXPECT_EQ(parseReduces(R"("version": 3, )", R"(, "all_gathers": [{"bytes": 4, "seconds": 1e-4}])"),
            "inter_node.all_gathers: needs collective_ranks (the number of ranks the collectives were measured "
            "over)");
  EXPECT_EQ(
      parseReduces(R"("version": 2, )", R"(, "all_gathers": [{"bytes": 4, "seconds": 1e-4}], "collective_ranks": 2)"),
      "inter_node.all_gathers: needs \"version\": 3 at the top of the file (the field is new in schema "
      "version 3; this file is version 2)");
  EXPECT_EQ(
      parseReduces(R"("version": 3, )", R"(, "all_gathers": [{"bytes": 4, "seconds": 1e-4}], "collective_ranks": 2)"),
      "ok 0 2");
  EXPECT_EQ(parseReduces(R"("version": 3, )", R"(, "collective_ranks": 2)"),
            "inter_node.collective_ranks: given without all_reduces, all_gathers or all_to_alls (the tables it "
            "describes)");
  EXPECT_EQ(
      parseReduces(R"("version": 3, )", R"(, "all_reduces": [{"bytes": 4, "seconds": 1e-4}], "collective_ranks": 1)"),
      "inter_node.collective_ranks: must be >= 2 (the ranks the collectives were measured over), got 1");
  EXPECT_EQ(
      parseReduces(
          R"("version": 3, )",
          R"(, "all_reduces": [{"bytes": 8, "seconds": 1e-4}, {"bytes": 4, "seconds": 2e-4}], "collective_ranks": 2)"),
      "inter_node.all_reduces[1].bytes: must be larger than the previous entry's (8): sizes strictly increasing");
  EXPECT_EQ(
      parseReduces(R"("version": 3, )", R"(, "all_reduces": [{"bytes": 4, "seconds": 0}], "collective_ranks": 2)"),
      "inter_node.all_reduces[0].seconds: must be > 0, got 0.000000");
}

// The measured all-gather (`all_gathers` over `collective_ranks`): priced from the table over that many ranks,
// with no cpu_overhead, from messages otherwise. By hand on kTable's messages with o = 1 ms + 10 ns/B and the
// table {(100 B, 0.5 ms), (20,000 B, 4.5 ms)}: 10,000 B per rank, 0.5 ms + 4 ms x 9,900 / 19,900; 50 B (below the
// first entry) 0.5 ms; 40,000 B, 4.5 ms plus what one message adds from 20,000 to 40,000 B (its link time and
// 2 x 20,000 x 10 ns of overhead); over 3 ranks (no table) 2 messages of 10,000 B, each 6 ms + 2 x 1.1 ms.
TEST(LinkCostTest, AllGatherRoundsAreMeasuredWhole) {
  auto cluster = std::optional<ClusterSpec>(parseMeasured(
      R"("all_gathers": [{"bytes": 100, "seconds": 5e-4}, {"bytes": 20000, "seconds": 4.5e-3}], "collective_ranks": 2)"));
  LinkCost link(cluster->interNode, 1, /*binomial=*/true);
  EXPECT_TRUE(link.hasAllGatherTable(2));
  EXPECT_FALSE(link.hasAllGatherTable(3));
  EXPECT_NEAR(link.allGather(10000, 2), 5e-4 + 4e-3 * 9900 / 19900, 1e-15);
  EXPECT_DOUBLE_EQ(link.allGather(50, 2), 5e-4);
  EXPECT_NEAR(link.allGather(40000, 2), 4.5e-3 + (link.message(40000) - link.message(20000)) + 2 * (20000 * 1e-8),
              1e-12);
  // No table over 3 ranks: 2 messages of 10,000 B with their overhead, as messages(2, 20,000).
  EXPECT_NEAR(link.allGather(10000, 3), 2 * 8.2e-3, 1e-12);
  // The all-reduces have no table here: from messages, as before.
  EXPECT_NEAR(link.allReduce(10000, 2), 16.4e-3, 1e-12);
}

// `all_to_alls` (schema version 4): the whole all-to-all by each rank's send buffer, over collective_ranks.
TEST(LinkCostTest, AllToAllRoundsAreMeasuredWhole) {
  std::string table = R"("all_to_alls": [{"bytes": 100, "seconds": 5e-4}, {"bytes": 20000, "seconds": 4.5e-3}],
    "collective_ranks": 2)";
  // A version-3 file may not have it (parseMeasured writes version 3).
  auto old = llvm::json::parse(R"({"version": 3, "nodes": 2, "gpus_per_node": 1,
    "gpu": {"peak_flops": {"f32": 1e10}, "memory_bandwidth": 1e10, "memory_capacity": 1e9, "efficiency": 1},
    "intra_node": {"bandwidth": 1e10, "latency": 1e-6},
    "inter_node": {"bandwidth": 2.5e6, "latency": 1e-4, )" +
                               table + "}}");
  ASSERT_TRUE(static_cast<bool>(old));
  auto refused = parseCluster(*old);
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_NE(llvm::toString(refused.takeError()).find("inter_node.all_to_alls"), std::string::npos);
  auto text = llvm::json::parse(R"({"version": 4, "nodes": 2, "gpus_per_node": 1,
    "gpu": {"peak_flops": {"f32": 1e10}, "memory_bandwidth": 1e10, "memory_capacity": 1e9, "efficiency": 1},
    "intra_node": {"bandwidth": 1e10, "latency": 1e-6},
    "inter_node": {"bandwidth": 2.5e6, "latency": 1e-4, "messages": [
      {"bytes": 1000, "seconds": 2e-3}, {"bytes": 10000, "seconds": 6e-3}, {"bytes": 100000, "seconds": 4.2e-2}],
      "cpu_overhead": {"per_message_s": 1e-3, "per_byte_s": 1e-8}, )" +
                                table + "}}");
  ASSERT_TRUE(static_cast<bool>(text));
  auto cluster = parseCluster(*text);
  ASSERT_TRUE(static_cast<bool>(cluster)) << llvm::toString(cluster.takeError());
  LinkCost link(cluster->interNode, 1, /*binomial=*/true);
  EXPECT_TRUE(link.hasAllToAllTable(2));
  EXPECT_FALSE(link.hasAllToAllTable(3));
  EXPECT_FALSE(link.hasAllGatherTable(2));
  EXPECT_NEAR(link.allToAll(10000, 2), 5e-4 + 4e-3 * 9900 / 19900, 1e-15);
  EXPECT_DOUBLE_EQ(link.allToAll(50, 2), 5e-4);
  // Above the last entry: its time plus what the message rule adds (one message of half the bytes each).
  EXPECT_NEAR(link.allToAll(40000, 2),
              4.5e-3 + (link.message(20000) - link.message(10000)) + (20000 - 10000) * 1e-8 * 2, 1e-12);
  // No table over 3 ranks: 2 messages of 10,000 B with their overhead, as messages(2, 2/3 x 30,000).
  EXPECT_NEAR(link.allToAll(30000, 3), 2 * (6e-3 + 2 * (1e-3 + 1e-4)), 1e-12);
  EXPECT_DOUBLE_EQ(link.allToAll(30000, 1), 0);
}

} // namespace
