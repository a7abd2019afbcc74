// fp16's dynamic loss scaler in the step (docs/MixedPrecision.md, "The loss scaler in the step"; Megatron-LM's
// Float16OptimizerWithFloat16Params and DynamicGradScaler): the seed times the scale, every gradient unscaled
// after the dp average, the flags summed over the grid, a skipped step keeping every optimizer write.
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=2 precision=fp16 clip-norm=1.0 initial-loss-scale=1024 loss-scale-window=5 hysteresis=3 min-loss-scale=2" | FileCheck %s
// One stage, SGD with momentum: the same skip on the parameter and its buffer.
// RUN: ptrain-opt %s --ptrain-build-training-step="optimizer=sgd momentum=0.9 precision=fp16" | FileCheck %s --check-prefix=SGD
// optimizer=none returns the raw gradients: no step to skip, no scaler.
// RUN: ptrain-opt %s --ptrain-build-training-step="optimizer=none precision=fp16" | FileCheck %s --check-prefix=NONE
// bf16 and fp32 have no scaler (bf16 has fp32's exponent range: Kalamkar et al. 2019).
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=2 precision=bf16" | FileCheck %s --check-prefix=NONE
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=2" | FileCheck %s --check-prefix=NONE
// ZeRO-1: each rank unscales its reduce-scattered shards, the flags over every rank, the skip keeps the shards.
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=2 zero=1 precision=fp16 clip-norm=1.0" | FileCheck %s --check-prefix=ZERO
// deterministic-dp under the scaler (refused until branch prec8).
// RUN: ptrain-opt %s --ptrain-split-stages="pp=1" --ptrain-build-training-step="dp=2 micro-batches=2 deterministic-dp=true precision=fp16" | FileCheck %s --check-prefix=DET

ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>
ptrain.state @bias key "bias" kind parameter : tensor<8xf32>

func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %w = ptrain.state_read @wte : tensor<16x8xf32>
  %b = ptrain.state_read @bias : tensor<8xf32>
  %x = ptrain.embedding %w, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  %y = ptrain.binary add %x, %b : tensor<2x5x8xf32>, tensor<8xf32>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %y, %wt : tensor<2x5x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x5x16xf32>
}

// The scaler's state, zero-initialized like every step state (a zero scale reads as initial-loss-scale).
// CHECK: ptrain.state @loss_scaler key "loss_scaler" kind step_counter : tensor<3xf32>
// The optimizer-only step counter (Megatron-LM: a skipped step holds back the schedule and Adam's step).
// CHECK: ptrain.state @optimizer_step key "optimizer_step" kind step_counter : tensor<i64>
// CHECK-LABEL: func.func @stage0_forward_backward
// CHECK: %[[SEED:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[S:.*]] = ptrain.state_read @loss_scaler : tensor<3xf32>
// CHECK: %[[SCALE:.*]] = ptrain.loss_scale %[[S]] {initial_scale = 1.024000e+03 : f64} : tensor<3xf32> -> tensor<f32>
// CHECK: %[[SCALED:.*]] = ptrain.binary mul %[[SEED]], %[[SCALE]] : tensor<f32>, tensor<f32>
// CHECK: ptrain.cross_entropy_grad %[[SCALED]],
// CHECK-LABEL: func.func @stage0_optimizer_step() -> tensor<f32>
// The step count is the iteration's (the checkpoint's step, dropout's masks): it advances on a skipped step too.
// CHECK: %[[T0:.*]] = ptrain.state_read @step : tensor<i64>
// CHECK: %[[T1:.*]] = ptrain.binary add %[[T0]]
// CHECK-NEXT: ptrain.state_write %[[T1]] to @step
// The dp average comes first, then the unscale of every gradient it wrote.
// CHECK: ptrain.all_reduce_start %{{.*}} on @grid axes [dp] reduction = avg
// CHECK: %[[G0:.*]] = ptrain.state_read @wte.grad
// CHECK: %[[G1:.*]] = ptrain.state_read @bias.grad
// CHECK: %[[U0:.*]], %[[F0:.*]] = ptrain.grad_unscale %[[G0]], %{{.*}} : tensor<16x8xf32>, tensor<f32>
// CHECK: %[[U1:.*]], %[[F1:.*]] = ptrain.grad_unscale %[[G1]], %{{.*}} : tensor<8xf32>, tensor<f32>
// CHECK: %[[COUNT:.*]] = ptrain.binary add %[[F0]], %[[F1]]
// The flags over every rank of the grid, so that every replica skips alike.
// CHECK: %[[R:.*]] = ptrain.all_reduce_start %[[COUNT]] on @grid axes [dp] reduction = sum : tensor<f32>
// CHECK: %[[ALL:.*]] = ptrain.wait %[[R]]
// CHECK: %[[SKIP:.*]] = ptrain.compare gt %[[ALL]], %{{.*}} : tensor<f32>, tensor<f32>
// CHECK: ptrain.grad_scaler_update %{{.*}}, %{{.*}} {backoff_factor = 5.000000e-01 : f64, growth_factor = 2.000000e+00 : f64, growth_interval = 5 : i64, hysteresis = 3 : i64, initial_scale = 1.024000e+03 : f64, min_scale = 2.000000e+00 : f64}
// CHECK: ptrain.state_write %{{.*}} to @loss_scaler : tensor<3xf32>
// CHECK: ptrain.state_write %[[U0]] to @wte.grad
// CHECK: ptrain.state_write %[[U1]] to @bias.grad
// The optimizer's count advances only on a step that is not skipped.
// CHECK: %[[O0:.*]] = ptrain.state_read @optimizer_step : tensor<i64>
// CHECK: %[[O1:.*]] = ptrain.binary add %[[O0]]
// CHECK: %[[OK:.*]] = ptrain.select %[[SKIP]], %[[O0]], %[[O1]] : tensor<i1>, tensor<i64>, tensor<i64>
// CHECK-NEXT: ptrain.state_write %[[OK]] to @optimizer_step
// Clipping sees the unscaled gradients.
// CHECK: %[[C0:.*]] = ptrain.state_read @wte.grad
// CHECK: ptrain.sum_squares %[[C0]]
// CHECK: ptrain.clip_scale
// CHECK: %[[P:.*]] = ptrain.state_read @wte : tensor<16x8xf32>
// CHECK: %[[M:.*]] = ptrain.state_read @wte.adam_m
// CHECK: %[[V:.*]] = ptrain.state_read @wte.adam_v
// AdamW's bias correction and the learning-rate schedule read the optimizer's count, not the iteration's.
// CHECK: %[[NP:.*]], %[[NM:.*]], %[[NV:.*]] = ptrain.adamw %[[P]], %{{.*}}, %[[M]], %[[V]], %[[O1]]
// CHECK: %[[KP:.*]] = ptrain.select %[[SKIP]], %[[P]], %[[NP]]
// CHECK: ptrain.state_write %[[KP]] to @wte :
// CHECK: %[[KM:.*]] = ptrain.select %[[SKIP]], %[[M]], %[[NM]]
// CHECK: ptrain.state_write %[[KM]] to @wte.adam_m
// CHECK: %[[KV:.*]] = ptrain.select %[[SKIP]], %[[V]], %[[NV]]
// CHECK: ptrain.state_write %[[KV]] to @wte.adam_v
// The accumulators are zeroed either way.
// CHECK: ptrain.state_write %{{.*}} to @wte.grad
// The skip flag (1 skipped, 0 stepped) is the result, for the training step's codec states
// (--ptrain-lower-to-runtime, keepCodecStatesOnSkip).
// CHECK: %[[FLAG:.*]] = ptrain.select %[[SKIP]], %{{.*}}, %{{.*}} : tensor<i1>, tensor<f32>, tensor<f32>
// CHECK-NEXT: return %[[FLAG]] : tensor<f32>

// SGD-LABEL: func.func @train_step
// SGD: ptrain.loss_scale %{{.*}} {initial_scale = 0x41F0000000000000 : f64}
// SGD: ptrain.grad_unscale
// SGD-NOT: ptrain.all_reduce_start
// SGD: %[[SKIP:.*]] = ptrain.compare gt
// SGD: ptrain.grad_scaler_update {{.*}}growth_interval = 1000 : i64, hysteresis = 2 : i64
// SGD: ptrain.state_write %{{.*}} to @step
// SGD: %[[O0:.*]] = ptrain.state_read @optimizer_step
// SGD: %[[O1:.*]] = ptrain.binary add %[[O0]]
// SGD: ptrain.state_write %{{.*}} to @optimizer_step
// SGD: %[[P:.*]], %[[B:.*]] = ptrain.sgd %{{.*}}, %{{.*}}, %[[O1]]
// SGD: ptrain.select %[[SKIP]], %{{.*}}, %[[P]]
// SGD: ptrain.select %[[SKIP]], %{{.*}}, %[[B]]

// NONE-NOT: loss_scale
// NONE-NOT: grad_unscale
// NONE-NOT: grad_scaler_update
// NONE-NOT: @optimizer_step

// ZERO-LABEL: func.func @stage0_optimizer_step() -> tensor<f32>
// ZERO: %[[RS:.*]] = ptrain.reduce_scatter_start %{{.*}} on @grid axes [dp] scatter_dim = 0 reduction = avg : tensor<128xf32> -> !ptrain.request<tensor<64xf32>>
// ZERO: %[[G:.*]] = ptrain.wait %[[RS]] : !ptrain.request<tensor<64xf32>>
// ZERO: %[[G1:.*]] = ptrain.wait %{{.*}} : !ptrain.request<tensor<4xf32>>
// ZERO: %[[U:.*]], %[[F:.*]] = ptrain.grad_unscale %[[G]], %{{.*}} : tensor<64xf32>, tensor<f32>
// ZERO: %[[U1:.*]], %[[F1:.*]] = ptrain.grad_unscale %[[G1]], %{{.*}} : tensor<4xf32>, tensor<f32>
// ZERO: %[[C:.*]] = ptrain.binary add %[[F]], %[[F1]]
// ZERO: ptrain.all_reduce_start %[[C]] on @grid axes [dp] reduction = sum : tensor<f32>
// ZERO: %[[SKIP:.*]] = ptrain.compare gt
// ZERO: ptrain.grad_scaler_update
// ZERO: %[[O1:.*]] = ptrain.binary add %{{.*}} : tensor<i64>
// ZERO: ptrain.state_write %{{.*}} to @optimizer_step
// Clipping reads the unscaled shards.
// ZERO: ptrain.sum_squares %[[U]] : tensor<64xf32>
// ZERO: %[[SHARD:.*]] = ptrain.tp_split %{{.*}} on @grid axis dp dim 0 : tensor<128xf32> -> tensor<64xf32>
// ZERO: %[[M:.*]] = ptrain.state_read @stage0_zero_bucket0_adam_m
// ZERO: %[[V:.*]] = ptrain.state_read @stage0_zero_bucket0_adam_v
// ZERO: %[[NP:.*]], %[[NM:.*]], %[[NV:.*]] = ptrain.adamw %[[SHARD]], %{{.*}}, %[[M]], %[[V]], %[[O1]]
// ZERO: %[[KM:.*]] = ptrain.select %[[SKIP]], %[[M]], %[[NM]]
// ZERO-NEXT: ptrain.state_write %[[KM]] to @stage0_zero_bucket0_adam_m
// ZERO: %[[KV:.*]] = ptrain.select %[[SKIP]], %[[V]], %[[NV]]
// ZERO-NEXT: ptrain.state_write %[[KV]] to @stage0_zero_bucket0_adam_v
// ZERO: %[[KP:.*]] = ptrain.select %[[SKIP]], %[[SHARD]], %[[NP]]
// ZERO-NEXT: ptrain.all_gather_start %[[KP]] on @grid axes [dp] gather_dim = 0
// ZERO: %[[FLAG:.*]] = ptrain.select %[[SKIP]], %{{.*}}, %{{.*}} : tensor<i1>, tensor<f32>, tensor<f32>
// ZERO-NEXT: return %[[FLAG]] : tensor<f32>
// deterministic-dp: the unscale reads the accumulators after their dp all-gather and pairwise sum (the lowering writes
// each micro-batch tree's root before the optimizer step), as it reads the plain all-reduce's average.
// DET-LABEL: func.func @stage0_optimizer_step
// DET: ptrain.all_gather_start %{{.*}} on @grid axes [dp]
// DET: ptrain.wait
// DET: ptrain.binary add
// DET: ptrain.state_write
// DET-NOT: ptrain.all_gather_start
// DET: ptrain.grad_unscale
// DET: ptrain.grad_scaler_update
