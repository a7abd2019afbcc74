//===- AdamWTable.cpp - Runs of AdamW updates as a table and a loop ------===//
//
// See AdamWTable.h.
//
//===----------------------------------------------------------------------===//

#include "AdamWTable.h"

#include "Common/CppTypes.h"
#include "Common/EmitHelpers.h"
#include "EmitOptimizer.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

LogicalResult mlir::ptrain::cpp::emitAdamWRun(const AdamWRun &run,
                                              llvm::function_ref<std::string(StringAttr)> stateVar,
                                              CallWriter &w) {
  AdamWOp first = run.rows.front().op;
  auto param = [](AdamWRow row) { return row.op.getParam(); };
  auto decay = [](AdamWRow row) { return row.op.getWeightDecayAttr().getValueAsDouble(); };
  w.line("// " + std::to_string(run.rows.size()) +
         " AdamW updates as a table (AdamWTable.h): in place on the states, the gradient reset after each");
  w.line("struct AdamWRow {");
  w.line("  float *const *param, *const *grad, *const *m, *const *v;");
  w.line("  int64_t n;");
  w.line("  float weight_decay;");
  w.line("  bool zero_grad;");
  w.line("};");
  w.line("static const AdamWRow rows[" + std::to_string(run.rows.size()) + "] = {");
  for (const AdamWRow &row : run.rows)
    w.line("    {&" + stateVar(row.param) + ", &" + stateVar(row.grad) + ", &" + stateVar(row.m) + ", &" +
           stateVar(row.v) + ", " + std::to_string(countOf(param(row))) + ", " +
           floatLiteral(decay(row)) + ", " +
           (row.zeroGrad ? "true" : "false") + "}, // " + row.param.getValue().str());
  w.line("};");
  if (failed(emitLearningRate(first.getSchedule(), first.getStep(), w)))
    return failure();
  w.line("for (const AdamWRow &row : rows) {");
  if (failed(w.call(RuntimeCall::ptrain_adamw_step_f32,
                    {"*row.param", "*row.grad", "*row.m", "*row.v", "row.n", "t", "lr",
                     floatLiteral(first.getBeta1Attr().getValueAsDouble()),
                     floatLiteral(first.getBeta2Attr().getValueAsDouble()),
                     floatLiteral(first.getEpsilonAttr().getValueAsDouble()), "row.weight_decay"})))
    return failure();
  w.line("  if (row.zero_grad)");
  if (failed(w.call(RuntimeCall::ptrain_zero_bytes, {"*row.grad", "row.n * 4"})))
    return failure();
  w.line("}");
  return success();
}
