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
#include "EmitCollectives.h"
#include "EmitOptimizer.h"
#include "EmitVocabParallel.h"

#include "Common/GemmOps.h"
#include "Common/KernelTarget.h"
#include "Common/OpGeometry.h"

#include "ptrain/Dialect/PTrain/IR/PTrainSubgroup.h"
#include "ptrain/Dialect/PTrain/IR/PTrainTransformerOps.h"

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
*run, [&](StringAttr state) { return states[state].index; }, *this)))
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
  if (gemms->isFolded(op))
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
      declare(s.name, type + " *",
              "  " + type + " *" + s.name + " = reinterpret_cast<" + type + " *>(" + arena + " + " +
                  std::to_string(liveness->buffers()[s.buffer].offset) + ");\n");
      break;
    case Storage::State: {
      auto read = cast<StateReadOp>(op);
      std::string text = "  " + type + " *" + s.name + " = " + states[read.getStateAttr().getAttr()].var + ";\n";
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

  // The GEMMs and what their fusion folded or made aliases: both targets alike (GemmOps.h).
  LogicalResult result =
      target::isGemmOp(op, *gemms) ? target::emitGemmOp(op, *gemms, *this) :
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case<arith::ConstantOp>([&](auto c) { return emitConstant(c); })
          .Case<StateReadOp>([&](StateReadOp read) -> LogicalResult {
            Value v = read.getResult();
            if (storage[v].kind != Storage::Arena)
              return success();
            return call(RuntimeCall::ptrain_copy_bytes,
                        {states[read.getStateAttr().getAttr()].var, std::to_string(bytesOf(v)), ptr(v)});
          })
          .Case<StateWriteOp>([&](StateWriteOp write) -> LogicalResult {
            if (deferredWrites.contains(write)) {
              line("// after the wait of its compressed all-reduce, which completes this codec state");
              return success();
            }
            const StateInfo &state = states[write.getStateAttr().getAttr()];
            Value v = write.getValue();
            if (storage[v].kind == Storage::Virtual)
              return generateConstant(v, state.var); // a splat: a memset or fill of the state
            return call(RuntimeCall::ptrain_copy_bytes, {ptr(v), std::to_string(bytesOf(v)), state.var});
          })
          .Case<ReshapeOp>([&](ReshapeOp) { return success(); })
          // The ops both targets emit alike, up to the kernels' names (lib/Target/Common/KernelTarget.h).
          // The ops a generated kernel may compute (ElementwiseChains.h), besides BinaryOp below.
          .Case<GeluOp, GeluGradOp, SoftmaxOp, SoftmaxGradOp>([&](Operation *o) {
            if (auto chain = fusedChainOf.find(o); chain != fusedChainOf.end()) {
              emitFusedChainOp(o, chain->second);
              return success();
            }
            return emitSharedOp(o, *this);
          })
          .Case<EmbeddingOp, EmbeddingGradOp, UnaryOp, LayerNormOp, LayerNormGradOp, SliceOp, SplitOp, ConcatOp,
                PadOp, TPSplitOp, TransposeOp, SumToOp, LossScaleOp, GradUnscaleOp, GradScalerUpdateOp>(
              [&](Operation *o) { return emitSharedOp(o, *this); })
          .Case<BinaryOp>([&](BinaryOp b) -> LogicalResult {
            if (auto chain = fusedChainOf.find(b); chain != fusedChainOf.end()) {
              emitFusedChainOp(b, chain->second);
              return success();
            }
            // i64 other than the step counter's add of equal shapes: the broadcasting integer kernel.
            if (!tensorOf(b.getResult()).getElementType().isF32() &&
                (b.getKind() != BinaryKind::Add || shapeOf(b.getLhs()) != shapeOf(b.getRhs())))
              return emitBroadcastOp(b, *this);
            return emitSharedOp(b, *this);
          })
          .Case<CrossEntropyOp, CrossEntropyGradOp>([&](auto ce) -> LogicalResult {
            Value logits = ce.getLogits(), labels = ce.getLabels();
            int64_t classes = shapeOf(logits).back(), n = countOf(labels);
            std::string ids32 = scratchPtr(4 * n, "int32_t");
            std::string lse = scratchPtr(4 * n, "float");
            if (failed(call(RuntimeCall::ptrain_cast_i64_i32, {ptr(labels), std::to_string(n), ids32})))
              return failure();
            // Weights, ignore_index and reduction (PTrainCrossEntropy.h): the _weighted_ kernels; the labels
            // are int32 there, so the ignore_index must be one.
            std::optional<int64_t> ignore = ce.getIgnoreIndex();
            if (ignore && (*ignore < INT32_MIN || *ignore > INT32_MAX))
              return ce.emitError("--emit-cpp: ignore_index ") << *ignore << " does not fit the runtime's int32 labels";
            const bool weighted = ce.isWeighted() || ce.isSumReduction();
            SmallVector<std::string> options = {ce.getWeight() ? ptr(ce.getWeight()) : "nullptr", ignore ? "1" : "0",
                                                ignore ? std::to_string(*ignore) : "0",
                                                ce.isSumReduction() ? "1" : "0"};
            auto forward = [&](const std::string &loss) {
              if (!weighted)
                return call(RuntimeCall::ptrain_cross_entropy_fwd_f32,
                            {ptr(logits), ids32, std::to_string(n), std::to_string(classes), loss, lse});
              return call(RuntimeCall::ptrain_cross_entropy_weighted_fwd_f32,
                          {ptr(logits), ids32, options[0], std::to_string(n), std::to_string(classes), options[1],
                           options[2], options[3], loss, lse});
            };
            if constexpr (std::is_same_v<decltype(ce), CrossEntropyOp>) {
              return forward(ptr(ce.getLoss()));
            } else {
              // The backward needs the log-sum-exp: recompute it (the loss itself goes to scratch).
              if (failed(forward(scratchPtr(4, "float"))))
                return failure();
              if (!weighted)
                return call(RuntimeCall::ptrain_cross_entropy_bwd_f32,
                            {ptr(ce.getGrad()) + "[0]", ptr(logits), ids32, lse, std::to_string(n),
                             std::to_string(classes), ptr(ce.getResult())});
              return call(RuntimeCall::ptrain_cross_entropy_weighted_bwd_f32,
                          {ptr(ce.getGrad()) + "[0]", ptr(logits), ids32, options[0], lse, std::to_string(n),
                           std::to_string(classes), options[1], options[2], options[3], ptr(ce.getResult())});
            }
          })
          .Case<AdamWOp>([&](AdamWOp a) -> LogicalResult {
            Value p = a.getParam();
            std::string bytes = std::to_string(bytesOf(p)), n = std::to_string(countOf(p));
            if (failed(emitLearningRate(a.getSchedule(), a.getStep(), *this)) ||
                failed(call(RuntimeCall::ptrain_copy_bytes, {ptr(p), bytes, ptr(a.getNewParam())})) ||
                failed(call(RuntimeCall::ptrain_copy_bytes, {ptr(a.getM()), bytes, ptr(a.getNewM())})) ||
                failed(call(RuntimeCall::ptrain_copy_bytes, {ptr(a.getV()), bytes, ptr(a.getNewV())})))
              return failure();
            return call(RuntimeCall::ptrain_adamw_step_f32,
                        {ptr(a.getNewParam()), ptr(a.getGrad()), ptr(a.getNewM()), ptr(a.getNewV()), n, "t", "lr",
                         floatLiteral(a.getBeta1Attr().getValueAsDouble()),
                         floatLiteral(a.getBeta2Attr().getValueAsDouble()),
                         floatLiteral(a.getEpsilonAttr().getValueAsDouble()),
                         floatLiteral(a.getWeightDecayAttr().getValueAsDouble())});
          })
          .Case<SumSquaresOp>([&](SumSquaresOp s) { return emitSumSquares(s, *this); })
          .Case<ClipScaleOp>([&](ClipScaleOp c) { return emitClipScale(c, *this); })
          .Case<SGDOp>([&](SGDOp o) { return emitSGD(o, *this); })
          .Case<AllReduceStartOp>([&](AllReduceStartOp a) -> LogicalResult {
            Value in = a.getInput(), req = a.getRequest();
            if (!isF32(in))
              return a.emitError("--emit-cpp: all-reduce of a non-f32 tensor is not supported");
            const char *op = nullptr;
            switch (a.getReduction()) {
            case ReductionKind::Sum:
              op = "PTRAIN_REDUCE_SUM";
              break;
            case ReductionKind::Avg:
              op = "PTRAIN_REDUCE_AVG";
              break;
            default:
              return a.emitError("--emit-cpp: only sum and avg all-reduces are supported");
            }
            FailureOr<std::string> comm = comms.lookup(a, a.getGridAttr().getValue(), a.getGridAxes(), getSubgroup(a));
            if (failed(comm))
              return failure();
            return call(RuntimeCall::ptrain_all_reduce_start,
                        {*comm, ptr(in), ptr(req), std::to_string(countOf(in)), "PTRAIN_DTYPE_F32", op,
                         "&" + ptr(req) + "_request"});
          })
          .Case<ReduceScatterStartOp>([&](ReduceScatterStartOp r) -> LogicalResult {
            // MPI_Ireduce_scatter_block: rank i of the group keeps block i of dimension 0 (ZeRO-1's buckets;
            // the verifier checks that the group size divides it).
            Value in = r.getInput(), req = r.getRequest();
            if (!isF32(in) || r.getScatterDim() != 0)
              return r.emitError("--emit-cpp: only f32 reduce-scatters along dimension 0 are supported");
            if (r.getReduction() != ReductionKind::Sum && r.getReduction() != ReductionKind::Avg)
              return r.emitError("--emit-cpp: only sum and avg reduce-scatters are supported");
            FailureOr<std::string> comm = comms.lookup(r, r.getGridAttr().getValue(), r.getGridAxes());
            if (failed(comm))
              return failure();
            return call(RuntimeCall::ptrain_reduce_scatter_start,
                        {*comm, ptr(in), ptr(req), std::to_string(countOf(req)), "PTRAIN_DTYPE_F32",
                         r.getReduction() == ReductionKind::Sum ? "PTRAIN_REDUCE_SUM" : "PTRAIN_REDUCE_AVG",
                         "&" + ptr(req) + "_request"});
          })
          .Case<AllGatherStartOp>([&](AllGatherStartOp g) -> LogicalResult {
            // MPI_Iallgather: the group's tensors concatenated in group-rank order along dimension 0 (ZeRO-1's
            // updated shards; deterministic-dp's gathered partial sums).
            Value in = g.getInput(), req = g.getRequest();
            if (!isF32(in) || g.getGatherDim() != 0)
              return g.emitError("--emit-cpp: only f32 all-gathers along dimension 0 are supported");
            FailureOr<std::string> comm = comms.lookup(g, g.getGridAttr().getValue(), g.getGridAxes(), getSubgroup(g));
            if (failed(comm))
              return failure();
            return call(RuntimeCall::ptrain_all_gather_start, {*comm, ptr(in), ptr(req), std::to_string(countOf(in)),
                                                               "PTRAIN_DTYPE_F32", "&" + ptr(req) + "_request"});
          })
          .Case<SendStartOp>([&](SendStartOp send) -> LogicalResult {
            return pointToPoint(send, RuntimeCall::ptrain_send_start, send.getInput(), send.getRequest(),
                                send.getGridAttr().getValue(), send.getAxis(), send.getOffset());
          })
          .Case<RecvStartOp>([&](RecvStartOp recv) -> LogicalResult {
            return pointToPoint(recv, RuntimeCall::ptrain_recv_start, recv.getRequest(), recv.getRequest(),
                                recv.getGridAttr().getValue(), recv.getAxis(), recv.getOffset());
          })
          .Case<func::CallOp>([&](func::CallOp c) -> LogicalResult {
            // Another function of the step: it runs in the shared arena, the caller in its own.
            std::string args;
            for (Value v : c.getOperands())
              args += (args.empty() ? "" : ", ") + ptr(v);
            for (Value v : c.getResults())
              args += (args.empty() ? "" : ", ") + ptr(v);
            block += "    PTRAIN_STEP_CALL(ptrain_step_" + c.getCallee().str() + "(" + args + "));\n";
            return success();
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
          .Case<CompressOp>([&](CompressOp c) -> LogicalResult {
            if (failed(emitCompress(c, *this)))
              return failure();
            emitCompressTelemetry(c, sites, *this);
            return success();
          })
          .Case<DecompressOp>([&](DecompressOp d) { return emitDecompress(d, *this); })
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
          .Case<TPCopyOp>([&](TPCopyOp) { return success(); }) // an alias (planStorage)
          .Case<TPAllReduceOp>([&](TPAllReduceOp t) -> LogicalResult {
            FailureOr<std::string> comm = comms.lookup(
                t, t.getGrid(), ArrayAttr::get(t.getContext(), {StringAttr::get(t.getContext(), t.getAxis())}));
            return failed(comm) ? failure() : emitTPAllReduce(t, *comm, *this);
          })
          .Case<CompressedAllReduceStartOp>([&](CompressedAllReduceStartOp c) -> LogicalResult {
            FailureOr<std::string> comm = comms.lookup(c, c.getGridAttr().getValue(), c.getGridAxes());
            if (failed(comm))
              return failure();
            return emitCompressedAllReduceStart(c, *comm, *this);
          })
          .Case<CompressedReduceScatterStartOp>([&](CompressedReduceScatterStartOp c) -> LogicalResult {
            FailureOr<std::string> comm = comms.lookup(c, c.getGridAttr().getValue(), c.getGridAxes());
            if (failed(comm))
              return failure();
            return emitCompressedReduceScatterStart(c, *comm, *this);
          })
          .Case<func::ReturnOp>([&](func::ReturnOp r) -> LogicalResult {
            for (auto [i, v] : llvm::enumerate(r.getOperands()))
              if (failed(call(RuntimeCall::ptrain_copy_bytes,
                              {ptr(v), std::to_string(bytesOf(v)), "out_" + std::to_string(i)})))
                return failure();
            return success();
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
