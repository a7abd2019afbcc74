//===- PTrainOptimizerOps.td - optimizer updates -----------*- tablegen -*-===//
//
// One op per optimizer update of one parameter, with its learning-rate schedule, so that the lowering maps
// each to one runtime kernel (lib/Runtime: adamw_step, sgd_step, lr_warmup_cosine).
//
//===----------------------------------------------------------------------===//

#ifndef PTRAIN_DIALECT_PTRAIN_IR_PTRAINOPTIMIZEROPS_TD
#define PTRAIN_DIALECT_PTRAIN_IR_PTRAINOPTIMIZEROPS_TD

include "ptrain/Dialect/PTrain/IR/PTrainBase.td"

def PTrain_LRScheduleAttr : AttrDef<PTrain_Dialect, "LRSchedule"> {
  let mnemonic = "lr_schedule";
  let summary = "Linear warm-up then cosine decay of the learning rate.";
  let description = [{
    lr(t) = peak * t / warmup for t <= warmup; afterwards
    lr(t) = min + (peak - min) * 0.5 * (1 + cos(pi * (t - warmup) / (total - warmup))) with min = peak *
    min_ratio, and min after `total` steps (Loshchilov & Hutter, "SGDR", ICLR 2017; the warm-up of Goyal et
    al. 2017). t is the 1-based step.

    ```mlir
    #ptrain.lr_schedule<peak = 3.0e-04 : f64, warmup = 100, total = 2000, min_ratio = 1.0e-01 : f64>
    ```
  }];
  let parameters = (ins "::mlir::FloatAttr":$peak, "int64_t":$warmup, "int64_t":$total, "::mlir::FloatAttr":$min_ratio);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def PTrain_AdamWOp : PTrain_Op<"adamw", [Pure, DeclareOpInterfaceMethods<PTrain_CostOpInterface>, AllTypesMatch<["param", "grad", "m", "v", "new_param", "new_m", "new_v"]>]> {
  let summary = "One AdamW step of a parameter with its moments; returns the new parameter and moments.";
  let description = [{
    Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019, Algorithm 2, with bias
    correction: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; p = p - lr(t) (m / (1 - b1^t) /
    (sqrt(v / (1 - b2^t)) + eps) + wd p). `step` is the 1-based step t as a rank-0 i64 tensor.

    Constraints:
    * (C1) `beta1` and `beta2` are in [0, 1) (at 1 the bias correction 1 - b^t is 0 and every update NaN);
    * (C2) `epsilon` is finite and > 0, `weight_decay` finite and >= 0.

    ```mlir
    %p1, %m1, %v1 = ptrain.adamw %p, %g, %m, %v, %t {schedule = #ptrain.lr_schedule<peak = 3.0e-04 : f64, warmup = 100,
        total = 2000, min_ratio = 1.0e-01 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64,
        weight_decay = 0.1 : f64} : tensor<256x128xf32>, tensor<i64>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$param, RankedTensorOf<[F32]>:$grad, RankedTensorOf<[F32]>:$m,
                       RankedTensorOf<[F32]>:$v, 0DTensorOf<[I64]>:$step, PTrain_LRScheduleAttr:$schedule,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$epsilon, F64Attr:$weight_decay);
  let results = (outs RankedTensorOf<[F32]>:$new_param, RankedTensorOf<[F32]>:$new_m,
                      RankedTensorOf<[F32]>:$new_v);
  let assemblyFormat = "$param `,` $grad `,` $m `,` $v `,` $step attr-dict `:` type($param) `,` type($step)";
  let hasVerifier = 1;
}

#endif // PTRAIN_DIALECT_PTRAIN_IR_PTRAINOPTIMIZEROPS_TD
