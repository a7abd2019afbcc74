// RUN: ptrain-translate --emit-cpp %s --emit-cpp-kernels=%t.o --emit-cpp-kernels-cpu=x86-64 | FileCheck %s
// RUN: ptrain-translate --emit-cpp %s --emit-cpp-kernels=%t.o -o %t.cpp && c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp
// RUN: ptrain-translate --emit-cpp %s | FileCheck %s --check-prefix=OFF

// GELU in generated kernels (docs/GeneratedKernels.md): bias + GELU + the row softmax that ends the chain (a
// chain may end in a softmax over the last axis, SoftmaxArith.h) is one kernel, called at the softmax; GELU's
// gradient + a residual add is a second chain, ending at the add. No runtime GELU or softmax call is left; without
// --emit-cpp-kernels all are the runtime's kernels op by op.
// CHECK-DAG: extern "C" void ptrain_kernel_0(const float *, const float *, float *);
// CHECK-DAG: extern "C" void ptrain_kernel_1(const float *, const float *, const float *, float *);
// CHECK-LABEL: ptrain_step_f(
// CHECK-NOT: ptrain_gelu_
// CHECK: // computed by ptrain_kernel_0 at the last op of its chain
// CHECK: // ptrain.softmax
// CHECK-NOT: ptrain_softmax_fwd_f32
// CHECK: ptrain_kernel_0(arg0, arg1, [[S:v[0-9]+]]);
// CHECK-NOT: ptrain_gelu_
// CHECK: // computed by ptrain_kernel_1 at the last op of its chain
// CHECK: ptrain_kernel_1(arg2, [[S]], arg3, {{v[0-9]+}});
// CHECK-NOT: ptrain_gelu_
// CHECK: return
// OFF-NOT: ptrain_kernel_
// OFF: ptrain_binary_f32(
// OFF: ptrain_gelu_fwd_f32(
// OFF: ptrain_softmax_fwd_f32(
// OFF: ptrain_gelu_bwd_f32(
// OFF: ptrain_binary_f32(
module {
  func.func @f(%x: tensor<4x16xf32>, %b: tensor<16xf32>, %dy: tensor<4x16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %0 = ptrain.binary add %x, %b : tensor<4x16xf32>, tensor<16xf32>
    %1 = ptrain.gelu %0 : tensor<4x16xf32>
    %s = ptrain.softmax %1 {axis = -1 : i64} : tensor<4x16xf32>
    %2 = ptrain.gelu_grad %dy, %s : tensor<4x16xf32>
    %3 = ptrain.binary add %r, %2 : tensor<4x16xf32>, tensor<4x16xf32>
    return %3 : tensor<4x16xf32>
  }
}
