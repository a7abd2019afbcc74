// RUN: ptrain-opt %s --split-input-file | ptrain-opt --split-input-file | FileCheck %s

// rms_norm and rotary_embedding round-trip with their result types inferred.
// CHECK-LABEL: func.func @rms_norm
// CHECK: %[[Y:.*]] = ptrain.rms_norm %{{.*}}, %{{.*}} {axis = -1 : i64, epsilon = 9.9999999999999995E-7 : f64} : tensor<2x16x64xf32>, tensor<64xf32>
// CHECK: return %[[Y]] : tensor<2x16x64xf32>
func.func @rms_norm(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>) -> tensor<2x16x64xf32> {
  %y = ptrain.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f64} : tensor<2x16x64xf32>, tensor<64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

// CHECK-LABEL: func.func @rotary_partial_interleaved
// CHECK: ptrain.rotary_embedding %{{.*}}, %{{.*}}, %{{.*}} {interleaved = true, rotary_dim = 8 : i64} : tensor<2x4x16x16xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32>
func.func @rotary_partial_interleaved(%q: tensor<2x4x16x16xf32>, %c: tensor<2x16x4xf32>, %s: tensor<2x16x4xf32>)
    -> tensor<2x4x16x16xf32> {
  %y = ptrain.rotary_embedding %q, %c, %s {interleaved = true, rotary_dim = 8 : i64}
      : tensor<2x4x16x16xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32>
  return %y : tensor<2x4x16x16xf32>
}
