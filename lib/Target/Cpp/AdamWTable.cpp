//===- AdamWTable.cpp - Runs of AdamW updates as a table and a loop ------===//
//
// See AdamWTable.h.
//
//===----------------------------------------------------------------------===//

#include "AdamWTable.h"
#include "GeneratedAdamW.h"

#include "Common/CppTypes.h"
#include "Common/EmitHelpers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/STLExtras.h"

#include <array>
#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

namespace {
/// A run of the table: rows [first, first + period) repeated `count` times, their state indices (param, grad,
/// m, v) up by `stride` each repeat.
struct RowRun {
  int64_t first = 0, period = 1, count = 1;
  std::array<int64_t, 4> stride = {0, 0, 0, 0};
};

/// The runs of `rows` (state indices and the rest of each row), greedily: at each row the period that covers
/// the most rows (as the state table's, include/ptrain/Target/Common/StateTable.h).
std::vector<RowRun> rowRuns(ArrayRef<std::array<int64_t, 4>> index, ArrayRef<std::string> rest) {
  constexpr int64_t kMaxPeriod = 256;
  const int64_t n = static_cast<int64_t>(index.size());
  std::vector<RowRun> runs;
  for (int64_t i = 0; i < n;) {
    RowRun best{i, 1, 1, {0, 0, 0, 0}};
    for (int64_t period = 1; period <= kMaxPeriod && i + 2 * period <= n; ++period) {
      std::array<int64_t, 4> stride;
      for (int k = 0; k < 4; ++k)
        stride[k] = index[i + period][k] - index[i][k];
      int64_t count = 1;
      for (; i + (count + 1) * period <= n; ++count) {
        bool same = true;
        for (int64_t p = 0; p < period && same; ++p) {
          int64_t at = i + count * period + p;
          same = rest[at] == rest[i + p];
          for (int k = 0; k < 4 && same; ++k)
            same = index[at][k] == index[i + p][k] + count * stride[k];
        }
        if (!same)
          break;
      }
      if (count > 1 && period * count > best.period * best.count)
        best = {i, period, count, stride};
    }
    // Rows no period repeats from make one run of count 1.
    if (best.count == 1 && !runs.empty() && runs.back().count == 1)
      ++runs.back().period;
    else
      runs.push_back(best);
    i += best.period * best.count;
  }
  return runs;
}
} // namespace

LogicalResult mlir::ptrain::cpp::emitAdamWRun(const AdamWRun &run, llvm::function_ref<int64_t(StringAttr)> stateIndex,
                                             llvm::function_ref<LogicalResult(LRScheduleAttr, Value)> learningRate,
                                             llvm::function_ref<std::string(AdamWOp)> kernelOf, CallWriter &w) {
  AdamWOp first = run.rows.front().op;
  auto param = [](AdamWRow row) { return row.op.getParam(); };
  auto decay = [](AdamWRow row) { return row.op.getWeightDecayAttr().getValueAsDouble(); };
  std::vector<std::array<int64_t, 4>> index;
  std::vector<std::string> rest;
  for (const AdamWRow &row : run.rows) {
    index.push_back({stateIndex(row.param), stateIndex(row.grad), stateIndex(row.m), stateIndex(row.v)});
    rest.push_back(std::to_string(countOf(param(row))) + ", " + floatLiteral(decay(row)) + ", " +
                   (row.zeroGrad ? "true" : "false"));
  }
  // The generated kernels (--ptrain-outline-adamw), when every row has one: a row's kernel is part of the row.
  const bool generated =
      llvm::all_of(run.rows, [&](const AdamWRow &row) { return !kernelOf(row.op).empty(); });
  if (generated)
    for (auto [r, row] : llvm::enumerate(run.rows))
      rest[r] += ", " + kernelOf(row.op);
  // The layers' updates are runs of one layer's rows: the table holds a row per parameter of the run's first
  // period (a layer), and the runs how often each repeats (issue 23 item 3: it grows with a layer's parameters).
  std::vector<RowRun> runs = rowRuns(index, rest);
  int64_t numRows = 0;
  for (const RowRun &r : runs)
    numRows += r.period;
  w.line("// " + std::to_string(run.rows.size()) +
         " AdamW updates as a table (AdamWTable.h): in place on the states, the gradient reset after each" +
         (generated ? "; each row's generated kernel (--ptrain-outline-adamw)" : ""));
  w.line("struct AdamWRow {");
  w.line("  int64_t param, grad, m, v; // indices in state_f32");
  w.line("  int64_t n;");
  w.line("  float weight_decay;");
  w.line("  bool zero_grad;");
  if (generated)
    w.line("  void (*kernel)(float *, float *, float *, float *, float, float, float); // AdamWArith.h");
  w.line("};");
  w.line("static const AdamWRow rows[" + std::to_string(numRows) + "] = {");
  for (const RowRun &r : runs)
    for (int64_t p = r.first; p < r.first + r.period; ++p)
      w.line("    {" + std::to_string(index[p][0]) + ", " + std::to_string(index[p][1]) + ", " +
             std::to_string(index[p][2]) + ", " + std::to_string(index[p][3]) + ", " + rest[p] + "}, // " +
             run.rows[p].param.getValue().str());
  w.line("};");
  w.line("// Rows [first, first + period) repeated count times, the indices up by the four strides each repeat.");
  w.line("static const int64_t runs[" + std::to_string(runs.size()) + "][7] = {");
  int64_t row = 0;
  for (const RowRun &r : runs) {
    w.line("    {" + std::to_string(row) + ", " + std::to_string(r.period) + ", " + std::to_string(r.count) + ", " +
           std::to_string(r.stride[0]) + ", " + std::to_string(r.stride[1]) + ", " + std::to_string(r.stride[2]) +
           ", " + std::to_string(r.stride[3]) + "},");
    row += r.period;
  }
  w.line("};");
  if (failed(learningRate(first.getSchedule(), first.getStep())))
    return failure();
  w.line("for (const auto &run : runs)");
  w.line("  for (int64_t c = 0; c < run[2]; ++c)");
  w.line("    for (int64_t p = 0; p < run[1]; ++p) {");
  w.line("      const AdamWRow &row = rows[run[0] + p];");
  w.line("      float *grad = state_f32[row.grad + c * run[4]];");
  const std::string p = "state_f32[row.param + c * run[3]]", m = "state_f32[row.m + c * run[5]]",
                    v = "state_f32[row.v + c * run[6]]";
  if (generated) {
    if (failed(emitAdamWKernelCall(first, "row.weight_decay", "row.kernel", {p, "grad", m, v}, w)))
      return failure();
  } else if (failed(w.call(RuntimeCall::ptrain_adamw_step_f32,
                           {p, "grad", m, v, "row.n", "t", "lr", floatLiteral(first.getBeta1Attr().getValueAsDouble()),
                            floatLiteral(first.getBeta2Attr().getValueAsDouble()),
                            floatLiteral(first.getEpsilonAttr().getValueAsDouble()), "row.weight_decay"}))) {
    return failure();
  }
  w.line("      if (row.zero_grad)");
  if (failed(w.call(RuntimeCall::ptrain_zero_bytes, {"grad", "row.n * 4"})))
    return failure();
  w.line("    }");
  return success();
}
