// RUN: ptrain-translate --emit-cpp %s | FileCheck %s
// RUN: ptrain-translate --emit-cpp --emit-cpp-layer-norm-saved-stats=false %s | FileCheck %s --check-prefix=OFF
// RUN: ptrain-translate --emit-cpp %s -o %t.cpp && c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp

// A layer norm's gradient reads the mean and rstd its forward saved (BufferLiveness::savedStatsOf) instead of
// recomputing the forward into scratch. The second gradient keeps the recomputation: its epsilon differs.
module {
  func.func @ln(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %dy: tensor<2x4x8xf32>)
      -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) {
    %y = ptrain.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> loc("/ln/fwd")
    %dx, %dg, %db = ptrain.layer_norm_grad %dy, %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> loc("/ln/bwd")
    %dx2, %dg2, %db2 = ptrain.layer_norm_grad %dy, %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f64} : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> loc("/other/bwd")
    return %y, %dx, %dg, %db, %dx2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x8xf32>
  }
}

// CHECK-LABEL: ptrain_step_ln(
// CHECK: // "/ln/fwd"
// CHECK: ptrain_layer_norm_fwd_f32(arg0, arg1, arg2, 8, 8, 9.99999975e-06f, {{v[0-9]+}}, [[MEAN:reinterpret_cast<float \*>\(ptrain_arena \+ [0-9]+\)]], [[RSTD:reinterpret_cast<float \*>\(ptrain_arena \+ [0-9]+\)]]));
// The gradient reads the forward's statistics: no forward, no zero bias.
// CHECK: // "/ln/bwd"
// CHECK-NOT: ptrain_layer_norm_fwd_f32
// CHECK-NOT: ptrain_zero_bytes
// CHECK: the mean and rstd its forward saved
// CHECK-NEXT: ptrain_layer_norm_bwd_f32(arg3, arg0, arg1, [[MEAN]], [[RSTD]], 8, 8,
// Another epsilon: recomputed.
// CHECK: // "/other/bwd"
// CHECK: ptrain_zero_bytes(
// CHECK-NEXT: ptrain_layer_norm_fwd_f32(arg0, arg1, {{.*}}, 8, 8, 9.99999997e-07f,
// CHECK-NEXT: ptrain_layer_norm_bwd_f32(arg3, arg0, arg1,

// Off: both gradients recompute their forward.
// OFF-LABEL: ptrain_step_ln(
// OFF-NOT: the mean and rstd its forward saved
// OFF: // "/ln/bwd"
// OFF: ptrain_layer_norm_fwd_f32(arg0, arg1, {{.*}}, 8, 8, 9.99999975e-06f,
// OFF: // "/other/bwd"
// OFF: ptrain_layer_norm_fwd_f32(arg0, arg1, {{.*}}, 8, 8, 9.99999997e-07f,
