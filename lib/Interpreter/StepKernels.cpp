//===- StepKernels.cpp - reference clipping and SGD -----------------------===//
//
// See include/ptrain/Interpreter/StepKernels.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/StepKernels.h"

#include "ptrain/Runtime/ptrain_runtime.h"

#include <array>
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

namespace {
/// The error of a runtime call of the loss scaler.
llvm::Error scalerError(llvm::StringRef op, ptrain_status_t status) {
  return makeError(op + ": " + ptrain_status_string(status) + ": " + ptrain_last_error());
}

/// A rank-1 f32 tensor of 3 elements, the scaler state, as floats.
llvm::Expected<std::array<float, 3>> scalerState(llvm::StringRef op, const Tensor &scaler) {
  if (scaler.getDType() != DType::F32 || scaler.getRank() != 1 || scaler.getNumElements() != 3)
    return makeError(op + " needs the scaler state tensor<3xf32>, got " + scaler.getTypeString());
  return std::array<float, 3>{static_cast<float>(scaler.floats()[0]), static_cast<float>(scaler.floats()[1]),
                              static_cast<float>(scaler.floats()[2])};
}

/// A rank-0 f32 tensor holding `value`.
Tensor scalarF32(double value) {
  Tensor out(DType::F32, {});
  out.floats()[0] = value;
  return out;
}
} // namespace

llvm::Expected<Tensor> mlir::ptrain::interp::evalLossScale(const Tensor &scaler, double initialScale) {
  llvm::Expected<std::array<float, 3>> state = scalerState("loss_scale", scaler);
  if (!state)
    return state.takeError();
  return scalarF32((*state)[0] != 0.0f ? (*state)[0] : static_cast<float>(initialScale));
}

llvm::Expected<std::vector<Tensor>> mlir::ptrain::interp::evalGradUnscale(const Tensor &grad, const Tensor &scale) {
  if (grad.getDType() != DType::F32 || scale.getDType() != DType::F32 || scale.getRank() != 0)
    return makeError("grad_unscale needs an f32 gradient and a rank-0 f32 scale, got " + grad.getTypeString() +
                     " and " + scale.getTypeString());
  std::vector<float> values(grad.floats().begin(), grad.floats().end());
  const float invScale = static_cast<float>(1.0 / scale.floats()[0]);
  float found = 0.0f;
  if (ptrain_status_t status = ptrain_grad_unscale_check_f32(values.data(), static_cast<int64_t>(values.size()),
                                                              invScale, &found))
    return scalerError("grad_unscale", status);
  Tensor result = Tensor::fromFloats(DType::F32, grad.getShape(), std::vector<double>(values.begin(), values.end()));
  return std::vector<Tensor>{std::move(result), scalarF32(found)};
}

llvm::Expected<Tensor> mlir::ptrain::interp::evalGradScalerUpdate(const Tensor &scaler, const Tensor &foundInf,
                                                                  const GradScalerOptions &options) {
  llvm::Expected<std::array<float, 3>> state = scalerState("grad_scaler_update", scaler);
  if (!state)
    return state.takeError();
  if (foundInf.getDType() != DType::F32 || foundInf.getRank() != 0)
    return makeError("grad_scaler_update needs a rank-0 f32 flag, got " + foundInf.getTypeString());
  if ((*state)[0] == 0.0f)
    if (ptrain_status_t status = ptrain_grad_scaler_init(static_cast<float>(options.initialScale), options.hysteresis,
                                                         state->data()))
      return scalerError("grad_scaler_update", status);
  if (ptrain_status_t status = ptrain_grad_scaler_update(
          state->data(), static_cast<float>(foundInf.floats()[0]), static_cast<float>(options.growthFactor),
          static_cast<float>(options.backoffFactor), options.growthInterval, options.hysteresis,
          static_cast<float>(options.minScale)))
    return scalerError("grad_scaler_update", status);
  return Tensor::fromFloats(DType::F32, {3}, std::vector<double>(state->begin(), state->end()));
}
