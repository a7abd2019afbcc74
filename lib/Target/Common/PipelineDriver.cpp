//===- PipelineDriver.cpp - ptrain_step_train / _eval of a pipeline ------===//
//
// See PipelineDriver.h.
//
//===----------------------------------------------------------------------===//

#include "Common/PipelineDriver.h"

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

using namespace mlir;
using namespace mlir::ptrain;

LogicalResult mlir::ptrain::target::emitPipelineDriver(ModuleOp module, CommGroups &comms, const std::set<int64_t> &stages,
                                                    std::string &driverCode, SmallVectorImpl<std::string> &entryNames,
                                                    StringRef readyVar) {
  PipelineAttr pipelineAttr = getPipeline(module);
  if (!pipelineAttr || !pipelineAttr.getMicroBatches())
    return mlir::emitError(module.getLoc(),
                           comms.tool + ": ptrain.pipeline needs integer pp >= 1 and micro_batches >= 1");
  const int64_t pp = pipelineAttr.getPp();
  const bool withLabels = pipelineAttr.getLabels();
  GridOp grid;
  for (auto g : module.getOps<GridOp>())
    grid = g;
  if (!grid || !llvm::is_contained(grid.getAxisNames(), StringAttr::get(module.getContext(), "pp")))
    return mlir::emitError(module.getLoc(), comms.tool + ": a pipeline module needs a ptrain.grid with an axis pp");
  FailureOr<std::string> ppComm = comms.lookup(
      grid, grid.getSymName(), ArrayAttr::get(module.getContext(), {StringAttr::get(module.getContext(), "pp")}));
  if (failed(ppComm))
    return failure();
  for (int64_t s = 0; s < pp; ++s)
    if (!stages.count(s))
      return mlir::emitError(module.getLoc(), comms.tool + ": no function of stage ")
             << s << " (attribute ptrain.stage)";
  // entry kind -> stage -> the lowered step.
  std::map<std::string, std::map<int64_t, func::FuncOp>> steps;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto entry = func->getAttrOfType<StringAttr>("ptrain.entry");
    auto stage = getStage(func);
    if (!entry || !stage)
      continue;
    auto type = func.getFunctionType();
    // (tokens) or, with explicit labels, (tokens, labels) of one type.
    const unsigned inputs = withLabels ? 2 : 1;
    auto tokens = type.getNumInputs() == inputs ? dyn_cast<RankedTensorType>(type.getInput(0)) : RankedTensorType();
    auto loss = type.getNumResults() == 1 ? dyn_cast<RankedTensorType>(type.getResult(0)) : RankedTensorType();
    if (!tokens || tokens.getRank() != 2 || !tokens.getElementType().isInteger(64) || !loss || loss.getRank() != 0 ||
        !loss.getElementType().isF32() || (withLabels && type.getInput(1) != tokens))
      return mlir::emitError(func.getLoc(), comms.tool + ": the step @")
             << func.getSymName() << " must map tensor<NxSxi64> tokens" << (withLabels ? " and labels" : "")
             << " to a tensor<f32> loss";
    steps[entry.getValue().str()][stage.getIndex()] = func;
  }
  for (StringRef kind : {"train", "eval"}) {
    for (int64_t s = 0; s < pp; ++s)
      if (!steps[kind.str()].count(s))
        return mlir::emitError(module.getLoc(), comms.tool + ": the pipeline module has no ")
               << kind << " step of stage " << s << " (a function with ptrain.entry = \"" << kind
               << "\"); run --ptrain-lower-to-runtime before " << comms.tool;
    std::string dispatch;
    for (auto &[stage, func] : steps[kind.str()])
      dispatch += "  case " + std::to_string(stage) + ":\n    return ptrain_step_" + func.getSymName().str() +
                  (withLabels ? "(tokens, labels, out_loss);\n" : "(tokens, out_loss);\n");
    RankedTensorType tokens = cast<RankedTensorType>(steps[kind.str()][0].getFunctionType().getInput(0));
    const std::string shape =
        "[" + std::to_string(tokens.getDimSize(0)) + ", " + std::to_string(tokens.getDimSize(1)) + "]";
    driverCode += kind == "train"
                      ? "/// One training step on tokens " + shape +
                            " (M micro-batches of B rows): this rank's stage runs its schedule row; *out_loss = "
                            "the mean loss over the micro-batches, on every rank. Every rank must pass the same "
                            "tokens.\n"
                      : "/// The mean loss over the micro-batches of tokens " + shape +
                            " without backward or optimizer (no state changes), on every rank.\n";
    const std::string name = "ptrain_step_" + kind.str();
    if (withLabels) {
      // The plain entry refuses: the step needs the labels (ptrain_step_train_labels, docs/CodegenCpu.md).
      driverCode += "/// This step scores explicit labels: call " + name + "_labels.\n";
      driverCode += "extern \"C\" PTRAIN_STEP_API ptrain_status_t " + name +
                    "(const int64_t *tokens, float *out_loss) {\n  (void)tokens;\n  (void)out_loss;\n"
                    "  return stepError(\"" +
                    name + ": the step was compiled with explicit labels: call " + name + "_labels\");\n}\n\n";
      entryNames.push_back(name);
      driverCode += "/// The same with the labels [" + std::to_string(tokens.getDimSize(0)) + ", " +
                    std::to_string(tokens.getDimSize(1)) +
                    "] the last stage scores, row for row with the tokens (every rank passes its copy).\n";
    }
    const std::string entry = withLabels ? name + "_labels" : name;
    driverCode += "extern \"C\" PTRAIN_STEP_API ptrain_status_t " + entry + "(const int64_t *tokens, " +
                  (withLabels ? "const int64_t *labels, " : "") + "float *out_loss) {\n";
    driverCode +=
        "  if (!" + readyVar.str() + ")\n    return stepError(\"" + entry + ": call ptrain_step_init first\");\n";
    if (withLabels)
      driverCode += "  if (!tokens || !labels || !out_loss)\n    return stepError(\"" + entry +
                    ": null tokens, labels or out_loss\");\n";
    else
      driverCode += "  if (!tokens || !out_loss)\n    return stepError(\"" + name + ": null tokens or out_loss\");\n";
    driverCode += "  switch (ptrain_stage) {\n" + dispatch + "  default:\n    return stepError(\"" + entry +
                  ": no stage %d\", static_cast<int>(ptrain_stage));\n  }\n}\n\n";
    entryNames.push_back(entry);
  }
  return success();
}
