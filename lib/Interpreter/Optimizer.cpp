//===- Optimizer.cpp - reference AdamW and learning-rate schedule ---------===//
//
// The reference of `ptrain.adamw` (PTrainOptimizerOps.td) for the interpreter and the multi-rank executor. It
// follows the runtime's ptrain_adamw_step_f32 and ptrain_lr_warmup_cosine (lib/Runtime/cpu/Optimizer.cpp)
// formula by formula, but in double, so an f32 step differs from the runtime's by f32 rounding only.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Interpreter/Kernels.h"

#include <cmath>

using namespace mlir::ptrain::interp;

double mlir::ptrain::interp::learningRate(const AdamWHyperparameters &h, int64_t t) {
  if (h.warmup > 0 && t <= h.warmup)
    return h.peak * static_cast<double>(t) / static_cast<double>(h.warmup);
  double progress = 1.0;
  if (h.total > h.warmup)
    progress = static_cast<double>(t - h.warmup) / static_cast<double>(h.total - h.warmup);
  progress = std::min(1.0, std::max(0.0, progress));
  const double minLr = h.peak * h.minRatio;
  return minLr + (h.peak - minLr) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

llvm::Expected<std::vector<Tensor>> mlir::ptrain::interp::evalAdamW(const Tensor &param, const Tensor &grad,
                                                                    const Tensor &m, const Tensor &v,
                                                                    const Tensor &step, const AdamWHyperparameters &h) {
  for (const Tensor *t : {&grad, &m, &v})
    if (t->getDType() != param.getDType() || t->getShape() != param.getShape() || !param.isFloat())
      return makeError("param, grad, m and v must have one float type, got " + param.getTypeString() + " and " +
                       t->getTypeString());
  if (step.isFloat() || step.getNumElements() != 1 || step.getRank() != 0)
    return makeError("the step must be a rank-0 integer tensor, got " + step.getTypeString());
  int64_t t = step.ints()[0];
  if (t < 1)
    return makeError("the step is 1-based, got " + llvm::Twine(t));
  if (!(h.beta1 >= 0 && h.beta1 < 1 && h.beta2 >= 0 && h.beta2 < 1))
    return makeError("beta1 and beta2 must be in [0, 1)");
  const double lr = learningRate(h, t);
  const double bc1 = 1.0 - std::pow(h.beta1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(h.beta2, static_cast<double>(t));
  Tensor newParam(param.getDType(), param.getShape()), newM(m.getDType(), m.getShape()),
      newV(v.getDType(), v.getShape());
  for (int64_t i = 0, e = param.getNumElements(); i < e; ++i) {
    const double g = grad.floats()[i];
    const double mi = h.beta1 * m.floats()[i] + (1.0 - h.beta1) * g;
    const double vi = h.beta2 * v.floats()[i] + (1.0 - h.beta2) * g * g;
    newM.floats()[i] = mi;
    newV.floats()[i] = vi;
    const double denom = std::sqrt(vi) / std::sqrt(bc2) + h.epsilon;
    newParam.floats()[i] = param.floats()[i] * (1.0 - lr * h.weightDecay) - lr / bc1 * mi / denom;
  }
  std::vector<Tensor> results;
  for (Tensor *r : {&newParam, &newM, &newV}) {
    r->roundToDType();
    results.push_back(std::move(*r));
  }
  return results;
}
