// RUN: ptrain-opt %s | ptrain-opt | FileCheck %s
// RUN: ptrain-opt %s --mlir-print-op-generic | ptrain-opt | FileCheck %s

// The backward ops the gradient rules build, and the optimizer update, round-trip.

// CHECK-LABEL: func.func @backward_ops
func.func @backward_ops(%dy: tensor<4x64x128xf32>, %x: tensor<4x64x128xf32>, %g: tensor<128xf32>,
                        %ids: tensor<4x64xi64>, %p: tensor<4x4x64x64xf32>, %logits: tensor<4x63x256xf32>,
                        %labels: tensor<4x63xi64>, %dl: tensor<f32>) {
  // CHECK: ptrain.sum_to %{{.*}} : tensor<4x64x128xf32> -> tensor<128xf32>
  %0 = ptrain.sum_to %dy : tensor<4x64x128xf32> -> tensor<128xf32>
  // CHECK: ptrain.pad %{{.*}} {high = array<i64: 0, 1, 0>, low = array<i64: 0, 0, 0>} : tensor<4x63x256xf32> -> tensor<4x64x256xf32>
  %1 = ptrain.pad %logits {low = array<i64: 0, 0, 0>, high = array<i64: 0, 1, 0>} : tensor<4x63x256xf32> -> tensor<4x64x256xf32>
  // CHECK: ptrain.layer_norm_grad {{.*}} -> tensor<4x64x128xf32>, tensor<128xf32>, tensor<128xf32>
  %dx, %dg, %db = ptrain.layer_norm_grad %dy, %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64}
      : tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<128xf32> -> tensor<4x64x128xf32>, tensor<128xf32>, tensor<128xf32>
  // Without a bias in the forward, no bias gradient.
  // CHECK: ptrain.layer_norm_grad {{.*}} -> tensor<4x64x128xf32>, tensor<128xf32>{{$}}
  %dx2, %dg2 = ptrain.layer_norm_grad %dy, %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64}
      : tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<128xf32> -> tensor<4x64x128xf32>, tensor<128xf32>
  // CHECK: ptrain.softmax_grad %{{.*}}, %{{.*}} {axis = -1 : i64} : tensor<4x4x64x64xf32>
  %2 = ptrain.softmax_grad %p, %p {axis = -1 : i64} : tensor<4x4x64x64xf32>
  // CHECK: ptrain.gelu_grad %{{.*}}, %{{.*}} : tensor<4x64x128xf32>
  %3 = ptrain.gelu_grad %dy, %x : tensor<4x64x128xf32>
  // CHECK: ptrain.embedding_grad %{{.*}}, %{{.*}} : tensor<4x64x128xf32>, tensor<4x64xi64> -> tensor<256x128xf32>
  %4 = ptrain.embedding_grad %dy, %ids : tensor<4x64x128xf32>, tensor<4x64xi64> -> tensor<256x128xf32>
  // CHECK: ptrain.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<4x63x256xf32>, tensor<4x63xi64>
  %5 = ptrain.cross_entropy_grad %dl, %logits, %labels : tensor<f32>, tensor<4x63x256xf32>, tensor<4x63xi64>
  // CHECK: ptrain.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} {ignore_index = -100 : i64} : tensor<f32>, tensor<4x63x256xf32>, tensor<4x63xi64>
  %ceg = ptrain.cross_entropy_grad %dl, %logits, %labels {ignore_index = -100 : i64} : tensor<f32>, tensor<4x63x256xf32>, tensor<4x63xi64>
  return
}

// CHECK-LABEL: func.func @adamw
func.func @adamw(%p: tensor<256x128xf32>, %g: tensor<256x128xf32>, %m: tensor<256x128xf32>, %v: tensor<256x128xf32>,
                 %t: tensor<i64>) -> tensor<256x128xf32> {
  // CHECK: ptrain.adamw {{.*}} {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, epsilon = 1.000000e-08 : f64, schedule = #ptrain.lr_schedule<peak = 3.000000e-04 : f64, warmup = 100, total = 2000, min_ratio = 1.000000e-01 : f64>, weight_decay = 1.000000e-01 : f64} : tensor<256x128xf32>, tensor<i64>
  %p1, %m1, %v1 = ptrain.adamw %p, %g, %m, %v, %t {schedule = #ptrain.lr_schedule<peak = 3.0e-04 : f64, warmup = 100,
      total = 2000, min_ratio = 1.0e-01 : f64>, beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64,
      weight_decay = 0.1 : f64} : tensor<256x128xf32>, tensor<i64>
  return %p1 : tensor<256x128xf32>
}

// CHECK-LABEL: func.func @onnx_node
func.func @onnx_node(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: ptrain.onnx_node "Softmax"(%{{.*}}) {domain = "", onnx_attrs = {axis = -1 : i64}, opset = 17 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = ptrain.onnx_node "Softmax"(%x) {domain = "", opset = 17 : i64, onnx_attrs = {axis = -1 : i64}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// Model ops added with the training step: slice and concat.
// CHECK-LABEL: func.func @slice_concat
func.func @slice_concat(%x: tensor<4x64x256xf32>) -> tensor<4x64x256xf32> {
  // CHECK: ptrain.slice %{{.*}} {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 4, 63, 256>} : tensor<4x64x256xf32> -> tensor<4x63x256xf32>
  %a = ptrain.slice %x {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 4, 63, 256>} : tensor<4x64x256xf32> -> tensor<4x63x256xf32>
  %b = ptrain.slice %x {offsets = array<i64: 0, 63, 0>, sizes = array<i64: 4, 1, 256>} : tensor<4x64x256xf32> -> tensor<4x1x256xf32>
  // CHECK: ptrain.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : tensor<4x63x256xf32>, tensor<4x1x256xf32> -> tensor<4x64x256xf32>
  %c = ptrain.concat %a, %b {axis = 1 : i64} : tensor<4x63x256xf32>, tensor<4x1x256xf32> -> tensor<4x64x256xf32>
  return %c : tensor<4x64x256xf32>
}
