//===- MemoryPlanTest.cpp - greedy-by-size arena offsets ------------------===//

#include "ptrain/Analysis/MemoryPlan.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir::ptrain;

namespace {

/// No two buffers whose intervals overlap overlap in memory, every offset is aligned and inside the arena.
void expectValid(const std::vector<ArenaBuffer> &buffers, int64_t arena, int64_t alignment) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    const ArenaBuffer &a = buffers[i];
    ASSERT_GE(a.offset, 0);
    EXPECT_EQ(a.offset % alignment, 0);
    EXPECT_LE(a.offset + a.bytes, arena);
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const ArenaBuffer &b = buffers[j];
      bool live = a.first <= b.last && b.first <= a.last;
      bool memory =
          a.offset < b.offset + std::max<int64_t>(b.bytes, 1) && b.offset < a.offset + std::max<int64_t>(a.bytes, 1);
      EXPECT_FALSE(live && memory) << "buffers " << i << " and " << j << " share memory while both live";
    }
  }
}

// The example of Pisarchyk and Lee (2020), figure 4 style, by hand: sizes 32, 28, 16, 8 at alignment 4.
// Greedy by size: 32 [0,1] -> 0; 28 [1,3] overlaps it -> 32; 16 [2,4] overlaps only the 28 (at 32..60):
// the gap [0,32) fits -> 0; 8 [3,4] overlaps the 28 and the 16: gaps [16,32) (16 bytes) -> 16. Arena 60,
// which is also the lower bound (ops 1: 32 + 28).
TEST(MemoryPlanTest, GreedyBySizeByHand) {
  std::vector<ArenaBuffer> b = {{0, 1, 32}, {1, 3, 28}, {2, 4, 16}, {3, 4, 8}};
  int64_t arena = planArenaGreedyBySize(b, 4);
  EXPECT_EQ(arena, 60);
  EXPECT_EQ(b[0].offset, 0);
  EXPECT_EQ(b[1].offset, 32);
  EXPECT_EQ(b[2].offset, 0);
  EXPECT_EQ(b[3].offset, 16);
  EXPECT_EQ(liveBytesLowerBound(b, 4), 60);
  expectValid(b, arena, 4);
}

// The smallest fitting gap wins over the first. At alignment 10: A 100 [0,9] -> 0; B 90 [0,0] -> 100;
// C 80 [0,9] -> 190; D 70 [0,0] -> 270; E 60 [0,9] -> 340. F 20 [1,9] overlaps A, C and E only, which leave
// the gaps [100,190) (90 bytes) and [270,340) (70 bytes): F goes to 270 (first fit would take 100).
TEST(MemoryPlanTest, SmallestGapFirst) {
  std::vector<ArenaBuffer> b = {{0, 9, 100}, {0, 0, 90}, {0, 9, 80}, {0, 0, 70}, {0, 9, 60}, {1, 9, 20}};
  int64_t arena = planArenaGreedyBySize(b, 10);
  std::vector<int64_t> expected = {0, 100, 190, 270, 340, 270};
  for (size_t i = 0; i < b.size(); ++i)
    EXPECT_EQ(b[i].offset, expected[i]) << "buffer " << i;
  EXPECT_EQ(arena, 400);
  expectValid(b, arena, 10);
}

// Random intervals: always valid, never below the lower bound, and within 2x of it here.
TEST(MemoryPlanTest, RandomIntervalsAreValid) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ArenaBuffer> b;
    int n = 1 + rng() % 60;
    for (int i = 0; i < n; ++i) {
      int64_t first = rng() % 100;
      b.push_back({first, first + static_cast<int64_t>(rng() % 30), static_cast<int64_t>(rng() % 5000)});
    }
    int64_t arena = planArenaGreedyBySize(b, 64);
    expectValid(b, arena, 64);
    int64_t bound = liveBytesLowerBound(b, 64);
    EXPECT_GE(arena, bound);
    EXPECT_LE(arena, 2 * bound);
  }
}

} // namespace
