// RUN: ptrain-translate --emit-cpp %s --emit-cpp-kernels=%t.o | FileCheck %s
// RUN: ptrain-translate --emit-cpp %s --emit-cpp-kernels=%t.o -o %t.cpp && c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp
// RUN: nm %t.o | FileCheck %s --check-prefix=OBJECT
// RUN: ptrain-translate --emit-cpp %s | FileCheck %s --check-prefix=OFF

// --emit-cpp-kernels (docs/GeneratedKernels.md, "AdamW over a bucket"): the updates of @a and @b form an AdamW
// table whose rows carry their generated kernels (sizes 32 and 8: two kernels), called with the runtime's
// coefficients; @c's and @d's gradients are clipped, so their updates are emitted one at a time, the clip scale's
// mul folded into their shared kernel (8 arguments), which reads the unscaled gradient and the scale (live to @d's
// mul, so no result of @c's update takes its bytes); without the option the runtime's AdamW is called.
// CHECK: extern "C" void ptrain_adamw_kernel_0(float *, float *, float *, float *, float, float, float);
// CHECK: extern "C" void ptrain_adamw_kernel_1(float *, float *, float *, float *, float, float, float);
// CHECK: extern "C" void ptrain_adamw_kernel_2(float *, float *, float *, float *, float *, float, float, float);
// CHECK-LABEL: ptrain_step_optimizer_step(void)
// CHECK: static const AdamWRow rows[2] = {
// CHECK-NEXT: {0, 1, 2, 3, 32, 0.100000001f, true, ptrain_adamw_kernel_0}, // a
// CHECK-NEXT: {4, 5, 6, 7, 8, 0.0f, true, ptrain_adamw_kernel_1}, // b
// CHECK: float adamw_c[3];
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_adamw_coefficients_f32(t, lr, 0.899999976f, 0.949999988f, row.weight_decay, adamw_c));
// CHECK-NEXT: row.kernel(state_f32[row.param + c * run[3]], grad, state_f32[row.m + c * run[5]], state_f32[row.v + c * run[6]], adamw_c[0], adamw_c[1], adamw_c[2]);
// CHECK: // the clip scale's mul, computed by ptrain_adamw_kernel_2 at its AdamW update (--ptrain-outline-adamw)
// CHECK-NOT: ptrain_binary_f32(PTRAIN_BINARY_MUL
// CHECK: float *[[CG:v[0-9]+]] = state_9_c_grad;
// CHECK: PTRAIN_STEP_CALL(ptrain_copy_bytes({{v[0-9]+}}, 32, [[P:v[0-9]+]]));
// CHECK: PTRAIN_STEP_CALL(ptrain_adamw_coefficients_f32(t, lr, 0.899999976f, 0.99000001f, 0.100000001f, adamw_c));
// CHECK-NEXT: ptrain_adamw_kernel_2([[P]], [[CG]], {{v[0-9]+}}, {{v[0-9]+}}, [[S:v[0-9]+]], adamw_c[0], adamw_c[1], adamw_c[2]);
// CHECK: // the clip scale's mul, computed by ptrain_adamw_kernel_2
// CHECK: ptrain_adamw_kernel_2({{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, [[S]], adamw_c[0], adamw_c[1], adamw_c[2]);
// CHECK-NOT: ptrain_adamw_step_f32(
// OBJECT-DAG: T ptrain_adamw_kernel_0
// OBJECT-DAG: T ptrain_adamw_kernel_1
// OBJECT-DAG: T ptrain_adamw_kernel_2
// OFF-NOT: ptrain_adamw_kernel
// OFF: ptrain_adamw_step_f32(
// OFF: ptrain_binary_f32(PTRAIN_BINARY_MUL
// OFF: ptrain_adamw_step_f32(
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
  ptrain.state @d key "d" kind parameter : tensor<8xf32>
  ptrain.state @d_g key "d/grad" kind gradient : tensor<8xf32>
  ptrain.state @d_m key "d/adam_m" kind optimizer_moment : tensor<8xf32>
  ptrain.state @d_v key "d/adam_v" kind optimizer_moment : tensor<8xf32>
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
    %bg = ptrain.state_read @b_g : tensor<8xf32>
    %bm = ptrain.state_read @b_m : tensor<8xf32>
    %bv = ptrain.state_read @b_v : tensor<8xf32>
    %b1, %bm1, %bv1 = ptrain.adamw %b, %bg, %bm, %bv, %t1 {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 10, total = 100, min_ratio = 1.0e-01 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<i64> loc("b")
    ptrain.state_write %b1 to @b : tensor<8xf32>
    ptrain.state_write %bm1 to @b_m : tensor<8xf32>
    ptrain.state_write %bv1 to @b_v : tensor<8xf32>
    %zb = arith.constant dense<0.0> : tensor<8xf32>
    ptrain.state_write %zb to @b_g : tensor<8xf32>
    %cg0 = ptrain.state_read @c_g : tensor<8xf32>
    %ss = ptrain.sum_squares %cg0 : tensor<8xf32> -> tensor<f32>
    %s = ptrain.clip_scale %ss {max_norm = 1.0 : f64} : tensor<f32>
    %c = ptrain.state_read @c : tensor<8xf32>
    %cg = ptrain.state_read @c_g : tensor<8xf32>
    %cgs = ptrain.binary mul %cg, %s : tensor<8xf32>, tensor<f32>
    %cm = ptrain.state_read @c_m : tensor<8xf32>
    %cv = ptrain.state_read @c_v : tensor<8xf32>
    %c2, %cm1, %cv1 = ptrain.adamw %c, %cgs, %cm, %cv, %t1 {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 10, total = 100, min_ratio = 1.0e-01 : f64>, beta1 = 0.9 : f64, beta2 = 0.99 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : tensor<8xf32>, tensor<i64> loc("c")
    ptrain.state_write %c2 to @c : tensor<8xf32>
    ptrain.state_write %cm1 to @c_m : tensor<8xf32>
    ptrain.state_write %cv1 to @c_v : tensor<8xf32>
    %zc = arith.constant dense<0.0> : tensor<8xf32>
    ptrain.state_write %zc to @c_g : tensor<8xf32>
    %d = ptrain.state_read @d : tensor<8xf32>
    %dg = ptrain.state_read @d_g : tensor<8xf32>
    %dgs = ptrain.binary mul %dg, %s : tensor<8xf32>, tensor<f32>
    %dm = ptrain.state_read @d_m : tensor<8xf32>
    %dv = ptrain.state_read @d_v : tensor<8xf32>
    %d2, %dm1, %dv1 = ptrain.adamw %d, %dgs, %dm, %dv, %t1 {schedule = #ptrain.lr_schedule<peak = 1.0e-03 : f64, warmup = 10, total = 100, min_ratio = 1.0e-01 : f64>, beta1 = 0.9 : f64, beta2 = 0.99 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : tensor<8xf32>, tensor<i64> loc("d")
    ptrain.state_write %d2 to @d : tensor<8xf32>
    ptrain.state_write %dm1 to @d_m : tensor<8xf32>
    ptrain.state_write %dv1 to @d_v : tensor<8xf32>
    return
  }
}
