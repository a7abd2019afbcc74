// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx | ptrain-opt --ptrain-raise | FileCheck %s
// RUN: ptrain-translate --import-onnx %shared/data/onnx/gpt2_megatron.onnx --bind batch_size=2,seq_len=8,past_seq_len=0 --signature auto | ptrain-opt --ptrain-raise | FileCheck %s --check-prefix=MEGATRON
// RUN: ptrain-translate --import-onnx %shared/data/onnx/bert_toy_optimized.onnx --bind batch=2,max_seq_len_in_batch=7 | ptrain-opt --ptrain-raise | FileCheck %s --check-prefix=BERT
// RUN: ptrain-translate --import-onnx %S/../Import/ONNX/Inputs/exports/gpt2-opset17.onnx --signature auto | ptrain-opt --ptrain-raise | FileCheck %s --check-prefix=HF-GPT2
// RUN: ptrain-translate --import-onnx %S/../Import/ONNX/Inputs/exports/bert-opset17.onnx --signature auto | ptrain-opt --ptrain-raise | FileCheck %s --check-prefix=HF-BERT

// The bundled GPT (models/gpt, torch Linear weights transposed in the graph): 4 layers, each a fused Q|K|V
// projection, an attention of 4 heads of 32, its output projection and an MLP of 512; the tied LM head.

// CHECK-LABEL: func.func @forward
// CHECK-SAME: attributes {ptrain.layers = 4 : i64}
// CHECK: ptrain.matmul %{{.*}}, %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<4x64x128xf32>, tensor<128x384xf32>
// CHECK: ptrain.softmax %{{.*}} {axis = -1 : i64, ptrain.attention = {head_dim = 32 : i64, heads = 4 : i64, kv_heads = 4 : i64, layer = 0 : i64}} : tensor<4x4x64x64xf32>
// CHECK: ptrain.matmul %{{.*}}, %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "attn_out"}} : tensor<4x64x128xf32>, tensor<128x128xf32>
// CHECK: ptrain.matmul %{{.*}}, %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<4x64x128xf32>, tensor<128x512xf32>
// CHECK: ptrain.gelu
// CHECK: ptrain.matmul %{{.*}}, %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<4x64x512xf32>, tensor<512x128xf32>
// CHECK: {ptrain.linear = {layer = 1 : i64, role = "qkv"}}
// CHECK: {ptrain.linear = {layer = 2 : i64, role = "qkv"}}
// CHECK: {ptrain.linear = {layer = 3 : i64, role = "qkv"}}
// CHECK: ptrain.attention = {head_dim = 32 : i64, heads = 4 : i64, kv_heads = 4 : i64, layer = 3 : i64}
// CHECK: {ptrain.linear = {layer = 3 : i64, role = "mlp_down"}}
// CHECK: %[[LOGITS:.*]] = ptrain.matmul %{{.*}}, %{{.*}} {ptrain.linear = {layer = 4 : i64, role = "lm_head"}} : tensor<4x64x128xf32>, tensor<128x256xf32>
// CHECK: return %[[LOGITS]]

// onnxruntime's Megatron/Hugging Face GPT-2 export (opset 12): MatMul + Split into Q/K/V, K and V appended to
// the (empty) past, Q and K each divided by sqrt(sqrt(head_dim)), a multiplicative causal mask; 2 heads of 4.

// MEGATRON-LABEL: func.func @forward
// MEGATRON-SAME: attributes {ptrain.layers = 1 : i64}
// MEGATRON: {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<2x8x8xf32>, tensor<8x24xf32>
// MEGATRON: ptrain.attention = {head_dim = 4 : i64, heads = 2 : i64, kv_heads = 2 : i64, layer = 0 : i64}
// MEGATRON: {ptrain.linear = {layer = 0 : i64, role = "attn_out"}} : tensor<2x8x8xf32>, tensor<8x8xf32>
// MEGATRON: {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x8x8xf32>, tensor<8x32xf32>
// MEGATRON: {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x8x32xf32>, tensor<32x8xf32>
// MEGATRON: {ptrain.linear = {layer = 1 : i64, role = "lm_head"}} : tensor<2x8x8xf32>, tensor<8x10xf32>

// onnxruntime's BERT (bert_toy_optimized.onnx, 5 layers): separate Q, K and V projections of one input, each with
// a bias, 4 heads of 8, a mask computed from the attention_mask input; the MLM head's transform (dense, GELU,
// LayerNorm) after the last layer is not an MLP.
// BERT-LABEL: func.func @forward
// BERT-SAME: ptrain.layers = 5 : i64
// BERT: {ptrain.linear = {layer = 0 : i64, role = "q"}} : tensor<2x7x32xf32>, tensor<32x32xf32>
// BERT: {ptrain.linear = {layer = 0 : i64, role = "k"}} : tensor<2x7x32xf32>, tensor<32x32xf32>
// BERT: {ptrain.linear = {layer = 0 : i64, role = "v"}} : tensor<2x7x32xf32>, tensor<32x32xf32>
// BERT: ptrain.attention = {head_dim = 8 : i64, heads = 4 : i64, kv_heads = 4 : i64, layer = 0 : i64}
// BERT: {ptrain.linear = {layer = 0 : i64, role = "attn_out"}}
// BERT: {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x7x32xf32>, tensor<32x37xf32>
// BERT: {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<2x7x37xf32>, tensor<37x32xf32>
// BERT: {ptrain.linear = {layer = 4 : i64, role = "mlp_down"}}
// BERT-NOT: ptrain.linear

// Hugging Face GPT2LMHeadModel exported by torch 1.13 (opset 17): Conv1D linears as Gemm on [B S, hidden], the
// fused c_attn split after the batch dimensions are restored; 2 layers of 2 heads of 16.
// HF-GPT2-LABEL: func.func @forward
// HF-GPT2-SAME: ptrain.layers = 2 : i64
// HF-GPT2: {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<16x32xf32>, tensor<32x96xf32>
// HF-GPT2: ptrain.attention = {head_dim = 16 : i64, heads = 2 : i64, kv_heads = 2 : i64, layer = 0 : i64}
// HF-GPT2: {ptrain.linear = {layer = 0 : i64, role = "attn_out"}}
// HF-GPT2: {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}}
// HF-GPT2: {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}}
// HF-GPT2: {ptrain.linear = {layer = 1 : i64, role = "mlp_down"}}

// Hugging Face BertForMaskedLM exported by torch 1.13 (opset 17): separate query/key/value Linears.
// HF-BERT-LABEL: func.func @forward
// HF-BERT: {ptrain.linear = {layer = 0 : i64, role = "q"}}
// HF-BERT: {ptrain.linear = {layer = 0 : i64, role = "k"}}
// HF-BERT: {ptrain.linear = {layer = 0 : i64, role = "v"}}
// HF-BERT: {ptrain.linear = {layer = 0 : i64, role = "attn_out"}}
// HF-BERT: {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}}
