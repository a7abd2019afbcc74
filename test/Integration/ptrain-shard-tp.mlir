// RUN: ptrain-translate --import-onnx %S/../../models/gpt/gpt.onnx -o %t.gpt.mlir
// RUN: ptrain-opt %t.gpt.mlir --ptrain-raise --ptrain-shard-tp="tp=2" | FileCheck %s
// RUN: ptrain-opt %t.gpt.mlir --ptrain-raise --ptrain-shard-tp="tp=4" | FileCheck %s --check-prefix=TP4
// RUN: ptrain-opt %t.gpt.mlir --ptrain-raise --ptrain-shard-tp="tp=1" | FileCheck %s --check-prefix=TP1
// RUN: not ptrain-opt %t.gpt.mlir --ptrain-raise --ptrain-shard-tp="tp=8" 2>&1 | FileCheck %s --check-prefix=HEADS
// RUN: not ptrain-opt %t.gpt.mlir --ptrain-shard-tp="tp=2" 2>&1 | FileCheck %s --check-prefix=UNRAISED
// RUN: not ptrain-opt %t.gpt.mlir --ptrain-raise --ptrain-shard-tp="tp=0" 2>&1 | FileCheck %s --check-prefix=TP0
// RUN: not ptrain-opt %t.gpt.mlir --ptrain-split-stages="pp=2" --ptrain-raise --ptrain-shard-tp="tp=2" 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: not ptrain-opt %t.gpt.mlir --ptrain-build-training-step --ptrain-raise --ptrain-shard-tp="tp=2" 2>&1 | FileCheck %s --check-prefix=STEP
// RUN: ptrain-translate --import-onnx %shared/data/onnx/gpt2_megatron.onnx --bind batch_size=2,seq_len=8,past_seq_len=0 --signature auto -o %t.megatron.mlir
// RUN: ptrain-opt %t.megatron.mlir --ptrain-raise --ptrain-shard-tp="tp=2" | FileCheck %s --check-prefix=MEGATRON
// RUN: not ptrain-opt %t.megatron.mlir --ptrain-raise --ptrain-shard-tp="tp=4" 2>&1 | FileCheck %s --check-prefix=MEGATRON-HEADS
// RUN: ptrain-opt %t.gpt.mlir --ptrain-raise --ptrain-shard-tp="tp=2" --ptrain-split-stages="pp=2" --ptrain-build-training-step="micro-batches=2 dp=2" --ptrain-schedule="schedule=1f1b" --ptrain-lower-to-runtime --ptrain-verify-plan -o %t.plan.mlir
// RUN: FileCheck %s --check-prefix=PLAN < %t.plan.mlir
// RUN: ptrain-translate --emit-cpp %t.plan.mlir | FileCheck %s --check-prefix=EMIT

// The bundled GPT over tp = 2: per layer, the fused Q|K|V weight keeps rows (torch's [out, in] layout) of its
// 2 of 4 heads from each of Q, K and V (groups = 3), the output projection keeps the matching input columns,
// the MLP's up projection half of its 512 outputs (weight and bias), its down projection the matching inputs.
// Layer norms, embeddings, the tied LM head and the biases after the row-parallel linears stay whole.

// CHECK: ptrain.grid @grid(tp = 2)
// CHECK: ptrain.state @wte.weight key "wte.weight" kind parameter : tensor<256x128xf32>
// CHECK: ptrain.state @blocks.0.attn.qkv.weight key "blocks.0.attn.qkv.weight" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 3, shape = [384, 128]>} : tensor<192x128xf32>
// CHECK: ptrain.state @blocks.0.attn.qkv.bias key "blocks.0.attn.qkv.bias" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 3, shape = [384]>} : tensor<192xf32>
// CHECK: ptrain.state @blocks.0.attn.proj.weight key "blocks.0.attn.proj.weight" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 1, shape = [128, 128]>} : tensor<128x64xf32>
// CHECK: ptrain.state @blocks.0.attn.proj.bias key "blocks.0.attn.proj.bias" kind parameter : tensor<128xf32>
// CHECK: ptrain.state @blocks.0.ln_2.weight key "blocks.0.ln_2.weight" kind parameter : tensor<128xf32>
// CHECK: ptrain.state @blocks.0.mlp.fc.weight key "blocks.0.mlp.fc.weight" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [512, 128]>} : tensor<256x128xf32>
// CHECK: ptrain.state @blocks.0.mlp.fc.bias key "blocks.0.mlp.fc.bias" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 0, groups = 1, shape = [512]>} : tensor<256xf32>
// CHECK: ptrain.state @blocks.0.mlp.proj.weight key "blocks.0.mlp.proj.weight" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 1, shape = [128, 512]>} : tensor<128x256xf32>
// CHECK: ptrain.state @blocks.0.mlp.proj.bias key "blocks.0.mlp.proj.bias" kind parameter : tensor<128xf32>
// CHECK: ptrain.state @ln_f.weight key "ln_f.weight" kind parameter : tensor<128xf32>

// The attention of layer 0 on 2 heads: f, the column-parallel Q|K|V, split in three, per-head reshapes,
// scores, mask, softmax and context on 2 heads, the row-parallel output projection, then g before the bias.
// CHECK-LABEL: func.func @forward
// CHECK: %[[LN:.*]] = ptrain.layer_norm
// CHECK: %[[WQKV:.*]] = ptrain.transpose %{{.*}} {perm = array<i64: 1, 0>} : tensor<192x128xf32> -> tensor<128x192xf32>
// CHECK: %[[F:.*]] = ptrain.tp_copy %[[LN]] on @grid axis tp : tensor<4x64x128xf32>
// CHECK: %[[QKV:.*]] = ptrain.matmul %[[F]], %[[WQKV]] {{.*}} : tensor<4x64x128xf32>, tensor<128x192xf32>
// CHECK: ptrain.binary add %{{.*}}, %[[QKV]] : tensor<192xf32>, tensor<4x64x192xf32>
// CHECK: ptrain.split %{{.*}} {axis = 2 : i64, sizes = array<i64: 64, 64, 64>} : tensor<4x64x192xf32> -> tensor<4x64x64xf32>, tensor<4x64x64xf32>, tensor<4x64x64xf32>
// CHECK: ptrain.reshape %{{.*}} : tensor<4x64x64xf32> -> tensor<4x64x2x32xf32>
// CHECK: ptrain.matmul %{{.*}}, %{{.*}} : tensor<4x2x64x32xf32>, tensor<4x2x32x64xf32>
// CHECK: ptrain.softmax %{{.*}} : tensor<4x2x64x64xf32>
// CHECK: ptrain.matmul %{{.*}}, %{{.*}} : tensor<4x2x64x64xf32>, tensor<4x2x64x32xf32>
// CHECK: ptrain.reshape %{{.*}} : tensor<4x64x2x32xf32> -> tensor<4x64x64xf32>
// CHECK: %[[OUT:.*]] = ptrain.matmul %{{.*}}, %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "attn_out"}} : tensor<4x64x64xf32>, tensor<64x128xf32>
// CHECK: %[[G:.*]] = ptrain.tp_all_reduce %[[OUT]] on @grid axis tp : tensor<4x64x128xf32>
// CHECK: ptrain.binary add %{{.*}}, %[[G]] : tensor<128xf32>, tensor<4x64x128xf32>
// The MLP: f, the column-parallel up projection and GELU on 256 of 512, the row-parallel down projection, g.
// CHECK: ptrain.tp_copy
// CHECK: ptrain.matmul %{{.*}}, %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<4x64x128xf32>, tensor<128x256xf32>
// CHECK: ptrain.gelu %{{.*}} : tensor<4x64x256xf32>
// CHECK: %[[DOWN:.*]] = ptrain.matmul %{{.*}}, %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "mlp_down"}} : tensor<4x64x256xf32>, tensor<256x128xf32>
// CHECK: ptrain.tp_all_reduce %[[DOWN]] on @grid axis tp : tensor<4x64x128xf32>
// Three more layers, 2 f and 2 g each; the LM head stays replicated.
// CHECK-COUNT-6: ptrain.tp_copy
// CHECK-NOT: ptrain.tp_copy
// CHECK: ptrain.matmul %{{.*}}, %{{.*}} {ptrain.linear = {layer = 4 : i64, role = "lm_head"}} : tensor<4x64x128xf32>, tensor<128x256xf32>

// tp = 4: one head of 32 per rank.
// TP4: ptrain.grid @grid(tp = 4)
// TP4: ptrain.state @blocks.0.attn.qkv.weight {{.*}} : tensor<96x128xf32>
// TP4: ptrain.reshape %{{.*}} : tensor<4x64x32xf32> -> tensor<4x64x1x32xf32>
// TP4: ptrain.softmax %{{.*}} : tensor<4x1x64x64xf32>

// tp = 1 leaves the forward as it is.
// TP1-NOT: ptrain.grid
// TP1-NOT: ptrain.tp_copy

// HEADS: error: --ptrain-shard-tp: ('ptrain.softmax'): layer 0 has 4 attention heads, not divisible by tp = 8
// UNRAISED: error: --ptrain-shard-tp: @forward has no ptrain.layers: run --ptrain-raise first
// TP0: error: --ptrain-shard-tp: tp must be >= 1, got 0
// Sharding after the split or the step: the stages and the step read the same parameters, so every one looked
// like a tied weight ("is read elsewhere too"); the error says the order.
// SPLIT: error: --ptrain-shard-tp: the module is already split into pipeline stages; shard the forward first: --ptrain-raise --ptrain-shard-tp, then --ptrain-split-stages and --ptrain-build-training-step
// STEP: error: --ptrain-shard-tp: the module is already a training step (@train_step); shard the forward first

// gpt2_megatron over tp = 2: Q|K|V weight columns (ONNX MatMul's [in, out] layout) per head, K and V
// appended to an empty past that gets the local shape, 1 head of 4 per rank.
// MEGATRON: ptrain.state @"209" key "209" kind parameter {ptrain.tp_slice = #ptrain.tp_slice<axis = "tp", dim = 1, groups = 3, shape = [8, 24]>} : tensor<8x12xf32>
// MEGATRON: ptrain.tp_copy
// MEGATRON: ptrain.matmul %{{.*}}, %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "qkv"}} : tensor<2x8x8xf32>, tensor<8x12xf32>
// MEGATRON: ptrain.concat %{{.*}}, %{{.*}} {axis = -2 : i64} : tensor<2x1x0x4xf32>, tensor<2x1x8x4xf32> -> tensor<2x1x8x4xf32>
// MEGATRON: ptrain.softmax %{{.*}} {axis = 3 : i64, {{.*}}} : tensor<2x1x8x8xf32>
// MEGATRON: ptrain.tp_all_reduce %{{.*}} on @grid axis tp : tensor<2x8x8xf32>
// MEGATRON: ptrain.matmul %{{.*}}, %{{.*}} {ptrain.linear = {layer = 0 : i64, role = "mlp_up"}} : tensor<2x8x8xf32>, tensor<8x16xf32>
// MEGATRON: ptrain.tp_all_reduce %{{.*}} on @grid axis tp : tensor<2x8x8xf32>
// MEGATRON-HEADS: error: --ptrain-shard-tp: ('ptrain.softmax'): layer 0 has 2 attention heads, not divisible by tp = 4

// dp = 2 x pp = 2 x tp = 2 through the training step, the schedule, the lowering and --ptrain-verify-plan
// (which runs the tp collectives of all 8 ranks with rendezvous semantics): stage 0 (2 layers) recomputes
// its forward with 4 g, and autodiff adds one all-reduce per f (4) for the activation gradients.
// PLAN: ptrain.grid @grid(dp = 2, pp = 2, tp = 2)
// PLAN-LABEL: func.func @stage0_backward
// PLAN-COUNT-8: ptrain.tp_all_reduce %{{.*}} on @grid axis tp : tensor<4x64x128xf32>
// PLAN-NOT: ptrain.tp_all_reduce
// PLAN: ptrain.embedding_grad
// PLAN-LABEL: func.func @stage0_optimizer_step
// --emit-cpp lowers it (docs/CodegenCpu.md, "Tensor parallelism"): the 24 sliced parameters are cut at init,
// g runs on the tp communicator.
// EMIT: constexpr int64_t kNumTPSlices = 24;
// EMIT: PTRAIN_STEP_CALL(createGroup(in_group, &comm_grid_tp));
// EMIT: PTRAIN_STEP_CALL(initStates(path));
// EMIT: PTRAIN_STEP_CALL(ptrain_all_reduce_start(comm_grid_tp,
