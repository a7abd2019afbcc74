// --ptrain-shard-tp on exports beyond the fused Q|K|V of the bundled GPT and gpt2_megatron (docs/Plan.md):
// separate Q, K and V projections (onnxruntime's BERT), grouped-query attention with rotary embeddings and a
// SwiGLU MLP (the LLaMA-style model, unfused at opset 17 and raised), and Hugging Face GPT-2's Gemm linears on
// [B S, hidden] (torch 1.13, opset 17). tests unittests/Interpreter/MultiRankExecutorTest.cpp runs each against
// the one-rank step.
// RUN: ptrain-translate --import-onnx %shared/data/onnx/bert_toy_optimized.onnx --bind batch=2,max_seq_len_in_batch=7 --signature auto --mlir-print-debuginfo -o %t.bert.mlir
// RUN: ptrain-opt %t.bert.mlir --ptrain-raise --ptrain-shard-tp="tp=2 replicate-indivisible-mlp=true" 2>%t.bert.remarks | FileCheck %s --check-prefix=BERT
// RUN: FileCheck %s --check-prefix=BERT-REMARK < %t.bert.remarks
// RUN: not ptrain-opt %t.bert.mlir --ptrain-raise --ptrain-shard-tp="tp=2" 2>&1 | FileCheck %s --check-prefix=BERT-MLP
// RUN: not ptrain-opt %t.bert.mlir --ptrain-raise --ptrain-shard-tp="tp=8 replicate-indivisible-mlp=true" 2>&1 | FileCheck %s --check-prefix=BERT-HEADS
// RUN: ptrain-translate --import-onnx %S/../Import/ONNX/opset18+/Inputs/llama_tiny_unfused.onnx --signature auto --mlir-print-debuginfo -o %t.llama.mlir
// RUN: ptrain-opt %t.llama.mlir --ptrain-raise --ptrain-shard-tp="tp=2" | FileCheck %s --check-prefix=LLAMA
// RUN: not ptrain-opt %t.llama.mlir --ptrain-raise --ptrain-shard-tp="tp=4" 2>&1 | FileCheck %s --check-prefix=LLAMA-KV
// RUN: ptrain-translate --import-onnx %S/../Import/ONNX/Inputs/exports/gpt2-opset17.onnx --signature auto | ptrain-opt --ptrain-raise --ptrain-shard-tp="tp=2" | FileCheck %s --check-prefix=HF-GPT2

// In BERT, Q, K and V each keep the columns (and bias entries) of the rank's 2 of 4 heads; one f feeds all three.
// BERT: ptrain.state @bert.encoder.layer.0.attention.self.query.bias {{.*}}ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [32]>} : tensor<16xf32>
// BERT: ptrain.state @bert.encoder.layer.0.intermediate.dense.weight_transposed {{.*}} kind parameter : tensor<32x37xf32>
// BERT: %[[X:.*]] = ptrain.tp_copy %{{.*}} on @grid axis tp : tensor<2x7x32xf32>
// BERT-NEXT: ptrain.matmul %[[X]], %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "q"}} : tensor<2x7x32xf32>, tensor<32x16xf32>
// BERT: ptrain.matmul %[[X]], %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "k"}} : tensor<2x7x32xf32>, tensor<32x16xf32>
// BERT: ptrain.matmul %[[X]], %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "v"}} : tensor<2x7x32xf32>, tensor<32x16xf32>
// BERT: ptrain.softmax %{{.*}} : tensor<2x2x7x7xf32>
// BERT: %[[PART:.*]] = ptrain.matmul %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "attn_out"}} : tensor<2x7x16xf32>, tensor<16x32xf32>
// BERT-NEXT: ptrain.tp_all_reduce %[[PART]] on @grid axis tp : tensor<2x7x32xf32>
// BERT-NOT: tp_copy
// BERT: {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x7x32xf32>, tensor<32x37xf32>
// BERT: ptrain.tp_copy
// BERT-REMARK: remark: --ptrain-shard-tp: layer 0's MLP (width 37) is not divisible by tp = 2; it stays replicated
// BERT-REMARK: remark: --ptrain-shard-tp: layer 4's MLP (width 37) is not divisible by tp = 2; it stays replicated
// BERT-MLP: error: --ptrain-shard-tp: ONNX node 'MatMul_117' ('ptrain.matmul'): dimension 1 of parameter 'bert.encoder.layer.0.intermediate.dense.weight_transposed' ('tensor<32x37xf32>') has size 37, not divisible by tp = 2
// BERT-HEADS: error: --ptrain-shard-tp: ONNX node 'Softmax_{{[0-9]+}}' ('ptrain.softmax'): layer 0 has 4 attention heads, not divisible by tp = 8

// LLaMA: per rank 2 query heads and their one key/value head; rotary embeddings on the local heads, K and V
// repeated to the rank's query heads; SwiGLU's gate and up column-parallel behind one f.
// LLAMA: ptrain.state @layers.0.k_proj.weight {{.*}}ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 1, shape = [64, 32]>} : tensor<64x16xf32>
// LLAMA: ptrain.state @layers.0.down_proj.weight {{.*}}ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [128, 64]>} : tensor<64x64xf32>
// LLAMA: ptrain.state @norm.weight key "norm.weight" kind parameter : tensor<64xf32>
// LLAMA: ptrain.rms_norm %{{.*}} : tensor<2x16x64xf32>, tensor<64xf32>
// LLAMA: ptrain.tp_copy
// LLAMA: ptrain.rotary_embedding %{{.*}} : tensor<2x2x16x16xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
// LLAMA: ptrain.rotary_embedding %{{.*}} : tensor<2x1x16x16xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
// LLAMA: ptrain.broadcast_to %{{.*}} : tensor<2x1x1x16x16xf32> -> tensor<2x1x2x16x16xf32>
// LLAMA: ptrain.softmax %{{.*}} : tensor<2x2x16x16xf32>
// LLAMA: ptrain.tp_all_reduce
// LLAMA: %[[N:.*]] = ptrain.tp_copy %{{.*}} on @grid axis tp : tensor<2x16x64xf32>
// LLAMA: ptrain.matmul %[[N]], %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "mlp_gate"}} : tensor<2x16x64xf32>, tensor<64x64xf32>
// LLAMA: ptrain.matmul %[[N]], %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x16x64xf32>, tensor<64x64xf32>
// LLAMA: {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x16x64xf32>, tensor<64x64xf32>
// LLAMA-NEXT: ptrain.tp_all_reduce
// LLAMA-KV: error: --ptrain-shard-tp: ONNX node 'layers.0.attn/Softmax' ('ptrain.softmax'): layer 0 has 2 key/value heads (grouped-query attention), not divisible by tp = 4

// In Hugging Face GPT-2, the fused c_attn output [B S, 3 x hidden] keeps its 3 groups through the reshape to
// [B, S, 3 x hidden] before the split.
// HF-GPT2: ptrain.state @transformer.h.0.attn.c_attn.weight {{.*}}ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 3, shape = [32, 96]>} : tensor<32x48xf32>
// HF-GPT2: ptrain.matmul %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<16x32xf32>, tensor<32x48xf32>
// HF-GPT2: ptrain.reshape %{{.*}} : tensor<16x48xf32> -> tensor<2x8x48xf32>
// HF-GPT2: ptrain.split %{{.*}} sizes = array<i64: 16, 16, 16>
// HF-GPT2: ptrain.tp_all_reduce
