//===- EmitCppFunction.cpp - One function of --emit-cpp -----------------===//
//
// One function of the CPU step (CppEmitter.h): the ops it handles and their
// types, its storage (the analysis of include/ptrain/Analysis/BufferLiveness.h
// with the CPU target's rules: arguments and state reads in place, aliases,
// literal, file and generated constants, one arena reused by liveness), the
// runtime calls with their checked status, and its documented entry point.
// The op switch is in EmitCppOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "CppEmitter.h"

#include "ptrain/Analysis/ConstantForm.h"
#include "EmitCodecs.h"

#include "Common/ConstantFile.h"

#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

LogicalResult FunctionEmitter::pointToPoint(Operation *op, bool isSend, Value buffer, Value request, StringRef grid,
                                           StringRef axis, int64_t offset) {
  const RuntimeCall callee = isSend ? RuntimeCall::ptrain_send_start : RuntimeCall::ptrain_recv_start;
  FailureOr<int64_t> stage = pointToPointStage(op, axis);
  if (failed(stage))
    return failure();
  FailureOr<std::string> comm =
      comms.lookup(op, grid, ArrayAttr::get(op->getContext(), {StringAttr::get(op->getContext(), axis)}));
  if (failed(comm))
    return failure();
  auto tag = op->getAttrOfType<IntegerAttr>("ptrain.tag");
  return call(callee, {*comm, ptr(buffer), std::to_string(bytesOf(buffer)), std::to_string(*stage + offset),
                       std::to_string(tag ? tag.getInt() : 0), "&" + ptr(request) + "_request"});
}

LogicalResult FunctionEmitter::call(RuntimeCall callee, ArrayRef<std::string> args) {
  return writeCheckedCall(block, current, "--emit-cpp", getRuntimeCallInfo(callee), args);
}

LogicalResult FunctionEmitter::optimizerCall(target::OptimizerKernel kernel, ArrayRef<std::string> args) {
  using target::OptimizerKernel;
  switch (kernel) {
  case OptimizerKernel::adamw_step_f32:
    return call(RuntimeCall::ptrain_adamw_step_f32, args);
  case OptimizerKernel::sgd_step_f32:
    return call(RuntimeCall::ptrain_sgd_step_f32, args);
  case OptimizerKernel::sum_squares_f32:
    return call(RuntimeCall::ptrain_sum_squares_f32, args);
  case OptimizerKernel::lr_warmup_cosine:
    return call(RuntimeCall::ptrain_lr_warmup_cosine, args);
  case OptimizerKernel::clip_scale_f32:
    break; // inline on the host (OptimizerOps.cpp)
  }
  return current->emitError("--emit-cpp internal error: the CPU runtime has no clip-scale kernel");
}

/// The ops the CPU target emits; the codecs it has kernels for (EmitCodecs.h).
LogicalResult FunctionEmitter::checkOp(Operation &op) {
  if (!isa<StateReadOp, StateWriteOp, arith::ConstantOp, EmbeddingOp, BinaryOp, UnaryOp, MatmulOp, LayerNormOp,
           SoftmaxOp, GeluOp, ReshapeOp, TransposeOp, SplitOp, CrossEntropyOp, SliceOp, ConcatOp, SumToOp, PadOp,
           LayerNormGradOp, SoftmaxGradOp, GeluGradOp, EmbeddingGradOp, CrossEntropyGradOp, AdamWOp, AllReduceStartOp,
           AllGatherStartOp, SendStartOp, RecvStartOp, WaitOp, CompressOp, DecompressOp, CompressedAllReduceStartOp,
           TPCopyOp, TPAllReduceOp, CompareOp, SelectOp, BroadcastToOp, ReduceOp, RmsNormOp, RotaryEmbeddingOp,
           DropoutOp, func::CallOp, func::ReturnOp>(op) &&
      !isa<SumSquaresOp, ClipScaleOp, SGDOp, LossScaleOp, GradUnscaleOp, GradScalerUpdateOp, CastOp, GatherOp, LogSoftmaxOp, TPAllGatherOp, VocabParallelEmbeddingOp,
           VocabParallelEmbeddingGradOp, VocabParallelCrossEntropyPartsOp, VocabParallelCrossEntropyPartsGradOp,
           TPSplitOp, ReduceScatterStartOp, AllGatherStartOp, CompressedReduceScatterStartOp>(op))
    return op.emitError("--emit-cpp: '") << op.getName() << "' is not supported by the CPU code generator";
  if (isa<CompressOp, DecompressOp, CompressedAllReduceStartOp>(op))
    return checkCodecOp(&op);
  return success();
}

/// A compressed all-reduce's new codec state is final only when its request completes (the runtime runs the
/// phases in ptrain_wait), while the IR writes it to its state symbol right after the start: the write moves
/// after the request's wait. Anything that would see the difference is an error.
LogicalResult FunctionEmitter::deferCompressedStateWrites() {
  for (Operation *op : ops) {
    auto start = dyn_cast<CompressedAllReduceStartOp>(op);
    if (!start || start.getNewState().empty())
      continue;
    Value request = start.getRequest();
    if (!request.hasOneUse() || !isa<WaitOp>(*request.getUsers().begin()))
      return start.emitError("--emit-cpp: a compressed all-reduce with codec state needs exactly one ptrain.wait "
                             "of its request in the same function");
    Operation *wait = *request.getUsers().begin();
    llvm::DenseSet<StringAttr> symbols;
    for (Value v : start.getNewState())
      for (Operation *user : v.getUsers()) {
        auto write = dyn_cast<StateWriteOp>(user);
        if (!write)
          return start.emitError("--emit-cpp: the new codec state of a compressed all-reduce is complete only at "
                                 "its wait; it may only be written to a state (ptrain.state_write), not used by '")
                 << user->getName() << "'";
        writesAfterWait[wait].push_back(write);
        deferredWrites.insert(write);
        symbols.insert(write.getStateAttr().getAttr());
      }
    for (int64_t i = opIndex[start] + 1; i < opIndex[wait]; ++i) {
      StringAttr sym;
      if (auto read = dyn_cast<StateReadOp>(ops[i]))
        sym = read.getStateAttr().getAttr();
      else if (auto write = dyn_cast<StateWriteOp>(ops[i]); write && !deferredWrites.contains(write))
        sym = write.getStateAttr().getAttr();
      if (sym && symbols.contains(sym))
        return ops[i]->emitError("--emit-cpp: the state @")
               << sym.getValue() << " is accessed while the compressed all-reduce that updates it is in flight";
    }
  }
  return success();
}

int64_t FunctionEmitter::scratch(int64_t bytes) {
  ArrayRef<int64_t> declared = liveness->scratchOf(current);
  if (nextScratch >= declared.size() || liveness->buffers()[declared[nextScratch]].bytes != bytes) {
    scratchMismatch = true;
    return -1;
  }
  return declared[nextScratch++];
}

LogicalResult FunctionEmitter::emitConstant(arith::ConstantOp op) {
  auto attr = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!attr)
    return op.emitError("--emit-cpp: only dense tensor constants are supported");
  Value result = op.getResult();
  const ConstantForm &form = *liveness->formOf(result);
  if (form.kind != ConstantForm::Literal && form.kind != ConstantForm::File) {
    // Generated at its first use (generateConstant), here when that is its definition (several users).
    if (liveness->fillIndexOf(result) == opIndex[op] && storage[result].kind == Storage::Arena &&
        !result.use_empty())
      return generateConstant(result, ptr(result));
    return success();
  }
  const std::string name = "constant_" + std::to_string(numConstants++);
  const int64_t n = countOf(result);
  Type elem = tensorOf(result).getElementType();
  std::string loc;
  llvm::raw_string_ostream locOs(loc);
  formatLoc(op.getLoc(), locOs);
  constants += "// " + commentSafe(loc) + ": " + std::to_string(n) + " x " + cType(result) + "\n";
  if (form.kind == ConstantForm::File) {
    // Read at init from the constant file (ptrain_step_init); 64-byte offsets, as the arena's.
    int64_t offset = target::appendToConstantFile(file.bytes, constantBytes(attr));
    std::optional<int64_t> stage;
    if (auto s = getStage(func))
      stage = s.getIndex();
    file.constants.push_back({name, cType(result), offset, bytesOf(result), stage, op.getLoc()});
    constants += "/// bytes [" + std::to_string(offset) + ", " + std::to_string(offset + bytesOf(result)) +
                 ") of the constant file, read by ptrain_step_init\n";
    constants += std::string(cType(result)) + " *" + name + " = nullptr;\n\n";
    globals[name] = std::string(cType(result)) + " *";
  } else {
    std::string values;
    const int perLine = isMaskElementType(elem) ? 32 : 8;
    for (int64_t i = 0; i < n; ++i) {
      std::string v;
      if (elem.isF32())
        v = floatLiteral(attr.getValues<float>()[attr.isSplat() ? 0 : i]);
      else if (isMaskElementType(elem))
        v = attr.getValues<bool>()[attr.isSplat() ? 0 : i] ? "1" : "0";
      else
        v = int64Literal(attr.getValues<int64_t>()[attr.isSplat() ? 0 : i]);
      values += (i ? (i % perLine ? ", " : ",\n    ") : "") + v;
    }
    constants += "alignas(64) const " + std::string(cType(result)) + " " + name + "[" +
                 std::to_string(std::max<int64_t>(n, 1)) + "] = {\n    " + values + "};\n\n";
    globals[name] = "const " + std::string(cType(result)) + "[" + std::to_string(std::max<int64_t>(n, 1)) + "]";
  }
  constantDecl = target::ChunkDecl{ptr(result), "  const " + std::string(cType(result)) + " *" + ptr(result) +
                                                   " = " + name + ";\n"};
  types[ptr(result)] = "const " + std::string(cType(result)) + " *";
  return success();
}

LogicalResult FunctionEmitter::generateConstant(Value v, const std::string &out) {
  const ConstantForm &form = *liveness->formOf(v);
  Type elem = tensorOf(v).getElementType();
  const std::string type = cType(v);
  auto value = [&](uint64_t bits) {
    std::string name = "fill_" + std::to_string(fillCount++);
    block += "    static const " + type + " " + name + " = " + elementLiteral(elem, bits) + ";\n";
    return "&" + name;
  };
  switch (form.kind) {
  case ConstantForm::Splat:
    if (form.value == 0)
      return call(RuntimeCall::ptrain_zero_bytes, {out, std::to_string(bytesOf(v))});
    return call(RuntimeCall::ptrain_fill_elements,
                {out, std::to_string(form.count), std::to_string(form.elemBytes), value(form.value)});
  case ConstantForm::CausalMask: {
    std::string keep = value(form.keep), masked = value(form.masked);
    return call(RuntimeCall::ptrain_causal_mask,
                {out, std::to_string(form.elemBytes), std::to_string(form.batch), std::to_string(form.rows),
                 std::to_string(form.cols), std::to_string(form.diagonal), keep, masked});
  }
  case ConstantForm::Iota:
    return call(RuntimeCall::ptrain_iota_i64, {out, std::to_string(form.count), std::to_string(form.period),
                                               int64Literal(form.start), int64Literal(form.step)});
  case ConstantForm::Literal:
  case ConstantForm::File:
    break;
  }
  return current->emitError("--emit-cpp internal error: the constant is not generated");
}

/// Whether `func` reads or writes a state.
bool mlir::ptrain::cpp::usesStates(func::FuncOp func) {
  bool any = false;
  forEachStateSymbol(func, [&](StringAttr) { any = true; });
  return any;
}

LogicalResult FunctionEmitter::prepare(int64_t &bytes) {
  if (failed(checkOps()) || failed(deferCompressedStateWrites()))
    return failure();
  // A pipeline module's function without a stage that uses states (the whole model's forward) runs on no rank,
  // since a rank holds only its stage's states: its entry point only refuses, and its body is not emitted (it
  // was a tenth of a 12-layer GPT's step.cpp).
  auto stage = getStage(func);
  const bool pipeline = static_cast<bool>(getPipeline(func->getParentOfType<ModuleOp>()));
  runsNowhere = pipeline && !stage && usesStates(func);
  arenaBytes = 0;
  if (!runsNowhere && failed(planAndEmitBody(arenaBytes)))
    return failure();
  bytes = arenaBytes;
  return success();
}

LogicalResult FunctionEmitter::planAndEmitBody(int64_t &bytes) {
  // The storage of every value (see the file comment).
  StorageRules rules = StorageRules::cpu();
  rules.accumulateGemmsIntoStates = accumulateGemms;
  rules.foldHeadPermutes = foldHeadPermutes;
  rules.layerNormSavedStats = layerNormSavedStats;
  planStorage(std::move(rules), /*place=*/true, "arg", "out_");
  gemms = &liveness->gemms();
  bytes = liveness->arenaBytes();
  if (useKernels && (failed(planFusedChains()) || failed(planAdamWKernels())))
    return failure();
  for (Operation *op : ops)
    if (failed(emitOp(op)))
      return failure();
  // Reads no op names (their users were dropped) are declared at the end, each with its (void) (takeChunks).
  return success();
}

LogicalResult FunctionEmitter::writeFunction(std::string &code, const std::string &body) {
  // The signature: arguments as const pointers (named as planStorage names them), results as out pointers.
  auto argName = [](BlockArgument arg) { return "arg" + std::to_string(arg.getArgNumber()); };
  std::string sig = "extern \"C\" PTRAIN_STEP_API ptrain_status_t ptrain_step_" + func.getSymName().str() + "(";
  std::string doc = "/// @" + func.getSymName().str() + ":\n";
  Block &entry = func.getBody().front();
  int64_t params = 0;
  for (BlockArgument arg : entry.getArguments()) {
    sig += (params++ ? ", " : "") + std::string("const ") + cType(arg) + " *" + argName(arg);
    std::string type;
    llvm::raw_string_ostream ts(type);
    ts << arg.getType();
    doc += "///   " + argName(arg) + ": " + type + "\n";
  }
  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    bool f = cast<RankedTensorType>(type).getElementType().isF32();
    sig += (params++ ? ", " : "") + std::string(f ? "float" : "int64_t") + " *out_" + std::to_string(i);
    std::string t;
    llvm::raw_string_ostream ts(t);
    ts << type;
    if (auto key = func.getResultAttrOfType<StringAttr>(i, "ptrain.grad_of"))
      t += ", the gradient of state '" + key.getValue().str() + "'";
    doc += "///   out_" + std::to_string(i) + ": " + t + "\n";
  }
  if (params == 0)
    sig += "void";
  sig += ")";
  declaration = sig + ";\n";
  sig += " {";
  // The storage is this rank's (allocated by ptrain_step_init): a pipeline stage's functions run only there.
  const std::string entryName = "ptrain_step_" + func.getSymName().str();
  auto stage = getStage(func);
  if (runsNowhere) {
    // Its states span the stages (the whole model's forward of a pipeline module): no rank allocates them.
    for (BlockArgument arg : entry.getArguments())
      sig += "\n  (void)" + argName(arg) + ";";
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      sig += "\n  (void)out_" + std::to_string(i) + ";";
    code += doc + "/// Not emitted: it runs on no rank of the pipeline.\n" + sig + "\n  return stepError(\"" +
            entryName +
            ": a function without ptrain.stage that uses states does not run in a pipeline step (a rank holds "
            "only its stage's states)\");\n}\n\n";
    return success();
  }
  if (stage && static_cast<bool>(getPipeline(func->getParentOfType<ModuleOp>())))
    sig += "\n  if (storage_stage != " + std::to_string(stage.getIndex()) + ")\n    return stepError(\"" + entryName +
           ": the storage of stage " + std::to_string(stage.getIndex()) +
           " is not allocated in this process (stage %d; -2: call ptrain_step_init first)\", "
           "static_cast<int>(storage_stage));";
  else
    sig += "\n  if (storage_stage == -2)\n    return stepError(\"" + entryName + ": call ptrain_step_init first\");";
  // An argument the function does not read (a backward that ignores its tokens) is not a warning.
  for (BlockArgument arg : entry.getArguments())
    if (arg.use_empty())
      sig += "\n  (void)" + argName(arg) + ";";
  code += doc + "/// Arena: " + std::to_string(arenaBytes) + " bytes for " + std::to_string(liveness->buffers().size()) +
          " buffers (tensors and kernel scratch) planned by liveness.\n" + sig + body + "  return PTRAIN_OK;\n}\n\n";
  return success();
}
