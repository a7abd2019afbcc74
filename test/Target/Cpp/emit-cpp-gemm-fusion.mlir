// RUN: ptrain-translate --emit-cpp %s | FileCheck %s
// RUN: ptrain-translate --emit-cpp %s -o %t.cpp && c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp

// What the GEMMs read instead of materialized transposes and batched products (GemmFusion.h): a linear layer's
// W^T, autodiff's (W^T)^T and x^T, and a weight gradient's sum over the batch.
module {
  func.func @linear(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %dy: tensor<2x4x16xf32>)
      -> (tensor<2x4x16xf32>, tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>) {
    %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32> loc("/lin/Transpose")
    %y = ptrain.matmul %x, %wt : tensor<2x4x8xf32>, tensor<8x16xf32> loc("/lin/MatMul")
    %wtt = ptrain.transpose %wt {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32> loc("/lin/grad/Transpose")
    %dx = ptrain.matmul %dy, %wtt : tensor<2x4x16xf32>, tensor<16x8xf32> loc("/lin/grad/MatMul")
    %xt = ptrain.transpose %x {perm = array<i64: 0, 2, 1>} : tensor<2x4x8xf32> -> tensor<2x8x4xf32> loc("/lin/grad/xT")
    %p = ptrain.matmul %xt, %dy : tensor<2x8x4xf32>, tensor<2x4x16xf32> loc("/lin/grad/dW")
    %dwt = ptrain.sum_to %p : tensor<2x8x16xf32> -> tensor<8x16xf32> loc("/lin/grad/dW/sum")
    // Not fused: the batched product has a second use (the add below).
    %p2 = ptrain.matmul %xt, %dy : tensor<2x8x4xf32>, tensor<2x4x16xf32> loc("/kept/MatMul")
    %s2 = ptrain.sum_to %p2 : tensor<2x8x16xf32> -> tensor<8x16xf32> loc("/kept/sum")
    // Materialized: a transpose that is returned.
    %dw = ptrain.transpose %dwt {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32> loc("/lin/grad/dWT")
    %p3 = ptrain.binary add %p2, %p2 : tensor<2x8x16xf32>, tensor<2x8x16xf32>
    %s3 = ptrain.sum_to %p3 : tensor<2x8x16xf32> -> tensor<8x16xf32>
    %r = ptrain.binary add %s2, %s3 : tensor<8x16xf32>, tensor<8x16xf32>
    return %y, %dx, %dwt, %r, %dw : tensor<2x4x16xf32>, tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>
  }
}

// CHECK-LABEL: ptrain_step_linear(const float *arg0, const float *arg1, const float *arg2,
// A transpose its GEMMs read is not materialized, and writes nothing (not even a comment: EmitCpp.cpp).
// CHECK-NOT: "/lin/Transpose"
// CHECK-NOT: ptrain_permute_f32
// CHECK: // "/lin/MatMul"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_f32(0, 1, 2, 4, 16, 8, 1.0f, arg0, 32, arg1, 0, 0.0f, {{v[0-9]+}}, 64));
// CHECK-NOT: "/lin/grad/Transpose"
// CHECK: // "/lin/grad/MatMul"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_f32(0, 0, 2, 4, 8, 16, 1.0f, arg2, 64, arg1, 0, 0.0f, {{v[0-9]+}}, 32));
// The batched product the sum reads is folded into the sum's GEMM: neither it nor x^T writes anything.
// CHECK-NOT: "/lin/grad/xT"
// CHECK-NOT: PTRAIN_STEP_CALL
// CHECK: // "/lin/grad/dW/sum"
// CHECK-NEXT: // ptrain.sum_to
// CHECK-NEXT: float *[[DWT:v[0-9]+]] =
// CHECK-NEXT: {
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_gemm_f32(1, 0, 1, 8, 16, 8, 1.0f, arg0, 0, arg2, 0, 0.0f, [[DWT]], 0));
// CHECK: // "/kept/MatMul"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_f32(1, 0, 2, 8, 16, 4, 1.0f, arg0, 32, arg2, 64, 0.0f, [[P2:v[0-9]+]], 128));
// CHECK: // "/kept/sum"
// CHECK: PTRAIN_STEP_CALL(ptrain_sum_to_f32([[P2]], 3, dims, 2, out_dims, {{v[0-9]+}}));
// CHECK: // "/lin/grad/dWT"
// CHECK: PTRAIN_STEP_CALL(ptrain_permute_f32([[DWT]], 2, dims, perm, {{v[0-9]+}}));
