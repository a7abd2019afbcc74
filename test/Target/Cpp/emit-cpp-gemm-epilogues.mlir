// RUN: ptrain-translate --emit-cpp %s | FileCheck %s
// RUN: ptrain-translate --emit-cpp %s -o %t.cpp && c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp

// A weight gradient's transpose written by its batch-sum GEMM, a bias started in a GEMM's C, and dead ops (GemmFusion.h, DeadOps.h): autodiff of
// `x W^T` sums dW^T = sum_b x_b^T dy_b and transposes it; ptrain_gemm_transposed_f32 computes the GEMM in its own
// operand roles and writes its transpose into the sum's buffer, and the transpose is an alias of it. The gradient of a constant scale (`dy * x` summed to a scalar)
// is computed by no op that anything reads: neither is emitted.
module {
  func.func @grad(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x16xf32>, %c: tensor<f32>) -> (tensor<16x8xf32>, tensor<2x4x16xf32>) {
    %xt = ptrain.transpose %x {perm = array<i64: 0, 2, 1>} : tensor<2x4x8xf32> -> tensor<2x8x4xf32> loc("/lin/grad/xT")
    %p = ptrain.matmul %xt, %dy : tensor<2x8x4xf32>, tensor<2x4x16xf32> loc("/lin/grad/dW")
    %dwt = ptrain.sum_to %p : tensor<2x8x16xf32> -> tensor<8x16xf32> loc("/lin/grad/dW/sum")
    %dw = ptrain.transpose %dwt {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32> loc("/lin/grad/dWT")
    %scaled = ptrain.binary mul %dy, %c : tensor<2x4x16xf32>, tensor<f32> loc("/scale/Mul")
    %dc = ptrain.binary mul %dy, %dy : tensor<2x4x16xf32>, tensor<2x4x16xf32> loc("/scale/grad/Mul")
    %dcs = ptrain.sum_to %dc : tensor<2x4x16xf32> -> tensor<f32> loc("/scale/grad/sum")
    return %dw, %scaled : tensor<16x8xf32>, tensor<2x4x16xf32>
  }
  // A bias added to a GEMM's product (its only use): C starts as the bias rows and the GEMM runs with beta = 1;
  // the add is an alias of the product. A product with a second use keeps its add.
  func.func @bias(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>)
      -> (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) {
    %wt = ptrain.transpose %w {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32> loc("/fc/Transpose")
    %y = ptrain.matmul %x, %wt : tensor<2x4x8xf32>, tensor<8x16xf32> loc("/fc/MatMul")
    %z = ptrain.binary add %b, %y : tensor<16xf32>, tensor<2x4x16xf32> loc("/fc/Add")
    %y2 = ptrain.matmul %x, %wt : tensor<2x4x8xf32>, tensor<8x16xf32> loc("/kept/MatMul")
    %z2 = ptrain.binary add %y2, %b : tensor<2x4x16xf32>, tensor<16xf32> loc("/kept/Add")
    // Kept: the bias is computed after the product.
    %y3 = ptrain.matmul %x, %wt : tensor<2x4x8xf32>, tensor<8x16xf32> loc("/late/MatMul")
    %b3 = ptrain.binary mul %b, %b : tensor<16xf32>, tensor<16xf32> loc("/late/bias")
    %z3 = ptrain.binary add %y3, %b3 : tensor<2x4x16xf32>, tensor<16xf32> loc("/late/Add")
    return %z, %z2, %y2, %z3 : tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>
  }
}

// CHECK-LABEL: ptrain_step_grad(const float *arg0, const float *arg1, const float *arg2,
// CHECK: // "/lin/grad/dW/sum"
// CHECK-NEXT: // ptrain.sum_to
// CHECK-NEXT: float *[[DWT:v[0-9]+]] =
// CHECK-NEXT: {
// CHECK-NEXT: // the transpose of the product: the GEMM in its own operand roles, transposed through scratch (GemmFusion.h)
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_gemm_transposed_f32(1, 0, 8, 16, 8, 1.0f, arg0, arg1, 0.0f, [[DWT]]));
// The transpose is an alias of the GEMM's result, no code: declared where it is read (the return).
// CHECK-NOT: "/lin/grad/dWT"
// CHECK-NOT: ptrain_permute_f32
// CHECK: // "/scale/Mul"
// CHECK: PTRAIN_STEP_CALL(ptrain_binary_f32(PTRAIN_BINARY_MUL,
// CHECK: // "/scale/grad/Mul"
// CHECK-NEXT: // ptrain.binary
// CHECK-NEXT: // not emitted: nothing reads its results (DeadOps.h)
// CHECK-EMPTY:
// CHECK-NEXT: // "/scale/grad/sum"
// CHECK-NEXT: // ptrain.sum_to
// CHECK-NEXT: // not emitted: nothing reads its results (DeadOps.h)
// CHECK-NOT: ptrain_sum_to_f32
// CHECK: // func.return
// CHECK-NEXT: float *[[DW:v[0-9]+]] = [[DWT]];
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes([[DW]], 512, out_0));

// CHECK-LABEL: ptrain_step_bias(const float *arg0, const float *arg1, const float *arg2,
// CHECK: // "/fc/MatMul"
// CHECK-NEXT: // ptrain.matmul
// CHECK-NEXT: float *[[Y:v[0-9]+]] =
// CHECK: PTRAIN_STEP_CALL(ptrain_broadcast_to(arg2, 4, 1, bias_dims, 3, out_dims, [[Y]]));
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_gemm_f32(0, 1, 2, 4, 16, 8, 1.0f, arg0, 32, arg1, 0, 1.0f, [[Y]], 64));
// CHECK: // "/fc/Add"
// CHECK-NEXT: // ptrain.binary
// CHECK-NEXT: float *[[Z:v[0-9]+]] = [[Y]];
// CHECK: // an alias: the GEMM of its product started from the bias rows (GemmFusion.h)
// CHECK: // "/kept/MatMul"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_f32(0, 1, 2, 4, 16, 8, 1.0f, arg0, 32, arg1, 0, 0.0f, [[Y2:v[0-9]+]], 64));
// CHECK: // "/kept/Add"
// CHECK: PTRAIN_STEP_CALL(ptrain_binary_f32(PTRAIN_BINARY_ADD, [[Y2]],
// CHECK: // "/late/MatMul"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_f32(0, 1, 2, 4, 16, 8, 1.0f, arg0, 32, arg1, 0, 0.0f, [[Y3:v[0-9]+]], 64));
// CHECK: // "/late/Add"
// CHECK: PTRAIN_STEP_CALL(ptrain_binary_f32(PTRAIN_BINARY_ADD, [[Y3]],
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes([[Z]], 512, out_0));
