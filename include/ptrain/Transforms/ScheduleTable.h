//===- ScheduleTable.h - steps of a per-stage pipeline schedule ---*- C++ -*-===//
//
// The steps of the `ptrain.schedule` table (docs/TrainingStep.md): "F<i>" forward of micro-batch i, "B<i>"
// its backward, "FB<i>" the last stage's fused forward and backward, "O" the optimizer step. Written by
// --ptrain-schedule, read by --ptrain-lower-to-runtime.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_SCHEDULETABLE_H
#define PTRAIN_TRANSFORMS_SCHEDULETABLE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::ptrain {

struct ScheduleStep {
  enum Kind { Forward, Backward, ForwardBackward, Optimizer } kind;
  /// The micro-batch; -1 for the optimizer step.
  int64_t microBatch = -1;

  /// The step's table entry ("F3", "B0", "FB2", "O").
  std::string str() const;
  /// Parses a table entry; std::nullopt when it is none of the four forms (the micro-batch is not
  /// range-checked here).
  static std::optional<ScheduleStep> parse(llvm::StringRef text);
};

/// The per-stage rows of a `gpipe` or `1f1b` table (any other kind is taken as 1f1b) for `p` stages and `m`
/// micro-batches, as --ptrain-schedule writes them (its pass description gives the orders).
std::vector<std::vector<ScheduleStep>> buildScheduleTable(llvm::StringRef kind, int64_t p, int64_t m);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_SCHEDULETABLE_H
