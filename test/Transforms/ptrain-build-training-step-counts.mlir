// A dp or micro-batch count below 1 on a module without pipeline stages is an error about the count itself;
// it said "dp = 0 needs a pipeline module" (as if a pipeline made dp = 0 valid). Counts above 1 still need
// stages (ptrain-build-training-step-invalid.mlir).
// RUN: not ptrain-opt %s --ptrain-build-training-step=dp=0 2>&1 | FileCheck %s --check-prefix=DP
// RUN: not ptrain-opt %s --ptrain-build-training-step=micro-batches=-1 2>&1 | FileCheck %s --check-prefix=MB
// RUN: not ptrain-opt %s --ptrain-build-training-step=dp=2 2>&1 | FileCheck %s --check-prefix=STAGES
// DP: error: --ptrain-build-training-step: dp and micro-batches must be >= 1, got dp = 0, micro-batches = 1
// MB: error: --ptrain-build-training-step: dp and micro-batches must be >= 1, got dp = 1, micro-batches = -1
// STAGES: error: --ptrain-build-training-step: dp = 2 needs a pipeline module
// RUN: not ptrain-opt %s --ptrain-build-training-step=deterministic-dp=true 2>&1 | FileCheck %s --check-prefix=DET
// DET: error: --ptrain-build-training-step: deterministic-dp needs a pipeline module

ptrain.state @wte key "wte" kind parameter : tensor<16x8xf32>

func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %w = ptrain.state_read @wte : tensor<16x8xf32>
  %x = ptrain.embedding %w, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = ptrain.matmul %x, %wt : tensor<2x5x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x5x16xf32>
}
