//===- ScheduleTable.h - steps of a per-stage pipeline schedule ---*- C++ -*-===//
//
// The steps of the `ptrain.schedule` table (docs/TrainingStep.md): "F<i>" forward of micro-batch i, "B<i>"
// its backward, "FB<i>" the last stage's fused forward and backward, "O" the optimizer step. With virtual
// stages (the interleaved schedule) a step names the rank's model chunk k after a dot, "F<i>.<k>", "B<i>.<k>",
// "FB<i>.<k>"; chunk 0 is written without the suffix, so every table of the non-interleaved schedules reads
// as before. Chunk k of rank (stage) s is virtual stage k P + s (Narayanan et al., SC'21, sec. 2.2.2).
// Written by --ptrain-schedule, read by --ptrain-lower-to-runtime, --ptrain-print-schedule and the timing
// simulator. Also here: building the GPipe, 1F1B and interleaved tables. Executing a table (with unit or real
// costs) is the timing model's job: lib/Analysis/PipelinePlan.h, getUniformPipelineCosts.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_PLAN_SCHEDULETABLE_H
#define PTRAIN_PLAN_SCHEDULETABLE_H

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
  /// The rank's model chunk (0 without virtual stages).
  int64_t chunk = 0;

  /// The step's table entry ("F3", "B0", "FB2", "O"; "F3.1" for chunk 1).
  std::string str() const;
  /// Parses a table entry; std::nullopt when it is none of the forms (the micro-batch and chunk are not
  /// range-checked here).
  static std::optional<ScheduleStep> parse(llvm::StringRef text);
};

/// Per stage (rank) the ordered steps.
using ScheduleTableRows = std::vector<std::vector<ScheduleStep>>;

/// The table of `kind` ("gpipe", "1f1b", "interleaved") for `p` stages, `v` model chunks per stage (1 unless
/// interleaved) and `m` micro-batches; the last virtual stage fuses forward and backward (FB). Errors (as a
/// message): an unknown kind, p, v or m below 1, v > 1 for gpipe/1f1b, v = 1 or p < 2 for interleaved, and
/// m not a multiple of p for interleaved (Megatron-LM's requirement: chunks advance in groups of p
/// micro-batches).
///  * gpipe: all forwards, then all backwards (Huang et al., NeurIPS 2019).
///  * 1f1b: min(p - s - 1, m) warm-up forwards, alternating forward/backward, cool-down backwards (Narayanan
///    et al., "PipeDream-Flush", ICML 2021).
///  * interleaved: Megatron-LM's forward_backward_pipelining_with_interleaving (Narayanan et al., SC'21,
///    sec. 2.2.2): of the m v chunk-micro-batches of stage s, (p - s - 1) 2 + (v - 1) p warm-up forwards
///    (all of them when m = p), then one forward and one backward alternately; the k-th forward is chunk
///    (k mod p v) / p of micro-batch (k / p v) p + k mod p, the k-th backward the same with the chunk
///    reversed. The last virtual stage runs FB at its forward's slot and skips its backward slot.
std::optional<ScheduleTableRows> buildScheduleTable(llvm::StringRef kind, int64_t p, int64_t v, int64_t m,
                                                    std::string &error);

} // namespace mlir::ptrain

#endif // PTRAIN_PLAN_SCHEDULETABLE_H
