//===- EmitPlanJson.cpp - plan.json of a compiled step (--emit-plan-json) -===//
//
// See EmitPlanJson.h. One walk over the module's plan state, written with llvm::json::OStream so that the
// fields keep plan.json's order (docs/Plan.md, "plan.json").
//
//===----------------------------------------------------------------------===//

#include "ptrain/Target/PlanJson/EmitPlanJson.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "ptrain/Dialect/PTrain/IR/PTrainDialect.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainStateInit.h"
#include "ptrain/Target/Cuda/EmitCuda.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::ptrain;

namespace {

constexpr llvm::StringLiteral kTool = "--emit-plan-json";

/// The element type as the IR spells it (f32, i64, ...).
std::string dtypeOf(Type type) {
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

void writeShape(llvm::json::OStream &j, ArrayRef<int64_t> shape) {
  j.array([&] {
    for (int64_t d : shape)
      j.value(d);
  });
}

/// A ranked tensor type with a static shape, or an error at `op` naming `what`.
FailureOr<RankedTensorType> staticTensor(Operation *op, Type type, const Twine &what) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return op->emitError(kTool) << ": " << what << " must be a tensor of static shape, got " << type;
  return tensor;
}

/// `ptrain.tp_slice = #ptrain.tp_slice<axis, dim, groups, shape[, padded]>` (--ptrain-shard-tp, --vocab-parallel)
/// as {axis, dim, groups, global_shape[, padded]}.
void writeTPSlice(llvm::json::OStream &j, TPSliceAttr slice) {
  j.attributeObject("tp_slice", [&] {
    j.attribute("axis", slice.getAxis());
    j.attribute("dim", slice.getDim());
    j.attribute("groups", slice.getGroups());
    j.attributeArray("global_shape", [&] {
      for (int64_t d : slice.getShape())
        j.value(d);
    });
    if (slice.getPadded()) // a vocabulary padded with zero rows to a multiple of tp (--vocab-parallel)
      j.attribute("padded", slice.getPadded());
  });
}

/// One state: {symbol, key, kind, shape, dtype[, tp_slice][, init]}; shape is the rank's (local) one, a
/// sliced parameter's global_shape the ONNX initializer's.
LogicalResult writeState(llvm::json::OStream &j, StateOp state) {
  FailureOr<RankedTensorType> type = staticTensor(state, state.getType(), "a state's type");
  if (failed(type))
    return failure();
  j.object([&] {
    j.attribute("symbol", state.getSymName());
    j.attribute("key", state.getKey());
    j.attribute("kind", stringifyStateKind(state.getKind()));
    j.attributeBegin("shape");
    writeShape(j, type->getShape());
    j.attributeEnd();
    j.attribute("dtype", dtypeOf(type->getElementType()));
    if (TPSliceAttr slice = getTPSlice(state)) // verified against the state's type (PTrainAttrs.td, C1-C9)
      writeTPSlice(j, slice);
    if (std::optional<StateInit> init = getStateInit(state)) // the default of a parameter no model file holds
      j.attributeObject("init", [&] {
        j.attribute("kind", init->kind);
        j.attribute("seed", init->seed);
      });
  });
  return success();
}

/// `states` and, with `codecOnly`, `codec_states` (the states a compression policy added: residuals,
/// warm-start factors, seeds).
LogicalResult writeStates(llvm::json::OStream &j, ModuleOp module, StringRef name, bool codecOnly) {
  LogicalResult result = success();
  j.attributeArray(name, [&] {
    for (auto state : module.getOps<StateOp>()) {
      if (codecOnly && !stringifyStateKind(state.getKind()).starts_with("codec_"))
        continue;
      if (failed(writeState(j, state)))
        result = failure();
    }
  });
  return result;
}

/// The tokens [batch, seq] of `first`'s first argument and the vocabulary (last dimension) of `last`'s first
/// result: the model's input and output ends.
struct ModelEnds {
  int64_t batch = 0, seq = 0, vocab = 0;
};
FailureOr<ModelEnds> modelEnds(func::FuncOp first, func::FuncOp last) {
  FunctionType in = first.getFunctionType(), out = last.getFunctionType();
  if (in.getNumInputs() < 1 || out.getNumResults() < 1)
    return first.emitError(kTool) << ": @" << first.getSymName() << " must take the tokens and @"
                                  << last.getSymName() << " return the logits";
  FailureOr<RankedTensorType> tokens = staticTensor(first, in.getInput(0), "the tokens");
  FailureOr<RankedTensorType> logits = staticTensor(last, out.getResult(0), "the logits");
  if (failed(tokens) || failed(logits))
    return failure();
  if (tokens->getRank() != 2 || logits->getRank() < 1)
    return first.emitError(kTool) << ": the tokens must be [batch, seq] and the logits end in the vocabulary, got "
                                  << *tokens << " and " << *logits;
  return ModelEnds{tokens->getDimSize(0), tokens->getDimSize(1), logits->getShape().back()};
}

void writeEnds(llvm::json::OStream &j, const ModelEnds &ends) {
  j.attribute("batch", ends.batch);
  j.attribute("seq", ends.seq);
  j.attribute("vocab", ends.vocab);
}

/// The size of grid axis `name`, 1 when the grid has no such axis or there is no grid.
int64_t axisSize(GridOp grid, StringRef name) {
  return grid && grid.getAxisIndex(name) ? grid.getAxisSize(name) : 1;
}

LogicalResult writePipeline(llvm::json::OStream &j, ModuleOp module, PipelineAttr pipeline,
                            const EmitPlanJsonOptions &options) {
  auto bad = [&](const Twine &why) -> InFlightDiagnostic {
    return mlir::emitError(module.getLoc()) << kTool << ": " << why;
  };
  if (!pipeline.getMicroBatches())
    return bad("ptrain.pipeline has no training step (micro_batches; run --ptrain-build-training-step)");
  const int64_t pp = pipeline.getPp(), microBatches = *pipeline.getMicroBatches();
  const int64_t virtualStages = pipeline.getVirtualStages();
  ArrayRef<FlatSymbolRefAttr> stages = pipeline.getStages();
  ScheduleAttr schedule = getSchedule(module);
  if (!schedule)
    return bad("a pipeline module needs ptrain.schedule (run --ptrain-schedule)");
  StringRef kind = schedule.getKind();
  GridOp grid;
  for (auto g : module.getOps<GridOp>()) {
    if (grid)
      return bad("more than one ptrain.grid");
    grid = g;
  }
  SymbolTable symbols(module);
  auto lookup = [&](Attribute ref) -> func::FuncOp {
    auto symbol = dyn_cast<FlatSymbolRefAttr>(ref);
    return symbol ? symbols.lookup<func::FuncOp>(symbol.getValue()) : func::FuncOp();
  };
  func::FuncOp first = lookup(stages[0]), last = lookup(stages[stages.size() - 1]);
  if (!first || !last)
    return bad("ptrain.pipeline's stages must name the stages' forward functions");
  FailureOr<ModelEnds> ends = modelEnds(first, last);
  if (failed(ends))
    return failure();
  const int64_t dp = axisSize(grid, "dp");
  j.attribute("dp", dp);
  j.attribute("pp", pp);
  j.attribute("tp", axisSize(grid, "tp"));
  j.attribute("micro_batches", microBatches);
  j.attribute("schedule", kind);
  j.attribute("virtual_stages", virtualStages);
  // The pipeline driver's entry points (lib/Target/Common/PipelineDriver.cpp) and the module's C ABI.
  j.attributeObject("entry_points", [&] {
    j.attribute("train", "ptrain_step_train");
    j.attribute("eval", "ptrain_step_eval");
    j.attribute("init", "ptrain_step_init");
    j.attribute("save", "ptrain_step_save");
    j.attribute("load", "ptrain_step_load");
    j.attribute("finalize", "ptrain_step_finalize");
    j.attribute("error", "ptrain_step_last_error");
  });
  if (options.target == EmitPlanJsonOptions::Target::Cuda) {
    CudaStateBytes bytes = getCudaStateBytes(module);
    j.attributeObject("cuda_state_bytes", [&] {
      j.attributeArray("per_stage", [&] {
        for (int64_t b : bytes.perStage)
          j.value(b);
      });
      j.attribute("module", bytes.module);
    });
  }
  writeEnds(j, *ends);
  if (failed(writeStates(j, module, "states", /*codecOnly=*/false)) ||
      failed(writeStates(j, module, "codec_states", /*codecOnly=*/true)))
    return failure();
  // One replica's rows per step; the global batch stacks dp replicas (replica d reads rows [d R, (d+1) R)).
  j.attribute("replica_batch", ends->batch * microBatches);
  j.attribute("global_batch", ends->batch * microBatches * dp);
  return success();
}

LogicalResult writeSingleRank(llvm::json::OStream &j, ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!forward || forward.getFunctionType().getNumInputs() != 1 || forward.getFunctionType().getNumResults() != 1)
    return mlir::emitError(module.getLoc()) << kTool << ": no @forward(tokens) -> logits function";
  if (!step)
    return mlir::emitError(module.getLoc()) << kTool << ": no @train_step function";
  FailureOr<ModelEnds> ends = modelEnds(forward, forward);
  if (failed(ends))
    return failure();
  j.attributeObject("entry_points", [&] {
    j.attribute("train_step", "ptrain_step_" + step.getSymName().str());
    j.attribute("forward", "ptrain_step_" + forward.getSymName().str());
    j.attribute("init", "ptrain_step_init");
    j.attribute("save", "ptrain_step_save");
    j.attribute("load", "ptrain_step_load");
  });
  writeEnds(j, *ends);
  if (failed(writeStates(j, module, "states", /*codecOnly=*/false)))
    return failure();
  // The loss, then each gradient with the key of its parameter (the result attribute ptrain.grad_of).
  LogicalResult result = success();
  j.attributeArray("train_step_results", [&] {
    for (auto [i, type] : llvm::enumerate(step.getFunctionType().getResults())) {
      FailureOr<RankedTensorType> tensor = staticTensor(step, type, "a result of @train_step");
      if (failed(tensor)) {
        result = failure();
        continue;
      }
      j.object([&] {
        j.attributeBegin("shape");
        writeShape(j, tensor->getShape());
        j.attributeEnd();
        j.attribute("dtype", dtypeOf(tensor->getElementType()));
        if (auto gradOf = step.getResultAttrOfType<StringAttr>(i, "ptrain.grad_of"))
          j.attribute("grad_of", gradOf.getValue());
        else
          j.attribute("name", "loss");
      });
    }
  });
  return result;
}

} // namespace

LogicalResult mlir::ptrain::emitPlanJson(ModuleOp module, raw_ostream &os, const EmitPlanJsonOptions &options) {
  std::string text;
  llvm::raw_string_ostream buffer(text);
  LogicalResult result = success();
  {
    llvm::json::OStream j(buffer, /*IndentSize=*/2);
    j.object([&] {
      if (PipelineAttr pipeline = getPipeline(module)) {
        result = writePipeline(j, module, pipeline, options);
      } else {
        result = writeSingleRank(j, module);
      }
    });
  }
  if (failed(result))
    return failure(); // nothing written
  os << text << "\n";
  return success();
}

void mlir::ptrain::registerEmitPlanJsonTranslation() {
  using Target = EmitPlanJsonOptions::Target;
  static llvm::cl::opt<Target> target(
      "plan-json-target", llvm::cl::desc("--emit-plan-json: the code generator the plan is for"),
      llvm::cl::values(clEnumValN(Target::Cpu, "cpu", "--emit-cpp (default)"),
                       clEnumValN(Target::Cuda, "cuda",
                                  "--emit-cuda: a pipeline's plan adds cuda_state_bytes, its device state blocks")),
      llvm::cl::init(Target::Cpu));
  TranslateFromMLIRRegistration reg(
      "emit-plan-json",
      "emit the module's part of plan.json (grid, schedule, entry points, shapes, states) from its plan state",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("--emit-plan-json: expected a builtin.module");
        EmitPlanJsonOptions options;
        options.target = target;
        return emitPlanJson(module, os, options);
      },
      [](DialectRegistry &registry) {
        registry.insert<PTrainDialect, func::FuncDialect, arith::ArithDialect>();
      });
}
