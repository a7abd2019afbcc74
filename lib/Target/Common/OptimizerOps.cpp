//===- OptimizerOps.cpp - The optimizer ops of both code generators -----===//
//
// StepFunction::emitOptimizerOp (StepFunction.h): ptrain.adamw, sgd,
// sum_squares and clip_scale on either target (issue 23: one step emitter),
// with one hook for where the step's scalars live (scalarsOnHost):
//   - on the host (the CPU target): the learning rate of the warm-up + cosine
//     schedule is computed before the kernel from the host step counter
//     (hostLearningRate: ptrain_lr_warmup_cosine into `float lr`), the
//     optimizer updates copies of its parameter and moments in place, the
//     squared norm is summed into a host double and the clip scale is inline
//     fp64 arithmetic;
//   - on the device (CUDA): the kernels take the schedule and the device step
//     counter and compute the learning rate themselves (no host read in the
//     step), update out of place, and the clip scale is a one-thread kernel.
// The arithmetic is the same on both: AdamW (Loshchilov and Hutter 2019,
// Algorithm 2, decoupled weight decay, as torch.optim.AdamW), SGD with
// heavy-ball momentum and L2 weight decay (torch.optim.SGD), the learning rate
// of docs/CodegenCpu.md ("Optimizer": peak * (s + 1) / warmup during warm-up,
// then a cosine to min_ratio * peak; s = t - 1 while t <= warmup, else t), and
// global-norm clipping min(1, max_norm / (sqrt(sum of squares) + 1e-6))
// (Pascanu et al. 2013, section 3.2; torch.nn.utils.clip_grad_norm_'s eps).
// The CPU's AdamW table (lib/Target/Cpp/AdamWTable.h: runs of AdamW ops as
// one loop over state indices) stays the CPU's, before this emitter.
//
//===----------------------------------------------------------------------===//

#include "Common/StepFunction.h"

#include "Common/CppTypes.h"
#include "Common/EmitHelpers.h"

#include "ptrain/Dialect/PTrain/IR/PTrainStepOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::target;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

/// The device kernels' schedule arguments: the step counter's pointer, warm-up and total steps, peak and minimum
/// learning rate (f32 literals).
SmallVector<std::string> deviceSchedule(LRScheduleAttr schedule, const std::string &step) {
  const double peak = schedule.getPeak().getValueAsDouble();
  return {step, str(schedule.getWarmup()), str(schedule.getTotal()), floatLiteral(peak),
          floatLiteral(peak * schedule.getMinRatio().getValueAsDouble())};
}

} // namespace

std::optional<LogicalResult> StepFunction::emitOptimizerOp(Operation *op) {
  const bool host = scalarsOnHost();
  auto ptr = [&](Value v) { return valuePtr(v); };
  // On the host: the results start as copies of the inputs, which the kernel updates in place.
  auto copy = [&](Value from, Value to) {
    return callKernel(Kernel::copy_bytes, {ptr(from), str(bytesOf(from)), ptr(to)});
  };
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case<AdamWOp>([&](AdamWOp a) -> LogicalResult {
        Value p = a.getParam();
        SmallVector<std::string> args;
        if (host) {
          if (failed(hostLearningRate(a.getSchedule(), a.getStep())) || failed(copy(p, a.getNewParam())) ||
              failed(copy(a.getM(), a.getNewM())) || failed(copy(a.getV(), a.getNewV())))
            return failure();
          if (std::optional<LogicalResult> generated = generatedAdamWUpdate(a))
            return *generated;
          args = {ptr(a.getNewParam()), ptr(a.getGrad()), ptr(a.getNewM()), ptr(a.getNewV()), str(countOf(p)), "t",
                  "lr"};
        } else {
          args = {ptr(p), ptr(a.getGrad()), ptr(a.getM()), ptr(a.getV()), str(countOf(p))};
          args.append(deviceSchedule(a.getSchedule(), ptr(a.getStep())));
        }
        args.append({floatLiteral(a.getBeta1Attr().getValueAsDouble()),
                     floatLiteral(a.getBeta2Attr().getValueAsDouble()),
                     floatLiteral(a.getEpsilonAttr().getValueAsDouble()),
                     floatLiteral(a.getWeightDecayAttr().getValueAsDouble())});
        if (!host)
          args.append({ptr(a.getNewParam()), ptr(a.getNewM()), ptr(a.getNewV())});
        return optimizerCall(OptimizerKernel::adamw_step_f32, args);
      })
      .Case<SGDOp>([&](SGDOp s) -> LogicalResult {
        Value p = s.getParam(), buf = s.getMomentumBuf();
        SmallVector<std::string> args;
        if (host) {
          if (failed(hostLearningRate(s.getSchedule(), s.getStep())) || failed(copy(p, s.getNewParam())) ||
              (buf && failed(copy(buf, s.getNewMomentumBuf()))))
            return failure();
          args = {ptr(s.getNewParam()), ptr(s.getGrad()), buf ? ptr(s.getNewMomentumBuf()) : "nullptr",
                  str(countOf(p)), "lr"};
        } else {
          args = {ptr(p), ptr(s.getGrad()), buf ? ptr(buf) : "nullptr", str(countOf(p))};
          args.append(deviceSchedule(s.getSchedule(), ptr(s.getStep())));
        }
        args.append({floatLiteral(s.getMomentum().convertToDouble()), floatLiteral(s.getWeightDecay().convertToDouble())});
        if (!host)
          args.append({ptr(s.getNewParam()), buf ? ptr(s.getNewMomentumBuf()) : "nullptr"});
        return optimizerCall(OptimizerKernel::sgd_step_f32, args);
      })
      .Case<SumSquaresOp>([&](SumSquaresOp s) -> LogicalResult {
        // Summed in fp64 on both targets, rounded once into the 0-d f32 result.
        const std::string n = str(countOf(s.getInput()));
        if (!host)
          return optimizerCall(OptimizerKernel::sum_squares_f32, {ptr(s.getInput()), n, ptr(s.getResult())});
        blockLine("double sum_squares = 0.0;");
        if (failed(optimizerCall(OptimizerKernel::sum_squares_f32, {ptr(s.getInput()), n, "&sum_squares"})))
          return failure();
        blockLine(ptr(s.getResult()) + "[0] = static_cast<float>(sum_squares);");
        return success();
      })
      .Case<ClipScaleOp>([&](ClipScaleOp c) -> LogicalResult {
        // min(1, max_norm / (sqrt(s) + 1e-6)) in fp64, NaN propagated. The generated CPU file includes no math
        // header: __builtin_sqrt and __builtin_isnan (GCC and Clang).
        const std::string maxNorm = doubleLiteral(c.getMaxNorm().convertToDouble());
        if (!host)
          return optimizerCall(OptimizerKernel::clip_scale_f32, {ptr(c.getSumSquares()), maxNorm, ptr(c.getScale())});
        blockLine("const double norm = __builtin_sqrt(static_cast<double>(" + ptr(c.getSumSquares()) + "[0]));");
        blockLine("const double scale = " + maxNorm + " / (norm + 1e-6);");
        blockLine(ptr(c.getScale()) + "[0] = static_cast<float>(__builtin_isnan(scale) || scale < 1.0 ? scale : 1.0);");
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

LogicalResult StepFunction::hostLearningRate(LRScheduleAttr schedule, Value step) {
  const double peak = schedule.getPeak().getValueAsDouble();
  const int64_t warmup = schedule.getWarmup();
  // The op's 1-based step t; the runtime's schedule takes a 0-based step during warm-up (lr = peak (s + 1) /
  // warmup) and the cosine progress (s - warmup) / (total - warmup) afterwards, so s = t - 1 while t <= warmup
  // and s = t after it.
  blockLine("const int64_t t = " + valuePtr(step) + "[0];");
  blockLine("float lr = 0.0f;");
  return optimizerCall(OptimizerKernel::lr_warmup_cosine,
                       {"t <= " + str(warmup) + " ? t - 1 : t", str(warmup), str(schedule.getTotal()),
                        floatLiteral(peak), floatLiteral(peak * schedule.getMinRatio().getValueAsDouble()), "&lr"});
}
