//===- PTrainStepOps.td - clipping and SGD -----------------*- tablegen -*-===//
//
// Training-step ops beyond AdamW (PTrainOptimizerOps.td), built by --ptrain-build-training-step: the two
// halves of global-norm gradient clipping (sum_squares per gradient, clip_scale of the all-reduced sum) and
// SGD with momentum. Generated on their own, with a header of their own (PTrainStepOps.h) included by the
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


#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINSTEPOPS_TD
