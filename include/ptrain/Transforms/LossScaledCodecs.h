//===- LossScaledCodecs.h - codecs on fp16's loss-scaled gradients -*- C++ -*-===//
//
// Under `precision=fp16` the gradients are loss-scaled (LossScaling.h; Megatron-LM's DynamicGradScaler,
// Micikevicius et al., "Mixed Precision Training", ICLR 2018, sec. 3.2): an overflowing step makes them inf/NaN
// by design, and the scaler's check after the dp reduction skips that step. A codec on a gradient-carrying site
// must therefore carry a non-finite element through to its decoded value (CodecAttrInterface::carriesNonFinite);
// one whose encoder refuses it (quantization, TAH-Quant) would abort the run at the first overflow.
// docs/MixedPrecision.md, "Codecs on loss-scaled gradients".
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_TRANSFORMS_LOSSSCALEDCODECS_H
#define PTRAIN_TRANSFORMS_LOSSSCALEDCODECS_H

#include "ptrain/Plan/CompressTensorParallel.h"
#include "ptrain/Plan/CompressionPlan.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::ptrain {

/// Whether `module`'s gradient traffic is loss-scaled and may be non-finite on an overflowing step: its
/// training step was built with `precision=fp16` (`ptrain.precision`).
bool hasLossScaledGradients(ModuleOp module);

/// Whether the runtime encoder of `codec` carries a non-finite input element (inf or NaN) through to a
/// non-finite decoded value instead of refusing it (read off each encoder): PowerSGD (its GEMMs propagate it),
/// top-k (NaN ranks above +inf; the value is sent as is), rand-k (values copied), the casts (inf/NaN stay
/// inf/NaN) and the linear autoencoder (GEMMs) do; quantization and TAH-Quant do not: their encoders (CPU
/// cpu/codecs/Quant.cpp and TahQuant.cpp, CUDA Quant.cu and TahQuant.cu, the emitted encoder of
/// lib/Target/Cpp/EmitCodecs.cpp) refuse a non-finite element, since a scale needs finite values.
bool carriesNonFinite(CodecAttrInterface codec);

/// Whether `codec` may serve a gradient-carrying site of `module`: always, except under fp16's loss scaler
/// (hasLossScaledGradients), where its encoder must carry a non-finite element (carriesNonFinite).
bool canCarryGradientsOf(ModuleOp module, CodecAttrInterface codec);

/// Refuses, under fp16's loss scaler, every codec of a gradient-carrying site that cannot carry a non-finite
/// element: of `plan` (when non-null) the backward pipeline sends and the dp gradient codecs (a ZeRO-1 bucket's
/// reduce-scatter included), and the backward sites of `tensorParallel`. Forward sites are not checked (the
/// activations are not loss-scaled). The error, through `emitError`, names the site, the codec,
/// `precision=fp16` and why; success without a loss scaler.
LogicalResult checkLossScaledGradientCodecs(ModuleOp module, const CompressionPlan *plan,
                                            llvm::ArrayRef<TensorParallelCodec> tensorParallel,
                                            llvm::function_ref<InFlightDiagnostic()> emitError);

} // namespace mlir::ptrain

#endif // PTRAIN_TRANSFORMS_LOSSSCALEDCODECS_H
