// RUN: not ptrain-opt %s --ptrain-memory-plan 2>&1 | FileCheck %s

// A module that was not lowered (no function with ptrain.entry = "train") has no schedule to plan.
// CHECK: error: --ptrain-memory-plan: no lowered training step (a function with ptrain.entry = "train"); run --ptrain-lower-to-runtime first
module {
  func.func @forward_stage0(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
