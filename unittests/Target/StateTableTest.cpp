//===- StateTableTest.cpp - The state table as runs of layers -------------===//
//
// keyTemplate and compressStateRuns (include/ptrain/Target/Common/StateTable.h)
// on the keys of a GPT's states: a layer's twelve gradients repeated over the
// layers are one run, unnumbered keys and numbers that would not print back
// stay whole, and expanding the runs gives back every (template, number).
//
//===----------------------------------------------------------------------===//

#include "ptrain/Target/Common/StateTable.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

using namespace mlir::ptrain::target;

namespace {

/// The (template, number) sequence `runs` stands for.
std::vector<std::pair<int64_t, int64_t>> expand(const std::vector<StateRun> &runs) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const StateRun &r : runs)
    for (int64_t c = 0; c < r.count; ++c)
      for (int64_t p = 0; p < r.period; ++p)
        out.push_back({r.first + p, r.number0 + c * r.step});
  return out;
}

TEST(StateTableTest, KeyTemplates) {
  KeyTemplate t = keyTemplate("blocks.11.ln_1.weight/grad");
  EXPECT_TRUE(t.numbered);
  EXPECT_EQ(t.prefix, "blocks.");
  EXPECT_EQ(t.suffix, ".ln_1.weight/grad");
  EXPECT_EQ(t.number, 11);
  EXPECT_FALSE(keyTemplate("ln_f.weight").numbered);
  EXPECT_EQ(keyTemplate("ln_f.weight").prefix, "ln_f.weight");
  // A leading zero or a number past 9 digits would not print back with std::to_string: the key stays whole.
  EXPECT_FALSE(keyTemplate("layer.07.w").numbered);
  EXPECT_FALSE(keyTemplate("bucket.1234567890").numbered);
  EXPECT_TRUE(keyTemplate("layer.0.w").numbered);
}

TEST(StateTableTest, LayersAreOneRun) {
  // wte, wpe (unnumbered: templates 0, 1), then 12 layers of templates 2..13, then ln_f (template 14).
  std::vector<bool> numberedVec = {false, false};
  std::vector<std::pair<int64_t, int64_t>> items = {{0, 0}, {1, 0}};
  for (int64_t layer = 0; layer < 12; ++layer)
    for (int64_t t = 0; t < 12; ++t)
      items.push_back({2 + t, layer});
  numberedVec.resize(14, true);
  numberedVec.push_back(false);
  items.push_back({14, 0});
  llvm::SmallVector<bool> numbered(numberedVec.begin(), numberedVec.end());
  std::vector<StateRun> runs = compressStateRuns(items, numbered);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[1].first, 2);
  EXPECT_EQ(runs[1].period, 12);
  EXPECT_EQ(runs[1].count, 12);
  EXPECT_EQ(runs[1].step, 1);
  EXPECT_EQ(expand(runs), items);
}

TEST(StateTableTest, IrregularSequencesRoundTrip) {
  // Layers out of order, a layer with a state fewer, and a number that steps by 2: the runs still expand to the
  // sequence, however it is split.
  llvm::SmallVector<bool> numbered = {true, true, true, false};
  std::vector<std::pair<int64_t, int64_t>> items = {{0, 5}, {1, 5}, {2, 5}, {0, 3}, {1, 3}, {2, 3}, {0, 9},
                                                    {1, 9}, {3, 0}, {0, 0}, {1, 0}, {0, 2}, {1, 2}, {0, 4},
                                                    {1, 4}, {2, 7}, {2, 7}};
  std::vector<StateRun> runs = compressStateRuns(items, numbered);
  EXPECT_EQ(expand(runs), items);
  EXPECT_LT(runs.size(), items.size());
}

} // namespace
