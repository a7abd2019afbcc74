//===- LossScaledCodecs.cpp - codecs on fp16's loss-scaled gradients -*- C++ -*-===//
//
// See include/ptrain/Transforms/LossScaledCodecs.h.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Transforms/LossScaledCodecs.h"

#include "ptrain/Dialect/PTrain/IR/PTrainAttrs.h"
#include "ptrain/Dialect/PTrain/IR/PTrainOps.h"
#include "ptrain/Dialect/PTrain/IR/PTrainPlanAttrs.h"

using namespace mlir;
using namespace mlir::ptrain;

bool mlir::ptrain::hasLossScaledGradients(ModuleOp module) { return getPrecision(module) == Precision::F16; }

bool mlir::ptrain::carriesNonFinite(CodecAttrInterface codec) { return !isa<QuantAttr, TahQuantAttr>(codec); }

bool mlir::ptrain::canCarryGradientsOf(ModuleOp module, CodecAttrInterface codec) {
  return !codec || carriesNonFinite(codec) || !hasLossScaledGradients(module);
}

LogicalResult mlir::ptrain::checkLossScaledGradientCodecs(ModuleOp module, const CompressionPlan *plan,
                                                          llvm::ArrayRef<TensorParallelCodec> tensorParallel,
                                                          llvm::function_ref<InFlightDiagnostic()> emitError) {
  if (!hasLossScaledGradients(module))
    return success();
  auto refuse = [&](const std::string &site, CodecAttrInterface codec) {
    emitError() << site << " uses " << Attribute(codec)
                << " under precision=fp16, whose encoder refuses a non-finite element: fp16's loss scaler makes "
                   "gradient traffic inf/NaN on an overflowing step (the scaler then skips it), so the run would "
                   "abort at the first overflow (at the default initial scale 2^32, step 1). Gradient sites under "
                   "fp16 take a codec that carries inf/NaN (powersgd, topk, randk, a cast) or none; quantize them "
                   "with --precision bf16 or fp32 (docs/MixedPrecision.md, \"Codecs on loss-scaled gradients\")";
    return failure();
  };
  if (plan) {
    const int64_t pp = plan->backwardSends.size();
    for (int64_t c = 1; c < pp * plan->virtualStages; ++c) {
      const int64_t m = plan->backwardSends[c % pp].size() / plan->virtualStages;
      for (int64_t i = 0; i < m; ++i)
        if (CodecAttrInterface codec = plan->backwardCodecOf(c, i); !canCarryGradientsOf(module, codec))
          return refuse("the backward send of " + std::string(plan->virtualStages > 1 ? "virtual stage " : "stage ") +
                            std::to_string(c) + " to " + std::to_string(c - 1) + " (micro-batch " +
                            std::to_string(i) + ")",
                        codec);
    }
    bool zero = false;
    module.walk([&](ReduceScatterStartOp) { zero = true; });
    for (const auto &[key, codec] : plan->dpCodecs)
      if (!canCarryGradientsOf(module, codec))
        return refuse("the dp gradient " + std::string(zero ? "reduce-scatter (ZeRO-1 bucket)" : "all-reduce") +
                          " of '" + key + "'",
                      codec);
  }
  for (const TensorParallelCodec &site : tensorParallel)
    if (!site.forward && !canCarryGradientsOf(module, site.codec))
      return refuse("the backward tp all-reduce " + site.role + " of layer " + std::to_string(site.layer), site.codec);
  return success();
}
