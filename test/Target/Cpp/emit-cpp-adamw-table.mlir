// RUN: ptrain-translate --emit-cpp %s | FileCheck %s
// RUN: ptrain-translate --emit-cpp %s -o %t.cpp && c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp

// An optimizer step of three parameters (lib/Target/Cpp/AdamWTable.h): the updates of @a and @b (different
// weight decays, both gradients reset) share step, schedule and betas, so they are one table walked by a loop,
// in place on the states; @c's beta2 differs, so its single update stays op by op (copies into the arena).
module attributes {ptrain.onnx_file = "model.onnx"} {
  ptrain.state @a key "a" kind parameter : tensor<4x8xf32>
  ptrain.state @a_g key "a/grad" kind gradient : tensor<4x8xf32>
  ptrain.state @a_m key "a/adam_m" kind optimizer_moment : tensor<4x8xf32>
  ptrain.state @a_v key "a/adam_v" kind optimizer_moment : tensor<4x8xf32>
  ptrain.state @b key "b" kind parameter : tensor<8xf32>
  ptrain.state @b_g key "b/grad" kind gradient : tensor<8xf32>
  ptrain.state @b_m key "b/adam_m" kind optimizer_moment : tensor<8xf32>
  ptrain.state @b_v key "b/adam_v" kind optimizer_moment : tensor<8xf32>
  ptrain.state @c key "c" kind parameter : tensor<8xf32>
  ptrain.state @c_g key "c/grad" kind gradient : tensor<8xf32>
  ptrain.state @c_m key "c/adam_m" kind optimizer_moment : tensor<8xf32>
  ptrain.state @c_v key "c/adam_v" kind optimizer_moment : tensor<8xf32>
  ptrain.state @step key "step" kind step_counter : tensor<i64>
  func.func @optimizer_step() {
    %t = ptrain.state_read @step : tensor<i64>
    %c1 = arith.constant dense<1> : tensor<i64>
    %t1 = ptrain.binary add %t, %c1 : tensor<i64>, tensor<i64>
    ptrain.state_write %t1 to @step : tensor<i64>
    %a = ptrain.state_read @a : tensor<4x8xf32>
    %ag = ptrain.state_read @a_g : tensor<4x8xf32>
    %am = ptrain.state_read @a_m : tensor<4x8xf32>
    %av = ptrain.state_read @a_v : tensor<4x8xf32>
    %a1, %am1, %av1 = ptrain.adamw %a, %ag, %am, %av, %t1 {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 10, total = 100, min_ratio = 1.0e-01 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : tensor<4x8xf32>, tensor<i64> loc("a")
    ptrain.state_write %a1 to @a : tensor<4x8xf32>
    ptrain.state_write %am1 to @a_m : tensor<4x8xf32>
    ptrain.state_write %av1 to @a_v : tensor<4x8xf32>
    %za = arith.constant dense<0.0> : tensor<4x8xf32>
    ptrain.state_write %za to @a_g : tensor<4x8xf32>
    %b = ptrain.state_read @b : tensor<8xf32>
    %bm = ptrain.state_read @b_m : tensor<8xf32>
    %bg = ptrain.state_read @b_g : tensor<8xf32>
    %bv = ptrain.state_read @b_v : tensor<8xf32>
    %b1, %bm1, %bv1 = ptrain.adamw %b, %bg, %bm, %bv, %t1 {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 10, total = 100, min_ratio = 1.0e-01 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<i64> loc("b")
    ptrain.state_write %bv1 to @b_v : tensor<8xf32>
    ptrain.state_write %b1 to @b : tensor<8xf32>
    ptrain.state_write %bm1 to @b_m : tensor<8xf32>
    %zb = arith.constant dense<0.0> : tensor<8xf32>
    ptrain.state_write %zb to @b_g : tensor<8xf32>
    %c = ptrain.state_read @c : tensor<8xf32>
    %cg = ptrain.state_read @c_g : tensor<8xf32>
    %cm = ptrain.state_read @c_m : tensor<8xf32>
    %cv = ptrain.state_read @c_v : tensor<8xf32>
    %c2, %cm1, %cv1 = ptrain.adamw %c, %cg, %cm, %cv, %t1 {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 10, total = 100, min_ratio = 1.0e-01 : f64>, beta1 = 0.9 : f64, beta2 = 0.99 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : tensor<8xf32>, tensor<i64> loc("c")
    ptrain.state_write %c2 to @c : tensor<8xf32>
    ptrain.state_write %cm1 to @c_m : tensor<8xf32>
    ptrain.state_write %cv1 to @c_v : tensor<8xf32>
    %zc = arith.constant dense<0.0> : tensor<8xf32>
    ptrain.state_write %zc to @c_g : tensor<8xf32>
    return
  }
}

// The named state pointers: only those the code names (@c's, read op by op, and the step); the table reads
// @a's and @b's through state_f32.
// CHECK: int64_t *state_i64[13] = {};
// CHECK-NOT: state_0_a
// CHECK-NEXT: float *&state_8_c = state_f32[8];
// CHECK-NOT: state_4_b
// CHECK: int64_t *&state_12_step = state_i64[12];
// CHECK-EMPTY:
// CHECK-LABEL: ptrain_step_optimizer_step(void)
// CHECK: ptrain.adamw x 2 (with their state reads and writes)
// CHECK: // 2 AdamW updates as a table (AdamWTable.h)
// CHECK: static const AdamWRow rows[2] = {
// CHECK-NEXT: {0, 1, 2, 3, 32, 0.100000001f, true}, // a
// CHECK-NEXT: {4, 5, 6, 7, 8, 0.0f, true}, // b
// CHECK-NEXT: };
// The runs: a and b differ in count and decay, so nothing repeats: one run of both rows, once.
// CHECK: static const int64_t runs[1][7] = {
// CHECK-NEXT: {0, 2, 1, 0, 0, 0, 0},
// CHECK-NEXT: };
// CHECK: PTRAIN_STEP_CALL(ptrain_lr_warmup_cosine(t <= 10 ? t - 1 : t, 10, 100, 0.00100000005f, 9.99999975e-05f, &lr));
// CHECK-NEXT: for (const auto &run : runs)
// CHECK-NEXT: for (int64_t c = 0; c < run[2]; ++c)
// CHECK-NEXT: for (int64_t p = 0; p < run[1]; ++p) {
// CHECK-NEXT: const AdamWRow &row = rows[run[0] + p];
// CHECK-NEXT: float *grad = state_f32[row.grad + c * run[4]];
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_adamw_step_f32(state_f32[row.param + c * run[3]], grad, state_f32[row.m + c * run[5]], state_f32[row.v + c * run[6]], row.n, t, lr, 0.899999976f, 0.949999988f, 9.99999994e-09f, row.weight_decay));
// CHECK-NEXT: if (row.zero_grad)
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_zero_bytes(grad, row.n * 4));
// CHECK-NEXT: }
// The single update of @c: op by op.
// CHECK-NOT: AdamWRow
// CHECK: float *[[P:v[0-9]+]] = state_8_c;
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes([[P]], 32, [[C:v[0-9]+]]));
// CHECK: PTRAIN_STEP_CALL(ptrain_adamw_step_f32([[C]], {{.*}}, 0.899999976f, 0.99000001f, 9.99999994e-09f, 0.100000001f));
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes([[C]], 32, state_8_c));
// CHECK: return PTRAIN_OK;
