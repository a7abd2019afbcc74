//===- StepOps.cpp - The step's state, call, loss and collective ops ----===//
//
// StepFunction::emitStepOp (StepFunction.h): the op families both code
// generators write with one emitter, up to the hooks each target's function
// emitter implements (issue 23 item 1, docs/CodegenCuda.md "One step
// emitter"):
//   ptrain.state_read / state_write  a copy between the state's storage
//                                    (statePtr) and an arena buffer;
//   ptrain.reshape, tp_copy          aliases (planStorage): nothing;
//   func.call / func.return          the callee's C function
//                                    (calleeFunction) / copies into the
//                                    results' pointers;
//   ptrain.cross_entropy(_grad)      the labels cast to int32, the plain or
//                                    weighted kernels (PTrainCrossEntropy.h:
//                                    weights, ignore_index, reduction), the
//                                    backward recomputing the log-sum-exp;
//   ptrain.all_reduce_start, reduce_scatter_start, all_gather_start,
//   send_start, recv_start, tp_all_reduce
//                                    the checks and the communicator
//                                    (CommGroups.h), then the target's start
//                                    (MPI requests or NCCL on streams).
// The codec ops are in CodecOps.cpp, the optimizer ops in OptimizerOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "Common/StepFunction.h"

#include "Common/CommGroups.h"
#include "Common/CppTypes.h"
#include "Common/EmitHelpers.h"

#include "ptrain/Dialect/PTrain/IR/PTrainSubgroup.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cstdint>
#include <type_traits>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::target;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

/// The calls of one cross-entropy op (CrossEntropyOp or CrossEntropyGradOp) on `t`: the int32 labels and the
/// log-sum-exp in scratch (in this order: the CPU's cpuKernelScratch declares them so), the forward kernel, and
/// for the gradient the backward kernel after the forward into scratch.
template <typename CeOp> LogicalResult emitCrossEntropy(CeOp ce, StepFunction &t, llvm::function_ref<std::string(Value)> scalar) {
  Value logits = ce.getLogits(), labels = ce.getLabels();
  const int64_t classes = tensorOf(logits).getShape().back(), n = countOf(labels);
  std::string ids32 = t.scratchPtr(4 * n, "int32_t");
  std::string lse = t.scratchPtr(4 * n, "float");
  if (failed(t.callKernel(Kernel::cast_i64_i32, {t.valuePtr(labels), str(n), ids32})))
    return failure();
  // Weights, ignore_index and reduction (PTrainCrossEntropy.h): the _weighted_ kernels; the labels are int32
  // there, so the ignore_index must be one.
  std::optional<int64_t> ignore = ce.getIgnoreIndex();
  if (ignore && (*ignore < INT32_MIN || *ignore > INT32_MAX))
    return ce.emitError(t.flag()) << ": ignore_index " << *ignore << " does not fit the runtime's int32 labels";
  const bool weighted = ce.isWeighted() || ce.isSumReduction();
  const std::string weights = ce.getWeight() ? t.valuePtr(ce.getWeight()) : "nullptr", hasIgnore = ignore ? "1" : "0",
                    ignoreIndex = ignore ? str(*ignore) : "0", sum = ce.isSumReduction() ? "1" : "0";
  auto forward = [&](const std::string &loss) {
    if (!weighted)
      return t.callKernel(Kernel::cross_entropy_fwd_f32, {t.valuePtr(logits), ids32, str(n), str(classes), loss, lse});
    return t.callKernel(Kernel::cross_entropy_weighted_fwd_f32, {t.valuePtr(logits), ids32, weights, str(n),
                                                                 str(classes), hasIgnore, ignoreIndex, sum, loss, lse});
  };
  if constexpr (std::is_same_v<CeOp, CrossEntropyOp>) {
    return forward(t.valuePtr(ce.getLoss()));
  } else {
    // The backward needs the log-sum-exp: recompute it (the loss itself goes to scratch).
    if (failed(forward(t.scratchPtr(4, "float"))))
      return failure();
    if (!weighted)
      return t.callKernel(Kernel::cross_entropy_bwd_f32, {scalar(ce.getGrad()), t.valuePtr(logits), ids32, lse,
                                                          str(n), str(classes), t.valuePtr(ce.getResult())});
    return t.callKernel(Kernel::cross_entropy_weighted_bwd_f32,
                        {scalar(ce.getGrad()), t.valuePtr(logits), ids32, weights, lse, str(n), str(classes),
                         hasIgnore, ignoreIndex, sum, t.valuePtr(ce.getResult())});
  }
}

} // namespace

std::optional<LogicalResult> StepFunction::emitStepOp(Operation *op) {
  auto axisOf = [](Operation *o, StringRef axis) {
    return ArrayAttr::get(o->getContext(), {StringAttr::get(o->getContext(), axis)});
  };
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case<StateReadOp>([&](StateReadOp read) -> LogicalResult {
        // A read used in place is only its pointer (declared by the target); else a copy into its buffer.
        Value v = read.getResult();
        if (storage[v].kind != NamedStorage::Arena)
          return success();
        return callKernel(Kernel::copy_bytes,
                          {statePtr(read.getStateAttr().getAttr(), v), str(bytesOf(v)), valuePtr(v)});
      })
      .Case<StateWriteOp>([&](StateWriteOp write) -> LogicalResult {
        if (std::optional<LogicalResult> own = writeStateHook(write))
          return *own;
        Value v = write.getValue();
        return callKernel(Kernel::copy_bytes,
                          {valuePtr(v), str(bytesOf(v)), statePtr(write.getStateAttr().getAttr(), v)});
      })
      .Case<ReshapeOp, TPCopyOp>([&](Operation *) { return success(); }) // aliases (planStorage)
      .Case<func::CallOp>([&](func::CallOp c) -> LogicalResult {
        // Another function of the step: it runs in the shared arena, the caller in its own.
        std::string args;
        for (Value v : llvm::concat<Value>(c.getOperands(), c.getResults()))
          args += (args.empty() ? "" : ", ") + valuePtr(v);
        block += "    PTRAIN_STEP_CALL(" + calleeFunction(c.getCallee()) + "(" + args + "));\n";
        return success();
      })
      .Case<func::ReturnOp>([&](func::ReturnOp r) -> LogicalResult {
        // Into the caller's buffers.
        for (auto [i, v] : llvm::enumerate(r.getOperands()))
          if (failed(callKernel(Kernel::copy_bytes, {valuePtr(v), str(bytesOf(v)), outPrefix + str(i)})))
            return failure();
        return success();
      })
      .Case<CrossEntropyOp, CrossEntropyGradOp>([&](auto ce) -> LogicalResult {
        return emitCrossEntropy(ce, *this, [&](Value v) { return scalarArg(v); });
      })
      .Case<AllReduceStartOp>([&](AllReduceStartOp a) -> LogicalResult {
        Value in = a.getInput();
        if (!tensorOf(in).getElementType().isF32())
          return a.emitError(flag()) << ": all-reduce of a non-f32 tensor is not supported";
        if (a.getReduction() != ReductionKind::Sum && a.getReduction() != ReductionKind::Avg)
          return a.emitError(flag()) << ": only sum and avg all-reduces are supported";
        // A subgroup (Optimus-CC's fused embedding sync): its own communicator (CommGroups.h).
        FailureOr<std::string> comm =
            communicators().lookup(a, a.getGridAttr().getValue(), a.getGridAxes(), getSubgroup(a));
        if (failed(comm))
          return failure();
        return startCollective(Collective::AllReduce, *comm, in, a.getRequest(), countOf(in),
                               a.getReduction() == ReductionKind::Sum ? "PTRAIN_REDUCE_SUM" : "PTRAIN_REDUCE_AVG");
      })
      .Case<ReduceScatterStartOp>([&](ReduceScatterStartOp r) -> LogicalResult {
        // Rank i of the group keeps block i of dimension 0 (ZeRO-1's buckets; the verifier checks that the group
        // size divides it).
        Value in = r.getInput(), req = r.getRequest();
        if (!tensorOf(in).getElementType().isF32() || r.getScatterDim() != 0)
          return r.emitError(flag()) << ": only f32 reduce-scatters along dimension 0 are supported";
        if (r.getReduction() != ReductionKind::Sum && r.getReduction() != ReductionKind::Avg)
          return r.emitError(flag()) << ": only sum and avg reduce-scatters are supported";
        FailureOr<std::string> comm = communicators().lookup(r, r.getGridAttr().getValue(), r.getGridAxes());
        if (failed(comm))
          return failure();
        return startCollective(Collective::ReduceScatter, *comm, in, req, countOf(req),
                               r.getReduction() == ReductionKind::Sum ? "PTRAIN_REDUCE_SUM" : "PTRAIN_REDUCE_AVG");
      })
      .Case<AllGatherStartOp>([&](AllGatherStartOp g) -> LogicalResult {
        // The group's tensors concatenated in group-rank order along dimension 0 (ZeRO-1's updated shards;
        // deterministic-dp's gathered partial sums).
        Value in = g.getInput();
        if (!tensorOf(in).getElementType().isF32() || g.getGatherDim() != 0)
          return g.emitError(flag()) << ": only f32 all-gathers along dimension 0 are supported";
        FailureOr<std::string> comm =
            communicators().lookup(g, g.getGridAttr().getValue(), g.getGridAxes(), getSubgroup(g));
        if (failed(comm))
          return failure();
        return startCollective(Collective::AllGather, *comm, in, g.getRequest(), countOf(in), "");
      })
      .Case<SendStartOp>([&](SendStartOp send) -> LogicalResult {
        return pointToPoint(send, /*isSend=*/true, send.getInput(), send.getRequest(), send.getGridAttr().getValue(),
                            send.getAxis(), send.getOffset());
      })
      .Case<RecvStartOp>([&](RecvStartOp recv) -> LogicalResult {
        return pointToPoint(recv, /*isSend=*/false, recv.getRequest(), recv.getRequest(),
                            recv.getGridAttr().getValue(), recv.getAxis(), recv.getOffset());
      })
      .Case<TPAllReduceOp>([&](TPAllReduceOp t) -> LogicalResult {
        FailureOr<std::string> comm = communicators().lookup(t, t.getGrid(), axisOf(t, t.getAxis()));
        if (failed(comm))
          return failure();
        // fp32, or 16-bit values with their declared fp32 sum (C3, C4 of ptrain.tp_all_reduce).
        if (!tensorOf(t.getInput()).getElementType().isF32() && !t.getAccumulate())
          return t.emitError(flag()) << ": a tensor-parallel all-reduce of a non-f32 tensor without accumulate = f32 "
                                        "is not supported";
        return tpAllReduce(t, *comm);
      })
      .Case<CompressOp, DecompressOp, CompressedAllReduceStartOp>(
          [&](Operation *o) -> LogicalResult { return emitCodecOp(o); })
      .Default([&](Operation *o) { return emitOptimizerOp(o); });
}
