//===- EmitOptimizer.cpp - Clipping and SGD in the CPU code generator -----===//
//
// See EmitOptimizer.h. The generated file includes no math header, so clip_scale uses __builtin_sqrt and
// __builtin_isnan (GCC and Clang).
//
//===----------------------------------------------------------------------===//

#include "EmitOptimizer.h"

#include "Common/CppTypes.h"
#include "Common/EmitHelpers.h"

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cpp;

LogicalResult mlir::ptrain::cpp::emitSumSquares(SumSquaresOp op, CallWriter &w) {
  w.line("double sum_squares = 0.0;");
  if (failed(w.call(RuntimeCall::ptrain_sum_squares_f32,
                    {w.ptr(op.getInput()), std::to_string(countOf(op.getInput())), "&sum_squares"})))
    return failure();
  w.line(w.ptr(op.getResult()) + "[0] = static_cast<float>(sum_squares);");
  return success();
}

LogicalResult mlir::ptrain::cpp::emitClipScale(ClipScaleOp op, CallWriter &w) {
  w.line("const double norm = __builtin_sqrt(static_cast<double>(" + w.ptr(op.getSumSquares()) + "[0]));");
  w.line("const double scale = " + doubleLiteral(op.getMaxNorm().convertToDouble()) + " / (norm + 1e-6);");
  w.line(w.ptr(op.getScale()) + "[0] = static_cast<float>(__builtin_isnan(scale) || scale < 1.0 ? scale : 1.0);");
  return success();
}

LogicalResult mlir::ptrain::cpp::emitLearningRate(LRScheduleAttr schedule, Value step, CallWriter &w) {
  double peak = schedule.getPeak().getValueAsDouble();
  double minLr = peak * schedule.getMinRatio().getValueAsDouble();
  int64_t warmup = schedule.getWarmup(), total = schedule.getTotal();
  // The op's 1-based step t; the runtime's schedule takes a 0-based step during warm-up (lr = peak (s + 1) /
  // warmup) and the cosine progress (s - warmup) / (total - warmup) afterwards, so s = t - 1 while t <= warmup
  // and s = t after it.
  w.line("const int64_t t = " + w.ptr(step) + "[0];");
  w.line("float lr = 0.0f;");
  return w.call(RuntimeCall::ptrain_lr_warmup_cosine,
                {"t <= " + std::to_string(warmup) + " ? t - 1 : t", std::to_string(warmup), std::to_string(total),
                 floatLiteral(peak), floatLiteral(minLr), "&lr"});
}

LogicalResult mlir::ptrain::cpp::emitSGD(SGDOp op, CallWriter &w) {
  Value p = op.getParam(), buf = op.getMomentumBuf();
  std::string bytes = std::to_string(bytesOf(p));
  if (failed(emitLearningRate(op.getSchedule(), op.getStep(), w)) ||
      failed(w.call(RuntimeCall::ptrain_copy_bytes, {w.ptr(p), bytes, w.ptr(op.getNewParam())})) ||
      (buf && failed(w.call(RuntimeCall::ptrain_copy_bytes, {w.ptr(buf), bytes, w.ptr(op.getNewMomentumBuf())}))))
    return failure();
  return w.call(RuntimeCall::ptrain_sgd_step_f32,
                {w.ptr(op.getNewParam()), w.ptr(op.getGrad()), buf ? w.ptr(op.getNewMomentumBuf()) : "nullptr",
                 std::to_string(countOf(p)), "lr", floatLiteral(op.getMomentum().convertToDouble()),
                 floatLiteral(op.getWeightDecay().convertToDouble())});
}
