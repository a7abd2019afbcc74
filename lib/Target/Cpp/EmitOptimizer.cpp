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

LogicalResult mlir::ptrain::cpp::emitAdamWKernelCall(AdamWOp op, const std::string &weightDecay,
                                                     const std::string &callee, ArrayRef<std::string> pointers,
                                                     CallWriter &w) {
  w.line("float adamw_c[3]; // decay, step size, 1 / sqrt(1 - beta2^t): ptrain_adamw_step_f32's own");
  if (failed(w.call(RuntimeCall::ptrain_adamw_coefficients_f32,
                    {"t", "lr", floatLiteral(op.getBeta1Attr().getValueAsDouble()),
                     floatLiteral(op.getBeta2Attr().getValueAsDouble()), weightDecay, "adamw_c"})))
    return failure();
  std::string args;
  for (const std::string &p : pointers)
    args += p + ", ";
  w.line(callee + "(" + args + "adamw_c[0], adamw_c[1], adamw_c[2]);");
  return success();
}

LogicalResult mlir::ptrain::cpp::emitAdamW(AdamWOp op, const GeneratedAdamW *generated, CallWriter &w) {
  Value p = op.getParam();
  std::string bytes = std::to_string(bytesOf(p)), n = std::to_string(countOf(p));
  const std::string decay = floatLiteral(op.getWeightDecayAttr().getValueAsDouble());
  if (failed(emitLearningRate(op.getSchedule(), op.getStep(), w)) ||
      failed(w.call(RuntimeCall::ptrain_copy_bytes, {w.ptr(p), bytes, w.ptr(op.getNewParam())})) ||
      failed(w.call(RuntimeCall::ptrain_copy_bytes, {w.ptr(op.getM()), bytes, w.ptr(op.getNewM())})) ||
      failed(w.call(RuntimeCall::ptrain_copy_bytes, {w.ptr(op.getV()), bytes, w.ptr(op.getNewV())})))
    return failure();
  if (!generated)
    return w.call(RuntimeCall::ptrain_adamw_step_f32,
                  {w.ptr(op.getNewParam()), w.ptr(op.getGrad()), w.ptr(op.getNewM()), w.ptr(op.getNewV()), n, "t",
                   "lr", floatLiteral(op.getBeta1Attr().getValueAsDouble()),
                   floatLiteral(op.getBeta2Attr().getValueAsDouble()),
                   floatLiteral(op.getEpsilonAttr().getValueAsDouble()), decay});
  SmallVector<std::string> pointers = {w.ptr(op.getNewParam()), w.ptr(op.getGrad()), w.ptr(op.getNewM()),
                                       w.ptr(op.getNewV())};
  if (BinaryOp mul = generated->clipMul) {
    const bool scaleFirst = cast<RankedTensorType>(mul.getLhs().getType()).getRank() == 0 &&
                            mul.getRhs().getType() == op.getGrad().getType();
    pointers[1] = w.ptr(scaleFirst ? mul.getRhs() : mul.getLhs());
    pointers.push_back(w.ptr(scaleFirst ? mul.getLhs() : mul.getRhs()));
    w.line("// the AdamW kernel generated for this update, the clip scale folded in (--ptrain-outline-adamw)");
  } else {
    w.line("// the AdamW kernel generated for this update (--ptrain-outline-adamw)");
  }
  return emitAdamWKernelCall(op, decay, generated->kernel, pointers, w);
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
