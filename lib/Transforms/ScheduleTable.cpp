//===- ScheduleTable.cpp - steps of a per-stage pipeline schedule --*- C++ -*-===//

#include "ptrain/Transforms/ScheduleTable.h"

#include <algorithm>

using namespace mlir::ptrain;

std::string ScheduleStep::str() const {
  switch (kind) {
  case Forward:
    return "F" + std::to_string(microBatch);
  case Backward:
    return "B" + std::to_string(microBatch);
  case ForwardBackward:
    return "FB" + std::to_string(microBatch);
  case Optimizer:
    return "O";
  }
  return "";
}

std::optional<ScheduleStep> ScheduleStep::parse(llvm::StringRef text) {
  if (text == "O")
    return ScheduleStep{Optimizer, -1};
  ScheduleStep step{Forward, -1};
  if (text.consume_front("FB"))
    step.kind = ForwardBackward;
  else if (text.consume_front("F"))
    step.kind = Forward;
  else if (text.consume_front("B"))
    step.kind = Backward;
  else
    return std::nullopt;
  if (text.getAsInteger(10, step.microBatch))
    return std::nullopt;
  return step;
}

std::vector<std::vector<ScheduleStep>> mlir::ptrain::buildScheduleTable(llvm::StringRef kind, int64_t p, int64_t m) {
  using Step = ScheduleStep;
  std::vector<std::vector<Step>> table(p);
  for (int64_t s = 0; s < p; ++s) {
    std::vector<Step> &steps = table[s];
    if (s == p - 1) {
      for (int64_t i = 0; i < m; ++i)
        steps.push_back({Step::ForwardBackward, i});
    } else if (kind == "gpipe") {
      for (int64_t i = 0; i < m; ++i)
        steps.push_back({Step::Forward, i});
      for (int64_t i = 0; i < m; ++i)
        steps.push_back({Step::Backward, i});
    } else {
      int64_t warmup = std::min(p - s - 1, m);
      for (int64_t i = 0; i < warmup; ++i)
        steps.push_back({Step::Forward, i});
      for (int64_t i = 0; i < m - warmup; ++i) {
        steps.push_back({Step::Forward, warmup + i});
        steps.push_back({Step::Backward, i});
      }
      for (int64_t i = m - warmup; i < m; ++i)
        steps.push_back({Step::Backward, i});
    }
    steps.push_back({Step::Optimizer, -1});
  }
  return table;
}
