// RUN: ptrain-translate --emit-cpp %s --emit-cpp-kernels=%t.o --emit-cpp-kernels-cpu=x86-64-v3 | FileCheck %s
// RUN: ptrain-translate --emit-cpp %s --emit-cpp-kernels=%t.o -o %t.cpp && c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp
// RUN: ptrain-translate --emit-cpp %s | FileCheck %s --check-prefix=OFF
// RUN: not ptrain-translate --emit-cpp %s --emit-cpp-kernels=%t.o --emit-cpp-kernels-cpu=no-such-cpu 2>&1 | FileCheck %s --check-prefix=BADCPU

// --emit-cpp-kernels (docs/GeneratedKernels.md): the chain of a scale, a mask add and the softmax is one call of
// its generated kernel at the chain's last op; ptrain_step_init checks the extensions of the requested CPU (x86-64-v3: AVX2, FMA);
// without the option the runtime's kernel is called per op.
// CHECK: extern "C" void ptrain_kernel_0(const float *, const float *, const float *, float *);
// CHECK-LABEL: ptrain_step_init(
// CHECK: if (!__builtin_cpu_supports("fma"))
// CHECK-NEXT: return stepError("ptrain_step_init: the generated kernels were compiled for x86-64-v3, which has fma, and this CPU has not
// CHECK: __builtin_cpu_supports("avx2")
// CHECK-NOT: avx512
// CHECK-LABEL: ptrain_step_f(
// CHECK-COUNT-2: // computed by ptrain_kernel_0 at the last op of its chain
// CHECK: // 3 ops in one generated kernel
// CHECK-NEXT: ptrain_kernel_0(arg0, [[SCALE:v[0-9]+]], arg1, [[OUT:v[0-9]+]]);
// CHECK-NOT: ptrain_softmax_fwd_f32
// CHECK: return
// OFF-NOT: ptrain_kernel_
// OFF-COUNT-2: ptrain_binary_f32(
// OFF: ptrain_softmax_fwd_f32(
// OFF-NOT: __builtin_cpu_supports
// BADCPU: --emit-cpp-kernels: no target machine: unknown CPU 'no-such-cpu'
module {
  func.func @f(%x: tensor<2x4x8x8xf32>, %mask: tensor<8x8xf32>) -> tensor<2x4x8x8xf32> {
    %scale = arith.constant dense<0.125> : tensor<f32>
    %0 = ptrain.binary mul %x, %scale : tensor<2x4x8x8xf32>, tensor<f32>
    %1 = ptrain.binary add %0, %mask : tensor<2x4x8x8xf32>, tensor<8x8xf32>
    %2 = ptrain.softmax %1 {axis = -1 : i64} : tensor<2x4x8x8xf32>
    return %2 : tensor<2x4x8x8xf32>
  }
}
