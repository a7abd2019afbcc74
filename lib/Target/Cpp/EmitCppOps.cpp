//===- EmitCppOps.cpp - The op switch of --emit-cpp ---------------------===//
//
// FunctionEmitter::emitOp (CppEmitter.h): per op, the declarations of its
// results (arena, state, alias pointers) and the runtime calls that compute it
// (the model, optimizer, collective and codec ops; the GEMMs that read fused
// transposes and batch sums, GemmFusion.h), as one chunk for the block
// outliner (include/ptrain/Target/Common/BlockOutliner.h).
//
//===----------------------------------------------------------------------===//

#include "CppEmitter.h"

#include "AdamWTable.h"
#include "EmitCodecs.h"
#include "EmitVocabParallel.h"

#include "Common/CodecKernels.h"
#include "Common/GemmOps.h"
#include "Common/KernelTarget.h"
#include "Common/OpGeometry.h"

#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainSubgroup.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"
#include "ptrain/Transforms/QuantArith.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

LogicalResult FunctionEmitter::emitOp(Operation *op) {
  beginOp(op);
  fillCount = 0; // fill_<n> are static locals of the op's block: named per op, the same in every layer
  // An op of an AdamW run: its first op writes the run's table and loop, the others nothing (AdamWTable.h).
  if (const AdamWRun *run = liveness->adamRunOf(op)) {
    if (run->ops.front() != op)
      return success();
    if (failed(emitAdamWRun(
            *run, [&](StringAttr state) { return states[state].index; },
            [&](LRScheduleAttr schedule, Value step) { return hostLearningRate(schedule, step); },
            [&](AdamWOp a) {
              auto generated = generatedAdamW.find(a);
              return generated == generatedAdamW.end() ? std::string() : generated->second.kernel;
            },
            *this)))
      return failure();
    std::string loc;
    llvm::raw_string_ostream locOs(loc);
    AdamWOp first = run->rows.front().op;
    formatLoc(first.getLoc(), locOs);
    target::EmittedChunk chunk;
    chunk.location = commentSafe(loc);
    chunk.header = "  // ptrain.adamw x " + std::to_string(run->rows.size()) +
                   " (with their state reads and writes)\n";
    chunk.code = "  {\n" + block + "  }\n";
    chunks.push(std::move(chunk));
    return success();
  }
  // The generated constants this op is the first to read (ConstantForm.h), into their arena buffers.
  llvm::SmallDenseSet<Value> generated;
  for (Value operand : op->getOperands()) {
    if (liveness->fillIndexOf(operand) != opIndex[op] || storage[operand].kind != Storage::Arena ||
        !generated.insert(operand).second)
      continue;
    if (failed(generateConstant(operand, ptr(operand))))
      return failure();
  }
  // Declare the results' pointers.
  if (gemms->isDead(op)) {
    std::string loc;
    llvm::raw_string_ostream locOs(loc);
    formatLoc(op->getLoc(), locOs);
    target::EmittedChunk chunk;
    chunk.location = commentSafe(loc);
    chunk.header = "  // " + op->getName().getStringRef().str() + "\n";
    chunk.code = "  // not emitted: nothing reads its results (DeadOps.h)\n";
    if (!block.empty())
      chunk.code += "  {\n" + block + "  }\n";
    chunks.push(std::move(chunk));
    return success();
  }
  target::EmittedChunk chunk;
  chunk.header = "  // " + op->getName().getStringRef().str() + "\n";
  if (gemms->isFolded(op) && !isa<StateReadOp, StateWriteOp>(op)) // those: an accumulation's (GemmOps.cpp)
    chunk.header += "  // not materialized: its users read its operands in their GEMMs (GemmFusion.h)\n";
  auto declare = [&](const std::string &name, const std::string &type, const std::string &text) {
    chunk.decls.push_back({name, text});
    if (!type.empty())
      types[name] = type;
  };
  for (Value result : op->getResults()) {
    if (gemms->isFolded(op))
      break;
    const Storage &s = storage[result];
    if (auto request = dyn_cast<RequestType>(result.getType()); request && !request.getValueType()) {
      declare(s.name + "_request", "", "  ptrain_request_t " + s.name + "_request = nullptr;\n");
      continue;
    }
    std::string type = cType(result);
    switch (s.kind) {
    case Storage::Arena:
      if (isUnwrittenIntermediate(result))
        break; // computed inside a generated kernel, never written (FusedChains.h)
      declare(s.name, type + " *",
              "  " + type + " *" + s.name + " = reinterpret_cast<" + type + " *>(" + arena + " + " +
                  std::to_string(liveness->buffers()[s.buffer].offset) + ");\n");
      break;
    case Storage::State: {
      // A state read used in place, or a GEMM's product accumulated into its gradient state (GemmFusion.h).
      StringAttr sym = s.state ? s.state : cast<StateReadOp>(op).getStateAttr().getAttr();
      std::string text = "  " + type + " *" + s.name + " = " + states[sym].var + ";\n";
      // A read whose users an import pass dropped (an export's unused pooler) or only dead ops read (DeadOps.h).
      if (llvm::all_of(result.getUsers(), [&](Operation *user) { return gemms->isDead(user); }))
        text += "  (void)" + s.name + ";\n";
      declare(s.name, type + " *", text);
      break;
    }
    case Storage::Alias:
      // `(void)`: a reshape whose uses a later rewrite dropped (e.g. a compressed bucket) is still declared.
      declare(s.name, std::string(s.isConst ? "const " : "") + type + " *",
              "  " + std::string(s.isConst ? "const " : "") + type + " *" + s.name + " = " + ptr(s.root) + ";\n" +
                  "  (void)" + s.name + ";\n");
      break;
    case Storage::Argument:
    case Storage::Constant:
    case Storage::Virtual:
      break;
    }
    if (isa<RequestType>(result.getType()))
      declare(s.name + "_request", "", "  ptrain_request_t " + s.name + "_request = nullptr;\n");
  }

  // The GEMMs and what their fusion folded or made aliases, then the op families both targets write with one
  // emitter over this target's hooks (StepFunction::emitStepOp: states, calls, the loss, collectives, codecs).
  std::optional<LogicalResult> shared;
  if (!target::isGemmOp(op, *gemms))
    shared = emitStepOp(op);
  LogicalResult result =
      target::isGemmOp(op, *gemms) ? target::emitGemmOp(op, *gemms, *this) :
      shared ? *shared :
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case<arith::ConstantOp>([&](auto c) { return emitConstant(c); })
          // The ops both targets emit alike, up to the kernels' names (lib/Target/Common/KernelTarget.h).
          // The ops a generated kernel may compute (ElementwiseChains.h), besides BinaryOp below.
          .Case<GeluOp, GeluGradOp, SoftmaxOp, SoftmaxGradOp>([&](Operation *o) {
            if (fused.chainOf.count(o))
              return emitFusedChainOp(o);
            return emitSharedOp(o, *this);
          })
          .Case<EmbeddingOp, EmbeddingGradOp, UnaryOp, LayerNormOp, LayerNormGradOp, SliceOp, SplitOp, ConcatOp,
                PadOp, TPSplitOp, TransposeOp, SumToOp, LossScaleOp, GradUnscaleOp, GradScalerUpdateOp>(
              [&](Operation *o) { return emitSharedOp(o, *this); })
          .Case<BinaryOp>([&](BinaryOp b) -> LogicalResult {
            if (fused.chainOf.count(b))
              return emitFusedChainOp(b);
            if (auto update = foldedClipMuls.find(b); update != foldedClipMuls.end()) {
              line("// the clip scale's mul, computed by " + generatedAdamW[update->second].kernel +
                   " at its AdamW update (--ptrain-outline-adamw)");
              line("(void)" + ptr(b.getResult()) + ";");
              return success();
            }
            // i64 other than the step counter's add of equal shapes: the broadcasting integer kernel.
            if (!tensorOf(b.getResult()).getElementType().isF32() &&
                (b.getKind() != BinaryKind::Add || shapeOf(b.getLhs()) != shapeOf(b.getRhs())))
              return emitBroadcastOp(b, *this);
            return emitSharedOp(b, *this);
          })
          .Case<WaitOp>([&](WaitOp w) -> LogicalResult {
            // A failing wait frees the request too (ptrain_wait), so the handle is cleared either way.
            std::string request = ptr(w.getRequest()) + "_request";
            block += "    ptrain_request_t request = " + request + ";\n    " + request + " = nullptr;\n";
            if (failed(call(RuntimeCall::ptrain_wait, {"request"})))
              return failure();
            // The codec states a compressed all-reduce completed (deferCompressedStateWrites).
            for (StateWriteOp write : writesAfterWait.lookup(w)) {
              Value v = write.getValue();
              if (failed(call(RuntimeCall::ptrain_copy_bytes,
                              {ptr(v), std::to_string(bytesOf(v)), states[write.getStateAttr().getAttr()].var})))
                return failure();
            }
            return success();
          })
          .Case<CompareOp, SelectOp, BroadcastToOp, ReduceOp>([&](Operation *o) { return emitBroadcastOp(o, *this); })
          .Case<RmsNormOp, RotaryEmbeddingOp, DropoutOp>([&](Operation *o) { return emitTransformerOp(o, *this); })
          .Case<CastOp, GatherOp, LogSoftmaxOp>([&](Operation *o) { return emitSelectionOp(o, *this); })
          .Case<TPAllGatherOp, VocabParallelEmbeddingOp, VocabParallelEmbeddingGradOp, VocabParallelCrossEntropyPartsOp,
                VocabParallelCrossEntropyPartsGradOp>([&](Operation *o) -> LogicalResult {
            auto [grid, axis] = vocabParallelAxis(o);
            FailureOr<std::string> comm =
                comms.lookup(o, grid, ArrayAttr::get(o->getContext(), {StringAttr::get(o->getContext(), axis)}));
            return failed(comm) ? failure() : emitVocabParallelOp(o, *comm, comms.theGrid, *this);
          })
          .Case<CompressedReduceScatterStartOp>([&](CompressedReduceScatterStartOp c) -> LogicalResult {
            FailureOr<std::string> comm = comms.lookup(c, c.getGridAttr().getValue(), c.getGridAxes());
            if (failed(comm))
              return failure();
            return emitCompressedReduceScatterStart(c, *comm, *this);
          })
          .Default([&](Operation *other) {
            return other->emitError("--emit-cpp: '") << other->getName() << "' is not supported";
          });
  if (failed(result))
    return failure();
  if (scratchMismatch || nextScratch != liveness->scratchOf(op).size())
    return op->emitError("--emit-cpp internal error: the kernels' scratch differs from what cpuKernelScratch "
                         "declares for this op (include/ptrain/Analysis/BufferLiveness.h)");

  std::string loc;
  llvm::raw_string_ostream locOs(loc);
  formatLoc(op->getLoc(), locOs);
  chunk.location = commentSafe(loc);
  finishChunk(op, std::move(chunk));
  return success();
}

std::optional<LogicalResult> FunctionEmitter::writeStateHook(StateWriteOp write) {
  if (deferredWrites.contains(write)) {
    line("// after the wait of its compressed all-reduce, which completes this codec state");
    return success();
  }
  Value v = write.getValue();
  if (storage[v].kind == Storage::Virtual)
    return generateConstant(v, states[write.getStateAttr().getAttr()].var); // a splat: a memset or fill of the state
  return std::nullopt;
}

LogicalResult FunctionEmitter::startCollective(target::Collective kind, const std::string &comm, Value in,
                                               Value request, int64_t count, StringRef reduction) {
  // MPI_Iallreduce, MPI_Ireduce_scatter_block, MPI_Iallgather (lib/Runtime/cpu): a request its wait completes.
  std::string handle = "&" + ptr(request) + "_request";
  switch (kind) {
  case target::Collective::AllReduce:
    return call(RuntimeCall::ptrain_all_reduce_start, {comm, ptr(in), ptr(request), std::to_string(count),
                                                       "PTRAIN_DTYPE_F32", reduction.str(), handle});
  case target::Collective::ReduceScatter:
    return call(RuntimeCall::ptrain_reduce_scatter_start, {comm, ptr(in), ptr(request), std::to_string(count),
                                                           "PTRAIN_DTYPE_F32", reduction.str(), handle});
  case target::Collective::AllGather:
    break;
  }
  return call(RuntimeCall::ptrain_all_gather_start,
              {comm, ptr(in), ptr(request), std::to_string(count), "PTRAIN_DTYPE_F32", handle});
}

LogicalResult FunctionEmitter::tpAllReduce(TPAllReduceOp op, const std::string &comm) {
  // A failing start leaves no request; a failing wait frees it (ptrain_wait).
  line("ptrain_request_t tp_request = nullptr;");
  if (op.getAccumulate()) { // 16-bit values, fp32 sum in rank order (C3; cpu/HalfAllReduce.cpp)
    const char *dtype = op.getType().getElementType().isBF16() ? "PTRAIN_DTYPE_BF16" : "PTRAIN_DTYPE_F16";
    if (failed(call(RuntimeCall::ptrain_all_reduce_half_start, {comm, ptr(op.getInput()), ptr(op.getResult()),
                                                                std::to_string(countOf(op.getInput())), dtype,
                                                                "&tp_request"})))
      return failure();
    return call(RuntimeCall::ptrain_wait, {"tp_request"});
  }
  if (failed(call(RuntimeCall::ptrain_all_reduce_start,
                  {comm, ptr(op.getInput()), ptr(op.getResult()), std::to_string(countOf(op.getInput())),
                   "PTRAIN_DTYPE_F32", "PTRAIN_REDUCE_SUM", "&tp_request"})))
    return failure();
  return call(RuntimeCall::ptrain_wait, {"tp_request"});
}

LogicalResult FunctionEmitter::codecCall(const target::CodecKernelCall &k) { return call(cpuCodecCall(k.kernel), k.args); }

LogicalResult FunctionEmitter::startCompressedAllReduce(CompressedAllReduceStartOp op, const std::string &comm,
                                                        const target::CompressedAllReduceArgs &a) {
  // The runtime updates the new states in place until the request's wait completes (deferCompressedStateWrites).
  const std::string request = ptr(op.getRequest());
  return call(RuntimeCall::ptrain_compressed_all_reduce_start,
              {comm, "&codec", a.input, a.residual, a.state, request, a.reduction, "&" + request + "_request"});
}

void FunctionEmitter::compressTelemetry(CompressOp op) { emitCompressTelemetry(op, sites, *this); }

std::optional<LogicalResult> FunctionEmitter::generatedEncoder(CompressOp op) {
  if (auto kernel = op->getAttrOfType<SymbolRefAttr>(kCodecKernelAttr))
    return emitGeneratedEncoder(op, kernel, *this);
  return std::nullopt;
}

std::optional<LogicalResult> FunctionEmitter::generatedAdamWUpdate(AdamWOp op) {
  if (auto generated = generatedAdamW.find(op); generated != generatedAdamW.end())
    return emitGeneratedAdamW(op, generated->second, *this);
  return std::nullopt;
}
