// The LLaMA-style model of python/ptrain_fixtures/export_newest.py twice, with the same weights: fused at opset 23
// (RMSNormalization, RotaryEmbedding, Attention) and unfused at opset 17 (x * 1/sqrt(mean(x^2) + eps) * w, the
// rotate-half rotary form, MatMul/Softmax attention with K and V repeated by Expand). --ptrain-raise folds the
// unfused forms into the ops the importer makes of the fused ones (5 rms_norm, 4 rotary_embedding, no pow or
// slice left) and marks the same structure in both: separate Q/K/V with 2 key/value heads for 4 query heads,
// SwiGLU gate/up/down. The raised unfused forward gives onnxruntime's logits of the fused model, and its
// training step the fused model's loss and 21 gradients (an independent float64 numpy model's).
// RUN: ptrain-translate --import-onnx %S/../Import/ONNX/opset18+/Inputs/llama_tiny_unfused.onnx --signature auto -o %t.unfused.mlir
// RUN: ptrain-translate --import-onnx %S/../Import/ONNX/opset18+/Inputs/llama_tiny.onnx --signature auto -o %t.fused.mlir
// RUN: ptrain-opt %t.unfused.mlir --ptrain-raise -o %t.raised.mlir
// RUN: FileCheck %s < %t.raised.mlir
// RUN: ptrain-opt %t.fused.mlir --ptrain-raise | FileCheck %s
// RUN: FileCheck %s --check-prefix=BEFORE < %t.unfused.mlir
// RUN: ptrain-interpret %t.raised.mlir --input %S/../Import/ONNX/opset18+/Inputs/llama_tiny.input_0.pb --expect %S/../Import/ONNX/opset18+/Inputs/llama_tiny.output_0.pb --atol 1e-4 \
// RUN:   | FileCheck %s --check-prefix=INTERP
// RUN: ptrain-opt %t.raised.mlir --ptrain-build-training-step="optimizer=none" -o %t.step.mlir
// RUN: ptrain-interpret %t.step.mlir --entry train_step --input %S/../Import/ONNX/opset18+/Inputs/llama_tiny.input_0.pb \
// RUN:   --expect-grads %S/../Import/ONNX/opset18+/Inputs/llama_tiny.reference_grads.onnx --rtol 1e-4 | FileCheck %s --check-prefix=GRADS

// The importer already recognizes the decomposed RMS norms (lib/Import/ONNX/RecognizeRmsNorm.cpp); the
// rotary embeddings are left to the raise.
// BEFORE-NOT: ptrain.binary pow
// BEFORE-NOT: ptrain.rotary_embedding
// BEFORE: ptrain.rms_norm
// BEFORE-NOT: ptrain.rotary_embedding

// CHECK-LABEL: func.func @forward
// CHECK-SAME: ptrain.layers = 2 : i64
// CHECK-NOT: ptrain.binary pow
// CHECK-NOT: ptrain.slice
// CHECK: ptrain.rms_norm %{{.*}}, %{{.*}} {axis = -1 : i64, epsilon = 9.99999974737{{[0-9]*}}E-6 : f64} : tensor<2x16x64xf32>, tensor<64xf32>
// CHECK: {ptrain.linear = {layer = 0 : i64, role = "q"}} : tensor<2x16x64xf32>, tensor<64x64xf32>
// CHECK: {ptrain.linear = {layer = 0 : i64, role = "k"}} : tensor<2x16x64xf32>, tensor<64x32xf32>
// CHECK: {ptrain.linear = {layer = 0 : i64, role = "v"}} : tensor<2x16x64xf32>, tensor<64x32xf32>
// CHECK: ptrain.rotary_embedding %{{.*}} : tensor<2x4x16x16xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
// CHECK: ptrain.rotary_embedding %{{.*}} : tensor<2x2x16x16xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
// CHECK: ptrain.softmax %{{.*}} ptrain.attention = {head_dim = 16 : i64, heads = 4 : i64, kv_heads = 2 : i64, layer = 0 : i64}
// CHECK: {ptrain.linear = {layer = 0 : i64, role = "attn_out"}}
// CHECK: ptrain.rms_norm
// CHECK: {ptrain.linear = {layer = 0 : i64, role = "mlp_gate"}} : tensor<2x16x64xf32>, tensor<64x128xf32>
// CHECK: {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x16x64xf32>, tensor<64x128xf32>
// CHECK: {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x16x128xf32>, tensor<128x64xf32>
// CHECK: ptrain.rms_norm
// CHECK: ptrain.rotary_embedding
// CHECK: ptrain.rotary_embedding
// CHECK: ptrain.attention = {head_dim = 16 : i64, heads = 4 : i64, kv_heads = 2 : i64, layer = 1 : i64}
// CHECK: {ptrain.linear = {layer = 1 : i64, role = "mlp_down"}}
// CHECK: ptrain.rms_norm
// CHECK-NOT: ptrain.rms_norm
// CHECK-NOT: ptrain.rotary_embedding
// CHECK: {ptrain.linear = {layer = 2 : i64, role = "lm_head"}}

// INTERP: result 0: tensor<2x16x128xf32>
// INTERP-NEXT: max|x - expected| = {{.*}}: ok

// The rotary tables rope.cos and rope.sin are held constant (docs/ImportONNX.md, "Parameters and constants"):
// the other 21 gradients are checked.
// GRADS: @train_step: 22 result(s)
// GRADS: result 0: tensor<f32> {{.*}} value = 4.92594
// GRADS-COUNT-21: : ok
// GRADS-NOT: MISMATCH
