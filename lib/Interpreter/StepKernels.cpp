//===- StepKernels.cpp - reference clipping and SGD -----------------------===//
//
// See include/ptrain/Interpreter/StepKernels.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/StepKernels.h"

#include <cmath>
#include <optional>
#include <string>

using namespace mlir::ptrain::interp;

llvm::Expected<Tensor> mlir::ptrain::interp::evalSumSquares(const Tensor &input) {
  if (!input.isFloat())
    return makeError("sum_squares needs a float tensor, got " + input.getTypeString());
  double sum = 0.0;
  for (double x : input.floats())
    sum += x * x;
  Tensor out(input.getDType(), {});
  out.floats()[0] = sum;
  out.roundToDType();
  return out;
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalClipScale(const Tensor &sumSquares, double maxNorm) {
  if (!sumSquares.isFloat() || sumSquares.getRank() != 0)
    return makeError("clip_scale needs a rank-0 float tensor, got " + sumSquares.getTypeString());
  if (!std::isfinite(maxNorm) || !(maxNorm > 0.0))
    return makeError("clip_scale needs a finite max_norm > 0, got " + std::to_string(maxNorm));
  const double scale = maxNorm / (std::sqrt(sumSquares.floats()[0]) + 1e-6);
  Tensor out(sumSquares.getDType(), {});
  out.floats()[0] = std::isnan(scale) || scale < 1.0 ? scale : 1.0;
  out.roundToDType();
  return out;
}

llvm::Expected<std::vector<Tensor>> mlir::ptrain::interp::evalSGD(const Tensor &param, const Tensor &grad,
                                                                  const Tensor &step, const Tensor *buf,
                                                                  const AdamWHyperparameters &schedule, double momentum,
                                                                  double weightDecay) {
  for (const Tensor *t : {&grad, buf})
    if (t && (t->getDType() != param.getDType() || t->getShape() != param.getShape() || !param.isFloat()))
      return makeError("sgd: param, grad and the momentum buffer must have one float type, got " +
                       param.getTypeString() + " and " + t->getTypeString());
  if ((momentum > 0.0) != (buf != nullptr))
    return makeError("sgd: a momentum buffer must be given exactly when momentum > 0");
  if (step.isFloat() || step.getNumElements() != 1 || step.getRank() != 0)
    return makeError("sgd: the step must be a rank-0 integer tensor, got " + step.getTypeString());
  const int64_t t = step.ints()[0];
  if (t < 1)
    return makeError("sgd: the step is 1-based, got " + llvm::Twine(t));
  const double lr = learningRate(schedule, t);
  Tensor newParam(param.getDType(), param.getShape());
  std::optional<Tensor> newBuf;
  if (buf)
    newBuf.emplace(buf->getDType(), buf->getShape());
  for (int64_t i = 0, e = param.getNumElements(); i < e; ++i) {
    double g = grad.floats()[i] + weightDecay * param.floats()[i];
    if (buf) {
      g = momentum * buf->floats()[i] + g;
      newBuf->floats()[i] = g;
    }
    newParam.floats()[i] = param.floats()[i] - lr * g;
  }
  std::vector<Tensor> results;
  newParam.roundToDType();
  results.push_back(std::move(newParam));
  if (newBuf) {
    newBuf->roundToDType();
    results.push_back(std::move(*newBuf));
  }
  return results;
}
