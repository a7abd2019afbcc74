//===- EmitCudaLoss.cpp - The cross-entropy of --emit-cuda ----------------===//
//
// See EmitCudaLoss.h. The arguments are the CPU target's (lib/Target/Cpp/EmitCpp.cpp's cross-entropy case)
// with device pointers; the weighted mean over a pipeline step (`@stage<P-1>_loss_weight`, all-reduced over
// dp before the first forward-backward) is ordinary IR that both targets emit op by op.
//
//===----------------------------------------------------------------------===//

#include "EmitCudaLoss.h"

#include "Common/CppTypes.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cstdint>
#include <optional>
#include <type_traits>

using namespace mlir;
using namespace mlir::ptrain;
using namespace mlir::ptrain::cuda;
using target::countOf;
using target::tensorOf;

namespace {

/// The calls of one cross-entropy op (CrossEntropyOp or CrossEntropyGradOp).
template <typename CeOp> LogicalResult emitLoss(CeOp ce, CudaCallWriter &w) {
  auto str = [](int64_t v) { return std::to_string(v); };
  Value logits = ce.getLogits(), labels = ce.getLabels();
  const int64_t classes = tensorOf(logits).getShape().back(), n = countOf(labels);
  std::optional<int64_t> ignore = ce.getIgnoreIndex();
  if (ignore && (*ignore < INT32_MIN || *ignore > INT32_MAX))
    return ce.emitError("--emit-cuda: ignore_index ") << *ignore << " does not fit the runtime's int32 labels";
  FailureOr<std::string> ids = int32Ids(ce, labels, w);
  if (failed(ids))
    return failure();
  const std::string targets = *ids;
  std::string lse = w.scratch(4 * n, "float");
  const bool weighted = ce.isWeighted() || ce.isSumReduction();
  const std::string weights = ce.getWeight() ? w.valuePtr(ce.getWeight()) : "nullptr", hasIgnore = ignore ? "1" : "0",
                    ignoreIndex = ignore ? str(*ignore) : "0", sum = ce.isSumReduction() ? "1" : "0";
  auto forward = [&](const std::string &loss) {
    if (!weighted)
      return w.emitCall(CudaCall::ptrain_cuda_cross_entropy_fwd_f32,
                        {w.valuePtr(logits), targets, str(n), str(classes), loss, lse});
    return w.emitCall(
        CudaCall::ptrain_cuda_cross_entropy_weighted_fwd_f32,
        {w.valuePtr(logits), targets, weights, str(n), str(classes), hasIgnore, ignoreIndex, sum, loss, lse});
  };
  if constexpr (std::is_same_v<CeOp, CrossEntropyOp>) {
    return forward(w.valuePtr(ce.getLoss()));
  } else {
    // The backward needs the log-sum-exp: recompute it (the loss itself goes to scratch).
    if (failed(forward(w.scratch(4, "float"))))
      return failure();
    if (!weighted)
      return w.emitCall(CudaCall::ptrain_cuda_cross_entropy_bwd_f32,
                        {w.valuePtr(ce.getGrad()), w.valuePtr(logits), targets, lse, str(n), str(classes),
                         w.valuePtr(ce.getResult())});
    return w.emitCall(CudaCall::ptrain_cuda_cross_entropy_weighted_bwd_f32,
                      {w.valuePtr(ce.getGrad()), w.valuePtr(logits), targets, weights, lse, str(n), str(classes),
                       hasIgnore, ignoreIndex, sum, w.valuePtr(ce.getResult())});
  }
}

} // namespace

LogicalResult mlir::ptrain::cuda::emitCudaCrossEntropy(Operation *op, CudaCallWriter &w) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<CrossEntropyOp, CrossEntropyGradOp>([&](auto ce) { return emitLoss(ce, w); })
      .Default([](Operation *other) {
        return other->emitError("--emit-cuda internal error: not a cross-entropy op: ") << other->getName();
      });
}
