// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.gpt.mlir
// RUN: ptrain-opt %t.gpt.mlir --ptrain-raise --ptrain-shard-tp="tp=2 vocab-parallel=true" | FileCheck %s
// RUN: ptrain-opt %t.gpt.mlir --ptrain-raise --ptrain-shard-tp="tp=4 vocab-parallel=true" | FileCheck %s --check-prefix=TP4
// RUN: ptrain-opt %t.gpt.mlir --ptrain-raise --ptrain-shard-tp="tp=2 vocab-parallel=true" --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime --ptrain-verify-plan -o %t.plan.mlir
// RUN: FileCheck %s --check-prefix=PLAN < %t.plan.mlir
// RUN: FileCheck %s --check-prefix=PLANGRAD < %t.plan.mlir
// RUN: ptrain-translate --emit-cpp %t.plan.mlir | FileCheck %s --check-prefix=EMIT
// RUN: ptrain-translate --import-onnx %shared/data/onnx/gpt2_megatron.onnx --bind batch_size=2,seq_len=8,past_seq_len=0 --signature auto -o %t.megatron.mlir
// RUN: ptrain-opt %t.megatron.mlir --ptrain-raise --ptrain-shard-tp="tp=2 vocab-parallel=true vocab-multiple=4" | FileCheck %s --check-prefix=MEGATRON

// The bundled GPT at tp = 2: the tied wte.weight (256 x 128) keeps 128 rows per rank, no padding; the token
// embedding is the rank's lookup plus g, the position embedding stays whole; the head gets f, makes 128 logits
// per position and the forward returns them gathered (256).
// CHECK: ptrain.state @wte.weight key "wte.weight" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [256, 128]>} : tensor<128x128xf32>
// CHECK: ptrain.state @wpe.weight key "wpe.weight" kind parameter : tensor<64x128xf32>
// CHECK: ptrain.vocab_parallel_embedding %{{.*}}, %arg0 on @grid axis tp : tensor<128x128xf32>, tensor<4x64xi64> -> tensor<4x64x128xf32>
// CHECK-NEXT: ptrain.tp_all_reduce %{{.*}} on @grid axis tp : tensor<4x64x128xf32>
// CHECK: ptrain.transpose %{{.*}} {perm = array<i64: 1, 0>} : tensor<128x128xf32> -> tensor<128x128xf32>
// CHECK: %[[F:.*]] = ptrain.tp_copy
// CHECK: %[[Y:.*]] = ptrain.matmul %[[F]], %{{.*}} {ptrain.linear = {layer = 4 : i64, role = "lm_head"}} : tensor<4x64x128xf32>, tensor<128x128xf32>
// CHECK: %[[ALL:.*]] = ptrain.tp_all_gather %[[Y]] on @grid axis tp dim 2 : tensor<4x64x128xf32> -> tensor<4x64x256xf32>
// CHECK: return %[[ALL]] : tensor<4x64x256xf32>

// TP4: {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [256, 128]>} : tensor<64x128xf32>
// TP4: ptrain.tp_all_gather %{{.*}} on @grid axis tp dim 2 : tensor<4x64x64xf32> -> tensor<4x64x256xf32>

// dp = 2 x pp = 2 x tp = 2: both stages read the one sharded wte.weight; the last stage's backward has the
// parallel loss on its local logits and no gather of the logits; the tied sync is per (dp, tp).
// PLAN: ptrain.grid @grid(dp = 2, pp = 2, tp = 2)
// PLAN: ptrain.state @wte.weight key "wte.weight" kind parameter {ptrain.tp_slice = {{.*}}} : tensor<128x128xf32>
// PLAN: ptrain.vocab_parallel_embedding
// PLAN: ptrain.vocab_parallel_cross_entropy_parts {{.*}} {vocab = 256 : i64} : tensor<4x63x128xf32>, tensor<4x63xi64>, tensor<4x63xf32>
// PLAN: ptrain.vocab_parallel_cross_entropy_parts_grad
// PLANGRAD: ptrain.vocab_parallel_embedding_grad %{{.*}} on @grid axis tp : tensor<4x64x128xf32>, tensor<4x64xi64> -> tensor<128x128xf32>

// The plan compiles to C++ (docs/CodegenCpu.md; trained under mpirun by CTest codegen-cpu-vocab-parallel):
// EMIT-DAG: ptrain_vocab_parallel_embedding_fwd_f32
// EMIT-DAG: ptrain_vocab_parallel_ce_parts_fwd_f32
// EMIT-DAG: ptrain_vocab_parallel_ce_parts_bwd_f32
// EMIT-DAG: ptrain_vocab_parallel_embedding_bwd_f32

// gpt2_megatron (untied [8, 10] head weight, vocabulary 10 padded to 16 by vocab-multiple=4): 8 rows (table)
// and 8 columns (head) per rank.
// MEGATRON: ptrain.state @word_embeddings.weight key "word_embeddings.weight" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [10, 8], padded = 16>} : tensor<8x8xf32>
// MEGATRON: ptrain.state @"223" key "223" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 1, shape = [8, 10], padded = 16>} : tensor<8x8xf32>
// MEGATRON: ptrain.tp_all_gather %{{.*}} on @grid axis tp dim 2 : tensor<2x8x8xf32> -> tensor<2x8x16xf32>
// MEGATRON: ptrain.slice %{{.*}} {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 8, 10>} : tensor<2x8x16xf32> -> tensor<2x8x10xf32>
