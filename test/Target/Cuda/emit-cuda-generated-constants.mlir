// RUN: ptrain-translate --emit-cuda %s | FileCheck %s
// RUN: ptrain-translate --emit-cuda %s -o %t.cu && c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cu

// Causal masks and iotas over 64 elements are not printed (issue 23; lib/Target/Cuda/EmitCuda.cpp, emitConstant):
// as on the CPU (include/ptrain/Analysis/ConstantForm.h), the kernels of lib/Runtime/cuda/Generate.cu write them
// into their range of d_constants when the device is set up: a [9, 9] i1 mask (the bool mask of a GPT-2 export,
// one uint8_t per element), a [9, 9] f32 additive mask (0 kept, -1e9 masked), and a [2, 40] iota (positions
// repeated over the batch).
module {
  func.func @forward(%x: tensor<9x9xf32>, %p: tensor<2x40xi64>) -> (tensor<9x9xf32>, tensor<2x40xi64>) {
    %mask = arith.constant dense<[[true, false, false, false, false, false, false, false, false], [true, true, false, false, false, false, false, false, false], [true, true, true, false, false, false, false, false, false], [true, true, true, true, false, false, false, false, false], [true, true, true, true, true, false, false, false, false], [true, true, true, true, true, true, false, false, false], [true, true, true, true, true, true, true, false, false], [true, true, true, true, true, true, true, true, false], [true, true, true, true, true, true, true, true, true]]> : tensor<9x9xi1> loc("bool mask")
    %add = arith.constant dense<[[0.0, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09], [0.0, 0.0, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09], [0.0, 0.0, 0.0, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09], [0.0, 0.0, 0.0, 0.0, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09], [0.0, 0.0, 0.0, 0.0, 0.0, -1.0e+09, -1.0e+09, -1.0e+09, -1.0e+09], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0e+09, -1.0e+09, -1.0e+09], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0e+09, -1.0e+09], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0e+09], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<9x9xf32> loc("additive mask")
    %pos = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39]]> : tensor<2x40xi64> loc("positions")
    %ninf = arith.constant dense<-1.0e+09> : tensor<9x9xf32> loc("fill")
    %a = ptrain.select %mask, %x, %ninf : tensor<9x9xi1>, tensor<9x9xf32>, tensor<9x9xf32> loc("select")
    %b = ptrain.binary add %a, %add : tensor<9x9xf32>, tensor<9x9xf32> loc("b")
    %q = ptrain.binary add %p, %pos : tensor<2x40xi64>, tensor<2x40xi64> loc("q")
    return %b, %q : tensor<9x9xf32>, tensor<2x40xi64>
  }
}

// No literal of the generated constants: no host array of 81 or 80 elements.
// CHECK-NOT: [81] = {
// CHECK-NOT: [80] = {
// CHECK: "bool mask"{{.*}}: 81 x uint8_t, device offset [[M:[0-9]+]]: a causal mask [1, 9, 9], generated at set-up
// CHECK: "additive mask"{{.*}}: 81 x float, device offset [[A:[0-9]+]]: a causal mask [1, 9, 9], generated at set-up
// CHECK: "positions"{{.*}}: 80 x int64_t, device offset [[P:[0-9]+]]: an iota, generated at set-up
// CHECK-LABEL: ptrain_status_t setUpDevice() {
// CHECK: static const uint8_t keep = 1, masked = 0;
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_causal_mask(d_constants + [[M]], 1, 1, 9, 9, 0, &keep, &masked));
// CHECK: static const float keep = 0.0f, masked = -1e+09f;
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_causal_mask(d_constants + [[A]], 4, 1, 9, 9, 0, &keep, &masked));
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_iota_i64(reinterpret_cast<int64_t *>(d_constants + [[P]]), 80, 40, 0, 1));
// The functions read them from d_constants like any constant.
// CHECK-LABEL: ptrain_status_t device_forward(
// CHECK: const uint8_t *{{v[0-9]+}} = reinterpret_cast<const uint8_t *>(d_constants + [[M]]);
