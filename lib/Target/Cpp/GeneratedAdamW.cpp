//===- GeneratedAdamW.cpp - Calls of the generated AdamW kernels ----------===//
//
// See GeneratedAdamW.h.
//
//===----------------------------------------------------------------------===//

#include "GeneratedAdamW.h"

#include "Common/EmitHelpers.h"

using namespace mlir;
using namespace mlir::ptrain;

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

LogicalResult mlir::ptrain::cpp::emitGeneratedAdamW(AdamWOp op, const GeneratedAdamW &generated, CallWriter &w) {
  SmallVector<std::string> pointers = {w.ptr(op.getNewParam()), w.ptr(op.getGrad()), w.ptr(op.getNewM()),
                                       w.ptr(op.getNewV())};
  if (BinaryOp mul = generated.clipMul) {
    const bool scaleFirst = cast<RankedTensorType>(mul.getLhs().getType()).getRank() == 0 &&
                            mul.getRhs().getType() == op.getGrad().getType();
    pointers[1] = w.ptr(scaleFirst ? mul.getRhs() : mul.getLhs());
    pointers.push_back(w.ptr(scaleFirst ? mul.getLhs() : mul.getRhs()));
    w.line("// the AdamW kernel generated for this update, the clip scale folded in (--ptrain-outline-adamw)");
  } else {
    w.line("// the AdamW kernel generated for this update (--ptrain-outline-adamw)");
  }
  return emitAdamWKernelCall(op, floatLiteral(op.getWeightDecayAttr().getValueAsDouble()), generated.kernel,
                             pointers, w);
}
