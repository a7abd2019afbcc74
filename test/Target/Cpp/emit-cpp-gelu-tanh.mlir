// RUN: ptrain-translate --emit-cpp %s | FileCheck %s
// RUN: ptrain-translate --emit-cpp %s -o %t.cpp && c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I %ptrain_include %t.cpp

// GELU in both forms and their gradients: the tanh approximation (GPT-2's gelu_new, ONNX Gelu approximate="tanh")
// calls its own kernels, the erf form the exact ones; the end-to-end check against onnxruntime is ort_forward.py.
module {
  func.func @f(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
    // CHECK-LABEL: ptrain_step_f(
    // CHECK: ptrain_gelu_tanh_fwd_f32({{.*}}, 16,
    %t = ptrain.gelu %x {approximate = #ptrain<gelu_approximation tanh>} : tensor<2x8xf32>
    // CHECK: ptrain_gelu_fwd_f32({{.*}}, 16,
    %e = ptrain.gelu %x : tensor<2x8xf32>
    // CHECK: ptrain_gelu_tanh_bwd_f32({{.*}}, 16,
    %dt = ptrain.gelu_grad %dy, %x {approximate = #ptrain<gelu_approximation tanh>} : tensor<2x8xf32>
    // CHECK: ptrain_gelu_bwd_f32({{.*}}, 16,
    %de = ptrain.gelu_grad %dy, %x : tensor<2x8xf32>
    return %t, %e, %dt, %de : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  }
}
