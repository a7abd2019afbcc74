// RUN: ptrain-translate --emit-cpp %s | FileCheck %s
// RUN: ptrain-translate --emit-cpp %s -o %t.cpp && c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp

// A weight gradient accumulated into its gradient state (GemmFusion.h, "accumulated into its state"): the
// micro-batch step's `state_write @g (add (state_read @g) dW)` becomes the GEMM of dW with C = the state's
// storage and beta = 1. No buffer for dW, no ptrain_binary_f32, no ptrain_copy_bytes. Each case after the first
// two keeps the add and the copy for the reason its comment gives.
module {
  ptrain.state @w key "w" kind parameter : tensor<16x8xf32>
  ptrain.state @w_g key "w/grad" kind gradient : tensor<16x8xf32>
  ptrain.state @u_g key "u/grad" kind gradient : tensor<8x16xf32>
  ptrain.state @k_g key "k/grad" kind gradient : tensor<16x8xf32>
  ptrain.state @r_g key "r/grad" kind gradient : tensor<16x8xf32>
  ptrain.state @o_g key "o/grad" kind gradient : tensor<16x8xf32>
  ptrain.state @s_g key "s/grad" kind gradient : tensor<16x8xf32>
  ptrain.state @l_g key "l/grad" kind gradient : tensor<16x8xf32>
  ptrain.state @c_g key "c/grad" kind gradient : tensor<16x8xf32>
  ptrain.state @p_g key "p/grad" kind gradient : tensor<8x16xf32>
  func.func @touch() {
    return
  }
  func.func @acc(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x16xf32>, %x2: tensor<4x8xf32>, %dy2: tensor<4x16xf32>,
                 %xl: tensor<2x160x8xf32>, %dyl: tensor<2x160x16xf32>)
      -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) {
    // The gradient of `x W^T`: the batch sum's GEMM writes dW (transposed) into @w_g, beta = 1.
    %xt = ptrain.transpose %x {perm = array<i64: 0, 2, 1>} : tensor<2x4x8xf32> -> tensor<2x8x4xf32> loc("/lin/xT")
    %p = ptrain.matmul %xt, %dy : tensor<2x8x4xf32>, tensor<2x4x16xf32> loc("/lin/dW")
    %dwt = ptrain.sum_to %p : tensor<2x8x16xf32> -> tensor<8x16xf32> loc("/lin/dW/sum")
    %dw = ptrain.transpose %dwt {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32> loc("/lin/dWT")
    %g = ptrain.state_read @w_g : tensor<16x8xf32> loc("/lin/acc/read")
    %g1 = ptrain.binary add %g, %dw : tensor<16x8xf32>, tensor<16x8xf32> loc("/lin/acc/add")
    ptrain.state_write %g1 to @w_g : tensor<16x8xf32> loc("/lin/acc/write")
    // A plain matmul's product (x2^T dy2), the read before the GEMM, the gradient the add's lhs: beta = 1.
    %u = ptrain.state_read @u_g : tensor<8x16xf32> loc("/mm/acc/read")
    %x2t = ptrain.transpose %x2 {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32> loc("/mm/xT")
    %du = ptrain.matmul %x2t, %dy2 : tensor<8x4xf32>, tensor<4x16xf32> loc("/mm/dU")
    %u1 = ptrain.binary add %du, %u : tensor<8x16xf32>, tensor<8x16xf32> loc("/mm/acc/add")
    ptrain.state_write %u1 to @u_g : tensor<8x16xf32> loc("/mm/acc/write")
    // Kept: the old value has a second use (returned).
    %kp = ptrain.matmul %xt, %dy : tensor<2x8x4xf32>, tensor<2x4x16xf32> loc("/kept/dW")
    %kwt = ptrain.sum_to %kp : tensor<2x8x16xf32> -> tensor<8x16xf32> loc("/kept/dW/sum")
    %kw = ptrain.transpose %kwt {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32> loc("/kept/dWT")
    %k = ptrain.state_read @k_g : tensor<16x8xf32> loc("/kept/acc/read")
    %k1 = ptrain.binary add %k, %kw : tensor<16x8xf32>, tensor<16x8xf32> loc("/kept/acc/add")
    ptrain.state_write %k1 to @k_g : tensor<16x8xf32> loc("/kept/acc/write")
    // Kept: the state is read again between the GEMM and the write.
    %rp = ptrain.matmul %xt, %dy : tensor<2x8x4xf32>, tensor<2x4x16xf32> loc("/reread/dW")
    %rwt = ptrain.sum_to %rp : tensor<2x8x16xf32> -> tensor<8x16xf32> loc("/reread/dW/sum")
    %rw = ptrain.transpose %rwt {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32> loc("/reread/dWT")
    %r = ptrain.state_read @r_g : tensor<16x8xf32> loc("/reread/acc/read")
    %r1 = ptrain.binary add %r, %rw : tensor<16x8xf32>, tensor<16x8xf32> loc("/reread/acc/add")
    %r2 = ptrain.state_read @r_g : tensor<16x8xf32> loc("/reread/again")
    ptrain.state_write %r1 to @r_g : tensor<16x8xf32> loc("/reread/acc/write")
    // Kept: the sum is written to another state than the one read.
    %op = ptrain.matmul %xt, %dy : tensor<2x8x4xf32>, tensor<2x4x16xf32> loc("/other/dW")
    %owt = ptrain.sum_to %op : tensor<2x8x16xf32> -> tensor<8x16xf32> loc("/other/dW/sum")
    %ow = ptrain.transpose %owt {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32> loc("/other/dWT")
    %o = ptrain.state_read @o_g : tensor<16x8xf32> loc("/other/acc/read")
    %o1 = ptrain.binary add %o, %ow : tensor<16x8xf32>, tensor<16x8xf32> loc("/other/acc/add")
    ptrain.state_write %o1 to @s_g : tensor<16x8xf32> loc("/other/acc/write")
    // Kept: a contraction of 2 x 160 = 320 > 256, which BLAS may sum in more than one pass (other bits).
    %xlt = ptrain.transpose %xl {perm = array<i64: 0, 2, 1>} : tensor<2x160x8xf32> -> tensor<2x8x160xf32> loc("/long/xT")
    %lp = ptrain.matmul %xlt, %dyl : tensor<2x8x160xf32>, tensor<2x160x16xf32> loc("/long/dW")
    %lwt = ptrain.sum_to %lp : tensor<2x8x16xf32> -> tensor<8x16xf32> loc("/long/dW/sum")
    %lw = ptrain.transpose %lwt {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32> loc("/long/dWT")
    %l = ptrain.state_read @l_g : tensor<16x8xf32> loc("/long/acc/read")
    %l1 = ptrain.binary add %l, %lw : tensor<16x8xf32>, tensor<16x8xf32> loc("/long/acc/add")
    ptrain.state_write %l1 to @l_g : tensor<16x8xf32> loc("/long/acc/write")
    // Kept: a call between the GEMM and the write (a function may read or write the state).
    %cp = ptrain.matmul %xt, %dy : tensor<2x8x4xf32>, tensor<2x4x16xf32> loc("/call/dW")
    %cwt = ptrain.sum_to %cp : tensor<2x8x16xf32> -> tensor<8x16xf32> loc("/call/dW/sum")
    %cw = ptrain.transpose %cwt {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32> loc("/call/dWT")
    %c = ptrain.state_read @c_g : tensor<16x8xf32> loc("/call/acc/read")
    %c1 = ptrain.binary add %c, %cw : tensor<16x8xf32>, tensor<16x8xf32> loc("/call/acc/add")
    func.call @touch() : () -> () loc("/call/touch")
    ptrain.state_write %c1 to @c_g : tensor<16x8xf32> loc("/call/acc/write")
    // Kept: the product has a second use (returned), so it must be the product alone.
    %pp = ptrain.matmul %x2t, %dy2 : tensor<8x4xf32>, tensor<4x16xf32> loc("/twice/dP")
    %pr = ptrain.state_read @p_g : tensor<8x16xf32> loc("/twice/acc/read")
    %p1 = ptrain.binary add %pr, %pp : tensor<8x16xf32>, tensor<8x16xf32> loc("/twice/acc/add")
    ptrain.state_write %p1 to @p_g : tensor<8x16xf32> loc("/twice/acc/write")
    return %k, %r2, %pp : tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>
  }
}

// CHECK-LABEL: ptrain_step_acc(
// CHECK: // "/lin/dW/sum"
// CHECK-NEXT: // ptrain.sum_to
// CHECK-NEXT: float *[[DW:v[0-9]+]] = state_{{[0-9]+}}_w_grad;
// CHECK-NEXT: {
// CHECK-NEXT: // accumulated into its gradient state: C = the state, beta = 1 (GemmFusion.h)
// CHECK-NEXT: // the transpose of the product: the GEMM in its own operand roles, transposed through scratch (GemmFusion.h)
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_gemm_transposed_f32(1, 0, 8, 16, 8, 1.0f, arg0, arg1, 1.0f, [[DW]]));
// CHECK-NOT: "/lin/acc/read"
// CHECK: // "/lin/acc/add"
// CHECK-NEXT: // ptrain.binary
// CHECK: // an alias: the GEMM of its gradient accumulated into the state (GemmFusion.h)
// CHECK: // "/lin/acc/write"
// CHECK-NEXT: // ptrain.state_write
// CHECK-NEXT: {
// CHECK-NEXT: // in place: the GEMM of its value accumulated into the state (GemmFusion.h)
// CHECK-NEXT: }
// CHECK: // "/mm/dU"
// CHECK-NEXT: // ptrain.matmul
// CHECK-NEXT: float *[[DU:v[0-9]+]] = state_{{[0-9]+}}_u_grad;
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_f32(1, 0, 1, 8, 16, 4, 1.0f, arg2, 0, arg3, 0, 1.0f, [[DU]], 128));
// CHECK: // "/mm/acc/write"
// CHECK: // in place: the GEMM of its value accumulated into the state (GemmFusion.h)
// CHECK: // "/kept/dW/sum"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_transposed_f32(1, 0, 8, 16, 8, 1.0f, arg0, arg1, 0.0f,
// CHECK: // "/kept/acc/add"
// CHECK: PTRAIN_STEP_CALL(ptrain_binary_f32(PTRAIN_BINARY_ADD,
// CHECK: // "/kept/acc/write"
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes(
// CHECK: // "/reread/dW/sum"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_transposed_f32(1, 0, 8, 16, 8, 1.0f, arg0, arg1, 0.0f,
// CHECK: // "/reread/acc/add"
// CHECK: PTRAIN_STEP_CALL(ptrain_binary_f32(PTRAIN_BINARY_ADD,
// CHECK: // "/reread/acc/write"
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes(
// CHECK: // "/other/dW/sum"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_transposed_f32(1, 0, 8, 16, 8, 1.0f, arg0, arg1, 0.0f,
// CHECK: // "/other/acc/add"
// CHECK: PTRAIN_STEP_CALL(ptrain_binary_f32(PTRAIN_BINARY_ADD,
// CHECK: // "/other/acc/write"
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes(
// CHECK: // "/long/dW/sum"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_transposed_f32(1, 0, 8, 16, 320, 1.0f, arg4, arg5, 0.0f,
// CHECK: // "/long/acc/add"
// CHECK: PTRAIN_STEP_CALL(ptrain_binary_f32(PTRAIN_BINARY_ADD,
// CHECK: // "/long/acc/write"
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes(
// CHECK: // "/call/dW/sum"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_transposed_f32(1, 0, 8, 16, 8, 1.0f, arg0, arg1, 0.0f,
// CHECK: // "/call/acc/add"
// CHECK: PTRAIN_STEP_CALL(ptrain_binary_f32(PTRAIN_BINARY_ADD,
// CHECK: // "/call/acc/write"
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes(
// CHECK: // "/twice/dP"
// CHECK: PTRAIN_STEP_CALL(ptrain_gemm_f32(1, 0, 1, 8, 16, 4, 1.0f, arg2, 0, arg3, 0, 0.0f,
// CHECK: // "/twice/acc/add"
// CHECK: PTRAIN_STEP_CALL(ptrain_binary_f32(PTRAIN_BINARY_ADD,
// CHECK: // "/twice/acc/write"
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes(
// CHECK: // func.return
