//===- ScheduleTable.cpp - steps of a per-stage pipeline schedule --*- C++ -*-===//

#include "ptrain/Transforms/ScheduleTable.h"

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
