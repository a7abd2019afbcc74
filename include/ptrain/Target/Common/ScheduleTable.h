//===- ScheduleTable.h - A lowered schedule as data and a loop ---*- C++ -*-===//
//
// A pipeline step lowered by --ptrain-lower-to-runtime (docs/TrainingStep.md)
// is one function per stage whose ops are the schedule unrolled: per
// micro-batch a token slice, the stage function's call, its send and receive
// and their waits, in the order of the schedule's row (1F1B, GPipe,
// interleaved). Written op by op, it grows by about 216 lines per micro-batch
// and stage (154k of the 211k lines of the GPT-3-175B shape's code,
// bench/README.md). Both code generators write it instead as data (issue 23
// item 3):
//
//   struct ScheduleRow { int32_t op; int64_t arg[W]; const char *text[S]; };
//   static const ScheduleRow kSchedule[N] = {
//       {0, {393216, 0}}, // ptrain.slice
//       {1, {393216, 0}}, // func.call
//       {2, {0, 0, 0}},   // ptrain.send_start
//       ...};
//   for (const ScheduleRow &row : kSchedule) {
//     switch (row.op) {
//     case 0: ... the slice, its offset row.arg[1] ...
//     case 2: ... ptrain_send_start(comm_grid_pp, <the buffer at row.arg[0]>, 131072, 1, row.arg[1],
//                                   &ptrain_schedule_requests[row.arg[2]]) ...
//     }
//   }
//
// Every op of the function is one row; ops whose code differs only in
// integers (arena offsets, tags, slice offsets, event and request slots) and
// string literals (a wait's message naming its tag) share one case, and the
// integers and strings that differ between them are the row's fields. The
// loop makes the same calls with the same pointers in the same order as the
// op-by-op text, so a step computes bit for bit what it computed before; the
// code is the distinct ops (a handful per stage) plus one line per op.
//
// The table is written from the chunks of the op-by-op text (BlockOutliner.h),
// so it holds whatever the lowering emits (codecs, the loss sum, dropout rows)
// on either target. The values of the function become expressions: a pointer
// declared `T *v12 = EXPR;` is EXPR where it is read (an arena offset, an
// alias, a constant), and a request `ptrain_request_t v2_request = nullptr;`
// is a slot of an array of requests, null at the start.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TARGET_COMMON_SCHEDULETABLE_H
#define PTRAIN_TARGET_COMMON_SCHEDULETABLE_H

#include "ptrain/Target/Common/BlockOutliner.h"

#include <optional>
#include <string>

namespace mlir::ptrain::target {

/// What writeScheduleTable wrote: the ops (rows) and the distinct ones (cases).
struct ScheduleTableStats {
  int64_t rows = 0, cases = 0, intFields = 0, textFields = 0, requests = 0;
};

/// The body of `fn` (its chunks, BlockOutliner.h) as a schedule table and the loop that runs it (see the file
/// comment): text to follow the function's opening brace, ending before its final `return`. nullopt when a
/// chunk declares anything but a pointer (`T *v<N> = EXPR;`, optionally `(void)v<N>;`) or a null request
/// (`T v<N>_request = nullptr;`), or reads a value it does not declare: such a function is written inline.
std::optional<std::string> writeScheduleTable(const EmittedFunction &fn, ScheduleTableStats *stats = nullptr);

} // namespace mlir::ptrain::target

#endif // PTRAIN_TARGET_COMMON_SCHEDULETABLE_H
