// RUN: ptrain-translate --emit-cuda %s | FileCheck %s
// RUN: ptrain-translate --emit-cuda %s -o %t.cu && c++ -x c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cu

// Splat constants over 64 elements are never printed (issue 23; lib/Target/Cuda/EmitCuda.cpp, emitConstant): a
// splat whose bits are all zero (the zeros that reset a gradient) is zeroed in its range of d_constants at
// set-up, any other splat filled from a host vector of its value; up to 64 elements, and every other constant,
// stay host arrays copied to the device.
module {
  func.func @forward(%x: tensor<32x8xf32>, %i: tensor<128xi64>) -> (tensor<32x8xf32>, tensor<128xi64>) {
    %zero = arith.constant dense<0.0> : tensor<32x8xf32> loc("zeros")
    %half = arith.constant dense<0.5> : tensor<32x8xf32> loc("halves")
    %neg = arith.constant dense<-0.0> : tensor<32x8xf32> loc("negative zeros")
    %small = arith.constant dense<2.0> : tensor<32x2xf32> loc("small")
    %ones = arith.constant dense<1> : tensor<128xi64> loc("ones")
    %a = ptrain.binary add %x, %zero : tensor<32x8xf32>, tensor<32x8xf32> loc("a")
    %b = ptrain.binary mul %a, %half : tensor<32x8xf32>, tensor<32x8xf32> loc("b")
    %c = ptrain.binary add %b, %neg : tensor<32x8xf32>, tensor<32x8xf32> loc("c")
    return %c, %ones : tensor<32x8xf32>, tensor<128xi64>
  }
}

// CHECK-NOT: 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f
// CHECK-NOT: 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f
// CHECK: "zeros"{{.*}}: 256 x float, device offset [[Z:[0-9]+]]: a splat of 0.0f, zeroed at set-up
// CHECK: "halves"{{.*}}: 256 x float, device offset [[H:[0-9]+]]: a splat of 0.5f, filled at set-up
// CHECK: "negative zeros"{{.*}}: 256 x float, device offset [[N:[0-9]+]]: a splat of -0.0f, filled at set-up
// CHECK: "small"{{.*}}: 64 x float, device offset {{[0-9]+}}
// CHECK-NEXT: alignas(64) const float [[SMALL:constant_[0-9]+]][64] = {
// CHECK: "ones"{{.*}}: 128 x int64_t, device offset [[O:[0-9]+]]: a splat of 1, filled at set-up
// CHECK-LABEL: ptrain_status_t setUpDevice() {
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_zero_bytes(d_constants + [[Z]], 1024));
// CHECK: std::vector<float> fill(256, 0.5f);
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_copy_to_device(fill.data(), 1024, d_constants + [[H]]));
// CHECK: std::vector<float> fill(256, -0.0f);
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_copy_to_device(fill.data(), 1024, d_constants + [[N]]));
// CHECK: PTRAIN_STEP_CALL(ptrain_cuda_copy_to_device([[SMALL]], 256, d_constants +
// CHECK: std::vector<int64_t> fill(128, 1);
// CHECK-NEXT: PTRAIN_STEP_CALL(ptrain_cuda_copy_to_device(fill.data(), 1024, d_constants + [[O]]));
