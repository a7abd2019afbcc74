//===- PipelineDriver.cpp - The pipeline schedule as C++ (--emit-cpp) -----===//
//
// The schedule table of `ptrain.schedule` (one row per stage; steps "F<i>",
// "B<i>", "FB<i>", "O") becomes one straight-line C++ function per stage,
// step by step, with nonblocking point-to-point transfers on the pipeline
// axis's communicator:
//   F i   (stage s < P-1)  input: tokens of micro-batch i (s = 0) or a receive
//         from s-1 (tag 2i) kept for the backward; forward_stage<s>; send the
//         output to s+1 (tag 2i), waited at B i or before the optimizer step;
//   B i   (s < P-1)        receive the output gradient from s+1 (tag 2i+1);
//         stage<s>_backward(input_i, grad) (recomputes the forward);
//         send dx to s-1 (tag 2i+1) when s > 0;
//   FB i  (s = P-1)        receive h from s-1 (tag 2i) (the tokens when P = 1);
//         stage<s>_forward_backward(h, tokens_i) -> (loss, dh); send dh;
//   O                      wait on every send, then stage<s>_optimizer_step().
// Every wait has the runtime's deadline (PTRAIN_COMM_TIMEOUT_S): a mismatched
// schedule is an error, never a hang. The loss is the mean over the
// micro-batches, all-reduced (sum; other stages add 0) onto every rank.
//
//===----------------------------------------------------------------------===//

#include "PipelineDriver.h"

#include "RuntimeCallTable.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

namespace {

const char *rc(RuntimeCall call) { return getRuntimeCallInfo(call).name; }

int64_t countOf(Type type) {
  int64_t n = 1;
  for (int64_t d : cast<RankedTensorType>(type).getShape())
    n *= d;
  return n;
}

struct Step {
  enum Kind { Forward, Backward, ForwardBackward, Optimizer } kind;
  int64_t microBatch = -1;
  std::string text;
};

/// The schedule rows, checked: every micro-batch forward and backward exactly once per stage (F before B),
/// or FB once on the last stage, and "O" last.
FailureOr<SmallVector<SmallVector<Step>>> readSchedule(ModuleOp module, const PipelineShape &shape) {
  auto schedule = module->getAttrOfType<DictionaryAttr>("ptrain.schedule");
  if (!schedule)
    return module.emitError("--emit-cpp: a pipeline module (ptrain.pipeline) needs the schedule attribute "
                            "ptrain.schedule; run --ptrain-schedule first");
  auto mb = schedule.getAs<IntegerAttr>("micro_batches");
  if (!mb || mb.getInt() != shape.microBatches)
    return module.emitError("--emit-cpp: ptrain.schedule's micro_batches ")
           << (mb ? std::to_string(mb.getInt()) : std::string("(missing)"))
           << " differs from ptrain.pipeline's " << shape.microBatches;
  auto table = schedule.getAs<ArrayAttr>("table");
  if (!table || static_cast<int64_t>(table.size()) != shape.pp)
    return module.emitError("--emit-cpp: ptrain.schedule's table must have one row per stage (")
           << shape.pp << ")";
  SmallVector<SmallVector<Step>> rows;
  for (auto [s, rowAttr] : llvm::enumerate(table)) {
    auto row = dyn_cast<ArrayAttr>(rowAttr);
    if (!row)
      return module.emitError("--emit-cpp: ptrain.schedule: row ") << s << " is not an array of strings";
    bool last = static_cast<int64_t>(s) == shape.pp - 1;
    SmallVector<int> forwards(shape.microBatches), backwards(shape.microBatches);
    SmallVector<Step> steps;
    for (auto [k, stepAttr] : llvm::enumerate(row)) {
      auto str = dyn_cast<StringAttr>(stepAttr);
      auto bad = [&](const Twine &why) {
        return module.emitError("--emit-cpp: ptrain.schedule: stage ")
               << s << " step " << k << " '" << (str ? str.getValue() : StringRef("?")) << "': " << why;
      };
      if (!str)
        return bad("not a string");
      StringRef text = str.getValue();
      Step step;
      step.text = text.str();
      StringRef number;
      if (text == "O") {
        step.kind = Step::Optimizer;
      } else if (text.consume_front("FB")) {
        step.kind = Step::ForwardBackward;
        number = text;
      } else if (text.consume_front("F")) {
        step.kind = Step::Forward;
        number = text;
      } else if (text.consume_front("B")) {
        step.kind = Step::Backward;
        number = text;
      } else {
        return bad("expected F<i>, B<i>, FB<i> or O");
      }
      if (step.kind != Step::Optimizer) {
        if (number.getAsInteger(10, step.microBatch) || step.microBatch < 0 ||
            step.microBatch >= shape.microBatches)
          return bad("the micro-batch must be in [0, " + Twine(shape.microBatches) + ")");
        if ((step.kind == Step::ForwardBackward) != last)
          return bad(last ? "the last stage runs FB<i> steps only" : "FB<i> belongs to the last stage");
        int &seen = step.kind == Step::Backward ? backwards[step.microBatch] : forwards[step.microBatch];
        if (seen++)
          return bad("micro-batch scheduled twice");
        if (step.kind == Step::Backward && !forwards[step.microBatch])
          return bad("backward before the forward of its micro-batch");
      } else if (k + 1 != row.size()) {
        return bad("the optimizer step must be the last step");
      }
      steps.push_back(step);
    }
    if (steps.empty() || steps.back().kind != Step::Optimizer)
      return module.emitError("--emit-cpp: ptrain.schedule: stage ") << s << " does not end with \"O\"";
    for (int64_t i = 0; i < shape.microBatches; ++i)
      if (!forwards[i] || (!last && !backwards[i]))
        return module.emitError("--emit-cpp: ptrain.schedule: stage ")
               << s << " never runs the " << (!forwards[i] ? "forward" : "backward") << " of micro-batch " << i;
    rows.push_back(std::move(steps));
  }
  return rows;
}

/// A function of the module with `numArgs` arguments and `numResults` results, or an error.
FailureOr<func::FuncOp> lookupFunc(ModuleOp module, const std::string &name, unsigned numArgs,
                                   unsigned numResults) {
  auto func = module.lookupSymbol<func::FuncOp>(name);
  if (!func)
    return module.emitError("--emit-cpp: the pipeline module has no function @") << name;
  if (func.getNumArguments() != numArgs || func.getNumResults() != numResults)
    return func.emitError("--emit-cpp: @") << name << " must take " << numArgs << " argument(s) and return "
                                           << numResults << " result(s)";
  return func;
}

} // namespace

FailureOr<PipelineShape> mlir::ptrain::cpp::readPipelineShape(ModuleOp module) {
  auto pipeline = module->getAttrOfType<DictionaryAttr>("ptrain.pipeline");
  if (!pipeline)
    return module.emitError("--emit-cpp: no ptrain.pipeline attribute");
  auto pp = pipeline.getAs<IntegerAttr>("pp");
  auto mb = pipeline.getAs<IntegerAttr>("micro_batches");
  if (!pp || !mb || pp.getInt() < 1 || mb.getInt() < 1)
    return module.emitError("--emit-cpp: ptrain.pipeline needs integer pp >= 1 and micro_batches >= 1");
  return PipelineShape{pp.getInt(), mb.getInt()};
}

LogicalResult mlir::ptrain::cpp::emitPipelineDriver(ModuleOp module, const PipelineShape &shape, StringRef ppComm,
                                                   StringRef stage, std::string &globals, std::string &code) {
  FailureOr<SmallVector<SmallVector<Step>>> rows = readSchedule(module, shape);
  if (failed(rows))
    return failure();
  const int64_t P = shape.pp, M = shape.microBatches;
  // Shapes from the stage functions.
  FailureOr<func::FuncOp> first = lookupFunc(module, "forward_stage0", 1, 1);
  FailureOr<func::FuncOp> lastFwd = lookupFunc(module, "forward_stage" + std::to_string(P - 1), 1, 1);
  if (failed(first) || failed(lastFwd))
    return failure();
  auto tokens = dyn_cast<RankedTensorType>(first->getArgumentTypes()[0]);
  auto logits = dyn_cast<RankedTensorType>(lastFwd->getResultTypes()[0]);
  if (!tokens || tokens.getRank() != 2 || !tokens.getElementType().isInteger(64) || !logits ||
      logits.getRank() != 3 || !logits.getElementType().isF32())
    return first->emitError("--emit-cpp: the pipeline driver needs @forward_stage0(tensor<BxSxi64>) and a last "
                            "stage returning logits tensor<BxSxVxf32>");
  const int64_t B = tokens.getDimSize(0), S = tokens.getDimSize(1), V = logits.getDimSize(2);
  const std::string T = std::to_string(B * S), Ms = std::to_string(M);
  const std::string comm = ppComm.str();

  globals += "//===--- Pipeline driver buffers: " + std::to_string(P) + " stages, " + Ms +
             " micro-batches of [" + std::to_string(B) + ", " + std::to_string(S) + "] tokens ---===//\n\n";
  globals += "constexpr int64_t kMicroBatches = " + Ms + ";\nconstexpr int64_t kTokensPerMicroBatch = " + T +
             ";\n";
  // Last stage's eval scratch: logits, shifted logits and labels, log-sum-exp.
  const std::string n = std::to_string(B * (S - 1));
  globals += "alignas(64) float eval_logits[" + std::to_string(B * S * V) + "];\n";
  globals += "alignas(64) float eval_shifted[" + std::to_string(B * (S - 1) * V) + "];\n";
  globals += "alignas(64) int64_t eval_labels64[" + n + "];\nalignas(64) int32_t eval_labels32[" + n +
             "];\nalignas(64) float eval_lse[" + n + "];\n";

  std::string dispatchTrain, dispatchEval;
  for (int64_t s = 0; s < P; ++s) {
    const std::string ss = std::to_string(s);
    const bool isFirst = s == 0, isLast = s == P - 1;
    FailureOr<func::FuncOp> fwd = lookupFunc(module, "forward_stage" + ss, 1, 1);
    if (failed(fwd))
      return failure();
    int64_t inCount = countOf(fwd->getArgumentTypes()[0]), outCount = countOf(fwd->getResultTypes()[0]);
    std::string in = "stage" + ss + "_in", out = "stage" + ss + "_out", dout = "stage" + ss + "_dout",
                din = "stage" + ss + "_din";
    if (!isFirst) {
      globals += "alignas(64) float " + in + "[" + Ms + "][" + std::to_string(inCount) + "];\n";
      globals += "alignas(64) float " + din + "[" + Ms + "][" + std::to_string(inCount) + "];\n";
    }
    if (!isLast) {
      globals += "alignas(64) float " + out + "[" + Ms + "][" + std::to_string(outCount) + "];\n";
      globals += "alignas(64) float " + dout + "[" + std::to_string(outCount) + "];\n";
      if (failed(lookupFunc(module, "stage" + ss + "_backward", 2, isFirst ? 0 : 1)))
        return failure();
    } else if (failed(lookupFunc(module, "stage" + ss + "_forward_backward", 2, isFirst ? 1 : 2))) {
      return failure();
    }
    if (failed(lookupFunc(module, "stage" + ss + "_optimizer_step", 0, 0)))
      return failure();
    const std::string inBytes = std::to_string(4 * inCount), outBytes = std::to_string(4 * outCount);
    auto input = [&](const std::string &i) {
      return isFirst ? "tokens + " + i + " * kTokensPerMicroBatch" : in + "[" + i + "]";
    };
    auto receiveInput = [&](const std::string &i) {
      return "    PTRAIN_STEP_CALL(" + std::string(rc(RuntimeCall::ptrain_recv_start)) + "(" + comm + ", " + in +
             "[" + i + "], " + inBytes + ", " + std::to_string(s - 1) + ", 2 * " + i + ", &recv));\n" +
             "    PTRAIN_STEP_CALL(waitRequest(&recv));\n";
    };

    // Training: the schedule row, step by step.
    std::string f = "/// Stage " + ss + " of " + std::to_string(P) + ", the schedule row:";
    for (const Step &step : (*rows)[s])
      f += " " + step.text;
    f += "\nptrain_status_t trainStage" + ss + "(const int64_t *tokens, float *out_loss) {\n";
    f += "  ptrain_request_t recv = nullptr;\n  ptrain_request_t sends[2 * kMicroBatches] = {};\n";
    f += "  double loss_sum = 0.0;\n  (void)tokens;\n  (void)recv;\n";
    for (const Step &step : (*rows)[s]) {
      const std::string i = std::to_string(step.microBatch);
      f += "  { // " + step.text + "\n";
      switch (step.kind) {
      case Step::Forward:
        if (!isFirst)
          f += receiveInput(i);
        f += "    PTRAIN_STEP_CALL(ptrain_step_forward_stage" + ss + "(" + input(i) + ", " + out + "[" + i +
             "]));\n";
        f += "    PTRAIN_STEP_CALL(" + std::string(rc(RuntimeCall::ptrain_send_start)) + "(" + comm + ", " + out +
             "[" + i + "], " + outBytes + ", " + std::to_string(s + 1) + ", 2 * " + i + ", &sends[2 * " + i +
             "]));\n";
        break;
      case Step::Backward:
        f += "    PTRAIN_STEP_CALL(" + std::string(rc(RuntimeCall::ptrain_recv_start)) + "(" + comm + ", " + dout +
             ", " + outBytes + ", " + std::to_string(s + 1) + ", 2 * " + i + " + 1, &recv));\n";
        f += "    PTRAIN_STEP_CALL(waitRequest(&recv));\n";
        f += "    PTRAIN_STEP_CALL(waitRequest(&sends[2 * " + i + "])); // the forward output was received\n";
        f += "    PTRAIN_STEP_CALL(ptrain_step_stage" + ss + "_backward(" + input(i) + ", " + dout +
             (isFirst ? "" : ", " + din + "[" + i + "]") + "));\n";
        if (!isFirst)
          f += "    PTRAIN_STEP_CALL(" + std::string(rc(RuntimeCall::ptrain_send_start)) + "(" + comm + ", " + din +
               "[" + i + "], " + inBytes + ", " + std::to_string(s - 1) + ", 2 * " + i + " + 1, &sends[2 * " +
               i + " + 1]));\n";
        break;
      case Step::ForwardBackward:
        if (!isFirst)
          f += receiveInput(i);
        f += "    float loss = 0.0f;\n";
        f += "    PTRAIN_STEP_CALL(ptrain_step_stage" + ss + "_forward_backward(" + input(i) +
             ", tokens + " + i + " * kTokensPerMicroBatch, &loss" + (isFirst ? "" : ", " + din + "[" + i + "]") +
             "));\n";
        f += "    loss_sum += loss;\n";
        if (!isFirst)
          f += "    PTRAIN_STEP_CALL(" + std::string(rc(RuntimeCall::ptrain_send_start)) + "(" + comm + ", " + din +
               "[" + i + "], " + inBytes + ", " + std::to_string(s - 1) + ", 2 * " + i + " + 1, &sends[2 * " +
               i + " + 1]));\n";
        break;
      case Step::Optimizer:
        f += "    for (ptrain_request_t &send : sends)\n      PTRAIN_STEP_CALL(waitRequest(&send));\n";
        f += "    PTRAIN_STEP_CALL(ptrain_step_stage" + ss + "_optimizer_step());\n";
        break;
      }
      f += "  }\n";
    }
    f += "  *out_loss = " + std::string(isLast ? "static_cast<float>(loss_sum / kMicroBatches)" : "0.0f") +
         ";\n  (void)loss_sum;\n  return shareLoss(out_loss);\n}\n\n";

    // Evaluation: forward and loss of every micro-batch in order, no state change.
    f += "/// Stage " + ss + ": forward (and loss on the last stage) of every micro-batch in order.\n";
    f += "ptrain_status_t evalStage" + ss + "(const int64_t *tokens, float *out_loss) {\n";
    f += "  ptrain_request_t recv = nullptr;\n  ptrain_request_t sends[kMicroBatches] = {};\n";
    f += "  double loss_sum = 0.0;\n  (void)recv;\n";
    f += "  for (int64_t i = 0; i < kMicroBatches; ++i) {\n";
    if (!isFirst)
      f += receiveInput("i");
    if (!isLast) {
      f += "    PTRAIN_STEP_CALL(ptrain_step_forward_stage" + ss + "(" + input("i") + ", " + out + "[i]));\n";
      f += "    PTRAIN_STEP_CALL(" + std::string(rc(RuntimeCall::ptrain_send_start)) + "(" + comm + ", " + out +
           "[i], " + outBytes + ", " + std::to_string(s + 1) + ", 2 * i, &sends[i]));\n";
    } else {
      const std::string toks = "tokens + i * kTokensPerMicroBatch";
      f += "    PTRAIN_STEP_CALL(ptrain_step_forward_stage" + ss + "(" + input("i") + ", eval_logits));\n";
      f += "    // The next-token loss: logits at positions 0..S-2 against tokens 1..S-1 (as the training step).\n";
      f += "    static const int64_t logits_dims[3] = {" + std::to_string(B) + ", " + std::to_string(S) + ", " +
           std::to_string(V) + "}, logits_offsets[3] = {0, 0, 0}, shifted_dims[3] = {" + std::to_string(B) +
           ", " + std::to_string(S - 1) + ", " + std::to_string(V) + "};\n";
      f += "    static const int64_t token_dims[2] = {" + std::to_string(B) + ", " + std::to_string(S) +
           "}, label_offsets[2] = {0, 1}, label_dims[2] = {" + std::to_string(B) + ", " + std::to_string(S - 1) +
           "};\n";
      f += "    PTRAIN_STEP_CALL(" + std::string(rc(RuntimeCall::ptrain_slice)) +
           "(eval_logits, 4, 3, logits_dims, logits_offsets, shifted_dims, eval_shifted));\n";
      f += "    PTRAIN_STEP_CALL(" + std::string(rc(RuntimeCall::ptrain_slice)) + "(" + toks +
           ", 8, 2, token_dims, label_offsets, label_dims, eval_labels64));\n";
      f += "    PTRAIN_STEP_CALL(" + std::string(rc(RuntimeCall::ptrain_cast_i64_i32)) + "(eval_labels64, " + n +
           ", eval_labels32));\n";
      f += "    float loss = 0.0f;\n";
      f += "    PTRAIN_STEP_CALL(" + std::string(rc(RuntimeCall::ptrain_cross_entropy_fwd_f32)) +
           "(eval_shifted, eval_labels32, " + n + ", " + std::to_string(V) + ", &loss, eval_lse));\n";
      f += "    loss_sum += loss;\n";
    }
    f += "  }\n  for (ptrain_request_t &send : sends)\n    PTRAIN_STEP_CALL(waitRequest(&send));\n";
    f += "  *out_loss = " + std::string(isLast ? "static_cast<float>(loss_sum / kMicroBatches)" : "0.0f") +
         ";\n  (void)loss_sum;\n  return shareLoss(out_loss);\n}\n\n";
    code += f;
    dispatchTrain += "  case " + ss + ":\n    return trainStage" + ss + "(tokens, out_loss);\n";
    dispatchEval += "  case " + ss + ":\n    return evalStage" + ss + "(tokens, out_loss);\n";
  }
  std::string head;
  head += "//===--- The pipeline driver (the ptrain.schedule table) ---===//\n\nnamespace {\n\n";
  head += "/// Waits on *request (if any) within the communicator's deadline and clears it.\n";
  head += "ptrain_status_t waitRequest(ptrain_request_t *request) {\n  ptrain_request_t r = *request;\n"
          "  *request = nullptr;\n  return r ? " +
          std::string(rc(RuntimeCall::ptrain_wait)) + "(r) : PTRAIN_OK;\n}\n\n";
  head += "/// The loss is known on the last stage only (the others pass 0): a sum all-reduce gives it to every "
          "rank.\n";
  head += "ptrain_status_t shareLoss(float *loss) {\n  ptrain_request_t r = nullptr;\n";
  head += "  PTRAIN_STEP_CALL(" + std::string(rc(RuntimeCall::ptrain_all_reduce_start)) + "(" + comm +
          ", loss, loss, 1, PTRAIN_DTYPE_F32, PTRAIN_REDUCE_SUM, &r));\n  return " +
          std::string(rc(RuntimeCall::ptrain_wait)) + "(r);\n}\n\n";
  code = head + code + "} // namespace\n\n";
  auto entry = [&](StringRef name, StringRef doc, const std::string &dispatch) {
    code += doc.str();
    code += "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_" + name.str() +
            "(const int64_t *tokens, float *out_loss) {\n";
    code += "  if (!ptrain_world)\n    return stepError(\"ptrain_step_" + name.str() +
            ": call ptrain_step_init first\");\n";
    code += "  if (!tokens || !out_loss)\n    return stepError(\"ptrain_step_" + name.str() +
            ": null tokens or out_loss\");\n";
    code += "  switch (" + stage.str() + ") {\n" + dispatch + "  default:\n    return stepError(\"ptrain_step_" +
            name.str() + ": no stage %d\", static_cast<int>(" + stage.str() + "));\n  }\n}\n\n";
  };
  const std::string shapeDoc = "[" + Ms + " * " + std::to_string(B) + ", " + std::to_string(S) + "]";
  entry("train",
        "/// One training step on tokens " + shapeDoc +
            " (micro-batch i = rows [i*B, (i+1)*B)): this rank's stage runs its schedule row; *out_loss = the "
            "mean loss over the micro-batches, on every rank. Every rank must pass the same tokens.\n",
        dispatchTrain);
  entry("eval",
        "/// The mean loss over the micro-batches of tokens " + shapeDoc +
            " without backward or optimizer (no state changes), on every rank.\n",
        dispatchEval);
  return success();
}
