// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx | ptrain-opt --ptrain-split-stages="pp=2" -o %t2.mlir
// RUN: FileCheck %s --input-file=%t2.mlir
// RUN: ptrain-interpret %t2.mlir --pipeline --weights %S/../../models/gpt/gpt.onnx --input %S/../../models/gpt/test_data_set_0/input_0.pb --expect %S/../../models/gpt/test_data_set_0/output_0.pb --atol 1e-5 | FileCheck %s --check-prefix=RUN2
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx | ptrain-opt --ptrain-split-stages="pp=4" -o %t4.mlir
// RUN: FileCheck %s --input-file=%t4.mlir --check-prefix=PP4
// RUN: ptrain-interpret %t4.mlir --pipeline --weights %S/../../models/gpt/gpt.onnx --input %S/../../models/gpt/test_data_set_0/input_0.pb --expect %S/../../models/gpt/test_data_set_0/output_0.pb --atol 1e-5 | FileCheck %s --check-prefix=RUN4
// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx | not ptrain-opt --ptrain-split-stages="pp=5" 2>&1 | FileCheck %s --check-prefix=PP5

// The bundled GPT (4 layers) cut into 2 and 4 pipeline stages: only the residual stream crosses, the tied
// embedding is read by the first and the last stage from the one parameter symbol, and running the stages
// one after the other gives the export's logits. 5 stages is more than the model has layers.

// CHECK: ptrain.pipeline = #ptrain.pipeline<pp = 2, stages = [@forward_stage0, @forward_stage1]>
// CHECK-LABEL: func.func @forward_stage0
// CHECK-SAME: (%{{.*}}: tensor<4x64xi64> {ptrain.onnx_name = "input_ids"}) -> tensor<4x64x128xf32>
// CHECK-SAME: attributes {ptrain.stage = #ptrain.stage<0>}
// CHECK: %[[WTE0:.*]] = ptrain.state_read @wte.weight
// CHECK: ptrain.embedding %[[WTE0]]
// CHECK-NOT: @blocks.2.
// CHECK: return
// CHECK-LABEL: func.func @forward_stage1
// CHECK-SAME: (%{{.*}}: tensor<4x64x128xf32>) -> tensor<4x64x256xf32> attributes {ptrain.stage = #ptrain.stage<1>}
// CHECK-NOT: @blocks.1.
// CHECK-NOT: ptrain.embedding
// CHECK: %[[WTE1:.*]] = ptrain.state_read @wte.weight
// CHECK: ptrain.transpose %[[WTE1]]

// RUN2: stage @forward_stage0: 1 result(s)
// RUN2: stage @forward_stage1: 1 result(s)
// RUN2: max|x - expected| = {{.*}}: ok

// PP4: ptrain.pipeline = #ptrain.pipeline<pp = 4, stages = [@forward_stage0, @forward_stage1, @forward_stage2, @forward_stage3]>
// PP4-COUNT-4: ptrain.softmax
// RUN4: stage @forward_stage3: 1 result(s)
// RUN4: max|x - expected| = {{.*}}: ok

// PP5: error: --ptrain-split-stages: pp = 5 needs 4 cut points but @forward has only 3 layer boundaries where a single tensor crosses (more stages than layers)
