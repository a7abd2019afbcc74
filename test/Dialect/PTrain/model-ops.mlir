// RUN: ptrain-opt %s | ptrain-opt | FileCheck %s
// RUN: ptrain-opt %s --mlir-print-op-generic | ptrain-opt | FileCheck %s

// The model ops of a GPT block, with their inferred result types.

// CHECK-LABEL: func.func @gpt_block_ops
func.func @gpt_block_ops(%ids: tensor<4x64xi64>, %wte: tensor<256x128xf32>, %g: tensor<128xf32>,
                         %b: tensor<128xf32>, %wqkv: tensor<128x384xf32>, %bqkv: tensor<384xf32>)
    -> (tensor<4x4x64x64xf32>, tensor<4x64x384xf32>, tensor<f32>) {
  // CHECK: %[[X:.*]] = ptrain.embedding %{{.*}}, %{{.*}} : tensor<256x128xf32>, tensor<4x64xi64>
  %x = ptrain.embedding %wte, %ids : tensor<256x128xf32>, tensor<4x64xi64>
  // CHECK: ptrain.layer_norm %[[X]], %{{.*}}, %{{.*}} {axis = -1 : i64, epsilon = 1.000000e-05 : f64} : tensor<4x64x128xf32>, tensor<128xf32>, tensor<128xf32>
  %h = ptrain.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x64x128xf32>, tensor<128xf32>, tensor<128xf32>
  // CHECK: ptrain.matmul %{{.*}}, %{{.*}} : tensor<4x64x128xf32>, tensor<128x384xf32>
  %qkv0 = ptrain.matmul %h, %wqkv : tensor<4x64x128xf32>, tensor<128x384xf32>
  // CHECK: ptrain.binary add %{{.*}}, %{{.*}} : tensor<4x64x384xf32>, tensor<384xf32>
  %qkv = ptrain.binary add %qkv0, %bqkv : tensor<4x64x384xf32>, tensor<384xf32>
  // CHECK: %{{.*}}:3 = ptrain.split %{{.*}} {axis = 2 : i64, sizes = array<i64: 128, 128, 128>} : tensor<4x64x384xf32> -> tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32>
  %q, %k, %v = ptrain.split %qkv {axis = 2 : i64, sizes = array<i64: 128, 128, 128>} : tensor<4x64x384xf32> -> tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32>
  // CHECK: ptrain.reshape %{{.*}} : tensor<4x64x128xf32> -> tensor<4x64x4x32xf32>
  %qh = ptrain.reshape %q : tensor<4x64x128xf32> -> tensor<4x64x4x32xf32>
  %kh = ptrain.reshape %k : tensor<4x64x128xf32> -> tensor<4x64x4x32xf32>
  // CHECK: ptrain.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3>} : tensor<4x64x4x32xf32> -> tensor<4x4x64x32xf32>
  %qt = ptrain.transpose %qh {perm = array<i64: 0, 2, 1, 3>} : tensor<4x64x4x32xf32> -> tensor<4x4x64x32xf32>
  %kt = ptrain.transpose %kh {perm = array<i64: 0, 2, 3, 1>} : tensor<4x64x4x32xf32> -> tensor<4x4x32x64xf32>
  // Batched matmul: [4, 4, 64, 32] x [4, 4, 32, 64].
  %s = ptrain.matmul %qt, %kt : tensor<4x4x64x32xf32>, tensor<4x4x32x64xf32>
  // Mixed precision: bf16 operands, fp32 accumulation and result.
  // CHECK: %[[QB:.*]] = ptrain.cast %{{.*}} : tensor<4x4x64x32xf32> -> tensor<4x4x64x32xbf16>
  // CHECK: ptrain.matmul %[[QB]], %{{.*}} {accumulate = f32} : tensor<4x4x64x32xbf16>, tensor<4x4x32x64xbf16>
  %qb = ptrain.cast %qt : tensor<4x4x64x32xf32> -> tensor<4x4x64x32xbf16>
  %kb = ptrain.cast %kt : tensor<4x4x32x64xf32> -> tensor<4x4x32x64xbf16>
  %sb = ptrain.matmul %qb, %kb {accumulate = f32} : tensor<4x4x64x32xbf16>, tensor<4x4x32x64xbf16>
  %sbsum = ptrain.binary add %s, %sb : tensor<4x4x64x64xf32>, tensor<4x4x64x64xf32>
  // Mixed precision: f16 operands (precision=fp16), fp32 accumulation and result.
  // CHECK: %[[QH:.*]] = ptrain.cast %{{.*}} : tensor<4x4x64x32xf32> -> tensor<4x4x64x32xf16>
  // CHECK: ptrain.matmul %[[QH]], %{{.*}} {accumulate = f32} : tensor<4x4x64x32xf16>, tensor<4x4x32x64xf16>
  %qf = ptrain.cast %qt : tensor<4x4x64x32xf32> -> tensor<4x4x64x32xf16>
  %kf = ptrain.cast %kt : tensor<4x4x32x64xf32> -> tensor<4x4x32x64xf16>
  %sf = ptrain.matmul %qf, %kf {accumulate = f32} : tensor<4x4x64x32xf16>, tensor<4x4x32x64xf16>
  %sfsum = ptrain.binary add %sbsum, %sf : tensor<4x4x64x64xf32>, tensor<4x4x64x64xf32>
  // CHECK: ptrain.softmax %{{.*}} {axis = -1 : i64} : tensor<4x4x64x64xf32>
  %p = ptrain.softmax %s {axis = -1 : i64} : tensor<4x4x64x64xf32>
  // CHECK: ptrain.gelu %{{.*}} : tensor<4x64x384xf32>
  %a = ptrain.gelu %qkv : tensor<4x64x384xf32>
  // CHECK: ptrain.gelu %{{.*}} {approximate = #ptrain<gelu_approximation tanh>} : tensor<4x64x384xf32>
  %a2 = ptrain.gelu %a {approximate = #ptrain<gelu_approximation tanh>} : tensor<4x64x384xf32>
  // CHECK: ptrain.unary erf %{{.*}} : tensor<4x64x384xf32>
  %e = ptrain.unary erf %a2 : tensor<4x64x384xf32>
  %wte_t = ptrain.transpose %wte {perm = array<i64: 1, 0>} : tensor<256x128xf32> -> tensor<128x256xf32>
  %logits = ptrain.matmul %h, %wte_t : tensor<4x64x128xf32>, tensor<128x256xf32>
  // CHECK: ptrain.cross_entropy %{{.*}}, %{{.*}} : tensor<4x64x256xf32>, tensor<4x64xi64>
  %loss = ptrain.cross_entropy %logits, %ids : tensor<4x64x256xf32>, tensor<4x64xi64>
  // Padding and class weights: ignore_index, a [C] weight operand and the sum reduction round-trip.
  // CHECK: ptrain.cross_entropy %{{.*}}, %{{.*}} weight %{{.*}} {ignore_index = -100 : i64, reduction = "sum"} : tensor<4x64x256xf32>, tensor<4x64xi64>, tensor<256xf32>
  %w = arith.constant dense<1.0> : tensor<256xf32>
  %padded = ptrain.cross_entropy %logits, %ids weight %w {ignore_index = -100 : i64, reduction = "sum"} : tensor<4x64x256xf32>, tensor<4x64xi64>, tensor<256xf32>
  return %p, %e, %loss : tensor<4x4x64x64xf32>, tensor<4x64x384xf32>, tensor<f32>
}
