// RUN: ptrain-translate --emit-cuda %s | FileCheck %s
// RUN: ptrain-translate --emit-cuda --emit-cuda-outline=false %s | FileCheck %s --check-prefix=INLINE
// RUN: ptrain-translate --emit-cuda %s -o %t.cu && c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cu

// Eight identical layers (as test/Target/Cpp/emit-cpp-outline.mlir) through --emit-cuda: the last seven are one
// host function on device pointers, called per layer with its row (arena offsets and its weight's offset in
// d_states); --emit-cuda-outline=false writes them inline (include/ptrain/Target/Common/BlockOutliner.h).
module {
  ptrain.state @w0 key "l0.w" kind parameter : tensor<8x8xf32>
  ptrain.state @w1 key "l1.w" kind parameter : tensor<8x8xf32>
  ptrain.state @w2 key "l2.w" kind parameter : tensor<8x8xf32>
  ptrain.state @w3 key "l3.w" kind parameter : tensor<8x8xf32>
  ptrain.state @w4 key "l4.w" kind parameter : tensor<8x8xf32>
  ptrain.state @w5 key "l5.w" kind parameter : tensor<8x8xf32>
  ptrain.state @w6 key "l6.w" kind parameter : tensor<8x8xf32>
  ptrain.state @w7 key "l7.w" kind parameter : tensor<8x8xf32>
  func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %w0 = ptrain.state_read @w0 : tensor<8x8xf32> loc("l0.w")
    %a0 = ptrain.matmul %x, %w0 : tensor<4x8xf32>, tensor<8x8xf32> loc("/l0/MatMul")
    %g0 = ptrain.gelu %a0 : tensor<4x8xf32> loc("/l0/Gelu")
    %s0 = ptrain.binary mul %g0, %a0 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l0/Mul")
    %r0 = ptrain.binary add %s0, %x : tensor<4x8xf32>, tensor<4x8xf32> loc("/l0/Add")
    %w1 = ptrain.state_read @w1 : tensor<8x8xf32> loc("l1.w")
    %a1 = ptrain.matmul %r0, %w1 : tensor<4x8xf32>, tensor<8x8xf32> loc("/l1/MatMul")
    %g1 = ptrain.gelu %a1 : tensor<4x8xf32> loc("/l1/Gelu")
    %s1 = ptrain.binary mul %g1, %a1 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l1/Mul")
    %r1 = ptrain.binary add %s1, %r0 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l1/Add")
    %w2 = ptrain.state_read @w2 : tensor<8x8xf32> loc("l2.w")
    %a2 = ptrain.matmul %r1, %w2 : tensor<4x8xf32>, tensor<8x8xf32> loc("/l2/MatMul")
    %g2 = ptrain.gelu %a2 : tensor<4x8xf32> loc("/l2/Gelu")
    %s2 = ptrain.binary mul %g2, %a2 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l2/Mul")
    %r2 = ptrain.binary add %s2, %r1 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l2/Add")
    %w3 = ptrain.state_read @w3 : tensor<8x8xf32> loc("l3.w")
    %a3 = ptrain.matmul %r2, %w3 : tensor<4x8xf32>, tensor<8x8xf32> loc("/l3/MatMul")
    %g3 = ptrain.gelu %a3 : tensor<4x8xf32> loc("/l3/Gelu")
    %s3 = ptrain.binary mul %g3, %a3 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l3/Mul")
    %r3 = ptrain.binary add %s3, %r2 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l3/Add")
    %w4 = ptrain.state_read @w4 : tensor<8x8xf32> loc("l4.w")
    %a4 = ptrain.matmul %r3, %w4 : tensor<4x8xf32>, tensor<8x8xf32> loc("/l4/MatMul")
    %g4 = ptrain.gelu %a4 : tensor<4x8xf32> loc("/l4/Gelu")
    %s4 = ptrain.binary mul %g4, %a4 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l4/Mul")
    %r4 = ptrain.binary add %s4, %r3 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l4/Add")
    %w5 = ptrain.state_read @w5 : tensor<8x8xf32> loc("l5.w")
    %a5 = ptrain.matmul %r4, %w5 : tensor<4x8xf32>, tensor<8x8xf32> loc("/l5/MatMul")
    %g5 = ptrain.gelu %a5 : tensor<4x8xf32> loc("/l5/Gelu")
    %s5 = ptrain.binary mul %g5, %a5 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l5/Mul")
    %r5 = ptrain.binary add %s5, %r4 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l5/Add")
    %w6 = ptrain.state_read @w6 : tensor<8x8xf32> loc("l6.w")
    %a6 = ptrain.matmul %r5, %w6 : tensor<4x8xf32>, tensor<8x8xf32> loc("/l6/MatMul")
    %g6 = ptrain.gelu %a6 : tensor<4x8xf32> loc("/l6/Gelu")
    %s6 = ptrain.binary mul %g6, %a6 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l6/Mul")
    %r6 = ptrain.binary add %s6, %r5 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l6/Add")
    %w7 = ptrain.state_read @w7 : tensor<8x8xf32> loc("l7.w")
    %a7 = ptrain.matmul %r6, %w7 : tensor<4x8xf32>, tensor<8x8xf32> loc("/l7/MatMul")
    %g7 = ptrain.gelu %a7 : tensor<4x8xf32> loc("/l7/Gelu")
    %s7 = ptrain.binary mul %g7, %a7 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l7/Mul")
    %r7 = ptrain.binary add %s7, %r6 : tensor<4x8xf32>, tensor<4x8xf32> loc("/l7/Add")
    return %r7 : tensor<4x8xf32>
  }
}

// CHECK: //===--- Repeated blocks (1 functions for 8 calls)
// The rows: the arena offset of the layer's result and its weight's offset in d_states (its input is a
// parameter: the first layer's is the argument).
// CHECK: const int64_t kptrain_block_0_rows[8][{{[0-9]+}}] = {
// CHECK: ptrain_status_t ptrain_block_0(const int64_t *row, const float *[[IN:x[0-9]+]]) {
// CHECK: float *{{x[0-9]+}} = reinterpret_cast<float *>(d_states + row[{{[0-9]}}]);
// CHECK-COUNT-1: ptrain_cuda_gemm_f32(
// CHECK: return PTRAIN_OK;
// CHECK-LABEL: ptrain_status_t device_forward(const float *d_arg0, float *d_out_0) {
// The first layer reads the argument, the others the previous layer's result: the same block, its input a
// const pointer parameter (the live-ins match up to const; BlockOutliner.cpp). A pointer into the arena is
// passed as its expression: the caller declares no pointer for it. The weight, a state read used in place, is
// declared where first named, inside the block (StepFunction::finishChunk, as on the CPU): no op of its own.
// CHECK: // ptrain_block_0 (4 ops): "/l0/MatMul" .. "/l0/Add"
// CHECK-NEXT: PTRAIN_STEP_FORWARD(ptrain_block_0(kptrain_block_0_rows[0], d_arg0));
// CHECK: // ptrain_block_0 (4 ops): "/l1/MatMul" .. "/l1/Add"
// CHECK-NEXT: PTRAIN_STEP_FORWARD(ptrain_block_0(kptrain_block_0_rows[1], reinterpret_cast<float *>(d_arena + {{[0-9]+}})));
// CHECK: PTRAIN_STEP_FORWARD(ptrain_block_0(kptrain_block_0_rows[7], reinterpret_cast<float *>(d_arena + {{[0-9]+}})));
// The last layer's result is read after its call (the copy to d_out_0): declared again.
// CHECK-NEXT: float *[[R:v[0-9]+]] = reinterpret_cast<float *>(d_arena + {{[0-9]+}});
// CHECK: ptrain_cuda_copy_bytes([[R]], 128, d_out_0)

// INLINE-NOT: ptrain_block_
// INLINE-COUNT-8: ptrain_cuda_gemm_f32(
