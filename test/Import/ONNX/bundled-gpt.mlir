// RUN: ptrain-translate --import-onnx %S/../../../models/gpt/gpt.onnx | FileCheck %s
// RUN: ptrain-translate --import-onnx %S/../../../models/gpt/gpt.onnx | ptrain-opt | FileCheck %s

// The bundled GPT (models/gpt, opset 17, exported without constant folding): weights are parameter
// symbols keyed by initializer name and never in the IR; the tied embedding is ONE symbol read once and used
// by the token embedding and, transposed, by the LM head; every GELU expansion is recognized.

// CHECK: module attributes {ptrain.onnx_file = "{{.*}}models/gpt/gpt.onnx", ptrain.tied_parameters = ["wte.weight"]}
// CHECK-COUNT-1: ptrain.state @wte.weight key "wte.weight" kind parameter : tensor<256x128xf32>
// CHECK-NOT: dense_resource
// CHECK-LABEL: func.func @forward
// CHECK-SAME: tensor<4x64xi64> {ptrain.onnx_name = "input_ids"}
// CHECK-SAME: -> (tensor<4x64x256xf32> {ptrain.onnx_name = "logits"})
// CHECK: %[[WTE:.*]] = ptrain.state_read @wte.weight : tensor<256x128xf32>
// CHECK-NOT: ptrain.state_read @wte.weight
// CHECK: ptrain.embedding %[[WTE]], %{{.*}} : tensor<256x128xf32>, tensor<4x64xi64>
// CHECK-COUNT-4: ptrain.gelu
// CHECK-NOT: ptrain.unary erf
// CHECK: %[[HEAD:.*]] = ptrain.transpose %[[WTE]] {perm = array<i64: 1, 0>} : tensor<256x128xf32> -> tensor<128x256xf32>
// CHECK: %[[LOGITS:.*]] = ptrain.matmul %{{.*}}, %[[HEAD]] : tensor<4x64x128xf32>, tensor<128x256xf32>
// CHECK: return %[[LOGITS]]
// CHECK-NOT: ptrain.onnx_node
