//===- PTrainStepOps.td - clipping and SGD -----------------*- tablegen -*-===//
//
// Training-step ops beyond AdamW (PTrainOptimizerOps.td), built by --ptrain-build-training-step: the two
// halves of global-norm gradient clipping (sum_squares per gradient, clip_scale of the all-reduced sum), SGD
// with momentum, and fp16's dynamic loss scaler (loss_scale, grad_unscale, grad_scaler_update). Generated on their own, with a header of their own (PTrainStepOps.h) included by the
// files that build, evaluate or emit them, so that the rest of the project does not depend on them.
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINSTEPOPS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINSTEPOPS_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"

// #ptrain.lr_schedule (PTrainOptimizerOps.td, which is not included: its ops would be generated here too).
def PTrain_StepLRScheduleAttr : Attr<CPred<"::llvm::isa<::mlir::ptrain::LRScheduleAttr>($_self)">,
                                     "#ptrain.lr_schedule"> {
  let storageType = "::mlir::ptrain::LRScheduleAttr";
  let returnType = "::mlir::ptrain::LRScheduleAttr";
  let convertFromStorage = "$_self";
}

def PTrain_SumSquaresOp : PTrain_Op<"sum_squares", [Pure, DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "The sum of the squares of every element of a tensor (a squared L2 norm), as a rank-0 tensor.";
  let description = [{
    One term of the global gradient norm of `--ptrain-build-training-step="clip-norm=C"`: the squares are
    accumulated in f64 and rounded once to the result's f32 (the runtime's ptrain_sum_squares_f32).

    Constraints (types, checked by the op's ODS):
    * (C1) `input` is a ranked f32 tensor;
    * (C2) the result is a rank-0 f32 tensor.

    ```mlir
    %sq = ptrain.sum_squares %g : tensor<256x128xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def PTrain_ClipScaleOp : PTrain_Op<"clip_scale", [Pure, AllTypesMatch<["sum_squares", "scale"]>]> {
  let summary = "The gradient scale of global-norm clipping: min(1, max_norm / (sqrt(sum_squares) + 1e-6)).";
  let description = [{
    Megatron-LM's clip_grad_norm_fp32 (Shoeybi et al. 2019; megatron/core/optimizer/clip_grads.py) and
    torch.nn.utils.clip_grad_norm_: with the global norm n = sqrt(`sum_squares`) (the squared norms of every
    gradient of the model, summed over all ranks), every gradient is multiplied by
    `scale` = min(1, max_norm / (n + 1e-6)), so the clipped gradients have norm at most `max_norm`.
    Computed in f64, rounded once. A NaN norm gives a NaN scale (the update is poisoned, not skipped, as
    torch's `error_if_nonfinite=False`); an infinite norm gives 0.

    Constraints:
    * (C1) `max_norm` is finite and > 0;
    * (C2) `sum_squares` and `scale` are rank-0 f32 tensors (the op's ODS types).

    ```mlir
    %scale = ptrain.clip_scale %sq {max_norm = 1.0 : f64} : tensor<f32>
    %clipped = ptrain.binary mul %g, %scale : tensor<256x128xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$sum_squares, F64Attr:$max_norm);
  let results = (outs 0DTensorOf<[F32]>:$scale);
  let assemblyFormat = "$sum_squares attr-dict `:` type($sum_squares)";
  let hasVerifier = 1;
}

def PTrain_SGDOp : PTrain_Op<"sgd", [Pure, DeclareOpInterfaceMethods<PTrain_CostOpInterface>]> {
  let summary = "One SGD step of a parameter (with optional heavy-ball momentum); returns the new parameter.";
  let description = [{
    torch.optim.SGD (dampening 0, no Nesterov), the heavy-ball momentum of Polyak (1964) as in Sutskever et
    al., ICML 2013: g = grad + weight_decay p (L2, coupled); with momentum mu > 0, buf = mu buf + g (the buffer
    starts at zero, so buf = g after the first step, as torch's) and g = buf; then p = p - lr(t) g, lr(t) from
    the schedule at the 1-based step `step`. With momentum 0 there is no buffer operand or result.

    Constraints:
    * (C1) `momentum` is in [0, 1) and `weight_decay` is finite and >= 0;
    * (C2) `momentum_buf` and `new_momentum_buf` are present exactly when `momentum` > 0;
    * (C3) `param`, `grad`, `new_param` (and the momentum buffers) have one type.

    ```mlir
    %p1, %buf1 = ptrain.sgd %p, %g, %t, %buf {schedule = #ptrain.lr_schedule<peak = 1.0e-01 : f64, warmup = 0,
        total = 2000, min_ratio = 0.0 : f64>, momentum = 0.9 : f64, weight_decay = 0.0 : f64}
        : (tensor<256x128xf32>, tensor<256x128xf32>, tensor<i64>, tensor<256x128xf32>)
        -> (tensor<256x128xf32>, tensor<256x128xf32>)
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$param, RankedTensorOf<[F32]>:$grad, 0DTensorOf<[I64]>:$step,
                       Optional<RankedTensorOf<[F32]>>:$momentum_buf, PTrain_StepLRScheduleAttr:$schedule,
                       F64Attr:$momentum, F64Attr:$weight_decay);
  let results = (outs RankedTensorOf<[F32]>:$new_param, Optional<RankedTensorOf<[F32]>>:$new_momentum_buf);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

// fp16 dynamic loss scaling (docs/MixedPrecision.md, "The design", item 4): Megatron-LM's DynamicGradScaler
// (megatron/core/optimizer/grad_scaler.py) and the unscale-and-check of Float16OptimizerWithFloat16Params
// (megatron/core/optimizer/optimizer.py, _unscale_main_grads_and_check_for_nan); Micikevicius et al., "Mixed
// Precision Training", ICLR 2018, sec. 3.2. The scaler's state is one `ptrain.state` of tensor<3xf32>
// {scale, growth_tracker, hysteresis_tracker}. Like every state that no model file holds it starts at zero, and
// a zero scale (never a scaler's value: min_scale > 0) stands for the initial state {initial_scale, 0,
// hysteresis}, so the checkpoint carries the scaler without an initializer of its own.

def PTrain_LossScaleOp : PTrain_Op<"loss_scale", [Pure]> {
  let summary = "The current loss scale of fp16 dynamic loss scaling, read from the scaler state.";
  let description = [{
    `scale` = `scaler`[0], or `initial_scale` when `scaler`[0] is 0 (the zero state before the first step).
    The training step multiplies the loss gradient's seed by it (Megatron's `scale_loss`), so every gradient
    of the backward is `scale` times the true one.

    Constraints:
    * (C1) `scaler` has 3 elements {scale, growth_tracker, hysteresis_tracker};
    * (C2) `initial_scale` is finite and > 0;
    * (C3) `scaler` is a rank-1 f32 tensor and `scale` a rank-0 f32 tensor (the op's ODS types).

    ```mlir
    %scale = ptrain.loss_scale %scaler {initial_scale = 4.294967296e+09 : f64} : tensor<3xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[F32]>:$scaler, F64Attr:$initial_scale);
  let results = (outs 0DTensorOf<[F32]>:$scale);
  let assemblyFormat = "$scaler attr-dict `:` type($scaler) `->` type($scale)";
  let hasVerifier = 1;
}

def PTrain_GradUnscaleOp : PTrain_Op<"grad_unscale", [Pure, AllTypesMatch<["grad", "result"]>,
                                                       AllTypesMatch<["scale", "found_inf"]>]> {
  let summary = "Unscales a gradient by 1 / scale and flags an inf or NaN in it.";
  let description = [{
    `result` = `grad` * inv_scale with inv_scale = 1 / `scale` computed in f64 and rounded once to f32 (Megatron's
    `_scale.double().reciprocal().float()`), elementwise in f32; `found_inf` is 1 when any element of `result`
    is +-inf or NaN, else 0 (torch's `_amp_foreach_non_finite_check_and_unscale_`; the runtime's
    ptrain_grad_unscale_check_f32). The step adds the flags of every gradient and sums them over every rank, so
    a count > 0 skips the step on all ranks alike.

    Constraints (types, checked by the op's ODS):
    * (C1) `grad` and `result` are one ranked f32 tensor type;
    * (C2) `scale` and `found_inf` are rank-0 f32 tensors.

    ```mlir
    %g1, %found = ptrain.grad_unscale %g, %scale : tensor<256x128xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$grad, 0DTensorOf<[F32]>:$scale);
  let results = (outs RankedTensorOf<[F32]>:$result, 0DTensorOf<[F32]>:$found_inf);
  let assemblyFormat = "$grad `,` $scale attr-dict `:` type($grad) `,` type($scale)";
}

def PTrain_GradScalerUpdateOp : PTrain_Op<"grad_scaler_update", [Pure, AllTypesMatch<["scaler", "new_scaler"]>]> {
  let summary = "One update of fp16's dynamic loss scaler after a step with or without an inf/NaN gradient.";
  let description = [{
    Megatron-LM's DynamicGradScaler.update (megatron/core/optimizer/grad_scaler.py) on the state {scale,
    growth_tracker, hysteresis_tracker} (a zero `scaler` is first replaced by {initial_scale, 0, hysteresis}).
    `found_inf` != 0 (an overflow on some rank; the step was skipped): growth_tracker = 0, hysteresis_tracker
    -= 1, and when it reaches 0, scale = max(scale * backoff_factor, min_scale). Otherwise growth_tracker += 1;
    at growth_interval it resets to 0, hysteresis_tracker to hysteresis, and scale *= growth_factor. The runtime's
    ptrain_grad_scaler_init and ptrain_grad_scaler_update. Megatron's defaults: initial scale 2^32, growth 2,
    backoff 0.5, interval 1000 (--loss-scale-window), hysteresis 2, min scale 1.

    Constraints:
    * (C1) `scaler` has 3 elements;
    * (C2) `growth_factor` is finite and > 1, `backoff_factor` in (0, 1);
    * (C3) `growth_interval` and `hysteresis` are >= 1;
    * (C4) `min_scale` is finite and > 0 and `initial_scale` finite and >= `min_scale`;
    * (C5) `scaler` and `new_scaler` are one rank-1 f32 type, `found_inf` a rank-0 f32 tensor (the op's ODS
      types).

    ```mlir
    %next = ptrain.grad_scaler_update %scaler, %found {initial_scale = 4.294967296e+09 : f64,
        growth_factor = 2.0 : f64, backoff_factor = 0.5 : f64, growth_interval = 1000 : i64, hysteresis = 2 : i64,
        min_scale = 1.0 : f64} : tensor<3xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[F32]>:$scaler, 0DTensorOf<[F32]>:$found_inf, F64Attr:$initial_scale,
                       F64Attr:$growth_factor, F64Attr:$backoff_factor, I64Attr:$growth_interval,
                       I64Attr:$hysteresis, F64Attr:$min_scale);
  let results = (outs 1DTensorOf<[F32]>:$new_scaler);
  let assemblyFormat = "$scaler `,` $found_inf attr-dict `:` type($scaler) `,` type($found_inf)";
  let hasVerifier = 1;
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINSTEPOPS_TD
