// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.mlir
// RUN: ptrain-interpret %t.mlir --weights %S/../../models/gpt/gpt.onnx --input %S/../../models/gpt/test_data_set_0/input_0.pb --expect %S/../../models/gpt/test_data_set_0/output_0.pb --atol 1e-5 | FileCheck %s

// Issue 3, step 3: the bundled GPT imported by ptrain-translate and evaluated by the reference interpreter
// (weights read by key from the ONNX external data) gives the export's reference logits within 1e-5.

// CHECK: result 0: tensor<4x64x256xf32>
// CHECK: max|x - expected| = {{.*}} (atol 1.0e-05): ok
