// Bad optimizer options (AdamW, SGD) of --ptrain-build-training-step are pass errors that name the option, not IR whose
// lr_schedule attribute no parser accepts.
// RUN: not ptrain-opt %s --ptrain-build-training-step="lr=-1" 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not ptrain-opt %s --ptrain-build-training-step="warmup-steps=-5" 2>&1 | FileCheck %s --check-prefix=WARMUP
// RUN: not ptrain-opt %s --ptrain-build-training-step="total-steps=0 warmup-steps=0" 2>&1 | FileCheck %s --check-prefix=TOTAL
// RUN: not ptrain-opt %s --ptrain-build-training-step="min-lr-ratio=2" 2>&1 | FileCheck %s --check-prefix=RATIO
// RUN: not ptrain-opt %s --ptrain-build-training-step="beta1=1" 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not ptrain-opt %s --ptrain-build-training-step="epsilon=0" 2>&1 | FileCheck %s --check-prefix=EPS
// RUN: not ptrain-opt %s --ptrain-build-training-step="weight-decay=-0.1" 2>&1 | FileCheck %s --check-prefix=WD
// Rates and decays that are not finite (ptrain-compile --lr inf compiled a step whose updates were all NaN).
// RUN: not ptrain-opt %s --ptrain-build-training-step="lr=inf" 2>&1 | FileCheck %s --check-prefix=LRINF
// RUN: not ptrain-opt %s --ptrain-build-training-step="min-lr-ratio=nan" 2>&1 | FileCheck %s --check-prefix=RATIONAN
// RUN: not ptrain-opt %s --ptrain-build-training-step="weight-decay=inf" 2>&1 | FileCheck %s --check-prefix=WDINF
// RUN: not ptrain-opt %s --ptrain-build-training-step="epsilon=inf" 2>&1 | FileCheck %s --check-prefix=EPSINF
// Micro-batches without a pipeline module were ignored (the step was the same as with micro-batches=1).
// RUN: not ptrain-opt %s --ptrain-build-training-step="micro-batches=3" 2>&1 | FileCheck %s --check-prefix=MB
// SGD: momentum in [0, 1), weight decay >= 0; momentum is no AdamW option; an unknown optimizer.
// RUN: not ptrain-opt %s --ptrain-build-training-step="optimizer=sgd momentum=1" 2>&1 | FileCheck %s --check-prefix=MOM
// RUN: not ptrain-opt %s --ptrain-build-training-step="optimizer=sgd weight-decay=-1" 2>&1 | FileCheck %s --check-prefix=SGDWD
// RUN: not ptrain-opt %s --ptrain-build-training-step="momentum=0.9" 2>&1 | FileCheck %s --check-prefix=ADAMMOM
// RUN: not ptrain-opt %s --ptrain-build-training-step="optimizer=lamb" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// Without an optimizer the AdamW options are unused and not checked.
// RUN: ptrain-opt %s --ptrain-build-training-step="optimizer=none lr=-1" | FileCheck %s --check-prefix=NONE

// LR: error: --ptrain-build-training-step: lr, warmup-steps, total-steps, min-lr-ratio: learning-rate peak must be > 0
// WARMUP: error: --ptrain-build-training-step: lr, warmup-steps, total-steps, min-lr-ratio: learning-rate schedule needs 0 <= warmup <= total and total >= 1, got warmup -5 and total 2000
// TOTAL: error: --ptrain-build-training-step: lr, warmup-steps, total-steps, min-lr-ratio: learning-rate schedule needs 0 <= warmup <= total and total >= 1, got warmup 0 and total 0
// RATIO: error: --ptrain-build-training-step: lr, warmup-steps, total-steps, min-lr-ratio: learning-rate min_ratio must be in [0, 1], got 2.000000e+00
// BETA: error: --ptrain-build-training-step: beta1 and beta2 must be in [0, 1), got beta1 = 1.000000e+00, beta2 = 9.500000e-01
// EPS: error: --ptrain-build-training-step: epsilon must be > 0 and weight-decay >= 0, both finite, got epsilon = 0.000000e+00, weight-decay = 1.000000e-01
// WD: error: --ptrain-build-training-step: epsilon must be > 0 and weight-decay >= 0, both finite, got epsilon = 1.000000e-08, weight-decay = -1.000000e-01
// LRINF: error: --ptrain-build-training-step: lr, warmup-steps, total-steps, min-lr-ratio: learning-rate peak must be > 0 and finite, got INF
// RATIONAN: error: --ptrain-build-training-step: lr, warmup-steps, total-steps, min-lr-ratio: learning-rate min_ratio must be in [0, 1], got nan
// WDINF: error: --ptrain-build-training-step: epsilon must be > 0 and weight-decay >= 0, both finite, got epsilon = 1.000000e-08, weight-decay = INF
// EPSINF: error: --ptrain-build-training-step: epsilon must be > 0 and weight-decay >= 0, both finite, got epsilon = INF, weight-decay = 1.000000e-01
// MB: error: --ptrain-build-training-step: micro-batches = 3 needs a pipeline module (run --ptrain-split-stages, with pp=1 for data parallelism or micro-batches alone)
// MOM: error: --ptrain-build-training-step: optimizer=sgd needs momentum in [0, 1) and weight-decay >= 0, got momentum = 1.000000e+00, weight-decay = 1.000000e-01
// SGDWD: error: --ptrain-build-training-step: optimizer=sgd needs momentum in [0, 1) and weight-decay >= 0, got momentum = 0.000000e+00, weight-decay = -1.000000e+00
// ADAMMOM: error: --ptrain-build-training-step: momentum is an option of optimizer=sgd (AdamW has beta1), got momentum = 9.000000e-01 with optimizer=adamw
// UNKNOWN: error: --ptrain-build-training-step: optimizer must be adamw, sgd or none, got 'lamb'
// NONE: func.func @train_step

ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>

func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %w = ptrain.state_read @wte : tensor<16x8xf32>
  %x = ptrain.embedding %w, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %x, %wt : tensor<2x5x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x5x16xf32>
}
